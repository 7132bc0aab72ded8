// SPDX-License-Identifier: Apache-2.0
#include "audit/common/owned_folder.h"

#include "audit/common/errors.h"
#include "audit/common/log.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <string_view>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ra {
namespace {

constexpr std::string_view kManifestHead = "repro-audit kept files 1";
constexpr off_t kMaxManifestBytes = off_t{1} << 20;

// A descriptor closed when it goes out of scope.
struct FolderFd {
  int fd = -1;
  explicit FolderFd(int f) : fd(f) {}
  ~FolderFd() {
    if (fd >= 0) ::close(fd);
  }
  FolderFd(const FolderFd&) = delete;
  FolderFd& operator=(const FolderFd&) = delete;
};

const char* kind_of(mode_t mode) {
  return S_ISREG(mode)    ? "a regular file"
         : S_ISDIR(mode)  ? "a folder"
         : S_ISLNK(mode)  ? "a symlink"
         : S_ISFIFO(mode) ? "a FIFO"
         : S_ISSOCK(mode) ? "a socket"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
                          : "not a file";
}

bool plain_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name != kFolderManifest &&
         name.find_first_of(std::string_view("/\0\n", 3)) == std::string_view::npos;
}

// `path` as the folder above it (opened by the caller, symlinks and all: the user named it) and its last name.
std::pair<std::string, std::string> split_path(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

// What stands at `name` in the folder `up`: nothing, a folder the tool wrote (the names its manifest
// lists), or something else, said as the end of a sentence ("it is a symlink").
struct Standing {
  enum class Kind { Missing, Ours, Foreign } kind = Kind::Missing;
  std::string why;
  std::set<std::string> listed;
};

Standing foreign(std::string why) { return {Standing::Kind::Foreign, std::move(why), {}}; }

std::string manifest_problem(int dir, std::set<std::string>& listed) {
  const FolderFd m(::openat(dir, kFolderManifest, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (m.fd < 0) {
    if (errno == ENOENT)
      return fmt::format("it is a folder without {}, so repro-audit did not write it", kFolderManifest);
    return fmt::format("its {} cannot be read: {}", kFolderManifest,
                       errno == ELOOP ? "it is a symlink" : std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(m.fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMaxManifestBytes)
    return fmt::format("its {} is not one repro-audit wrote", kFolderManifest);
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(m.fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  size_t at = 0;
  bool head = true;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    const std::string line = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    at = nl == std::string::npos ? text.size() : nl + 1;
    if (head) {
      if (line != kManifestHead) return fmt::format("its {} is not one repro-audit wrote", kFolderManifest);
      head = false;
    } else if (!plain_name(line)) {
      return fmt::format("its {} is not one repro-audit wrote", kFolderManifest);
    } else {
      listed.insert(line);
    }
  }
  if (head) return fmt::format("its {} is not one repro-audit wrote", kFolderManifest);
  return "";
}

Standing standing(int up, const std::string& name) {
  struct stat st {};
  if (::fstatat(up, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? Standing{} : foreign(std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) return foreign(fmt::format("it is {}", kind_of(st.st_mode)));
  const FolderFd dir(::openat(up, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir.fd < 0) return foreign(errno == ELOOP || errno == ENOTDIR ? "it is a symlink" : std::strerror(errno));
  Standing s{Standing::Kind::Ours, "", {}};
  if (std::string why = manifest_problem(dir.fd, s.listed); !why.empty()) return foreign(std::move(why));
  const int copy = ::dup(dir.fd);
  DIR* entries = copy < 0 ? nullptr : ::fdopendir(copy);
  if (entries == nullptr) {
    if (copy >= 0) ::close(copy);
    return foreign(std::strerror(errno));
  }
  std::string why;
  while (const dirent* e = ::readdir(entries)) {
    const std::string entry = e->d_name;
    if (entry == "." || entry == ".." || entry == kFolderManifest) continue;
    if (s.listed.count(entry) == 0) {
      why = fmt::format("it holds '{}', which repro-audit did not write", excerpt(entry));
      break;
    }
    struct stat es {};
    if (::fstatat(dir.fd, entry.c_str(), &es, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
    if (!S_ISREG(es.st_mode)) {
      why = fmt::format("'{}' in it is {}, not a file repro-audit wrote", excerpt(entry), kind_of(es.st_mode));
      break;
    }
  }
  ::closedir(entries);
  return why.empty() ? s : foreign(std::move(why));
}

[[noreturn]] void refuse(const std::string& folder, const std::string& what, const std::string& why) {
  throw InputError(
      fmt::format("cannot keep {} in '{}': {}; repro-audit replaces only a folder it wrote (move it "
                  "away, or save elsewhere)",
                  what, folder, why));
}

[[noreturn]] void failed(const std::string& folder, const std::string& what, int err) {
  throw InputError(fmt::format("cannot keep {} in '{}': {}", what, folder, std::strerror(err)));
}

// A fresh folder beside `name` in `up`: mkdir takes no name that exists, so nothing is replaced.
std::string fresh_folder(int up, const std::string& name, const std::string& folder, const std::string& what) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    std::string fresh = fmt::format("{}.tmp-{}-{}", name.substr(0, 200), ::getpid(), attempt);
    if (::mkdirat(up, fresh.c_str(), 0777) == 0) return fresh;
    if (errno != EEXIST) failed(folder, what, errno);
  }
  failed(folder, what, EEXIST);
}

// Removes the folder `name` in `up`, which was ours when looked at: the files its manifest lists,
// the manifest, then the folder. A folder that is not empty then is left, with a warning.
void remove_ours(int up, const std::string& name, const std::string& shown) {
  {
    const FolderFd dir(::openat(up, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir.fd < 0) return;
    std::set<std::string> listed;
    (void)manifest_problem(dir.fd, listed);
    for (const auto& f : listed) (void)::unlinkat(dir.fd, f.c_str(), 0);
    (void)::unlinkat(dir.fd, kFolderManifest, 0);
  }
  if (::unlinkat(up, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
    log::warn("the old folder {} held files repro-audit did not write: it was left as '{}' beside it", shown, name);
}

int copy_into(int dir, const std::string& name, const std::string& source) {
  const FolderFd in(::open(source.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.fd < 0) return errno;
  const FolderFd out(::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666));
  if (out.fd < 0) return errno;
  std::vector<char> chunk(size_t{1} << 20);
  for (;;) {
    const ssize_t n = ::read(in.fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out.fd, chunk.data() + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return w < 0 ? errno : EIO;
      done += w;
    }
  }
  return ::close(out.fd) == 0 ? 0 : errno;
}

// Fills the fresh folder `name`: the files, then the manifest that lists them.
int fill(int up, const std::string& name, const std::map<std::string, std::string>& files) {
  const FolderFd dir(::openat(up, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir.fd < 0) return errno;
  std::string manifest = std::string(kManifestHead) + "\n";
  for (const auto& [file, source] : files) {
    if (!plain_name(file)) return EINVAL;
    if (const int err = copy_into(dir.fd, file, source); err != 0) return err;
    manifest += file + "\n";
  }
  const FolderFd out(::openat(dir.fd, kFolderManifest, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666));
  if (out.fd < 0) return errno;
  if (::write(out.fd, manifest.data(), manifest.size()) != static_cast<ssize_t>(manifest.size())) return EIO;
  return 0;
}

// Writes a manifest-less partial folder away: what fill() made, and nothing else.
void remove_unfinished(int up, const std::string& name, const std::map<std::string, std::string>& files) {
  {
    const FolderFd dir(::openat(up, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir.fd >= 0) {
      for (const auto& [file, source] : files)
        if (plain_name(file)) (void)::unlinkat(dir.fd, file.c_str(), 0);
      (void)::unlinkat(dir.fd, kFolderManifest, 0);
    }
  }
  (void)::unlinkat(up, name.c_str(), AT_REMOVEDIR);
}

bool exchange_unsupported(int err) { return err == EINVAL || err == ENOSYS || err == EOPNOTSUPP; }

}  // namespace

void check_owned_folder(const std::string& folder, const std::string& what) {
  const auto [parent, name] = split_path(folder);
  const FolderFd up(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (up.fd < 0) return;  // the write says why, with the path
  if (const Standing s = standing(up.fd, name); s.kind == Standing::Kind::Foreign) refuse(folder, what, s.why);
}

void write_owned_folder(const std::string& folder, const std::map<std::string, std::string>& files,
                        const std::string& what) {
  const auto [parent, name] = split_path(folder);
  if (name.empty() || name == "." || name == ".." || name == "/") refuse(folder, what, "it is not a folder's name");
  const FolderFd up(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (up.fd < 0 && files.empty()) return;  // nothing to write, and no folder there to remove
  if (up.fd < 0) failed(folder, what, errno);
  Standing was = standing(up.fd, name);
  if (was.kind == Standing::Kind::Foreign) refuse(folder, what, was.why);
  if (files.empty()) {
    if (was.kind == Standing::Kind::Missing) return;
    // Moved aside first, so that what is removed is the folder looked at, and looked at again.
    const std::string aside = fresh_folder(up.fd, name, folder, what);
    if (::renameat(up.fd, name.c_str(), up.fd, aside.c_str()) != 0) {
      const int err = errno;
      (void)::unlinkat(up.fd, aside.c_str(), AT_REMOVEDIR);
      if (err == ENOENT) return;
      failed(folder, what, err);
    }
    if (const Standing s = standing(up.fd, aside); s.kind != Standing::Kind::Ours) {
      (void)::renameat2(up.fd, aside.c_str(), up.fd, name.c_str(), RENAME_NOREPLACE);
      refuse(folder, what, s.why);
    }
    remove_ours(up.fd, aside, folder);
    return;
  }
  const std::string fresh = fresh_folder(up.fd, name, folder, what);
  if (const int err = fill(up.fd, fresh, files); err != 0) {
    remove_unfinished(up.fd, fresh, files);
    failed(folder, what, err);
  }
  const auto give_up = [&](int err) {
    remove_ours(up.fd, fresh, folder);
    failed(folder, what, err);
  };
  if (was.kind == Standing::Kind::Missing) {
    if (::renameat2(up.fd, fresh.c_str(), up.fd, name.c_str(), RENAME_NOREPLACE) == 0) return;
    const int err = errno;
    // Without renameat2, rename: it replaces nothing but an empty folder.
    if (exchange_unsupported(err) && ::renameat(up.fd, fresh.c_str(), up.fd, name.c_str()) == 0) return;
    if (err == EEXIST) {  // it appeared meanwhile: ours or not, it is looked at as if it had been there
      was = standing(up.fd, name);
      if (was.kind != Standing::Kind::Ours) {
        remove_ours(up.fd, fresh, folder);
        refuse(folder, what, was.kind == Standing::Kind::Foreign ? was.why : "it changed while it was written");
      }
    } else {
      give_up(exchange_unsupported(err) ? errno : err);
    }
  }
  // An old folder of ours: exchanged with the new one in one step, then looked at again.
  if (::renameat2(up.fd, fresh.c_str(), up.fd, name.c_str(), RENAME_EXCHANGE) == 0) {
    if (const Standing s = standing(up.fd, fresh); s.kind != Standing::Kind::Ours) {
      // It stopped being ours meanwhile: it goes back, and the new folder goes.
      (void)::renameat2(up.fd, fresh.c_str(), up.fd, name.c_str(), RENAME_EXCHANGE);
      remove_ours(up.fd, fresh, folder);
      refuse(folder, what, s.why);
    }
    remove_ours(up.fd, fresh, folder);
    return;
  }
  if (!exchange_unsupported(errno)) give_up(errno);
  // A filesystem that cannot exchange: the old folder is renamed aside (over a fresh empty folder,
  // which rename replaces; a file or a symlink cannot take a folder's place), looked at, then the
  // new one renamed in.
  const std::string aside = fresh_folder(up.fd, name, folder, what);
  if (::renameat(up.fd, name.c_str(), up.fd, aside.c_str()) != 0) {
    const int err = errno;
    (void)::unlinkat(up.fd, aside.c_str(), AT_REMOVEDIR);
    give_up(err);
  }
  if (const Standing s = standing(up.fd, aside); s.kind != Standing::Kind::Ours) {
    (void)::renameat(up.fd, aside.c_str(), up.fd, name.c_str());
    remove_ours(up.fd, fresh, folder);
    refuse(folder, what, s.why);
  }
  if (::renameat(up.fd, fresh.c_str(), up.fd, name.c_str()) != 0) {
    const int err = errno;
    (void)::renameat(up.fd, aside.c_str(), up.fd, name.c_str());
    give_up(err);
  }
  remove_ours(up.fd, aside, folder);
}

std::string kept_file_problem(const std::string& path) {
  const auto [parent, name] = split_path(path);
  struct stat st {};
  if (::lstat(parent.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    return S_ISLNK(st.st_mode) ? fmt::format("lies in '{}', a symlink, not followed", parent)
                               : fmt::format("lies in '{}', which is {}, not a folder", parent, kind_of(st.st_mode));
  if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT ? "is missing" : std::strerror(errno);
  if (S_ISLNK(st.st_mode)) return "is a symlink, not followed";
  if (!S_ISREG(st.st_mode)) return fmt::format("is {}, not a regular file", kind_of(st.st_mode));
  return "";
}

}  // namespace ra
