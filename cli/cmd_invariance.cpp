// SPDX-License-Identifier: Apache-2.0
// `repro-audit invariance MODEL --input rows.pt ...`: does a row's result depend on the batch it
// shares? The sweep and its analysis are audit/invariance/invariance_audit.h's; the report is a
// normal one (reports/invariance_model.h).
#include "audit/common/errors.h"
#include "audit/invariance/invariance_audit.h"
#include "cli/command_table.h"
#include "cli/common.h"
#include "cli/invariance_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <memory>

namespace ra::cli {
namespace {

struct InvarianceArgs : AuditArgs {
  std::string model;
  std::string input;
  int rows = 4;
  std::string filler = "input";
  std::string sizes = "auto";
  int64_t budget = 1024;
  std::vector<std::string> batch_dims;
  bool trace = false;
  bool no_fix_search = false;
  std::string axis = "batch";
  std::string pad_others;  // "", "right" or "left"
  int draft = 4;
  int positions = 3;
  std::string referee = "cpu";
};

// --axis and --pad-others: pad-others alone chooses the pad axis; --axis pad pads on the right
// unless --pad-others says left. --sizes and --shard split batch sizes, which the verify axis has
// none of; --draft and --positions belong to it alone.
Axis parse_axis(const InvarianceArgs& a, const CLI::App& sub) {
  const bool padded = !a.pad_others.empty();
  if (a.axis == "batch" && sub.count("--axis") == 0 && padded)
    return a.pad_others == "left" ? Axis::PadLeft : Axis::PadRight;
  if (a.axis != "pad" && padded)
    throw UsageError(
        fmt::format("--pad-others pads the other rows of a batch: it goes with --axis pad, not --axis {}", a.axis));
  if (a.axis != "verify" && sub.count("--draft") > 0)
    throw UsageError(
        fmt::format("--draft sets the verify blocks' draft tokens: it goes with --axis verify, not --axis {}", a.axis));
  if (a.axis != "verify" && sub.count("--positions") > 0)
    throw UsageError(fmt::format(
        "--positions sets the places a verify block is measured at: it goes with --axis verify, not --axis {}",
        a.axis));
  if (a.axis == "pad") return a.pad_others == "left" ? Axis::PadLeft : Axis::PadRight;
  if (a.axis == "batch") return Axis::Batch;
  if (a.sizes != "auto")
    throw UsageError("--sizes sets batch sizes; --axis verify sweeps verify blocks of 1…draft+1 tokens: give --draft");
  if (sub.count("--shard") > 0 || sub.count("--shards") > 0)
    throw UsageError("--axis verify sweeps a few block lengths in one process: run it without --shard");
  return Axis::Verify;
}

std::optional<int64_t> whole_number(const std::string& text) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// --sizes: "auto" (empty result), or a list of batch sizes from 1 to the budget, each item a size
// or a range A..B (every size from A to B: 1..16,32,64).
std::vector<int64_t> parse_sizes(const std::string& text, int64_t budget) {
  if (text == "auto") return {};
  const auto within_budget = [budget](int64_t v) {
    if (v > budget)
      throw UsageError(fmt::format("--sizes {} exceeds the budget of {}: give sizes up to {}, or raise --budget", v,
                                   budget, budget));
  };
  std::vector<int64_t> sizes;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) continue;
    if (const size_t dots = item.find(".."); dots != std::string::npos) {
      const auto low = whole_number(item.substr(0, dots)), high = whole_number(item.substr(dots + 2));
      if (!low || !high || *low < 1 || *high < *low)
        throw UsageError(
            fmt::format("--sizes takes ranges A..B with 1 <= A <= B (e.g. 1..16); '{}' is not one", excerpt(item)));
      within_budget(*high);
      for (int64_t v = *low; v <= *high; ++v) sizes.push_back(v);
      continue;
    }
    const auto v = whole_number(item);
    if (!v || *v < 1) {
      // "1-16" and "4…257" (as the classes print) mean a range, written A..B here.
      const bool range = item.find('-', 1) != std::string::npos || item.find("\u2026") != std::string::npos;
      throw UsageError(fmt::format("--sizes takes batch sizes of 1 or more, ranges A..B, or auto; '{}' is not one{}",
                                   excerpt(item), range ? " (write a range as A..B, e.g. 1..16)" : ""));
    }
    within_budget(*v);
    sizes.push_back(*v);
  }
  if (sizes.empty()) throw UsageError("--sizes is empty: give batch sizes (e.g. --sizes 1..8,16,64) or auto");
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

std::vector<int64_t> parse_batch_dims(const std::vector<std::string>& items) {
  std::vector<int64_t> dims;
  for (const auto& item : items) {
    const auto v = whole_number(item);
    if (item == "none")
      dims.push_back(-1);
    else if (v && *v >= 0)
      dims.push_back(*v);
    else
      throw UsageError(
          fmt::format("--batch-dim takes a dimension (0, 1, ...) or none per input; '{}' is neither", excerpt(item)));
  }
  return dims;
}

int execute_invariance(const InvarianceArgs& a, const GlobalOptions& global, const CLI::App& sub) {
  invariance::InvarianceOptions o;
  o.axis = parse_axis(a, sub);
  o.draft = a.draft;
  o.positions = a.positions;
  o.session.device = Device::parse(a.device);  // a usage error for anything but cpu, cuda, cuda:N
  fill_session(o.session, a, global, {"default"});
  o.model = a.model;
  o.input = a.input;
  o.rows = a.rows;
  o.filler = a.filler == "random" ? Filler::Random : Filler::Input;
  o.budget = a.budget;
  o.sizes = parse_sizes(a.sizes, a.budget);
  o.sizes_text = a.sizes;
  o.batch_dims = parse_batch_dims(a.batch_dims);
  o.shard = shard_option(a);
  // --trace compares the anchor alone with the smallest batch of another class of the whole sweep,
  // which a shard holds only in part, and merge runs no worker: it is left to an unsharded run.
  if (o.shard && a.trace)
    throw UsageError("--trace needs every size of a configuration in one process: run it without --shard");
  o.trace = a.trace;
  o.fix_search = !a.no_fix_search;
  o.referee = parse_referee_mode(a.referee);
  const ReportJudges judges =
      invariance_judges(a, o.session.device, o.rows, a.filler, axis_name(o.axis), config_names(o.session.configs));
  return finish_report(invariance::run_invariance(o), a.out, judges);
}

}  // namespace

