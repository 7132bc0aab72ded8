// SPDX-License-Identifier: Apache-2.0
// torch.export archives (torch.export.save, a .pt2 with models/model.json), run by LibTorch's
// NativeRT (torch::nativert::ModelRunnerHandle, model name "model"). What a trial records:
//   * the archive's parameters, buffers and constants ("param/fc.weight", "buffer/...",
//     "constant/..."), read from its data/weights and data/constants records with their
//     tensor_meta, each checked against its record's size;
//   * every output ("output", "output/0", ...).
// NativeRT runs under inference mode and has no autograd, so --mode train is a usage error; its
// CPU executor calls some kernels directly rather than through the dispatcher, so --trace would
// miss ops: this version audits export archives without an op trace, on the CPU.
#include "audit/targets/inputs.h"
#include "audit/targets/target.h"

#include "audit/baseline/identity.h"
#include "audit/common/errors.h"
#include "audit/runtime/export_graph.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/api/include/torch/nativert/ModelRunnerHandle.h>
#include <torch/script.h>

#include <fmt/format.h>

#include <set>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <limits>

namespace ra::targets {
namespace {

// torch/_export/serde/schema.py, ScalarType.
std::optional<at::ScalarType> export_dtype(int code) {
  switch (code) {
    case 1: return at::kByte;
    case 2: return at::kChar;
    case 3: return at::kShort;
    case 4: return at::kInt;
    case 5: return at::kLong;
    case 6: return at::kHalf;
    case 7: return at::kFloat;
    case 8: return at::kDouble;
    case 9: return at::kComplexHalf;
    case 10: return at::kComplexFloat;
    case 11: return at::kComplexDouble;
    case 12: return at::kBool;
    case 13: return at::kBFloat16;
    case 28: return at::kUInt16;
    case 29: return at::kFloat8_e4m3fn;
    case 30: return at::kFloat8_e5m2;
    case 31: return at::kFloat8_e4m3fnuz;
    case 32: return at::kFloat8_e5m2fnuz;
    default: return std::nullopt;
  }
}

// An int of the serialized schema: {"as_int": N}.
int64_t as_int(const nlohmann::json& j, const std::string& what) {
  if (!j.is_object() || !j.contains("as_int") || !j["as_int"].is_number_integer())
    throw TrialInputError(fmt::format("{} is not an integer in the archive's tensor metadata", what));
  return j["as_int"].get<int64_t>();
}

// The tensor a weights or constants entry describes, copied out of its record after checking that
// every element it reaches lies inside the record.
at::Tensor read_tensor(caffe2::serialize::PyTorchStreamReader& reader, const std::string& folder, const std::string& name,
                       const nlohmann::json& entry, const std::string& path) {
  const std::string what = fmt::format("model '{}': {} '{}'", path, folder, name);
  const auto& meta = entry.at("tensor_meta");
  const auto dtype = export_dtype(meta.at("dtype").get<int>());
  if (!dtype) throw TrialInputError(fmt::format("{} has dtype code {}, which this version does not read", what, meta.at("dtype").dump()));
  if (meta.contains("layout") && meta["layout"].get<int>() != 7)
    throw TrialInputError(fmt::format("{} is not a strided tensor (layout {}), which this version does not read", what, meta["layout"].dump()));
  std::vector<int64_t> sizes, strides;
  for (const auto& s : meta.at("sizes")) sizes.push_back(as_int(s, what + " size"));
  for (const auto& s : meta.at("strides")) strides.push_back(as_int(s, what + " stride"));
  const int64_t offset = meta.contains("storage_offset") ? as_int(meta["storage_offset"], what + " offset") : 0;
  if (sizes.size() != strides.size()) throw TrialInputError(fmt::format("{} has {} sizes but {} strides", what, sizes.size(), strides.size()));
  const std::string record = fmt::format("data/{}/{}", folder, entry.at("path_name").get<std::string>());
  if (!reader.hasRecord(record)) throw TrialInputError(fmt::format("{}: the archive has no record {}", what, record));
  auto [data, bytes] = reader.getRecord(record);
  // The last element it reaches: offset + sum((size - 1) * stride), each term checked.
  const int64_t item = static_cast<int64_t>(c10::elementSize(*dtype));
  bool empty = false;
  int64_t last = offset, step = 0;
  bool bad = offset < 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0 || strides[i] < 0) bad = true;
    if (sizes[i] == 0) empty = true;
    if (sizes[i] > 0 && (__builtin_mul_overflow(sizes[i] - 1, strides[i], &step) || __builtin_add_overflow(last, step, &last)))
      bad = true;
  }
  int64_t need = 0;
  if (bad || __builtin_mul_overflow(last + 1, item, &need) || (!empty && static_cast<uint64_t>(need) > bytes))
    throw TrialInputError(fmt::format("{} reaches past its record ({} bytes)", what, bytes));
  if (empty) return at::empty(sizes, at::TensorOptions().dtype(*dtype));
  const at::Tensor view = at::from_blob(static_cast<char*>(data.get()) + offset * item, sizes, strides,
                                        at::TensorOptions().dtype(*dtype));
  return view.clone();
}

