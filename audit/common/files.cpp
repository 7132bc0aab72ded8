// SPDX-License-Identifier: Apache-2.0
#include "audit/common/files.h"

#include "audit/common/errors.h"
#include "audit/common/stop.h"
#include "audit/digest/digest_kernel.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ra {

void check_not_special(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return;
  const char* kind = S_ISFIFO(st.st_mode)   ? "a FIFO"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                     : S_ISCHR(st.st_mode)  ? "a character device"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                                            : "not a file";
  throw InputError(fmt::format("{} '{}' is {}, not a regular file", what, path, kind));
}

void check_readable(const std::string& path, const char* what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(fmt::format("{} '{}' does not exist", what, path));
  if (std::filesystem::is_directory(path, ec)) throw InputError(fmt::format("{} '{}' is a directory", what, path));
  check_not_special(path, what);
  if (::access(path.c_str(), R_OK) != 0) throw InputError(fmt::format("{} '{}' is not readable", what, path));
}

std::string read_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(fmt::format("{} '{}' does not exist", what, path));
  if (std::filesystem::is_directory(path, ec)) throw InputError(fmt::format("{} '{}' is a directory", what, path));
  check_not_special(path, what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("cannot read {} '{}': {}", what, path, std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string file_digest(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(fmt::format("{} '{}' does not exist", what, path));
  if (std::filesystem::is_directory(path, ec)) throw InputError(fmt::format("{} '{}' is a directory", what, path));
  check_not_special(path, what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("cannot read {} '{}': {}", what, path, std::strerror(errno)));
  std::vector<char> chunk(size_t{1} << 20);
  digest_kernel::Lanes lanes;
  uint64_t total = 0;
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto n = static_cast<size_t>(in.gcount());
    lanes += digest_kernel::words8(reinterpret_cast<const uint8_t*>(chunk.data()), n, total);
    total += n;
  }
  if (in.bad()) throw InputError(fmt::format("cannot read {} '{}': {}", what, path, std::strerror(errno)));
  return digest_kernel::finish(lanes, "uint8", {static_cast<int64_t>(total)});
}

// Output paths.
//
// Problem: renaming a temporary file over the path the user named is atomic only for a regular
// file. Over a device node it replaced the node itself (as root, `--report /dev/full` left a
// regular file in /dev); over a symlink it replaced the link the user keeps pointing at the latest
// report; over /dev/stdout it would have written nowhere the caller reads.
// Approach: resolve the path by hand, one symlink at a time, to what it finally names. A regular
// file or a missing one is replaced atomically beside the final target (so the link survives); a
// character device, FIFO or socket is opened for writing and written through, never renamed over
// or created; /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N are our own descriptors and
// are written to directly, in order with what stdio has already written. A block device or a
// folder is refused. Cost: an lstat per link, once per output file.

namespace {

// The descriptor a path names when it is one of this process's own: /dev/stdout, /dev/fd/1 ...
int own_descriptor(const std::string& path) {
  if (path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    const std::string p = prefix;
    if (path.rfind(p, 0) != 0 || path.size() == p.size() || path.size() > p.size() + 6) continue;
    const std::string n = path.substr(p.size());
    if (n.find_first_not_of("0123456789") == std::string::npos) return std::atoi(n.c_str());
  }
  return -1;
}

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

[[noreturn]] void write_failed(const std::string& path, int err) {
  check_stop();  // a FIFO's reader gone (SIGPIPE) or Ctrl-C while blocked: interrupted, as elsewhere
  throw InputError(fmt::format("cannot write '{}': {}", path, std::strerror(err)));
}

// Writes all of `contents` to `fd`; returns 0 or the errno of the write that failed.
int write_all(int fd, const std::string& contents) {
  const char* p = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR && stop_signal() == 0) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return 0;
}

void write_through(const std::string& shown, const OutputTarget& target, const std::string& contents) {
  if (const int own = own_descriptor(target.path); own >= 0) {
    std::fflush(nullptr);  // what stdio holds for this descriptor goes first
    if (const int err = write_all(own, contents); err != 0) write_failed(shown, err);
    return;
  }
  int fd = -1;
  // No O_CREAT: the node exists, and if it went away meanwhile nothing is made in its place. A
  // FIFO blocks here until its reader opens it, as a shell's `>` does; a stop signal ends the wait.
  while ((fd = ::open(target.path.c_str(), O_WRONLY | O_TRUNC | O_NOCTTY | O_CLOEXEC)) < 0 && errno == EINTR)
    check_stop();
  if (fd < 0) write_failed(shown, errno);
  const int err = write_all(fd, contents);
  if (::close(fd) != 0 && err == 0) write_failed(shown, errno);
  if (err != 0) write_failed(shown, err);
}

void replace_atomically(const std::string& shown, const std::string& path, const std::string& contents) {
  struct stat old {};
  const bool existed = ::stat(path.c_str(), &old) == 0;
  // A fresh name that nothing else holds: O_EXCL and O_NOFOLLOW, so a link planted at the
  // temporary name is never followed.
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    tmp = fmt::format("{}.tmp.{}{}", path, getpid(), attempt == 0 ? "" : fmt::format(".{}", attempt));
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) write_failed(shown, errno);
  if (existed) (void)::fchmod(fd, old.st_mode & 07777);  // a replaced report keeps its mode
  const auto fail = [&](int err) {
    ::close(fd);
    ::unlink(tmp.c_str());
    write_failed(shown, err);
  };
  if (const int err = write_all(fd, contents); err != 0) fail(err);
  // A full disk may only show at fsync or close (NFS, some FUSE filesystems).
  if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) fail(errno);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    write_failed(shown, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    write_failed(shown, err);
  }
}

}  // namespace