Action attach_invariance(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<InvarianceArgs>();
  sub.add_option("model", a->model,
                 "TorchScript archive, torch.export archive (with a dynamic batch) or AOTInductor package")
      ->required();
  sub.add_option("--input", a->input,
                 "torch.save file of the rows: a tensor, or a tuple or list of tensors (one per input)")
      ->required();
  sub.add_option("--rows", a->rows, "anchor rows: the input's first R rows, each compared alone and inside batches")
      ->check(integer_in(1, 4096))
      ->capture_default_str();
  sub.add_option("--filler", a->filler,
                 "rows that fill a batch: the input's other rows, or seeded random rows of the same shape")
      ->check(CLI::IsMember({"input", "random"}))
      ->capture_default_str();
  sub.add_option("--sizes", a->sizes,
                 "batch sizes and ranges (1..8,16,64), or auto: 1..9, powers of two and their +-1 up to --budget, then "
                 "bisection between neighbouring sizes that disagree")
      ->capture_default_str();
  sub.add_option("--budget", a->budget, "the largest batch size tried")
      ->check(integer_in(1, static_cast<uint64_t>(invariance::kMaxBudget)))
      ->capture_default_str();
  sub.add_option("--batch-dim", a->batch_dims,
                 "per input: its batch dimension, or none for an input passed whole (default 0)")
      ->delimiter(',');
  sub.add_option("--axis", a->axis,
                 "what varies around an anchor row: batch (the batch size and the row's place in it), pad (the same, "
                 "with the other rows padded through the attention_mask) or verify (a token at its decode step and "
                 "inside speculative decoding's verify blocks of 2…draft+1 tokens)")
      ->check(CLI::IsMember({"batch", "pad", "verify"}))
      ->capture_default_str();
  sub.add_option("--pad-others", a->pad_others,
                 "the side the other rows are padded on (--axis pad; given alone, it chooses that axis): right or "
                 "left (default right)")
      ->check(CLI::IsMember({"right", "left"}));
  sub.add_option("--draft", a->draft, "--axis verify: the most draft tokens k of a verify block (blocks of 2…k+1)")
      ->check(integer_in(1, 64))
      ->capture_default_str();
  sub.add_option("--positions", a->positions,
                 "--axis verify: the places the longest block is measured at; every block inside the rows' last "
                 "draft+positions tokens is measured")
      ->check(integer_in(1, 1024))
      ->capture_default_str();
  sub.add_option("--device", a->device, "cpu, cuda or cuda:N")->capture_default_str();
  sub.add_flag("--trace", a->trace,
               "name the first op whose anchor-row slice differs between the anchor alone and the smallest batch of "
               "another class while its inputs' slices matched, or where the batch dimension cannot be followed");
  sub.add_option(
         "--configs", a->configs,
         "configurations, one worker each: presets (default, det, strict, threads-1, threads-N, mkl-cbwr, ...) or "
         "key=value lists joined by '+'; default: default")
      ->delimiter(',');
  sub.add_flag("--no-fix-search", a->no_fix_search,
               "when the first configuration is variant, do not search for a switch that makes it invariant");
  add_referee_option(sub, a->referee);
  add_output_options(sub, a->out, {.junit = "one test case per configuration"});
  sub.add_option("--jobs,-j", a->jobs, "configurations run at once (at most the number of CPUs)")
      ->check(integer_in(1, 4096))
      ->capture_default_str();
  sub.add_option("--timeout", a->timeout, "seconds before a configuration's worker is killed and recorded as crashed")
      ->check(seconds_up_to(kMaxTimeoutSeconds))
      ->capture_default_str();
  sub.add_option("--seed", a->seed, "seed of every generator and of random filler rows")
      ->check(integer_in(0, UINT64_MAX))
      ->capture_default_str();
  sub.add_option("--load-library", a->libraries, "shared library with custom ops the model needs (repeatable)");
  add_invariance_fleet_options(sub, *a);
  return [a, &global, &sub] { return execute_invariance(*a, global, sub); };
}

}  // namespace ra::cli
