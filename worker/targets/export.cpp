// SPDX-License-Identifier: Apache-2.0
// torch.export archives (torch.export.save, a .pt2 with models/model.json), run by LibTorch's
// NativeRT (torch::nativert::ModelRunnerHandle, model name "model"). What a trial records:
//   * the archive's parameters, buffers and constants ("param/fc.weight", "buffer/...",
//     "constant/..."), read from its data/weights and data/constants records with their
//     tensor_meta, each checked against its record's size (export_archive.h, which checks the
//     zip itself first);
//   * every output ("output", "output/0", ...).
// NativeRT runs under inference mode and has no autograd, so --mode train is a usage error; its
// CPU executor calls some kernels directly rather than through the dispatcher, so --trace would
// miss ops: this version audits export archives without an op trace, on the CPU.
#include "worker/targets/export_archive.h"
#include "worker/targets/inputs.h"
#include "worker/targets/target.h"

#include "audit/baseline/identity.h"
#include "audit/common/errors.h"
#include "worker/runtime/export_graph.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/api/include/torch/nativert/ModelRunnerHandle.h>
#include <torch/script.h>

#include <fmt/format.h>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <set>

#include <limits>

namespace ra::targets {
namespace {

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
    ExportArchive archive = read_export_archive(spec.model);  // checked before NativeRT opens it
    names_ = std::move(archive.input_names);
    nodes_ = std::move(archive.nodes);
    graph_digest_ = std::move(archive.graph_digest);
    weights_ = std::move(archive.weights);
    try {
      runner_ = std::make_unique<torch::nativert::ModelRunnerHandle>(spec.model, "model");
    } catch (const TrialInputError&) {
      throw;
    } catch (const std::exception& e) {
      throw TrialInputError(
          fmt::format("model '{}' is a torch.export archive that cannot be loaded: {}", spec.model, error_text(e)));
    }
    inputs_ = load_inputs(spec, device);
    if (inputs_.kwargs.empty() && inputs_.args.size() != names_.size()) {
      if (inputs_.args.empty())
        throw TrialInputError(
            fmt::format("the exported program takes {} input{} ({}), but none was given: pass --input FILE "
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
      throw TrialInputError(fmt::format("the exported program rejects the inputs ({}): {}",
                                        fmt::join(inputs_.descriptions, ", "), error_text(e)));
    }
    return {};
  }

  Identity identity() const override { return {weights_identity(weights_), graph_digest_}; }

  c10::IValue call(const std::vector<c10::IValue>& args) override { return runner_->run(args, {}); }

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
    static const std::set<std::string> helpers = {
        "aten::sum",   "aten::div_", "aten::mul_", "aten::add_",  "aten::fill_",      "aten::zero_", "aten::copy_",
        "aten::empty", "aten::t",    "aten::mm",   "aten::addmm", "aten::as_strided", "aten::view",  "aten::reshape"};
    std::vector<int> match(R, -1);
    if (R * N <= size_t{50'000'000}) {
      std::vector<std::vector<int>> best(R + 1, std::vector<int>(N + 1, 0));
      const auto weight = [&](size_t i, size_t k) {
        return top[i]->op != nodes_[k].op ? -1 : helpers.count(nodes_[k].op) ? 1 : 2;
      };
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
        top[i]->source =
            g.source.empty() ? fmt::format("node {}", g.name) : fmt::format("{} (node {})", g.source, g.name);
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
    return {
        fmt::format("{} of the graph's {} nodes ({}) run as fused kernels that the trace cannot see into: a divergence "
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
