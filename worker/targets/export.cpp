// SPDX-License-Identifier: Apache-2.0
// torch.export archives (torch.export.save, a .pt2 with models/model.json). Two runtimes:
//   * the interpreter (export_program.h), the default on every torch: each node's op called
//     through the ATen dispatcher as `torch.export.load(p).module()(*inputs)` does in Python, so
//     the outputs are the user's, bit for bit, and --trace names every node;
//   * LibTorch's NativeRT (torch::nativert::ModelRunnerHandle, model name "model"), only where the
//     build found it (RA_HAVE_NATIVERT: torch 2.11 exports it, later wheels do not), chosen with
//     REPRO_AUDIT_EXPORT_RUNTIME=nativert. Its static CPU kernels differ from eager in places (the
//     GUIDE, "Export archives"), it has no autograd and its trace misses the fused nodes.
// What a trial records:
//   * the archive's parameters, buffers and constants ("param/fc.weight", "buffer/...",
//     "constant/..."), read from its data/weights and data/constants records with their
//     tensor_meta, each checked against its record's size (export_archive.h, which checks the
//     zip itself first);
//   * every output ("output", "output/0", "output/logits" ...): a dict, a dataclass or a
//     transformers ModelOutput is named by its keys (export_program.h reads the output's tree);
//   * in train mode, per step the loss and the parameters' gradients, then the parameters.
// The report names the runtime (package "runtime").
#include "worker/targets/call_state.h"
#include "worker/targets/export_archive.h"
#include "worker/targets/export_program.h"
#include "worker/targets/inputs.h"
#include "worker/targets/target.h"

#include "audit/baseline/identity.h"
#include "audit/common/errors.h"
#include "worker/runtime/export_graph.h"
#include "worker/trace/tracer.h"

#include <caffe2/serialize/inline_container.h>
#ifdef RA_HAVE_NATIVERT
#include <torch/csrc/api/include/torch/nativert/ModelRunnerHandle.h>
#endif
#include <torch/script.h>

#include <fmt/format.h>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <set>

#include <cstdlib>
#include <limits>
#include <unordered_map>

namespace ra::targets {
namespace {

// The runtime REPRO_AUDIT_EXPORT_RUNTIME names: "interpreter" (the default) or "nativert".
std::string export_runtime() {
  const char* env = std::getenv("REPRO_AUDIT_EXPORT_RUNTIME");
  const std::string r = env && *env ? env : "interpreter";
  if (r == "interpreter") return r;
  if (r == "nativert") {
#ifdef RA_HAVE_NATIVERT
    return r;
#else
    throw TrialInputError(
        "REPRO_AUDIT_EXPORT_RUNTIME=nativert: this build's torch has no NativeRT (torch 2.11 exports it, later "
        "releases do not): unset it to use the interpreter",
        "usage");
#endif
  }
  throw TrialInputError(
      fmt::format("REPRO_AUDIT_EXPORT_RUNTIME='{}': the runtimes are interpreter and nativert", excerpt(r)), "usage");
}

class ExportTarget final : public Target {
 public:
  std::string kind() const override { return "a torch.export archive"; }
  Tracing tracing() const override { return Tracing::OpByOp; }