OutputTarget output_target(const std::string& path) {
  std::string at = path;
  for (int hops = 0; hops < 40; ++hops) {
    if (own_descriptor(at) >= 0 || at.rfind("/proc/", 0) == 0) return {OutputTarget::Kind::Through, at};
    struct stat st {};
    if (::lstat(at.c_str(), &st) != 0)
      return {OutputTarget::Kind::Replace, at};  // missing: made; other errors show at the write
    if (S_ISREG(st.st_mode)) return {OutputTarget::Kind::Replace, at};
    if (S_ISDIR(st.st_mode)) throw InputError(fmt::format("cannot write '{}': it is a folder", path));
    if (S_ISBLK(st.st_mode))
      throw InputError(
          fmt::format("cannot write '{}': it is a block device, and a report never replaces a disk", path));
    if (!S_ISLNK(st.st_mode)) return {OutputTarget::Kind::Through, at};
    std::string link(4096, '\0');
    const ssize_t n = ::readlink(at.c_str(), link.data(), link.size());
    if (n < 0) return {OutputTarget::Kind::Replace, at};
    link.resize(static_cast<size_t>(n));
    at = link.front() == '/' ? link : parent_of(at) + "/" + link;
  }
  throw InputError(fmt::format("cannot write '{}': too many levels of symbolic links", path));
}

void write_file_atomic(const std::string& path, const std::string& contents) {
  const OutputTarget target = output_target(path);
  if (target.kind == OutputTarget::Kind::Through)
    write_through(path, target, contents);
  else
    replace_atomically(path, target.path, contents);
}

ScratchDir::ScratchDir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/repro-audit-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr)
    throw InputError(fmt::format("cannot create a scratch folder under '{}': {}", templ, std::strerror(errno)));
  path_ = templ;
}

// Not std::filesystem::remove_all: libtorch.so exports a broken copy of it that the dynamic
// linker may bind our call to (seen with the torch 2.11 wheel: a jump to address 0).
ScratchDir::~ScratchDir() {
  ::nftw(
      path_.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p) == 0 ? 0 : 0; }, 16,
      FTW_DEPTH | FTW_PHYS);
}

void write_stdout(std::string_view text) {
  errno = 0;
  const bool ok = std::fwrite(text.data(), 1, text.size(), stdout) == text.size() && std::fflush(stdout) == 0;
  const int err = errno;
  check_stop();  // a closed pipe on stdout (SIGPIPE) ends the tool as interrupted
  if (!ok) throw InputError(fmt::format("cannot write to stdout: {}", err != 0 ? std::strerror(err) : "write error"));
}

}  // namespace ra
