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
//
// A bare pattern (relative, without `..`: `--artifact ckpt.pt`) is looked for in two places, the
// working directory and the run's {out} (issue 33). The problem: a user names the file the script
// saves, and the script saves it either where it runs or into $REPRO_AUDIT_OUT, as the GUIDE
// suggests; a pattern read only against the working directory matched nothing for the second and
// the first exec a user typed ended with exit 3. The approach: the pattern is walked from both
// roots, named the same way in both (the path as matched); where one run wrote the same name in
// both, the working directory's is named "./NAME". The cost: one more walk per pattern per run.
//
// Never touch what isn't ours (issue 28). The problem: a run is a hostile neighbour. It can make a
// folder of the pattern a symlink to the user's data, replace $REPRO_AUDIT_OUT by one, or leave a
// FIFO or a link to /proc/kmsg where a file was expected; glob(3) and a plain open() follow all of
// that, and taking an artifact (a move) then removes files the pattern never named, or a read
// blocks forever. The approach: every pattern is placed below one root at start (the run's {out},
// the working directory, or a folder the user named with --artifact-root; `..` and absolute paths
// elsewhere are usage errors), each root is opened once before the first run, and a pattern is
// walked component by component from the root's descriptor with O_NOFOLLOW and fstatat
// (AT_SYMLINK_NOFOLLOW): a symlinked folder, or a symlinked {out}, is not entered, and the match
// is skipped with a reason. Only regular files are taken (moved by renameat, or copied then
// unlinked across filesystems) and read (O_NOFOLLOW|O_NONBLOCK, fstat S_ISREG, at most the size
// fstat gave, a stop signal checked between chunks). A symlink the pattern names is taken as a
// symlink: its link text is compared across runs, its target never opened. Anything else (a FIFO,
// a socket, a device) is skipped with a reason. The cost: one openat and one fstatat per
// component, and a readdir per wildcard component, where glob(3) did the same through paths.
#pragma once

#include "reports/core_model.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace ra::exec {

struct ArtifactPattern {
  std::string text;
  bool trial = false;  // holds {trial}
  bool rank = false;   // holds {rank}
  bool out = false;    // starts with {out}/
  // Where it is taken from (place_artifact_pattern; parse_artifact_pattern places {out} ones):
  // -1 the run's {out}, 0 the working directory, k > 0 the k-th --artifact-root.
  int root = 0;
  std::vector<std::string> below;  // the path's components below that root: no "", "." or ".."
  std::string shown;               // what names start with: "" below {out} or for a relative pattern, else the root
  bool bare = false;               // relative without `..`: looked for in the working directory and in {out}
};

// Parses one --artifact. UsageError for an empty pattern (or one longer than PATH_MAX), an unknown
// {placeholder}, {out} other than at the start, {rank} twice, or `..` in an {out} pattern.
ArtifactPattern parse_artifact_pattern(const std::string& text);

// Places a pattern that does not start with {out} below the working directory `cwd`, or below one
// of `roots` (--artifact-root, absolute): the deepest that holds it. A relative pattern without
// `..` lies below `cwd`. UsageError for `..`, or an absolute path, that reaches outside the working
// directory and every root. `cwd` and `roots` are absolute and normalised; each entry of
// `cwd_aliases` and `root_aliases` (same length as roots) is another spelling of the same folder.
void place_artifact_pattern(ArtifactPattern& p, const std::string& cwd, const std::vector<std::string>& roots,
                            const std::vector<std::string>& cwd_aliases = {},
                            const std::vector<std::vector<std::string>>& root_aliases = {});

// What a path (components below the pattern's root, '/'-separated) is named as, and its rank, when
// `p` matches it in run `trial` (trial < 0: any run's number). Names starting with '.' match only
// a component that spells the dot; "." and ".." match nothing. The matcher the walk uses.
struct PathMatch {
  std::string name;
  int rank = -1;
};
std::optional<PathMatch> match_artifact_path(const ArtifactPattern& p, const std::string& path, int trial);

