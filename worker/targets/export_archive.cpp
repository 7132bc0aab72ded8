// SPDX-License-Identifier: Apache-2.0
#include "worker/targets/export_archive.h"

#include "audit/baseline/identity.h"
#include "audit/common/errors.h"
#include "audit/common/json_document.h"
#include "audit/common/zip_check.h"
#include "worker/runtime/child_support.h"
#include "worker/runtime/export_graph.h"

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>

namespace ra::targets {
namespace {

// torch/_export/serde/schema.py, ScalarType.
std::optional<at::ScalarType> export_dtype(int code) {
  switch (code) {
    case 1:
      return at::kByte;
    case 2:
      return at::kChar;
    case 3:
      return at::kShort;
    case 4:
      return at::kInt;
    case 5:
      return at::kLong;
    case 6:
      return at::kHalf;
    case 7:
      return at::kFloat;
    case 8:
      return at::kDouble;
    case 9:
      return at::kComplexHalf;
    case 10:
      return at::kComplexFloat;
    case 11:
      return at::kComplexDouble;
    case 12:
      return at::kBool;
    case 13:
      return at::kBFloat16;
    case 28:
      return at::kUInt16;
    case 29:
      return at::kFloat8_e4m3fn;
    case 30:
      return at::kFloat8_e5m2;
    case 31:
      return at::kFloat8_e4m3fnuz;
    case 32:
      return at::kFloat8_e5m2fnuz;
    default:
      return std::nullopt;
  }
}

// An int of the serialized schema: {"as_int": N}.
int64_t as_int(const nlohmann::json& j, const std::string& what) {
  if (!j.is_object() || !j.contains("as_int") || !j["as_int"].is_number_integer())
    throw TrialInputError(fmt::format("{} is not an integer in the archive's tensor metadata", what));
  return j["as_int"].get<int64_t>();
}

// The bytes the weights may take once read, all together: the archive's own budget
// (audit/common/zip_check.h), so that entries that share one record, or views that expand a small
// record (stride 0), cannot make more of it than its entries could.
struct WeightBudget {
  uint64_t left;
};

// The tensor a weights or constants entry describes, copied out of its record after checking that
// every element it reaches lies inside the record.
at::Tensor read_tensor(caffe2::serialize::PyTorchStreamReader& reader, const std::string& folder,
                       const std::string& name, const nlohmann::json& entry, const std::string& path,
                       WeightBudget& budget, WeightData data_mode) {
  const std::string what = fmt::format("model '{}': {} '{}'", path, folder, excerpt(name));
  const auto& meta = entry.at("tensor_meta");
  const auto dtype = export_dtype(meta.at("dtype").get<int>());
  if (!dtype)
    throw TrialInputError(
        fmt::format("{} has dtype code {}, which this version does not read", what, excerpt(meta.at("dtype").dump())));
  if (meta.contains("layout") && meta["layout"].get<int>() != 7)
    throw TrialInputError(fmt::format("{} is not a strided tensor (layout {}), which this version does not read", what,
                                      excerpt(meta["layout"].dump())));
  std::vector<int64_t> sizes, strides;
  for (const auto& s : meta.at("sizes")) sizes.push_back(as_int(s, what + " size"));
  for (const auto& s : meta.at("strides")) strides.push_back(as_int(s, what + " stride"));
  const int64_t offset = meta.contains("storage_offset") ? as_int(meta["storage_offset"], what + " offset") : 0;
  if (sizes.size() != strides.size())
    throw TrialInputError(fmt::format("{} has {} sizes but {} strides", what, sizes.size(), strides.size()));
  const std::string record = fmt::format("data/{}/{}", folder, entry.at("path_name").get<std::string>());
  if (!reader.hasRecord(record))
    throw TrialInputError(fmt::format("{}: the archive has no record {}", what, excerpt(record)));
  // The size the archive declares (audit/common/zip_check.h checked it against what is stored).
  const size_t bytes = reader.getRecordSize(record);
  // The last element it reaches: offset + sum((size - 1) * stride), each term checked.
  const int64_t item = static_cast<int64_t>(c10::elementSize(*dtype));
  bool empty = false;
  int64_t last = offset, step = 0, numel = 1;
  bool bad = offset < 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0 || strides[i] < 0) bad = true;
    if (sizes[i] == 0) empty = true;
    if (sizes[i] > 0 &&
        (__builtin_mul_overflow(sizes[i] - 1, strides[i], &step) || __builtin_add_overflow(last, step, &last)))
      bad = true;
    if (sizes[i] >= 0 && __builtin_mul_overflow(numel, sizes[i], &numel)) bad = true;
  }
  int64_t need = 0, out_bytes = 0;
  if (bad || __builtin_mul_overflow(last + 1, item, &need) || (!empty && static_cast<uint64_t>(need) > bytes))
    throw TrialInputError(fmt::format("{} reaches past its record ({} bytes)", what, bytes));
  const auto options = at::TensorOptions().dtype(*dtype);
  const auto held = data_mode == WeightData::Read ? options : options.device(at::kMeta);
  if (empty) return at::empty(sizes, held);
  if (__builtin_mul_overflow(numel, item, &out_bytes) || static_cast<uint64_t>(out_bytes) > budget.left)
    throw TrialInputError(
        fmt::format("{} would take {} bytes once read, more than is left of the archive's budget ({} "
                    "times its size plus {} MiB, for all its weights together)",
                    what, out_bytes, kMaxZipRatio, kZipExpansionSlack >> 20));
  budget.left -= static_cast<uint64_t>(out_bytes);
  if (data_mode == WeightData::Declared) return at::empty(sizes, held);
  const at::DataPtr data = std::get<0>(reader.getRecord(record));  // `bytes` of them
  const at::Tensor view = at::from_blob(static_cast<char*>(data.get()) + offset * item, sizes, strides, options);
  return view.clone();
}

