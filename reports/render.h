// SPDX-License-Identifier: Apache-2.0
// Renderers of the report model. Each returns the whole document as a string; callers write it
// atomically. JSON keeps every time-dependent figure under the top-level "timing" key, so two
// audits with the same results differ only there.
//
// The tool's own output is deterministic: everything that depends on a clock (the total, each
// trial's wall_ms and startup_ms, the probes' medians, the fix search's medians and cost ratios, and
// so which minimal fix is cheapest) lives only in the JSON's "timing" object and, in Markdown and
// HTML, between the kTimingBegin and kTimingEnd lines at the end (each once; escaping keeps model
// text from forging one). The text summary's only clock figures are the cost ratios (`xN`, `cost
// 0.27x`); JUnit has none. Outside those places two audits with the same results give the same bytes
// (tests/cli/test_cli_formats.cpp); minimal fixes are listed in candidate order.
#pragma once

#include "reports/model.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace ra::report {

nlohmann::ordered_json to_json(const Report& report);
std::string render_json(const Report& report);

// The environment's line saying that its torch is newer than the newest tested (the worker's
// fingerprint writes it: audit/common/torch_release.h), "" for a tested torch. The text summary, the
// Markdown and the HTML open with it, JUnit's suites carry it as a property, and the JSON as
// environment.torch.untested.
std::string untested_torch_text(const Report& report);

// Human summary for stdout (each kind's in its reports/<kind>_render.cpp: reports/render_parts.h).
std::string render_text(const Report& report);
// A batch-invariance probe's classes, "{1,2,3} | {4…257}": a run of four or more sizes that
// follow each other among all the sizes tried is written first…last.
std::string batch_classes_text(const std::vector<std::vector<int64_t>>& classes);
// "batch classes under default: {1,2,3} | {4…257}: variant" (or "…: invariant"), one per configuration.
std::vector<std::string> batch_classes_lines(const ProbeFacts& probe);

// JUnit XML: one <testsuite> per target, one <testcase> per target x configuration (plus the
// configuration dependence and restart-replay); no time attributes (share/schema/junit.xsd).
std::string render_junit(const Report& report);

// The Markdown summary and the HTML page write every clock figure inside one block at their end,
// between these two lines (each once); outside it, two audits with the same results give the same
// bytes.
inline constexpr const char* kTimingBegin = "<!-- timing:begin -->";
inline constexpr const char* kTimingEnd = "<!-- timing:end -->";

// Markdown summary for CI job pages; its timing block holds the wall time, the cheapest fix and
// every fix candidate's cost.
std::string render_markdown(const Report& report);

// A self-contained HTML page (inline CSS, JS and SVG; no network fetches); its timing block is a
// <section id="timing"> (reports/html.cpp).
std::string render_html(const Report& report);

// A tensor's divergence statistics: one text line ("1/6 elements differ, first at [0,2], ...") and
// the JSON object reports carry.
std::string stats_text(const DivergenceStats& s);
// The informative tolerance verdict stats_text ends with: "; all within rtol 1e-06, atol 0" or
// "; 12 beyond rtol 1e-06, atol 0"; "" for a zero (bitwise) tolerance or a note.
std::string tolerance_text(const DivergenceStats& s);

