// SPDX-License-Identifier: Apache-2.0
// What an `exec` target adds (audit/exec/). The JSON writer and reader of these structs sit beside
// them in reports/exec_json.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ra::report {

// `repro-audit exec` (audit/exec/): what the command is, what was compared, and what its start-up
// hook saw while it ran.
struct ExecArtifact {
  std::string name;     // as the report names its entries: the path below the working directory or $REPRO_AUDIT_OUT
  std::string pattern;  // the --artifact that matched it ("" for a file found in $REPRO_AUDIT_OUT)
  std::string
      kind;  // torch.save | safetensors | bytes | symlink (its link text compared) | skipped (not a regular file)
  std::string note;   // why a torch.save or safetensors file was compared by bytes, why it was skipped, "" for none
  int64_t bytes = 0;  // size in the reference run of the first configuration
};
struct ExecMetric {
  std::string name;
  std::string regex;
  int occurrences = 0;  // in the reference run of the first configuration
};
// One line of the seeding checklist, about this program: what was found, where.
struct ChecklistItem {
  std::string id;          // seed.torch | seed.python | seed.numpy | dataloader | switches | checkpoint | generator |
                           // compile | compile.autotune | compile.random | compile.cache | collectives
  std::string status;      // ok | missing | not-applicable | note (checkpoint: about resuming; compile: a call)
  std::string text;        // one sentence
  std::string where;       // "train.py:20", "" when none
  std::vector<int> ranks;  // torchrun: the ranks that saw it (empty for a single process)
  std::string artifact;    // the diverged artifact or metric it may explain, "" when none
};
// What one run of a configuration is compared by, counted in its reference run: the files taken
// (matched by --artifact, or found in $REPRO_AUDIT_OUT; a symlink counts as one) and the --metric
// names. The same figures whether the runs agree or not: a file whose bytes differ is then read
// entry by entry, and those entries are what diverged_tensors lists, never what is counted here.
struct ExecCompared {
  int files = 0;
  int metrics = 0;
};
// --ranks-equal: data-parallel replicas compared within each run.
struct RanksEqual {
  bool equal = true;
  std::string config;  // where the first difference was found, "" when equal
  int repeat = 0;
  std::string artifact;  // the pattern with {rank}
  int rank = 0;          // the first rank that differs from rank 0
  std::string tensor;    // the first entry that differs
  int compared = 0;      // rank pairs compared, over every run
};
struct ExecFacts {
  std::vector<std::string> command;  // argv as given after --
  std::string executable;            // argv[0] resolved on PATH
  std::string working_directory;
  std::vector<ExecArtifact> artifacts;
  std::vector<ExecMetric> metrics;
  // How the in-process switches reached the program: "python" (the start-up hook ran in a Python
  // program that imported torch), "python-without-torch", or "none" (no hook report: not a
  // Python program, or one started with -S or -I); hook_note says what that means for the switches.
  std::string hook = "none";
  std::string hook_note;
  std::vector<ChecklistItem> checklist;
  int world_size = 0;                               // torchrun: WORLD_SIZE as the ranks saw it, 0 for a single process
  std::string backend;                              // torch.distributed's backend, "" when none was initialised
  std::map<std::string, std::string> launcher_set;  // variables a launcher set in the ranks ("OMP_NUM_THREADS": "1")
  std::optional<RanksEqual> ranks_equal;
};

}  // namespace ra::report