// Parameters, buffers and constants in the archive, in its config's order. Entries that name the same
// record with the same dtype, sizes, strides and offset are one tensor, as torch.export.load makes them
// (a GPT-2's tied transformer.wte.weight and lm_head.weight): what a training step does to one, the
// other shows. (Other views of one record are read as copies.)
std::vector<std::pair<std::string, at::Tensor>> read_weights(caffe2::serialize::PyTorchStreamReader& reader,
                                                             const std::string& path, uint64_t file_size,
                                                             WeightData data_mode) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  std::map<std::string, at::Tensor> read;  // by record and view
  WeightBudget budget{file_size * kMaxZipRatio + kZipExpansionSlack};
  for (const std::string folder : {"weights", "constants"}) {
    const std::string config = fmt::format("data/{}/model_{}_config.json", folder, folder);
    if (!reader.hasRecord(config)) continue;
    auto [data, size] = reader.getRecord(config);
    const auto j = parse_json_document<nlohmann::json>(std::string(static_cast<const char*>(data.get()), size),
                                                       fmt::format("model '{}': {}", path, config));
    for (const auto& [name, entry] : j.at("config").items()) {
      if (entry.value("use_pickle", false))
        throw TrialInputError(
            fmt::format("model '{}': {} '{}' is pickled (a tensor subclass or an opaque object), which "
                        "this version does not read",
                        path, folder, excerpt(name)));
      const std::string kind = folder == "constants" ? "constant" : entry.value("is_param", false) ? "param" : "buffer";
      const auto& meta = entry.value("tensor_meta", nlohmann::json::object());
      const std::string view = fmt::format(
          "{}/{}|{}|{}|{}|{}", folder, entry.value("path_name", nlohmann::json()).dump(),
          meta.value("dtype", nlohmann::json()).dump(), meta.value("sizes", nlohmann::json()).dump(),
          meta.value("strides", nlohmann::json()).dump(), meta.value("storage_offset", nlohmann::json()).dump());
      auto it = read.find(view);
      if (it == read.end())
        it = read.emplace(view, read_tensor(reader, folder, name, entry, path, budget, data_mode)).first;
      out.emplace_back(kind + "/" + name, it->second);
    }
  }
  return out;
}

// The names of the user inputs in the archive's signature.
std::vector<std::string> user_input_names(const nlohmann::json& j) {
  std::vector<std::string> names;
  for (const auto& spec : j.at("graph_module").at("signature").at("input_specs")) {
    if (!spec.contains("user_input")) continue;
    const auto& arg = spec["user_input"].at("arg");
    names.push_back(arg.contains("as_tensor") ? arg["as_tensor"].at("name").get<std::string>() : std::string("?"));
  }
  return names;
}

// Each user input's sizes as the graph declares them: a static size, or -1 where it is symbolic
// (an input that is not a tensor: no sizes).
std::vector<std::vector<int64_t>> user_input_sizes(const nlohmann::json& j) {
  std::vector<std::vector<int64_t>> out;
  const auto& values = j.at("graph_module").at("graph").value("tensor_values", nlohmann::json::object());
  for (const auto& spec : j.at("graph_module").at("signature").at("input_specs")) {
    if (!spec.contains("user_input")) continue;
    const auto& arg = spec["user_input"].at("arg");
    std::vector<int64_t> sizes;
    if (arg.contains("as_tensor") && values.contains(arg["as_tensor"].value("name", std::string())))
      for (const auto& d :
           values.at(arg["as_tensor"]["name"].get<std::string>()).value("sizes", nlohmann::json::array()))
        sizes.push_back(d.contains("as_int") ? d["as_int"].get<int64_t>() : -1);
    out.push_back(std::move(sizes));
  }
  return out;
}