// Root causes in words, shared by the renderers: "aten::sum (forward) at model.py:3 in enc" (a
// backward op adds its node and the forward op that made it), "output 0 differed", "threads 2 -> 1".
std::string root_cause_place(const RootCause& r);
std::string differing_outputs_text(const RootCause& r);
std::string switch_changes_text(const std::vector<SwitchChange>& changes);
// Where a configuration parts from the reference configuration, in one line: "threads-1 against
// default (threads 2 -> 1): first differing op aten::sum (forward) at model.py:3 - inputs matched,
// output 0 differed; 2 later ops propagated", or the note when no op can be named.
std::string config_cause_text(const ConfigCause& c);
// A baseline result's changed op: "first changed op: aten::mm (forward) at model.py:4; 3 later ops
// changed", or its note; "" when it has neither.
std::string changed_op_text(const BaselineResult& r);
// A fix named by what it changes in the failing configuration, from its effective switches:
// "threads 4 -> 1", "deterministic off -> on, threads 4 -> 1" (a toggle the failing configuration
// does not read back shows its requested value alone: "mkl_cbwr -> COMPATIBLE").
std::string fix_change_text(const FixCandidate& fix, const std::vector<SwitchValue>& failing);
// "0.29x (0.25-0.33)": a fix's cost with its interval over the timing rounds, "not measurable on
// this machine now" when the rounds cannot price it (core_model.h's cost_measurable); "" when
// unmeasured.
std::string cost_text(const FixCandidate& fix);
// The cost after a fix's name: " at 0.29x (0.25-0.33) the run time of FROM", " (cost not measurable
// on this machine now)", or "" (escape `from` for the format first).
std::string cost_clause(const FixCandidate& fix, const std::string& from);
// The error after a fix's cost: "; error vs float64 unchanged (max 2 ULP)", "; max 310 ULP from
// float64 where FROM had 3: a downgrade" (fix_accuracy_text), or "" without a referee; unescaped
// (it holds a tensor's name): escape the whole for the format.
std::string accuracy_clause(const FixCandidate& fix, const std::string& from);
// What "reproducible" can promise after so few repeats: "reproducible: no divergence in 2
// comparisons (3 runs); a divergence rate above 66% would have shown (95% confidence)", for the
// reproducible configuration with the fewest comparisons (Wilson's upper bound, as rate_ci_high);
// "" when no configuration is reproducible with two completed runs.
std::string detection_power_text(const Target& t);  // its words: no_divergence_text (core_model.h)
// The inputs as the summaries print them: "x: float32[8x16]" when `names` gives the forward
// argument of each (a model's, RunFacts::input_names), else the descriptions alone.
std::vector<std::string> named_inputs(const Target& t, const std::vector<std::string>& names);
// A model's outputs among a target's compared tensors, in record order, each once: "output",
// "output/logits" (a training step's "step1/output" as "output"). run's only: exec records files.
std::vector<std::string> compared_outputs(const Target& t);
// "1 run" / "2 runs": the count with the word that agrees with it.
std::string plural(size_t n, const char* one, const char* many);
// `words` with its first letter upper-case: a label that opens a sentence ("Downgrade:").
std::string capitalized(std::string words);
// exec (ConfigResult::compared set): what one run is compared by, "1 file, 1 metric", the figure
// every format shows in place of run's tensor count; "" for other configurations.
std::string compared_text(const ConfigResult& c);
// What a configuration's findings are called: "tensor"/"tensors", or for exec, whose findings are a
// file's entries, files compared by bytes and metrics, "entry"/"entries".
std::string findings_word(const ConfigResult& c, size_t n);
// --repeats auto, once per report: "repeats: auto, 3 to 20 runs per configuration, each until a
// divergence, a failure, or no divergence in enough runs to rule out a rate above 20% (95%
// confidence); 2 of 8 undecided at --max-repeats"; "" without it.
std::string auto_repeats_text(const Report& r);
// A shard's line ("shard 2/4 (the Slurm array): cells 98-195 of 392 of plan 8348cdcc8710; join the
// shards with repro-audit merge"), and a merged report's fleet block (where shards ran, machine
// kinds and what separates them, cells that failed with their host, the comparison across kinds);
// "" when neither applies. Each line ends with a newline.
std::string shard_text(const Report& r);
std::string fleet_text(const Report& r);
// A configuration --repeats auto left undecided: "undecided at --max-repeats 20: no divergence in
// 19 comparisons rules out only a rate above 17%"; "" for any other.
std::string undecided_text(const ConfigResult& c);
nlohmann::ordered_json stats_to_json(const DivergenceStats& s);

// The comparison with a baseline (reports/baseline_text.cpp): the section the text summaries print
// before their verdict line ("" without one); the counts per status ("1 regression, 2 match");
// one differing tensor ("output float32[4x8]: 1f2e3d4c5b6a -> 9a0c1b2d3e4f"); what a change can
// affect ("any device", "cpu", "cuda:0").
std::string render_baseline_text(const Report& report);
// Whether a result deserves a line of its own: not a match, and not incomparable with the same
// verdict on both sides (skipped or raised alike). The summaries list every result when there are
// at most 12, else only the noteworthy ones.
bool baseline_noteworthy(const BaselineResult& result);
bool baseline_listed(const BaselineComparison& baseline, const BaselineResult& result);
std::string baseline_counts(const BaselineComparison& baseline);
std::string baseline_tensor_text(const BaselineTensor& tensor);
std::string affects_text(const std::string& affects);
// Across an upgrade (a component of BaselineComparison::stack changed): "torch 2.11.0 -> 2.15.0,
// CUDA 13.0, cuDNN 9.19.0, cuBLAS 13.1.0.3 -> 13.2.1.1, NCCL 2.28.9"; "" when nothing changed.
std::string upgrade_text(const BaselineComparison& baseline);
// Its label: "upgrade" when every changed component's version went up (numbers compared as numbers:
// 2.9 < 2.11), "downgrade" when every one went down, else "version change" (both ways, or a side
// without the component).
std::string upgrade_label(const BaselineComparison& baseline);
// What the upgrade did to determinism, as lines without newlines: what kept its bits ("420 results
// kept their bits, 3 changed"), then one line per kind that has members ("newly divergent (1):
// put / default"), or one saying that none changed; none when neither side changed behaviour and
// nothing was upgraded. Every format prints these lines.
std::vector<std::string> behaviour_lines(const BaselineComparison& baseline);
// For the verdict line: ", 1 baseline regression", ", changed with the environment since the
// baseline", ", matches the baseline"; "" without a baseline.
std::string baseline_verdict_text(const Report& report);
// What explained differences changed with: "the environment", "the model's weights" (same graph,
// other weights), or both.
std::string explained_cause(const BaselineComparison& baseline);
// What to do when explained differences are the right results: save a baseline file again through
// the audit that writes it (compare has no --save-baseline), or, when the baseline was a report,
// compare with the newer report from now on (saving over a report would lose it).
// `code` is the option or file, for a renderer to set as code; the advice reads before + code + after.
struct ResaveAdvice {
  std::string before, code, after;
  std::string text() const { return before + code + after; }
};
ResaveAdvice resave_advice(const BaselineComparison& baseline);

// The environment fingerprint as aligned "key: value" lines.
std::string render_environment_text(const nlohmann::ordered_json& env);

}  // namespace ra::report
