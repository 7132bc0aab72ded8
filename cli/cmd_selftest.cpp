// SPDX-License-Identifier: Apache-2.0
// `repro-audit selftest [--device cpu|cuda[:N]] [--report F] [--html F] ...`: does the tool work
// on this machine and device? The checks are audit/selftest/selftest.h's; the report is a normal one.
#include "audit/selftest/selftest.h"
#include "cli/command_table.h"
#include "cli/common.h"

#include <memory>

namespace ra::cli {

Action attach_selftest(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<AuditArgs>();
  a->timeout = 300;
  sub.add_option("--device", a->device, "cpu, cuda or cuda:N")->capture_default_str();
  add_output_options(sub, a->out, {.junit = "one test case per check"});
  sub.add_option("--jobs,-j", a->jobs, "child processes run at once (at most the number of CPUs)")
      ->check(integer_in(1, 4096))
      ->capture_default_str();
  sub.add_option("--timeout", a->timeout, "seconds before a child is killed")
      ->check(seconds_up_to(kMaxTimeoutSeconds))
      ->capture_default_str();
  return [a, &global] {
    SessionOptions session;
    fill_session(session, *a, global, {"default"});
    SelfTestOptions o;
    o.device = Device::parse(a->device);  // a usage error for anything but cpu, cuda, cuda:N
    o.jobs = session.jobs;
    o.timeout_s = session.timeout_s;
    o.command = session.command;
    o.progress = session.progress;
    return finish_report(run_selftest(o), a->out, {});
  };
}

}  // namespace ra::cli