bool torch_file(const std::string& file) {
  return file.find("/torch/") != std::string::npos || file.find("site-packages") != std::string::npos;
}

// A node's metadata holds strings (the schema's Node.metadata is a dict of str to str; torch.export.load
// splits nn_module_stack and torch_fn as such, and the reports read stack_trace): anything else is refused
// in one line naming the node, before `run` or `lint` reads it.
void check_metadata(const nlohmann::json& node, size_t index, const std::string& path) {
  if (!node.is_object() || !node.contains("metadata") || !node["metadata"].is_object()) return;
  for (const auto& [key, value] : node["metadata"].items())
    if (!value.is_string()) {
      const std::string name =
          node.contains("name") && node["name"].is_string() ? node["name"].get<std::string>() : std::to_string(index);
      const std::string target =
          node.contains("target") && node["target"].is_string() ? node["target"].get<std::string>() : "";
      throw TrialInputError(fmt::format("model '{}': node {} ({}): its metadata '{}' is {}, not a string", path,
                                        excerpt(name), excerpt(target), excerpt(key), value.type_name()));
    }
}

// The graph's ATen nodes in order, with their metadata.
std::vector<GraphNode> graph_nodes(const nlohmann::json& j, const std::string& path) {
  std::vector<GraphNode> out;
  size_t index = 0;
  for (const auto& node : j.at("graph_module").at("graph").at("nodes")) {
    const size_t at_index = index++;
    check_metadata(node, at_index, path);
    const std::string target = node.value("target", std::string());
    if (target.rfind("torch.ops.", 0) != 0) continue;
    const std::string rest = target.substr(10);
    const size_t d1 = rest.find('.'), d2 = rest.find('.', d1 == std::string::npos ? 0 : d1 + 1);
    if (d1 == std::string::npos) continue;
    GraphNode g;
    g.index = at_index;
    g.op = rest.substr(0, d1) + "::" + rest.substr(d1 + 1, d2 == std::string::npos ? std::string::npos : d2 - d1 - 1);
    g.name = node.value("name", std::string());
    const nlohmann::json meta =
        node.contains("metadata") && node["metadata"].is_object() ? node["metadata"] : nlohmann::json::object();
    g.module = module_path_of(meta.value("nn_module_stack", std::string()));
    // The innermost frame of the program (outside torch) in the stack trace, outermost first.
    const std::string trace = meta.value("stack_trace", std::string());
    for (size_t at = trace.find("File \""); at != std::string::npos; at = trace.find("File \"", at + 6)) {
      const size_t q = trace.find('"', at + 6);
      const size_t l = trace.find(", line ", q);
      if (q == std::string::npos || l == std::string::npos) break;
      const std::string file = trace.substr(at + 6, q - at - 6);
      if (!torch_file(file)) g.source = fmt::format("{}:{}", file, std::atoi(trace.c_str() + l + 7));
    }
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace

ExportArchive read_export_archive(const std::string& path, WeightData weight_data) {
  const std::string what = fmt::format("model '{}'", path);
  try {
    (void)checked_zip_entries(path, what);
    const uint64_t file_size = std::filesystem::file_size(path);
    caffe2::serialize::PyTorchStreamReader reader(path);
    auto [data, size] = reader.getRecord("models/model.json");
    auto graph = parse_json_document<nlohmann::json>(std::string(static_cast<const char*>(data.get()), size),
                                                     what + ": models/model.json");
    if (const std::string schema = export_schema_problem(graph); !schema.empty())
      throw TrialInputError(fmt::format("{} {}", what, schema));
    ExportArchive a;
    a.input_names = user_input_names(graph);
    a.input_sizes = user_input_sizes(graph);
    a.nodes = graph_nodes(graph, path);
    a.graph_digest = text_digest(canonical_export_graph(graph));
    a.weights = read_weights(reader, path, file_size, weight_data);
    a.model = std::move(graph);
    return a;
  } catch (const TrialInputError&) {
    throw;
  } catch (const InputError& e) {
    throw TrialInputError(e.what());
  } catch (const std::exception& e) {
    throw TrialInputError(fmt::format("{} is a torch.export archive that cannot be loaded: {}", what, error_text(e)));
  }
}

}  // namespace ra::targets
