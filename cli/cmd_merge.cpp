// SPDX-License-Identifier: Apache-2.0
// `repro-audit merge SHARD.json ...`: the shards of one plan (run or probes with --shard) joined
// into one report (audit/fleet/merge.h), rendered and written like run's. Exit codes are the
// joined report's; 3 when a shard is unreadable, foreign, duplicated or missing (nothing is
// written then).
#include "audit/common/errors.h"
#include "audit/fleet/merge.h"
#include "audit/invariance/invariance_shard.h"
#include "audit/knowledge/knowledge.h"
#include "cli/command_table.h"
#include "cli/common.h"

#include <fmt/format.h>

#include <memory>

namespace ra::cli {
namespace {

struct MergeArgs {
  std::vector<std::string> shards;
  ReportOutputs out;
  std::string allowlist;           // --allowlist FILE
  std::string baseline;            // --baseline FILE
  bool fail_on_explained = false;  // --fail-on-explained
  double timeout = 600;            // --timeout: of the worker computing statistics
  std::string knowledge;
};

int execute(const MergeArgs& a) {
  check_outputs(a.out);
  if (a.fail_on_explained && a.baseline.empty())
    throw UsageError("--fail-on-explained applies to a comparison: add --baseline FILE");
  ReportJudges judges;
  load_allowlist_option(a.allowlist, judges);
  judges.fail_on_explained = a.fail_on_explained;
  // Every shard is read and checked before anything is written.
  std::vector<fleet::ShardFile> shards;
  for (const auto& path : a.shards) shards.push_back({path, read_report(path)});
  std::optional<KnowledgeBase> kb;
  // A probe split across shards is judged again against the knowledge base.
  const auto needs_knowledge = [&] {
    bool probes = false;
    for (const auto& s : shards)
      std::visit(report::overloaded{[](const report::RunBody&) {}, [](const report::ExecBody&) {},
                                    [&](const report::ProbesBody& b) { probes = probes || !b.targets.empty(); },
                                    [](const report::Invariance&) {}, [](const report::SelfTest&) {}},
                 s.report.body);
    return probes;
  };
  if (needs_knowledge()) kb = load_knowledge(a.knowledge.empty() ? knowledge_path() : a.knowledge);
  fleet::MergeOptions options;
  options.knowledge = kb ? &*kb : nullptr;
  options.timeout_s = a.timeout;
  // Shards of `invariance` join their sweeps' cells instead of targets (audit/invariance/invariance_shard.h).
  report::Report merged = invariance::invariance_shards(shards) ? invariance::merge_invariance(shards)
                                                                : fleet::merge_shards(shards, options);
  // apply_baseline (in finish_report) checks that the baseline was made from the same targets.
  if (!a.baseline.empty()) judges.baseline = load_baseline(a.baseline);
  return finish_report(std::move(merged), a.out, judges);
}

}  // namespace

Action attach_merge(CLI::App& sub, const GlobalOptions&) {
  auto a = std::make_shared<MergeArgs>();
  sub.add_option("shards", a->shards, "the shards' JSON reports (run or probes with --shard), every K of N once")
      ->required();
  add_output_options(sub, a->out, {.what = "the joined JSON report"});
  sub.add_option("--save-baseline", a->out.save_baseline, "write a baseline of the joined results here (atomically)");
  add_allowlist_option(sub, a->allowlist);
  sub.add_option("--baseline", a->baseline, "compare the joined results with a baseline or report of the same plan");
  add_fail_on_explained_option(sub, a->fail_on_explained);
  sub.add_option("--knowledge", a->knowledge,
                 "knowledge-base file for probes split across shards (default: share/repro-audit/knowledge/ops.json)");
  sub.add_option("--timeout", a->timeout, "seconds the worker computing statistics may take")
      ->check(seconds_up_to(kMaxTimeoutSeconds))
      ->capture_default_str();
  return [a] { return execute(*a); };
}

}  // namespace ra::cli
