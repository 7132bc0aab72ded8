// SPDX-License-Identifier: Apache-2.0
// File helpers. Reports are written to a temporary file beside the target and renamed, so a
// reader never sees a half-written report.
#pragma once

#include <string>

namespace ra {

// Reads a whole file; throws InputError naming `what` ("model", "report", ...) when it cannot.
std::string read_file(const std::string& path, const std::string& what);

// The digest of a file's bytes, read as a one-dimensional uint8 tensor (audit/digest/digest_kernel.h),
// streamed in chunks so that a model of gigabytes is not held in memory; throws InputError naming
// `what` when the file cannot be read.
std::string file_digest(const std::string& path, const std::string& what);

// Writes `contents` to `path` atomically (temporary file in the same folder, fsync, rename).
// Throws ra::Error(Input) when the folder is not writable.
void write_file_atomic(const std::string& path, const std::string& contents);

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
