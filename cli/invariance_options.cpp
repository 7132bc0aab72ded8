// SPDX-License-Identifier: Apache-2.0
#include "cli/invariance_options.h"

#include "audit/baseline/invariance_baseline.h"

namespace ra::cli {

void add_invariance_fleet_options(CLI::App& sub, AuditArgs& a) {
  sub.add_option("--save-baseline", a.out.save_baseline,
                 "write a baseline here (atomically): every configuration's classes of sizes, joined and per output, "
                 "with the environment fingerprint, for a later --baseline or compare");
  sub.add_option("--baseline", a.baseline,
                 "compare with an invariance baseline (--save-baseline) or report: a class boundary that moved, or "
                 "position or warm-up dependence that appeared or went, is a finding (exit 1)");
  add_fail_on_explained_option(sub, a.fail_on_explained);
  add_allowlist_option(sub, a.allowlist);
  sub.add_option("--shard", a.shard,
                 "run only shard K of N (K from 1): the sizes and configurations are split, for `repro-audit merge`; "
                 "without it, scheduler variables name the shard. Needs --report");
  sub.add_option("--shards", a.shards, "the number of shards of a Kubernetes Indexed Job (with its completion index)")
      ->check(integer_in(1, 100000));
}

ReportJudges invariance_judges(const AuditArgs& a, const Device& device, int rows, const std::string& filler,
                               const std::string& axis, const std::vector<std::string>& configs) {
  ReportJudges judges;
  load_allowlist_option(a.allowlist, judges);
  judges.fail_on_explained = a.fail_on_explained;
  if (a.baseline.empty()) return judges;
  judges.baseline = load_baseline(a.baseline);
  check_invariance_plan(*judges.baseline, device, rows, filler, axis, configs);
  return judges;
}

}  // namespace ra::cli