  std::vector<std::string> load(const TrialSpec& spec, const c10::Device& device) override {
    runtime_ = export_runtime();
    spec_ = spec;
    if (spec.mode == "train" && runtime_ == "nativert")
      throw TrialInputError(
          "--mode train needs autograd, which the torch.export runtime NativeRT does not have: use the interpreter "
          "(unset REPRO_AUDIT_EXPORT_RUNTIME)",
          "usage");
    if (spec.precision == "float64" && runtime_ == "nativert")
      throw TrialInputError(
          "the float64 referee runs torch.export archives through the interpreter only (unset "
          "REPRO_AUDIT_EXPORT_RUNTIME)");
    if (!device.is_cpu() && runtime_ == "nativert")
      throw TrialInputError("NativeRT runs torch.export archives on the CPU only: use --device cpu", "usage");
    // Checked before anything runs, as `lint` checks it (export_program.h). Under NativeRT the
    // program is not built: NativeRT's own loader reads the graph.
    const Precision precision = spec.precision == "float64" ? Precision::Float64 : Precision::AsExported;
    CheckedExport checked = runtime_ == "interpreter"
                                ? open_export_archive(spec.model, device, WeightData::Read, precision)
                                : CheckedExport{read_export_archive(spec.model), nullptr};
    ExportArchive& archive = checked.archive;
    names_ = std::move(archive.input_names);
    nodes_ = std::move(archive.nodes);
    graph_digest_ = std::move(archive.graph_digest);
    weights_ = std::move(archive.weights);
    identity_ = {weights_identity(weights_), graph_digest_};
    const std::vector<InputHint> hints = input_hints(archive.model);  // --shape's dtypes and token ranges
    if (runtime_ == "interpreter") {
      program_ = std::move(checked.program);
      // The weights as the program holds them (on the device, requiring grad as exported), so that
      // what is recorded is what runs, and a mutated buffer is seen.
      std::unordered_map<std::string, at::Tensor> held;
      for (auto& [n, t] : program_->weights()) held.emplace(n, t);
      for (auto& [n, t] : weights_)
        if (const auto it = held.find(n); it != held.end()) t = it->second;
      if (spec.mode == "train" && program_->inference_only())
        throw TrialInputError(
            "--mode train: the exported program has no parameter that requires grad (its parameters were frozen, "
            "requires_grad_(False), when it was exported): export it from a model whose parameters require grad",
            "usage");
    }
#ifdef RA_HAVE_NATIVERT
    if (runtime_ == "nativert") {
      try {
        runner_ = std::make_unique<torch::nativert::ModelRunnerHandle>(spec.model, "model");
      } catch (const TrialInputError&) {
        throw;
      } catch (const std::exception& e) {
        throw TrialInputError(
            fmt::format("model '{}' is a torch.export archive that cannot be loaded: {}", spec.model, error_text(e)));
      }
    }
#endif
    inputs_ = load_inputs(spec, device, hints);
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
    if (!inputs_.kwargs.empty() && program_) {  // keyword inputs in the signature's order
      std::vector<c10::IValue> args;
      for (const auto& n : names_) {
        const auto it = inputs_.kwargs.find(n);
        if (it == inputs_.kwargs.end())
          throw TrialInputError(fmt::format("the input file has no '{}', an input of the exported program ({})",
                                            excerpt(n), fmt::join(names_, ", ")));
        args.push_back(it->second);
      }
      inputs_.args = std::move(args);
      inputs_.kwargs.clear();
    }
    return inputs_.descriptions;
  }

  std::vector<std::string> input_names() const override {
    if (!inputs_.kwargs.empty() || inputs_.args.size() != inputs_.descriptions.size()) return {};
    return names_.size() == inputs_.args.size() ? names_ : std::vector<std::string>{};
  }

  std::map<std::string, std::string> package() const override { return {{"runtime", runtime_}}; }

  std::vector<std::string> check() override {
    c10::IValue out;
    try {
      out = forward(inputs_.args);
    } catch (const TrialInputError& e) {
      throw TrialInputError(fmt::format("the exported program rejects the inputs ({}): {}",
                                        fmt::join(inputs_.descriptions, ", "), e.what()));
    } catch (const std::exception& e) {
      throw TrialInputError(fmt::format("the exported program rejects the inputs ({}): {}",
                                        fmt::join(inputs_.descriptions, ", "), error_text(e)));
    }
    check_output(out);
    if (spec_.mode == "train") (void)train_loss(forward(inputs_.args));
    return {};
  }

  Identity identity() const override { return identity_; }

  std::vector<report::TensorDigest> state_digests() override {
    Recorder rec(false);
    for (const auto& [name, t] : weights_) rec.add(name, t);
    record_inputs(rec, inputs_.args, names_);
    return std::move(rec.tensors());
  }

  c10::IValue call(const std::vector<c10::IValue>& args) override { return forward(args); }

