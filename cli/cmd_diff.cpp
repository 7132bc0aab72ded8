// SPDX-License-Identifier: Apache-2.0
// `repro-audit diff A.pt B.pt`: a bitwise diff of two torch.save files (a tensor, or containers
// of tensors such as a state_dict), run by the worker (worker/services/service_diff.cpp). Exit 0 when the files
// are bitwise identical, 1 when they differ, 3 when either file is unreadable or holds something
// other than tensors.
#include "audit/cmdline/worker_options.h"
#include "cli/command_table.h"

#include <memory>

namespace ra::cli {

Action attach_diff(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<cmdline::DiffArgs>();
  cmdline::add_diff_options(sub, *a);
  // The options write into *a while CLI11 parses, after this function returns: the action keeps it
  // alive (found by the ASan front: a heap-use-after-free on every env, lint and diff).
  return [a, forward = forward_to_worker(global)] { return forward(); };
}

}  // namespace ra::cli
