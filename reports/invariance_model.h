// SPDX-License-Identifier: Apache-2.0
// The report model of `repro-audit invariance` (batch invariance): does a row's result depend on the
// batch it shares? Its structs, and the functions that write and read them (invariance_json.cpp)
// and render them (invariance_render.cpp), sit together so that the concern touches one header.
//
// What is measured (worker/invariance/batch_sweep.h): per configuration, one worker calls the
// model with each anchor row alone (batch size 1, the reference), then for each batch size M with
// the anchors at the start, in the middle and at the end of the batch, in a permuted batch, and the
// start batch a second time (warm-up). Each call's anchor-row slices of every output are digested on
// the model's device and compared with the reference. What is derived (audit/invariance/): the
// classes of sizes that give identical bits, position and warm-up dependence, advice.
//
// Ordering: cells by size, then (verify) start, then placement in kPlacements order; rows by anchor, then output. Every
// figure that depends on the clock sits in `InvarianceTiming`, which renderers keep apart.
#pragma once

#include "reports/core_model.h"
#include "reports/referee_model.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ra::report {

// reports/model.h includes this header for Report's member; both are complete wherever they are used.
struct SwitchValue;
struct Report;

// Placements in their fixed order: "start" (the anchors first; at size 1 the reference itself),
// "middle", "end", "permuted" (a seeded permutation of the start batch) and "second-call" (the
// start batch called again in the same process, compared with its first call, not the reference).
// The verify axis (Invariance::axis) has "block" instead of the batch's four places: the size is
// the block's tokens (1: the decode step itself), the cell's `start` the block's first token in
// the row, a row's `position` the token's place in the block, and each token is compared with the
// decode step that ends at it; a block length's cells are ordered by start.
inline constexpr const char* kPlacements[] = {"start", "middle", "end", "permuted", "second-call", "block"};

// One output's anchor-row slice in one call, against the reference (or, for "second-call", against
// the first call of the same batch).
struct RowComparison {
  int anchor = 0;        // index among the anchor rows (the input's first R rows)
  std::string output;    // "output", "output/0", ...
  int64_t position = 0;  // the anchor's row in the batch
  std::string digest;    // of the anchor-row slice (worker/digest/digest.h)
  bool equal = true;     // bitwise
  double max_abs = 0;    // when not equal; NaN when no element was finite in both
  double max_ulp = 0;    // when not equal; NaN when not measurable (elements across zero)
};

// One batch size in one placement.
struct InvarianceCell {
  int64_t size = 0;
  std::string placement;  // one of kPlacements
  std::vector<RowComparison> rows;
  // The verify axis: the block's first token in the row (from 0); a block length has one cell per
  // place it was measured at (issue 54). -1 on the batch and pad axes.
  int64_t start = -1;
};

// Batch sizes that gave identical bits for every anchor row and output at the start placement.
struct SizeClass {
  std::vector<int64_t> sizes;  // ascending
  bool reference = false;      // holds size 1
  // The float64 referee (issue 53), where it ran: per compared floating output, the anchor rows of the
  // class's smallest size against each anchor alone in float64 (the furthest anchor's figures, numel
  // summed); and, for a class other than the reference one, the class of its
  // difference from the reference class (the most severe over outputs; audit/invariance/invariance_referee.h).
  std::vector<ReferenceError> errors;
  std::optional<Classified> difference;
};

// One output's classes (every anchor row of that output alone): what a baseline keeps, so that a
// moved boundary can be named per output (invariance_outputs.cpp).
struct OutputClasses {
  std::string output;
  std::vector<SizeClass> classes;
};

// The clock's figures of one configuration's sweep (kept apart from the results).
struct InvarianceTiming {
  double forward_ms = 0;  // the model's calls alone, device synchronised
  int64_t calls = 0;      // how many calls
  double sweep_ms = 0;    // the whole sweep in the worker (calls, batches, digests, comparisons)
  double worker_ms = 0;   // the worker process from start to its result (load included)
};

// `--trace`: the first op whose anchor-row slice differs between the anchor alone and the
// smallest batch of another class, while its inputs' slices matched (audit/invariance/invariance_trace.h).
struct RowTrace {
  std::string outcome;             // "found", "stopped" (the batch dim could not be followed), "none", "not-traced"
  int64_t size = 0;                // the batch size traced against the anchor alone (0 when not traced)
  int anchor = 0;                  // the anchor row traced
  int64_t position = 0;            // its row in that batch
  std::string op, module, source;  // found: the op; stopped: where the batch was lost
  std::vector<std::string> inputs, outputs;  // the op's tensors at batch 1, "float32[1x64]"
  uint64_t compared = 0;                     // ops compared before the answer (the op included)
  std::string message;                       // one sentence that says it all
};

