// SPDX-License-Identifier: Apache-2.0
#include "worker/tensor_io/tensor_file.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/common/zip_check.h"
#include "worker/runtime/child_support.h"
#include "worker/tensor_io/python_pickle.h"
#include "worker/tensor_io/safetensors.h"

#include <fmt/format.h>

#include <caffe2/serialize/inline_container.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

namespace ra {
namespace {

std::string child_name(const std::string& name, const std::string& part) {
  return name.empty() ? part : fmt::format("{}/{}", name, part);
}

}  // namespace

namespace {

// Bounds on what one value may flatten to: a file may share one container many times over (a
// tuple of two references to a tuple of two references...), which Python loads as a small graph
// but which names exponentially many paths.
constexpr int64_t kMaxVisits = int64_t{1} << 18;
constexpr int64_t kMaxNameBytes = int64_t{1} << 24;

struct Flattener {
  NamedLeaves& out;
  const std::string& what;
  bool values;  // keep plain values (ints, floats, bools, strings, None) as leaves, and int keys
  int64_t visits = 0;
  int64_t name_bytes = 0;

  void add(const c10::IValue& v, const std::string& name, int depth) {
    if (depth > kMaxDepth) throw InputError(fmt::format("{} nests containers deeper than {} levels", what, kMaxDepth));
    if (++visits > kMaxVisits || (name_bytes += static_cast<int64_t>(name.size())) > kMaxNameBytes)
      throw InputError(fmt::format("{} holds more than {} entries (or {} bytes of names), more than repro-audit reads",
                                   what, kMaxVisits, kMaxNameBytes));
    if (v.isTensor()) {
      out.emplace_back(name, v);
    } else if (v.isTuple()) {
      const auto& elems = v.toTupleRef().elements();
      for (size_t i = 0; i < elems.size(); ++i) add(elems[i], child_name(name, std::to_string(i)), depth + 1);
    } else if (v.isList()) {
      const auto list = v.toListRef();
      for (size_t i = 0; i < list.size(); ++i) add(list[i], child_name(name, std::to_string(i)), depth + 1);
    } else if (v.isGenericDict()) {
      std::vector<std::pair<std::string, c10::IValue>> items;
      for (const auto& kv : v.toGenericDict()) {
        if (kv.key().isString()) {
          items.emplace_back(kv.key().toStringRef(), kv.value());
        } else if (values && kv.key().isInt()) {  // an optimizer's per-parameter state: {0: {...}, 1: {...}}
          items.emplace_back(std::to_string(kv.key().toInt()), kv.value());
        } else {
          throw InputError(fmt::format("{} holds a dict with a non-string key{}", what,
                                       name.empty() ? "" : fmt::format(" at '{}'", name)));
        }
      }
      std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (const auto& [k, val] : items) add(val, child_name(name, k), depth + 1);
    } else if (values && (v.isNone() || v.isInt() || v.isDouble() || v.isBool() || v.isString())) {
      out.emplace_back(name, v);
    } else if (v.isNone()) {
      // None carries no bits.
    } else {
      throw InputError(fmt::format("{} holds a {}{}, not tensors", what, v.tagKind(),
                                   name.empty() ? "" : fmt::format(" at '{}'", name)));
    }
  }
};

}  // namespace

void flatten_tensors(const c10::IValue& v, const std::string& name, NamedTensors& out, const std::string& what) {
  NamedLeaves leaves;
  Flattener{leaves, what, false}.add(v, name, 0);
  for (auto& [n, leaf] : leaves) out.emplace_back(std::move(n), leaf.toTensor());
}

void flatten_leaves(const c10::IValue& v, const std::string& name, NamedLeaves& out, const std::string& what) {
  Flattener{out, what, true}.add(v, name, 0);
}

c10::IValue select_key(const c10::IValue& root, const std::string& key, const std::string& what) {
  c10::IValue v = root;
  std::string path;
  size_t begin = 0;
  while (begin <= key.size()) {
    const size_t end = std::min(key.find('/', begin), key.size());
    const std::string part = key.substr(begin, end - begin);
    begin = end + 1;
    if (part.empty()) continue;
    std::vector<std::string> here;  // what exists at this level, for the message
    std::optional<c10::IValue> next;
    if (v.isGenericDict()) {
      for (const auto& kv : v.toGenericDict()) {
        const std::string k = kv.key().isString() ? kv.key().toStringRef()
                              : kv.key().isInt()  ? std::to_string(kv.key().toInt())
                                                  : std::string();
        if (k == part) next = kv.value();
        if (!k.empty()) here.push_back(k);
      }
      std::sort(here.begin(), here.end());
    } else if (v.isTuple() || v.isList()) {
      const size_t n = v.isTuple() ? v.toTupleRef().elements().size() : v.toListRef().size();
      char* rest = nullptr;
      const unsigned long long i = std::strtoull(part.c_str(), &rest, 10);
      if (!part.empty() && *rest == '\0' && i < n) next = v.isTuple() ? v.toTupleRef().elements()[i] : v.toListRef()[i];
      here.push_back(fmt::format("indices 0 to {}", n == 0 ? 0 : n - 1));
    }
    if (!next) {
      const std::string at = path.empty() ? "" : fmt::format(" under '{}'", path);
      if (here.empty())
        throw InputError(fmt::format("{} has no entry '{}'{}: it holds a {} there", what, part, at, v.tagKind()));
      constexpr size_t kShown = 12;
      const size_t shown = std::min(here.size(), kShown);
      throw InputError(fmt::format("{} has no entry '{}'{} (it holds {}{})", what, part, at,
                                   fmt::join(here.begin(), here.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
                                   here.size() > kShown ? ", ..." : ""));
    }
    v = *next;
    path = path.empty() ? part : path + "/" + part;
  }
  return v;
}

namespace {

ArchiveKind kind_of_records(const std::vector<std::string>& records) {
  const auto has = [&](const std::string& name) {
    return std::find(records.begin(), records.end(), name) != records.end();
  };
  const auto any_under = [&](const std::string& prefix) {
    return std::any_of(records.begin(), records.end(), [&](const std::string& r) { return r.rfind(prefix, 0) == 0; });
  };
  if (has("constants.pkl") || any_under("code/")) return ArchiveKind::TorchScript;
  if (any_under("data/aotinductor/")) return ArchiveKind::Aoti;
  if (has("models/model.json")) return ArchiveKind::Export;
  if (has("data.pkl")) return ArchiveKind::TorchSave;
  return ArchiveKind::Other;
}

}  // namespace

ArchiveKind archive_kind(const std::string& path) {
  try {
    if (!zip_open_problem(path).empty()) return ArchiveKind::Other;
    caffe2::serialize::PyTorchStreamReader reader(path);
    return kind_of_records(reader.getAllRecords());
  } catch (const std::exception&) {
    return ArchiveKind::Other;
  }
}

std::string not_torchscript_because(const std::string& path) {
  const std::string save =
      "repro-audit runs TorchScript archives, torch.export archives and AOTInductor packages: save the module with "
      "torch.jit.script(module).save(PATH), or torch.export.save(torch.export.export(module, example_inputs), PATH)";
  char head[4] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(head, sizeof head);
  if (in.gcount() < 4 || std::memcmp(head, "PK\x03\x04", 4) != 0) {
    // Pickle protocol 2 starts with PROTO 2: what torch.save wrote before its zip format.
    if (in.gcount() >= 2 && static_cast<unsigned char>(head[0]) == 0x80 && head[1] >= 2 && head[1] <= 5)
      return "is a torch.save file in the legacy format (_use_new_zipfile_serialization=False, or torch before 1.6), "
             "not a model; " +
             save;
    if (const std::string why = safetensors_header_problem(path); !why.empty()) return why + "; " + save;
    return "is not a PyTorch file (not a zip archive); " + save;
  }
  if (const std::string why = zip_open_problem(path); !why.empty())
    return fmt::format("is a zip archive that repro-audit refuses to open ({}); {}", why, save);
  std::vector<std::string> records;
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    records = reader.getAllRecords();
  } catch (const std::exception& e) {
    return fmt::format(
        "is a zip archive that PyTorch cannot read (damaged, truncated, or not written by PyTorch: {}); {}",
        error_text(e), save);
  }
  switch (kind_of_records(records)) {
    case ArchiveKind::TorchScript:
      return "";
    case ArchiveKind::Aoti:
      return "is an AOTInductor package (torch._inductor.aoti_compile_and_package): run audits its outputs; its "
             "compiled "
             "kernels cannot be linted (lint the torch.export archive it was compiled from)";
    case ArchiveKind::Export:
      return "is a torch.export archive (torch.export.save): run and lint read it; what needs TorchScript takes "
             "torch.jit.trace(torch.export.load(PATH).module(), example_inputs).save(NEW_PATH)";
    case ArchiveKind::Other:
      return "is a zip archive that holds neither TorchScript code nor a torch.save pickle; " + save;
    case ArchiveKind::TorchSave:
      break;
  }
  try {
    (void)load_python_pickle_file(path);
  } catch (const InputError& e) {
    // The checked reader names the class it will not build ("holds a __main__.Net, which ...").
    const std::string what = e.what();
    const auto from = what.find("holds a ");
    const auto to = what.find(", which", from == std::string::npos ? 0 : from);
    if (from != std::string::npos && to != std::string::npos) {
      const std::string held = what.substr(from + 8, to - from - 8);
      // At the top: the pickled object itself (torch.save(model)); deeper: a value in a checkpoint.
      if (held.find(" at '") != std::string::npos)
        return fmt::format("is a torch.save file (a checkpoint holding a {}), not a model; {}", held, save);
      return fmt::format(
          "holds a pickled {} (torch.save(model)), whose loading would run Python code, which repro-audit "
          "never does; {}",
          held, save);
    }
    return fmt::format("is a torch.save file that cannot be read ({}); {}", what, save);
  }
  return "holds tensors saved with torch.save (a state_dict or a checkpoint), not a model: the code that uses them "
         "is missing; " +
         save + " (repro-audit diff compares two such files bit for bit)";
}

c10::IValue load_torch_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(fmt::format("file '{}' does not exist", path));
  if (std::filesystem::is_directory(path, ec)) throw InputError(fmt::format("file '{}' is a directory", path));
  check_not_special(path, "file");
  // A damaged safetensors file is not "not a zip archive": say what it looks like and what is wrong.
  if (const std::string why = safetensors_header_problem(path); !why.empty())
    throw InputError(fmt::format("file '{}' {}", path, why));
  // Never LibTorch's unpickler: it trusts the file (worker/tensor_io/python_pickle.h).
  return load_python_pickle_file(path);
}

NamedTensors load_tensor_file(const std::string& path) {
  const c10::IValue value = load_torch_file(path);
  const std::string what = fmt::format("file '{}'", path);
  NamedTensors out;
  flatten_tensors(value, "", out, what);
  if (out.empty()) throw InputError(fmt::format("{} holds no tensors", what));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < out.size(); ++i) {
    if (i > 0 && out[i].first == out[i - 1].first)
      throw InputError(fmt::format("{} holds two tensors named '{}'", what, out[i].first));
    const at::Tensor& t = out[i].second;
    if (t.layout() != at::kStrided || t.is_quantized())
      throw InputError(
          fmt::format("{} holds a sparse or quantized tensor '{}', which cannot be compared", what, out[i].first));
  }
  return out;
}

}  // namespace ra
