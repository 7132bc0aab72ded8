// SPDX-License-Identifier: Apache-2.0
#include "audit/common/files.h"

#include "audit/digest/digest_kernel.h"
#include "audit/common/errors.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <fcntl.h>
#include <ftw.h>
#include <unistd.h>

namespace ra {

std::string read_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(fmt::format("{} '{}' does not exist", what, path));
  if (std::filesystem::is_directory(path, ec)) throw InputError(fmt::format("{} '{}' is a directory", what, path));
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

void write_file_atomic(const std::string& path, const std::string& contents) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  const char* p = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw InputError(fmt::format("cannot write '{}': {}", path, std::strerror(err)));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  // A full disk may only show at fsync or close (NFS, some FUSE filesystems).
  if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw InputError(fmt::format("cannot write '{}': {}", path, std::strerror(err)));
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw InputError(fmt::format("cannot write '{}': {}", path, std::strerror(err)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw InputError(fmt::format("cannot write '{}': {}", path, std::strerror(err)));
  }
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

}  // namespace ra
