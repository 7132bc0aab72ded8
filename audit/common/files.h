// SPDX-License-Identifier: Apache-2.0
// File helpers. Reports are written to a temporary file beside the target and renamed, so a
// reader never sees a half-written report.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace ra {

// Throws InputError naming `what` when `path` (symlinks followed) exists but is not a regular file or
// a folder: a FIFO, socket or device would block a reader (a FIFO given as the model held the worker
// until --timeout) or feed it without end, so every file the user names is refused at once.
void check_not_special(const std::string& path, const std::string& what);

// InputError unless `path` exists, is not a folder and is readable; `what` names it ("model").
void check_readable(const std::string& path, const char* what);

// Reads a whole file; throws InputError naming `what` ("model", "report", ...) when it cannot.
std::string read_file(const std::string& path, const std::string& what);

// The digest of a file's bytes, read as a one-dimensional uint8 tensor (audit/digest/digest_kernel.h),
// streamed in chunks so that a model of gigabytes is not held in memory; throws InputError naming
// `what` when the file cannot be read.
std::string file_digest(const std::string& path, const std::string& what);

// How an output path is written (write_file_atomic): `path` is where the bytes go, after
// symlinks are resolved for a regular or missing target.
struct OutputTarget {
  enum class Kind { Replace, Through } kind = Kind::Replace;
  std::string path;
};
// Throws InputError for a link loop or a folder (a path that names neither file nor device).
OutputTarget output_target(const std::string& path);

// The one writer of every output file (reports, HTML, JUnit, Markdown, baselines, worker results).
// A regular file, or a path that does not exist yet, is replaced atomically (temporary file in
// the same folder, fsync, rename); where `path` is a symlink whose final target is such a file,
// the target is replaced, not the link. An existing character device, FIFO or socket (and what
// /dev/stdout, /dev/fd/N or /proc/self/fd/N name) is written through: opened without creating,
// never renamed over. Throws ra::Error(Input) when the bytes cannot all be written.
void write_file_atomic(const std::string& path, const std::string& contents);

// Prints `text` on stdout and flushes it. A failed write (a full disk behind `> file`, a descriptor
// not open for writing) throws InputError "cannot write to stdout: <reason>": the caller did not get
// the summary, so no verdict's exit code may stand. A closed pipe (`| head`) stays an interruption.
void write_stdout(std::string_view text);

// A fresh private folder under $TMPDIR, removed with its contents by the destructor.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace ra