struct InvarianceConfig {
  std::string config;
  std::vector<SwitchValue> switches;  // as read back in the worker
  std::string verdict;                // "invariant", "variant", "nondeterministic", "crashed"
  // Why it crashed; why it is nondeterministic (a row alone changes from call to call); else where
  // the model failed ("the model fails on a batch of 5: ..."), the sweep stopping there (exit 3); or "".
  std::string message;
  std::vector<InvarianceCell> cells;
  // Derived by the analysis (audit/invariance/invariance_analysis.h), written out so that readers
  // of the JSON need not redo it, and read back as written.
  std::vector<SizeClass> classes;           // by their smallest size
  std::vector<int64_t> position_dependent;  // sizes where a placement's bits differ from the start's
  std::vector<int64_t> warmup_dependent;    // sizes whose second call differs from the first
  std::vector<std::string> advice;          // one sentence each
  std::vector<OutputClasses> by_output;     // read from a baseline file, which keeps no cells; else empty
  std::optional<AllowedBy> allowed_by;      // --allowlist accepted this variant configuration
  std::optional<RowTrace> trace;            // with --trace only
  // The float64 referee: the summary of the classes' differences from the reference class (over
  // classes and outputs), when there are several classes and the referee ran or was asked for.
  std::optional<ClassSummary> referee;
  InvarianceTiming timing;
};

// The negative control: the comparison, shown a copy of a reference slice with its last bit flipped
// on the model's device, must call it different; and a measured op (torch.mm rows alone and in a
// batch) says what this device's library does.
struct NegativeControl {
  bool detected = false;
  std::string evidence;  // one sentence
};

// What fixes a variant configuration (audit/invariance/invariance_fix.h): the sizes that matter
// (batch 1 and one size of each other class) swept again under each candidate switch, one worker
// each; the fixes priced against reruns of the configuration itself. Clock figures (kept in the
// JSON's fix.timing): baseline_forward_ms, search_ms, first_sweep_ms, forward_ms and cost_ratio.
struct InvarianceFixCandidate {
  std::string toggles;               // "threads=1", or several joined by '+' for the combination
  std::string config;                // as --configs spells it: "default+threads=1"
  std::string stage;                 // "single", "combined" or "skipped" (not run: `message` says why)
  std::string verdict;               // "invariant", "variant", "crashed" or "not run"
  std::string message;               // why not run ("no effect on cpu"), or why its worker crashed; "" otherwise
  std::vector<SizeClass> classes;    // the sizes' classes under it
  int anchors = 0;                   // when not 0: its sweep compared only the first anchors (the screen showed no fix)
  bool fixes = false;                // invariant where the configuration was not
  std::optional<double> forward_ms;  // per forward pass
  std::optional<double> cost_ratio;  // median over pricing rounds of its forward pass over the configuration's
  std::optional<double> cost_low, cost_high;  // the lowest and highest per-round ratio (core_model.h's RoundCost)
  std::string cpp, python;                    // how a program sets it
  // The float64 referee: its error against float64 beside the configuration's ("error vs float64
  // unchanged (max 2 ULP)"), and whether it is a downgrade: invariant, but some output further from
  // float64 than max(kFloorUlp, kFactor x the configuration's error) (audit/invariance/invariance_fix.h).
  std::string accuracy;
  bool downgrade = false;
};

struct InvarianceFix {
  std::string from;            // the configuration searched from (the first of --configs)
  std::vector<int64_t> sizes;  // the sizes swept again
  // The rerun of `from` on those sizes, or "not run": not swept again (no candidate came out
  // invariant, or the first sweep, which swept those very sizes, credits it).
  std::string baseline_verdict;
  std::optional<double> baseline_forward_ms;  // per forward pass, median over the pricing rounds
  std::optional<double> search_ms;            // the search's wall time (a clock figure)
  std::optional<double> first_sweep_ms;       // the first configuration's worker, for comparison (a clock figure)
  std::vector<InvarianceFixCandidate> candidates;
  std::string conclusion;  // one sentence: which switch fixes it at what cost, or which class to pad to
};

struct Invariance {
  std::string model;                  // the path as given
  std::string kind;                   // "torchscript", "a torch.export archive", ...
  std::string runtime;                // what ran a torch.export archive ("interpreter"), as run names it; "" otherwise
  std::string device;                 // "cpu", "cuda:0"
  std::string input;                  // the rows file
  std::vector<std::string> inputs;    // "x=float32[16x3x64x64] (batch dim 0)", "mask=... (passed whole)"
  int rows = 4;                       // anchor rows
  std::string filler = "input";       // "input" or "random"
  std::string axis = "batch";         // "batch", "pad-right", "pad-left" or "verify" (invariance_protocol.h's Axis)
  int draft = 0;                      // verify: the most draft tokens a block held (blocks of 2…draft+1)
  int positions = 0;                  // verify: the places the longest block was measured at (0: another axis)
  std::string sizes = "auto";         // "auto" or the list as given
  int64_t budget = 1024;              // largest batch size tried
  std::vector<std::string> outputs;   // compared
  std::vector<std::string> excluded;  // "output/1: float32[3] does not keep the batch at dim 0"
  std::vector<std::string> notes;     // one sentence each
  NegativeControl control;
  std::vector<InvarianceConfig> configs;
  std::optional<InvarianceFix> fix;  // when the first configuration was variant and the search ran
  std::optional<Referee> referee;    // --referee cpu|device: where the float64 referee ran, or why not
};