// Parameters, buffers and constants in the archive, in its config's order.
std::vector<std::pair<std::string, at::Tensor>> read_weights(const std::string& path) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  caffe2::serialize::PyTorchStreamReader reader(path);
  for (const std::string folder : {"weights", "constants"}) {
    const std::string config = fmt::format("data/{}/model_{}_config.json", folder, folder);
    if (!reader.hasRecord(config)) continue;
    auto [data, size] = reader.getRecord(config);
    const auto j = nlohmann::json::parse(static_cast<const char*>(data.get()), static_cast<const char*>(data.get()) + size);
    for (const auto& [name, entry] : j.at("config").items()) {
      if (entry.value("use_pickle", false))
        throw TrialInputError(fmt::format("model '{}': {} '{}' is pickled (a tensor subclass or an opaque object), which "
                                          "this version does not read", path, folder, name));
      const std::string kind = folder == "constants" ? "constant" : entry.value("is_param", false) ? "param" : "buffer";
      out.emplace_back(kind + "/" + name, read_tensor(reader, folder, name, entry, path));
    }
  }
  return out;
}

// The archive's models/model.json, parsed.
nlohmann::json model_json(const std::string& path) {
  caffe2::serialize::PyTorchStreamReader reader(path);
  auto [data, size] = reader.getRecord("models/model.json");
  return nlohmann::json::parse(static_cast<const char*>(data.get()), static_cast<const char*>(data.get()) + size);
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

// A node of the exported graph, as the trace names it.
struct GraphNode {
  std::string op;      // "aten::linear"
  std::string name;    // the node's name in the graph ("linear_1")
  std::string module;  // innermost module path from nn_module_stack ("fc"), "" for the top
  std::string source;  // the program's line from stack_trace ("model.py:26")
};

bool torch_file(const std::string& file) {
  return file.find("/torch/") != std::string::npos || file.find("site-packages") != std::string::npos;
}

// The graph's ATen nodes in order, with their metadata.
std::vector<GraphNode> graph_nodes(const nlohmann::json& j) {
  std::vector<GraphNode> out;
  for (const auto& node : j.at("graph_module").at("graph").at("nodes")) {
    const std::string target = node.value("target", std::string());
    if (target.rfind("torch.ops.", 0) != 0) continue;
    const std::string rest = target.substr(10);
    const size_t d1 = rest.find('.'), d2 = rest.find('.', d1 == std::string::npos ? 0 : d1 + 1);
    if (d1 == std::string::npos) continue;
    GraphNode g;
    g.op = rest.substr(0, d1) + "::" + rest.substr(d1 + 1, d2 == std::string::npos ? std::string::npos : d2 - d1 - 1);
    g.name = node.value("name", std::string());
    const nlohmann::json meta = node.contains("metadata") && node["metadata"].is_object() ? node["metadata"] : nlohmann::json::object();
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

class ExportTarget final : public Target {
 public:
  std::string kind() const override { return "a torch.export archive"; }
  Tracing tracing() const override { return Tracing::OpByOp; }

  std::vector<std::string> load(const TrialSpec& spec, const c10::Device& device) override {
    if (spec.mode == "train")
      throw TrialInputError(
          "--mode train needs autograd, which the torch.export runtime (NativeRT) does not have: audit training with a "
          "TorchScript archive of the model (torch.jit.script, or torch.jit.trace after model.train())",
          "usage");
    if (!device.is_cpu())
      throw TrialInputError("this version runs torch.export archives on the CPU only: use --device cpu", "usage");
    try {
      const nlohmann::json graph = model_json(spec.model);
      if (const std::string schema = export_schema_problem(graph); !schema.empty())
        throw TrialInputError(fmt::format("model '{}' {}", spec.model, schema));
      names_ = user_input_names(graph);
      nodes_ = graph_nodes(graph);
      graph_digest_ = text_digest(canonical_export_graph(graph));
      weights_ = read_weights(spec.model);
      runner_ = std::make_unique<torch::nativert::ModelRunnerHandle>(spec.model, "model");
    } catch (const TrialInputError&) {
      throw;
    } catch (const std::exception& e) {
      throw TrialInputError(fmt::format("model '{}' is a torch.export archive that cannot be loaded: {}", spec.model, error_text(e)));
    }
    inputs_ = load_inputs(spec, device);
    if (inputs_.kwargs.empty() && inputs_.args.size() != names_.size()) {
      if (inputs_.args.empty())
        throw TrialInputError(fmt::format("the exported program takes {} input{} ({}), but none was given: pass --input FILE "
                                          "(a torch.save file) or --shape SIZES per input",
                                          names_.size(), names_.size() == 1 ? "" : "s", fmt::join(names_, ", ")),
                              "usage");
      throw TrialInputError(fmt::format("the exported program takes {} input{} ({}), but {} {} given", names_.size(),
                                        names_.size() == 1 ? "" : "s", fmt::join(names_, ", "), inputs_.args.size(),
                                        inputs_.args.size() == 1 ? "was" : "were"));
    }
    return inputs_.descriptions;
  }

  std::vector<std::string> input_names() const override {
    if (!inputs_.kwargs.empty() || inputs_.args.size() != inputs_.descriptions.size()) return {};
    return names_.size() == inputs_.args.size() ? names_ : std::vector<std::string>{};
  }

  std::vector<std::string> check() override {
    try {
      (void)runner_->run(inputs_.args, inputs_.kwargs);
    } catch (const std::exception& e) {
      throw TrialInputError(
          fmt::format("the exported program rejects the inputs ({}): {}", fmt::join(inputs_.descriptions, ", "), error_text(e)));
    }
    return {};
  }

  Identity identity() const override { return {weights_identity(weights_), graph_digest_}; }

  void run(Recorder& rec, std::vector<report::TensorDigest>&) override {
    for (const auto& [name, t] : weights_) rec.add(name, t);
    record_value(rec, "output", runner_->run(inputs_.args, inputs_.kwargs));
  }

  // The top-level forward records are the graph's nodes in order, except where NativeRT runs a
  // node as a static CPU kernel: that bypasses the dispatcher, and what the kernel calls inside
  // (aten::sum and aten::div_ for a mean, aten::empty and aten::zero_ for zeros) shows instead.
  // Records and nodes are aligned by the longest common subsequence of their ops, a match of an op
  // that kernels use as a helper counting half, so that a mean's inner aten::sum does not take the
  // graph's own sum node. A matched record gets its node's module path and source line with the
  // node's name; a record between two matches is named "inside" the nodes between them.
  std::vector<std::string> annotate(trace::Trace& t) const override {
    std::vector<trace::Record*> top;
    for (auto& r : t.records)
      if (r.thread == 0 && r.kind == "op" && r.phase == "forward" && r.parent == -1) top.push_back(&r);
    const size_t R = top.size(), N = nodes_.size();
    static const std::set<std::string> helpers = {"aten::sum", "aten::div_", "aten::mul_", "aten::add_", "aten::fill_",
                                                  "aten::zero_", "aten::copy_", "aten::empty", "aten::t", "aten::mm",
                                                  "aten::addmm", "aten::as_strided", "aten::view", "aten::reshape"};
    std::vector<int> match(R, -1);
    if (R * N <= size_t{50'000'000}) {
      std::vector<std::vector<int>> best(R + 1, std::vector<int>(N + 1, 0));
      const auto weight = [&](size_t i, size_t k) { return top[i]->op != nodes_[k].op ? -1 : helpers.count(nodes_[k].op) ? 1 : 2; };
      for (size_t i = R; i-- > 0;)
        for (size_t k = N; k-- > 0;) {
          int b = std::max(best[i + 1][k], best[i][k + 1]);
          if (const int w = weight(i, k); w > 0) b = std::max(b, best[i + 1][k + 1] + w);
          best[i][k] = b;
        }
      for (size_t i = 0, k = 0; i < R && k < N;) {
        if (const int w = weight(i, k); w > 0 && best[i][k] == best[i + 1][k + 1] + w) {
          match[i++] = static_cast<int>(k++);
        } else if (best[i][k] == best[i + 1][k]) {
          ++i;
        } else {
          ++k;
        }
      }
    }
    std::vector<bool> seen(N, false);
    int previous = -1;  // the last matched node before the record
    for (size_t i = 0; i < R; ++i) {
      if (match[i] >= 0) {
        const GraphNode& g = nodes_[static_cast<size_t>(match[i])];
        top[i]->module = g.module;
        top[i]->source = g.source.empty() ? fmt::format("node {}", g.name) : fmt::format("{} (node {})", g.source, g.name);
        seen[static_cast<size_t>(match[i])] = true;
        previous = match[i];
        continue;
      }
      // Between matches: inside the nodes after the previous match and before the next one.
      int following = static_cast<int>(N);
      for (size_t j = i + 1; j < R; ++j)
        if (match[j] >= 0) {
          following = match[j];
          break;
        }
      const int first = previous + 1, last = following - 1;
      if (first > last) continue;
      const GraphNode& g = nodes_[static_cast<size_t>(first)];
      if (first == last) {
        top[i]->module = g.module;
        top[i]->source = fmt::format("{}inside node {}", g.source.empty() ? "" : g.source + ", ", g.name);
      } else {
        top[i]->source = fmt::format("inside nodes {} to {}", g.name, nodes_[static_cast<size_t>(last)].name);
      }
    }
    std::set<std::string> hidden;
    size_t count = 0;
    for (size_t k = 0; k < N; ++k)
      if (!seen[k]) {
        ++count;
        hidden.insert(nodes_[k].op);
      }
    if (count == 0) return {};
    // What it means for the user, in a line: which nodes the trace cannot name, and where a
    // divergence inside one shows instead. (NativeRT's static CPU kernels bypass the dispatcher;
    // the wheel's ModelRunnerHandle has no switch to turn them off.)
    return {fmt::format("{} of the graph's {} nodes ({}) run as fused kernels that the trace cannot see into: a divergence "
                        "inside one is named at the nearest traced op (\"inside node ...\"), not at the node itself",
                        count, N, fmt::join(hidden, ", "))};
  }


 private:
  std::vector<GraphNode> nodes_;
  std::vector<std::string> names_;
  std::vector<std::pair<std::string, at::Tensor>> weights_;
  std::string graph_digest_;
  std::unique_ptr<torch::nativert::ModelRunnerHandle> runner_;
  Inputs inputs_;
};

}  // namespace

std::unique_ptr<Target> open_export_target() { return std::make_unique<ExportTarget>(); }

}  // namespace ra::targets