// The folders a session takes artifacts from, opened once (before the first run) so that a run
// cannot swap them: the scratch folder (runs' {out} and where artifacts go), the working
// directory, and each --artifact-root. InputError for a root that is not a folder.
class ArtifactRoots {
 public:
  ArtifactRoots(const std::string& scratch, const std::vector<std::string>& roots);
  ~ArtifactRoots();
  ArtifactRoots(const ArtifactRoots&) = delete;
  ArtifactRoots& operator=(const ArtifactRoots&) = delete;
  const std::string& scratch() const { return scratch_; }
  int scratch_fd() const { return fds_[0]; }
  int fd(int root) const { return fds_[static_cast<size_t>(root) + 1]; }  // 0: the working directory
  bool is_scratch(dev_t dev, ino_t ino) const { return dev == scratch_dev_ && ino == scratch_ino_; }

 private:
  std::string scratch_;
  std::vector<int> fds_;
  dev_t scratch_dev_ = 0;
  ino_t scratch_ino_ = 0;
};

// One file taken after a run.
struct Taken {
  std::string name;     // as the report names it
  std::string pattern;  // the --artifact text, "" for a file found in {out} without patterns
  std::string path;     // where it now lies, in the run's scratch folder (a symlink's: a file holding its link text)
  int rank = -1;        // {rank}'s value, -1 without {rank}
  int64_t bytes = 0;
  std::string digest;    // of the bytes (audit/common/files.h file_digest); of the link text for a symlink
  bool symlink = false;  // a symlink, taken as such: `path` holds its link text, its target was never opened
  std::string link;      // the link text
};

// A match that was not taken, and why ("a FIFO, not a regular file", "'ck' is a symlink: not followed").
struct Skipped {
  std::string name;
  std::string pattern;
  std::string reason;
};

struct TakeResult {
  std::vector<Taken> taken;  // by name
  std::vector<Skipped> skipped;
  std::vector<bool> matched;  // per pattern: it matched a file (or a symlink)
};

// Finds what `patterns` match after run `trial` (with no patterns: every file below the run's
// {out}), the run's folder being `run` below the scratch folder (its {out} is run/out), moves each
// into run/artifacts (renamed, or copied then unlinked across filesystems) and digests it.
// InputError when a file cannot be moved, or the run made run/artifacts itself.
TakeResult take_artifacts(const std::vector<ArtifactPattern>& patterns, int trial, const ArtifactRoots& roots,
                          const std::string& run);

// What a command wrote, for the error that says a pattern matched nothing: a stamp (inode, size,
// modification time) of every regular file or symlink below a folder, by its path below it, at
// most `depth` folders down and `cap` entries (hidden names, symlinked folders and the scratch
// folder not entered). Taken of the working directory before the first run and after the runs, and
// of a run's {out}: a name whose stamp is new or changed is a file the command wrote.
using TreeStamps = std::map<std::string, std::string>;
TreeStamps stamp_tree(int dirfd, const ArtifactRoots& roots, int depth = 3, size_t cap = 4096);
TreeStamps stamp_tree(const std::string& folder, const ArtifactRoots& roots, int depth = 3, size_t cap = 4096);
std::vector<std::string> changed_files(const TreeStamps& before, const TreeStamps& after);

// What `pattern` matches now, {trial} and {rank} read as any digits ({out} patterns match nothing
// before a run): what would be mistaken for a run's artifacts; a symlinked folder the pattern names
// by its literal name goes in `skipped`.
std::vector<std::string> existing_matches(const ArtifactPattern& pattern, const ArtifactRoots& roots,
                                          std::vector<Skipped>* skipped = nullptr);

// The bytes of what a run left at `path` when it is a regular file of at most `cap` bytes, read
// without following a symlink or blocking (O_NOFOLLOW|O_NONBLOCK, fstat S_ISREG); else nullopt,
// `why` saying what it is. For the run's other files (its hook reports).
std::optional<std::string> read_regular(const std::string& path, int64_t cap, std::string* why = nullptr);

// "torch.save" (a zip whose first record is .../data.pkl), "safetensors" (its header's shape), or
// "bytes": what the first bytes of a file say, before the worker reads it.
std::string sniff_kind(const std::string& path);

// How two files differ byte by byte: the byte count (numel, the larger size), the bytes that differ
// (a size difference counts its extra bytes), the first differing offset; a note when the sizes
// differ. Reads both files in chunks.
report::DivergenceStats byte_difference(const std::string& a, const std::string& b);

}  // namespace ra::exec
