// SPDX-License-Identifier: Apache-2.0
// exec's hook reports (audit/exec/hook_report.h): JSON files that the start-up hook writes from
// inside the user's program, so anything the program can write. The input is one run's hook
// folder: up to four files hook-N.json, separated by a line "--" (a torchrun launcher and its
// ranks), read and turned into switches, the seeding checklist and the torchrun facts.
#include "audit/exec/hook_report.h"
#include "tests/fuzz/fuzz_common.h"

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = ra::fuzz::scratch_path("hook");
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  const std::string input = ra::fuzz::text(data, size);
  size_t from = 0;
  for (int n = 1; n <= 4 && from <= input.size(); ++n) {
    const size_t sep = n == 4 ? std::string::npos : input.find("\n--\n", from);
    std::ofstream(dir + "/hook-" + std::to_string(n) + ".json", std::ios::binary)
        << input.substr(from, sep == std::string::npos ? std::string::npos : sep - from);
    if (sep == std::string::npos) break;
    from = sep + 4;
  }
  const ra::exec::HookRun run = ra::exec::read_hook_run(dir);  // never throws: a bad file is a note
  (void)ra::exec::hook_state(run);
  ra::Config config{"fuzz", {{"deterministic", "on"}, {"threads", "2"}, {"cublas_workspace", ":4096:8"}}};
  const std::map<std::string, std::optional<std::string>> env = {{"CUBLAS_WORKSPACE_CONFIG", ":4096:8"},
                                                                 {"OMP_NUM_THREADS", std::nullopt}};
  (void)ra::exec::run_switches(run, config, env);
  (void)ra::exec::seeding_checklist(run);
  ra::report::ExecFacts facts;
  ra::exec::distributed_facts(run, env, facts);
  return 0;
}
