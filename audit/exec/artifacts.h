// SPDX-License-Identifier: Apache-2.0
// exec/: `repro-audit exec -- COMMAND`: any program audited by what it writes and prints.
// What a command leaves behind: the files named by --artifact, found after each run and taken
// into the run's scratch folder before the next run starts, so that no run sees another's files.
//
// A pattern is a path (relative to the working directory, or absolute) that may hold glob
// wildcards and three placeholders: {out}, the run's own empty folder ($REPRO_AUDIT_OUT); {trial},
// the run's number (so that runs side by side under --jobs write different files); {rank}, a
// torchrun rank (digits). Artifacts are named as the report shows them: the path as matched, below
// {out} when the pattern starts there, with {trial} kept as written (the name is the same in every
// run) and {rank} filled in (each rank's file is compared across runs).
#pragma once

#include "reports/model.h"

#include <string>
#include <vector>

namespace ra::exec {

struct ArtifactPattern {
  std::string text;
  bool trial = false;  // holds {trial}
  bool rank = false;   // holds {rank}
  bool out = false;    // starts with {out}/
};

// Parses one --artifact. UsageError for an empty pattern, an unknown {placeholder}, {out} other
// than at the start, or {rank} twice.
ArtifactPattern parse_artifact_pattern(const std::string& text);

// One file taken after a run.
struct Taken {
  std::string name;     // as the report names it
  std::string pattern;  // the --artifact text, "" for a file found in {out} without patterns
  std::string path;     // where it now lies, in the run's scratch folder
  int rank = -1;        // {rank}'s value, -1 without {rank}
  int64_t bytes = 0;
  std::string digest;   // of the bytes (audit/common/files.h file_digest)
};

// Finds what `patterns` match after run `trial` (with no patterns: every file below `out_dir`),
// moves each file into `into` (renamed, or copied then removed across filesystems) and digests it.
// `matched[i]` is set when pattern i matched a file. InputError when a file cannot be moved.
std::vector<Taken> take_artifacts(const std::vector<ArtifactPattern>& patterns, int trial, const std::string& out_dir,
                                  const std::string& into, std::vector<bool>& matched);

// The files `pattern` matches now, {trial} and {rank} read as any text ({out} patterns match
// nothing before a run): what would be mistaken for a run's artifacts.
std::vector<std::string> existing_matches(const ArtifactPattern& pattern);

// "torch.save" (a zip whose first record is .../data.pkl), "safetensors" (its header's shape), or
// "bytes": what the first bytes of a file say, before the worker reads it.
std::string sniff_kind(const std::string& path);

// How two files differ byte by byte: the byte count (numel, the larger size), the bytes that differ
// (a size difference counts its extra bytes), the first differing offset; a note when the sizes
// differ. Reads both files in chunks.
report::DivergenceStats byte_difference(const std::string& a, const std::string& b);

}  // namespace ra::exec