  void run(Recorder& rec, std::vector<report::TensorDigest>&) override {
    for (const auto& [name, t] : weights_) rec.add(name, t);
    if (spec_.mode != "train") {
      trace::set_phase("forward", 0);
      record_value(rec, "output", forward(inputs_.args));
      return;
    }
    // Train: per step, a forward, the loss (a scalar output, else the sum of the outputs), the
    // gradients of the parameters, and a plain SGD step; the parameters after the last step.
    const auto params = program_->parameters();
    const double lr = spec_.lr > 0 ? spec_.lr : 0.01;
    for (int step = 0; step < std::max(1, spec_.steps); ++step) {
      const std::string prefix = fmt::format("step{}/", step);
      for (const auto& [n, p] : params) p.mutable_grad() = at::Tensor();
      trace::set_phase("forward", step);
      const at::Tensor loss = train_loss(forward(inputs_.args));
      rec.add(prefix + "loss", loss.detach());
      trace::set_phase("backward", step);
      loss.backward();
      trace::set_phase("optimizer", step);
      at::NoGradGuard no_grad;
      for (const auto& [n, p] : params) {
        if (!p.grad().defined()) continue;
        rec.add(prefix + "grad/" + n, p.grad());
        p.sub_(p.grad(), lr);
      }
    }
    for (const auto& [n, p] : params) rec.add("final/param/" + n, p.detach());
  }

  // NativeRT's trace: the top-level forward records are the graph's nodes in order, except where NativeRT runs a
  // node as a static CPU kernel: that bypasses the dispatcher, and what the kernel calls inside
  // (aten::sum and aten::div_ for a mean, aten::empty and aten::zero_ for zeros) shows instead.
  // Records and nodes are aligned by the longest common subsequence of their ops, a match of an op
  // that kernels use as a helper counting half, so that a mean's inner aten::sum does not take the
  // graph's own sum node. A matched record gets its node's module path and source line with the
  // node's name; a record between two matches is named "inside" the nodes between them.
  std::vector<std::string> annotate(trace::Trace& t) const override {
    return runtime_ == "interpreter" ? annotate_interpreter(t) : annotate_nativert(t);
  }

 private:
  c10::IValue forward(const std::vector<c10::IValue>& args) {
#ifdef RA_HAVE_NATIVERT
    if (runner_) return runner_->run(args, {});
#endif
    return program_->run(args);
  }

  // The interpreter's trace: every top-level forward record is one dispatched node, in order (the
  // interpreter calls nothing else through the dispatcher during the forward), so each record is
  // named by its node: module path, source line and node name. Records are matched by op, so a
  // record the tracer keeps outside the forward's nodes cannot shift the names.
  std::vector<std::string> annotate_interpreter(trace::Trace& t) const {
    std::unordered_map<size_t, const GraphNode*> by_index;
    for (const auto& g : nodes_) by_index.emplace(g.index, &g);
    std::vector<const GraphNode*> order;
    for (const size_t i : program_->dispatched_nodes()) {
      const auto it = by_index.find(i);
      if (it != by_index.end()) order.push_back(it->second);
    }
    size_t next = 0;
    for (auto& r : t.records) {
      if (r.thread != 0 || r.kind != "op" || r.phase != "forward" || r.parent != -1) continue;
      // The program runs again in each traced forward (train steps): it starts over at its first node.
      size_t k = next;
      while (k < order.size() && order[k]->op != r.op) ++k;
      if (k == order.size()) {
        if (order.empty() || order[0]->op != r.op) continue;  // not a node's (a train step's loss)
        k = 0;
      }
      const GraphNode& g = *order[k];
      r.module = g.module;
      r.source = g.source.empty() ? fmt::format("node {}", g.name) : fmt::format("{} (node {})", g.source, g.name);
      next = k + 1;
    }
    return {};
  }

  std::vector<std::string> annotate_nativert(trace::Trace& t) const {
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

  TrialSpec spec_;
  std::string runtime_ = "interpreter";
  std::vector<GraphNode> nodes_;
  std::vector<std::string> names_;
  std::vector<std::pair<std::string, at::Tensor>> weights_;
  std::string graph_digest_;
  Identity identity_;
  std::unique_ptr<ExportProgram> program_;
#ifdef RA_HAVE_NATIVERT
  std::unique_ptr<torch::nativert::ModelRunnerHandle> runner_;
#endif
  Inputs inputs_;
};

}  // namespace

std::unique_ptr<Target> open_export_target() { return std::make_unique<ExportTarget>(); }

}  // namespace ra::targets