// "{1,2,3} | {4…9,15…17}": the classes in one line; a run of three or more consecutive integers, every
// one of them measured, is written first…last (the sizes are ascending and measured, so a range never
// spans a size that was not tried).
std::string classes_text(const std::vector<SizeClass>& classes);
std::string sizes_text(const std::vector<int64_t>& sizes);
// True when the configuration swept the verify axis: its cells are verify blocks ("block").
bool verify_blocks(const InvarianceConfig& c);
// The verify axis: the tokens its blocks were measured among, counted from 1 ("tokens 26…32"); "the
// tokens measured" for cells without a place (reports before issue 54).
std::string verify_window_text(const InvarianceConfig& c);
// The first block that gave a token other bits, by length then place: "first: blocks of 2 tokens at
// tokens 31…32, anchor 0's output/logits"; "" when none did.
std::string first_differing_block_text(const InvarianceConfig& c);
// The sizes a configuration tried, ascending.
std::vector<int64_t> tried_sizes(const InvarianceConfig& c);
// Per output: the classes read from a baseline (by_output), else grouped from the start cells.
std::vector<OutputClasses> output_classes(const InvarianceConfig& c);
// The outputs that are batch-variant: several classes, or a placement or warm-up that differs.
std::vector<std::string> variant_outputs(const InvarianceConfig& c);
// The baseline file's "invariance" section (reports/baseline_file.h) and back: no cells, no paths.
nlohmann::ordered_json invariance_baseline_to_json(const Invariance& inv);
Invariance invariance_baseline_from_json(const nlohmann::ordered_json& j);

// "invariant over every size tried", "variant: 2 classes of sizes, position-dependent at 3 sizes".
std::string invariance_summary(const InvarianceConfig& c);

// The report's verdict and exit code from its invariance part: 3 when the model failed at a batch
// size (its message kept), else 1 when a configuration is variant or nondeterministic, 4 when one
// crashed (a finding wins), else 0 (report::finalize calls it).
void finalize_invariance(Report& report, const Invariance& inv);
// Why finalize_invariance found it incomplete (exit 4): the first crashed configuration's message,
// else the negative control's evidence when it detected nothing; "" otherwise.
std::string invariance_incomplete_reason(const Invariance& inv);

// JSON (the report's "invariance" object; the schema's InvarianceReport) and back (throws ReportError).
nlohmann::ordered_json invariance_to_json(const Invariance& inv);
Invariance invariance_from_json(const nlohmann::ordered_json& j);
nlohmann::ordered_json cells_to_json(const std::vector<InvarianceCell>& cells);
nlohmann::ordered_json row_trace_to_json(const RowTrace& t);
RowTrace row_trace_from_json(const nlohmann::ordered_json& j);
std::vector<InvarianceCell> cells_from_json(const nlohmann::ordered_json& j);

// The renderers' parts (invariance_render.cpp): the text summary, the Markdown summary, the HTML
// section (inside <main>) and the JUnit test suites.
// Each takes the report (its head: exit code, allowlist, baseline) and its body.
std::string invariance_text(const Report& report, const Invariance& inv);
std::string invariance_markdown(const Report& report, const Invariance& inv);
std::string invariance_html_section(const Report& report, const Invariance& inv);
// The JUnit suite adds its counts to the totals of <testsuites>.
std::string invariance_junit_suites(const Invariance& inv, int& tests, int& failures, int& errors);

// The fix search's parts (invariance_fix_json.cpp, invariance_fix_render.cpp): JSON and back, and
// its lines in each format ("" when no search ran).
nlohmann::ordered_json invariance_fix_to_json(const std::optional<InvarianceFix>& fix);
std::optional<InvarianceFix> invariance_fix_from_json(const nlohmann::ordered_json& j);
// Markdown and HTML put the clock's figures (costs) in their timing block: the *_timing parts.
std::string invariance_fix_text(const Invariance& inv);
std::string invariance_fix_text_timing(const Invariance& inv);  // its line in the text's closing timing lines
std::string invariance_fix_markdown(const Invariance& inv);
std::string invariance_fix_markdown_timing(const Invariance& inv);
std::string invariance_fix_html(const Invariance& inv);
std::string invariance_fix_html_timing(const Invariance& inv);
// A JUnit test case ("" when no search ran); adds its counts.
std::string invariance_fix_junit_case(const Invariance& inv, int& tests, int& failures);

}  // namespace ra::report
