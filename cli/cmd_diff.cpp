// SPDX-License-Identifier: Apache-2.0
// `repro-audit diff A.pt B.pt`: a bitwise diff of two torch.save files (a tensor, or containers
// of tensors such as a state_dict), run by the worker (worker/services/service_diff.cpp). Exit 0 when the files
// are bitwise identical, 1 when they differ, 3 when either file is unreadable or holds something
// other than tensors.
#include "cli/worker_options.h"

#include <memory>

namespace ra::cli {

void add_diff_options(CLI::App& sub, DiffArgs& a) {
  sub.add_option("a", a.a, "first torch.save file or TorchScript archive (A)")->required();
  sub.add_option("b", a.b, "second torch.save file or TorchScript archive (B)")->required();
  sub.add_option("--key", a.key,
                 "compare only this entry of both files and what is below it: \"model\", \"optimizer/state\"");
  sub.add_flag("--json", a.json, "print the JSON document on stdout instead of the table");
  sub.add_option("--report", a.report, "write the JSON document here (atomically)");
  add_tolerance_options(sub, a.tolerance);
}

Action attach_diff(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<DiffArgs>();
  add_diff_options(sub, *a);
  // The options write into *a while CLI11 parses, after this function returns: the action keeps it
  // alive (found by the ASan front: a heap-use-after-free on every env, lint and diff).
  return [a, forward = forward_to_worker(global)] { return forward(); };
}

}  // namespace ra::cli
