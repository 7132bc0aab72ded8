// SPDX-License-Identifier: Apache-2.0
#include "audit/exec/artifacts.h"

#include "audit/common/errors.h"
#include "audit/common/stop.h"
#include "audit/digest/digest_kernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ra::exec {
namespace {

namespace fs = std::filesystem;

constexpr size_t kNameMax = 255;  // NAME_MAX: no longer name can be in a folder
constexpr int kMaxDepth = 64;     // folders below {out} walked without patterns
constexpr size_t kChunk = size_t{1} << 20;

// --- The matcher: one path component against one pattern component -----------------------------

enum class Tok : uint8_t { Lit, Any, Class, Star, Digits, Trial };
struct Token {
  Tok kind = Tok::Lit;
  char c = 0;
  std::string set;  // Class: the characters and ranges between [ and ]
  bool negate = false;
};
Token tok(Tok kind, char c = 0) { return Token{kind, c, {}, false}; }

std::vector<Token> compile_component(const std::string& text) {
  std::vector<Token> out;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 6, "{rank}") == 0) {
      out.push_back(tok(Tok::Digits));
      i += 6;
    } else if (text.compare(i, 7, "{trial}") == 0) {
      out.push_back(tok(Tok::Trial));
      i += 7;
    } else if (text[i] == '*') {
      if (out.empty() || out.back().kind != Tok::Star) out.push_back(tok(Tok::Star));
      ++i;
    } else if (text[i] == '?') {
      out.push_back(tok(Tok::Any));
      ++i;
    } else if (text[i] == '[') {
      size_t j = i + 1;
      bool negate = false;
      if (j < text.size() && (text[j] == '!' || text[j] == '^')) negate = true, ++j;
      const size_t first = j;
      if (j < text.size() && text[j] == ']') ++j;  // a ']' first is a member
      while (j < text.size() && text[j] != ']') ++j;
      if (j >= text.size()) {  // no closing ']': a literal '['
        out.push_back(tok(Tok::Lit, '['));
        ++i;
        continue;
      }
      out.push_back({Tok::Class, 0, text.substr(first, j - first), negate});
      i = j + 1;
    } else if (text[i] == '\\' && i + 1 < text.size()) {
      out.push_back(tok(Tok::Lit, text[i + 1]));
      i += 2;
    } else {
      out.push_back(tok(Tok::Lit, text[i]));
      ++i;
    }
  }
  return out;
}

bool in_class(const Token& t, char c) {
  bool hit = false;
  for (size_t i = 0; i < t.set.size(); ++i) {
    if (i + 2 < t.set.size() && t.set[i + 1] == '-') {
      const auto lo = static_cast<unsigned char>(t.set[i]), hi = static_cast<unsigned char>(t.set[i + 2]);
      if (lo <= static_cast<unsigned char>(c) && static_cast<unsigned char>(c) <= hi) hit = true;
      i += 2;
    } else if (t.set[i] == c) {
      hit = true;
    }
  }
  return hit != t.negate;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A component with no wildcard and no {rank}: matched by its name, without reading the folder.
bool literal(const std::vector<Token>& toks) {
  return std::all_of(toks.begin(), toks.end(),
                     [](const Token& t) { return t.kind == Tok::Lit || t.kind == Tok::Trial; });
}

std::string literal_name(const std::vector<Token>& toks, const std::string& trial) {
  std::string s;
  for (const auto& t : toks) s += t.kind == Tok::Trial ? trial : std::string(1, t.c);
  return s;
}

struct ComponentMatch {
  std::string shown;  // the name with the run's number put back to {trial}
  int rank = -1;      // {rank}'s digits, -1 without (or too many digits)
};

// Whether `name` matches `toks` ("" for `trial`: any digits). A table of suffix matches (token t
// onwards against name[j..]), then one pass that takes each wildcard as long as the rest allows:
// O(tokens x length), no recursion, whatever the pattern.
std::optional<ComponentMatch> match_component(const std::vector<Token>& toks, const std::string& name,
                                              const std::string& trial) {
  const size_t n = name.size(), nt = toks.size();
  if (n == 0 || n > kNameMax || name == "." || name == "..") return std::nullopt;
  if (name[0] == '.' && (toks.empty() || toks[0].kind != Tok::Lit))
    return std::nullopt;  // as glob: '*' skips hidden names
  size_t least = 0;
  for (const auto& t : toks)
    least += t.kind == Tok::Star ? 0 : t.kind == Tok::Trial && !trial.empty() ? trial.size() : 1;
  if (least > n) return std::nullopt;
  std::vector<uint8_t> ok((nt + 1) * (n + 1), 0);
  const auto at = [&](size_t t, size_t j) -> uint8_t& { return ok[t * (n + 1) + j]; };
  at(nt, n) = 1;
  for (size_t t = nt; t-- > 0;) {
    const Token& k = toks[t];
    for (size_t j = n + 1; j-- > 0;) {
      const bool more = j < n;
      switch (k.kind) {
        case Tok::Lit:
          at(t, j) = more && name[j] == k.c && at(t + 1, j + 1);
          break;
        case Tok::Any:
          at(t, j) = more && at(t + 1, j + 1);
          break;
        case Tok::Class:
          at(t, j) = more && in_class(k, name[j]) && at(t + 1, j + 1);
          break;
        case Tok::Star:
          at(t, j) = at(t + 1, j) || (more && at(t, j + 1));
          break;
        case Tok::Trial:
          if (!trial.empty()) {
            at(t, j) =
                name.compare(j, trial.size(), trial) == 0 && j + trial.size() <= n && at(t + 1, j + trial.size());
            break;
          }
          [[fallthrough]];
        case Tok::Digits:
          at(t, j) = more && is_digit(name[j]) && (at(t + 1, j + 1) || at(t, j + 1));
          break;
      }
    }
  }
  if (!at(0, 0)) return std::nullopt;
  ComponentMatch m;
  size_t j = 0;
  for (size_t t = 0; t < nt; ++t) {
    const Token& k = toks[t];
    size_t next = j + 1;
    if (k.kind == Tok::Star) {
      next = n;
      while (!at(t + 1, next)) --next;
    } else if (k.kind == Tok::Digits || (k.kind == Tok::Trial && trial.empty())) {
      size_t end = j;
      while (end < n && is_digit(name[end])) ++end;
      next = end;
      while (!at(t + 1, next)) --next;
    } else if (k.kind == Tok::Trial) {
      next = j + trial.size();
    }
    const std::string span = name.substr(j, next - j);
    if (k.kind == Tok::Trial)
      m.shown += "{trial}";
    else
      m.shown += span;
    if (k.kind == Tok::Digits) m.rank = span.size() > 6 ? -1 : std::stoi(span);
    j = next;
  }
  return m;
}

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, size_t from = 0) {
  std::string out;
  for (size_t i = from; i < parts.size(); ++i) out += (i > from ? "/" : "") + parts[i];
  return out;
}

// An absolute path's components, `.` and `..` resolved by text.
std::vector<std::string> normal_components(const std::string& absolute) {
  std::vector<std::string> out;
  for (const auto& c : split(absolute)) {
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      if (!out.empty()) out.pop_back();
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string name_of(const std::string& shown, const std::vector<std::string>& parts) {
  return shown.empty() ? join(parts) : (shown == "/" ? "" : shown) + "/" + join(parts);
}

// --- Reading and moving through descriptors -----------------------------------------------------

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd, o.fd);
    return *this;
  }
  Fd(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

Fd open_dir_at(int at, const std::string& name) {
  return Fd(::openat(at, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

// Opens the folder `dirs` names below `root`, following no symlink; `why` says what stopped it.
Fd open_below(int root, const std::vector<std::string>& dirs, std::string* why) {
  Fd cur(::fcntl(root, F_DUPFD_CLOEXEC, 0));
  for (size_t i = 0; i < dirs.size() && cur.fd >= 0; ++i) {
    Fd next = open_dir_at(cur.fd, dirs[i]);
    if (next.fd < 0 && why != nullptr) {
      struct stat st {};
      const bool link = ::fstatat(cur.fd, dirs[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
      *why = link ? fmt::format("'{}' is a symlink: not followed",
                                join({dirs.begin(), dirs.begin() + static_cast<long>(i) + 1}))
                  : fmt::format("'{}': {}", join({dirs.begin(), dirs.begin() + static_cast<long>(i) + 1}),
                                std::strerror(errno));
    }
    cur = std::move(next);
  }
  return cur;
}

std::string kind_of(mode_t m) {
  return S_ISFIFO(m)   ? "a FIFO"
         : S_ISSOCK(m) ? "a socket"
         : S_ISCHR(m)  ? "a character device"
         : S_ISBLK(m)  ? "a block device"
                       : "not a file";
}

// Reads up to `size` bytes of an open regular file in chunks, a stop signal checked between them.
template <class Fn>
int64_t read_bounded(int fd, int64_t size, const std::string& what, Fn&& each) {
  std::vector<char> buf(kChunk);
  int64_t total = 0;
  while (total < size) {
    check_stop();
    const ssize_t n =
        ::read(fd, buf.data(), static_cast<size_t>(std::min<int64_t>(size - total, static_cast<int64_t>(kChunk))));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) throw InputError(fmt::format("cannot read artifact '{}': {}", what, std::strerror(errno)));
    if (n == 0) break;
    each(buf.data(), static_cast<size_t>(n));
    total += n;
  }
  return total;
}

void write_all(int fd, const char* p, size_t n, const std::string& what) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = w < 0 ? errno : ENOSPC;
      throw InputError(err == ENOSPC || err == EDQUOT
                           ? fmt::format("no space left in TMPDIR while taking artifact '{}'", what)
                           : fmt::format("cannot take artifact '{}': {}", what, std::strerror(err)));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Copies an open regular file (at most `size` bytes) into a new file `to` in folder `into`.
void copy_into(int from, int64_t size, int into, const std::string& to, const std::string& what) {
  Fd out(::openat(into, to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (out.fd < 0) throw InputError(fmt::format("cannot take artifact '{}': {}", what, std::strerror(errno)));
  read_bounded(from, size, what, [&](const char* p, size_t n) { write_all(out.fd, p, n, what); });
}

// A match the walk found, taken afterwards (so that two patterns matching one file both count).
struct Candidate {
  std::vector<std::string> dirs;  // below the root, to the folder holding it
  std::string leaf;
  std::string name;
  size_t pattern = 0;  // index, SIZE_MAX for {out} without patterns
  int root = 0;        // as ArtifactPattern::root
  int rank = -1;
  bool link = false;
  dev_t dev = 0;
  ino_t ino = 0;
};

struct Walk {
  const ArtifactRoots* roots = nullptr;
  std::string trial;  // "" for any
  std::vector<Candidate> found;
  std::vector<Skipped> skipped;
  bool literal_links_only = false;  // before the first run: report only symlinks the pattern names literally
};

// Calls `each(entry)` for every name in an open folder.
void for_each_entry(int dirfd, const std::function<void(const std::string&)>& each) {
  const int dup = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return;
  DIR* d = ::fdopendir(dup);
  if (d == nullptr) {
    ::close(dup);
    return;
  }
  ::rewinddir(d);
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& n : names) {
    check_stop();
    each(n);
  }
}

// Walks a pattern's components from the folder `dirfd` (component i next).
void walk_pattern(Walk& w, const ArtifactPattern& p, size_t index, const std::vector<std::vector<Token>>& comps,
                  size_t i, int dirfd, std::vector<std::string>& dirs, std::vector<std::string>& shown, int rank) {
  const bool last = i + 1 == comps.size();
  const auto visit = [&](const std::string& entry, const ComponentMatch& m, bool named) {
    struct stat st {};
    if (::fstatat(dirfd, entry.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
    shown.push_back(m.shown);
    const int r = m.rank >= 0 ? m.rank : rank;
    const std::string name = name_of(p.shown, shown);
    if (last) {
      if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
        w.found.push_back({dirs, entry, name, index, p.root, r, S_ISLNK(st.st_mode), st.st_dev, st.st_ino});
      } else if (!S_ISDIR(st.st_mode)) {
        w.skipped.push_back({name, p.text, kind_of(st.st_mode) + ", not a regular file: not read"});
      }
    } else if (S_ISLNK(st.st_mode)) {
      if (!w.literal_links_only || named)
        w.skipped.push_back(
            {name, p.text,
             "a symlink, not followed (exec follows none below the working directory, {out} or an --artifact-root)"});
    } else if (S_ISDIR(st.st_mode) && !w.roots->is_scratch(st.st_dev, st.st_ino)) {
      const Fd sub = open_dir_at(dirfd, entry);
      if (sub.fd >= 0) {
        dirs.push_back(entry);
        walk_pattern(w, p, index, comps, i + 1, sub.fd, dirs, shown, r);
        dirs.pop_back();
      }
    }
    shown.pop_back();
  };
  if (literal(comps[i])) {
    const std::string entry = literal_name(comps[i], w.trial);
    if (w.trial.empty()) {  // any run's number: read the folder
      for_each_entry(dirfd, [&](const std::string& e) {
        if (const auto m = match_component(comps[i], e, "")) visit(e, *m, true);
      });
    } else if (const auto m = match_component(comps[i], entry, w.trial)) {
      visit(entry, *m, true);
    }
    return;
  }
  for_each_entry(dirfd, [&](const std::string& e) {
    if (const auto m = match_component(comps[i], e, w.trial)) visit(e, *m, false);
  });
}

// Every file below {out} (no patterns): regular files and symlinks, any depth up to kMaxDepth.
void walk_all(Walk& w, int dirfd, std::vector<std::string>& dirs, int depth) {
  for_each_entry(dirfd, [&](const std::string& e) {
    struct stat st {};
    if (::fstatat(dirfd, e.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
    dirs.push_back(e);
    const std::string name = join(dirs);
    dirs.pop_back();
    if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
      w.found.push_back({dirs, e, name, SIZE_MAX, -1, -1, S_ISLNK(st.st_mode), st.st_dev, st.st_ino});
    } else if (S_ISDIR(st.st_mode)) {
      if (depth >= kMaxDepth) {
        w.skipped.push_back(
            {name, "", fmt::format("a folder deeper than {} levels below $REPRO_AUDIT_OUT: not walked", kMaxDepth)});
        return;
      }
      const Fd sub = open_dir_at(dirfd, e);
      if (sub.fd < 0) return;
      dirs.push_back(e);
      walk_all(w, sub.fd, dirs, depth + 1);
      dirs.pop_back();
    } else {
      w.skipped.push_back({name, "", kind_of(st.st_mode) + ", not a regular file: not read"});
    }
  });
}

std::vector<std::vector<Token>> compiled(const ArtifactPattern& p) {
  std::vector<std::vector<Token>> out;
  for (const auto& c : p.below) out.push_back(compile_component(c));
  return out;
}

// Takes one candidate into folder `into` as entry `to`; nullopt (and a reason) when it changed
// under us. `root` is the folder its `dirs` start from.
std::optional<Taken> take_one(const Candidate& c, const std::string& pattern, int root, int into, const std::string& to,
                              const std::string& into_path, std::vector<Skipped>& skipped) {
  std::string why;
  const Fd dir = open_below(root, c.dirs, &why);
  const auto skip = [&](const std::string& reason) {
    skipped.push_back({c.name, pattern, reason});
    return std::nullopt;
  };
  if (dir.fd < 0) return skip(why);
  struct stat st {};
  if (::fstatat(dir.fd, c.leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_dev != c.dev || st.st_ino != c.ino)
    return skip("it changed while it was taken");
  Taken k;
  k.name = c.name;
  k.pattern = pattern;
  k.rank = c.rank;
  k.path = into_path + "/" + to;
  if (c.link) {
    // A symlink is taken as a symlink: its text, never its target.
    std::vector<char> buf(PATH_MAX + 1);
    const ssize_t n = ::readlinkat(dir.fd, c.leaf.c_str(), buf.data(), buf.size());
    if (n < 0 || static_cast<size_t>(n) >= buf.size()) return skip("its link text cannot be read");
    k.symlink = true;
    k.link.assign(buf.data(), static_cast<size_t>(n));
    const std::string link_to = to + ".link";
    if (::renameat(dir.fd, c.leaf.c_str(), into, link_to.c_str()) != 0) {
      if (errno != EXDEV) throw InputError(fmt::format("cannot take artifact '{}': {}", c.name, std::strerror(errno)));
      if (::symlinkat(k.link.c_str(), into, link_to.c_str()) != 0 || ::unlinkat(dir.fd, c.leaf.c_str(), 0) != 0)
        throw InputError(fmt::format("cannot take artifact '{}': {}", c.name, std::strerror(errno)));
    }
    Fd text(::openat(into, to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (text.fd < 0) throw InputError(fmt::format("cannot take artifact '{}': {}", c.name, std::strerror(errno)));
    write_all(text.fd, k.link.data(), k.link.size(), c.name);
    k.bytes = static_cast<int64_t>(k.link.size());
    // Marked, so that a file holding the same text is not the same artifact.
    k.digest = digest_kernel::bytes_digest(("symlink\n" + k.link).data(), k.link.size() + 8);
    return k;
  }
  if (::renameat(dir.fd, c.leaf.c_str(), into, to.c_str()) != 0) {
    if (errno != EXDEV) throw InputError(fmt::format("cannot take artifact '{}': {}", c.name, std::strerror(errno)));
    // Across filesystems: copy what is verified a regular file, then unlink the run's.
    const Fd src(::openat(dir.fd, c.leaf.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat s2 {};
    if (src.fd < 0 || ::fstat(src.fd, &s2) != 0 || !S_ISREG(s2.st_mode) || s2.st_ino != c.ino)
      return skip("it changed while it was taken");
    copy_into(src.fd, s2.st_size, into, to, c.name);
    ::unlinkat(dir.fd, c.leaf.c_str(), 0);
  }
  const Fd fd(::openat(into, to.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat s3 {};
  if (fd.fd < 0 || ::fstat(fd.fd, &s3) != 0 || !S_ISREG(s3.st_mode))
    return skip("it changed while it was taken: not a regular file");
  digest_kernel::Lanes lanes;
  uint64_t total = 0;
  read_bounded(fd.fd, s3.st_size, c.name, [&](const char* p, size_t n) {
    lanes += digest_kernel::words8(reinterpret_cast<const uint8_t*>(p), n, total);
    total += n;
  });
  k.bytes = static_cast<int64_t>(total);
  k.digest = digest_kernel::finish(lanes, "uint8", {static_cast<int64_t>(total)});
  return k;
}

// Opens a regular file for a bounded read: O_NOFOLLOW, O_NONBLOCK, and fstat must say S_ISREG.
Fd open_regular(const std::string& path, int64_t* size) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (fd.fd >= 0 && (::fstat(fd.fd, &st) != 0 || !S_ISREG(st.st_mode))) fd = Fd();
  if (size != nullptr) *size = fd.fd >= 0 ? st.st_size : 0;
  return fd;
}

// Walks every pattern from its root (a bare one from the working directory and from {out}, whose
// descriptor is `out`, -1 when it cannot be entered), marking in `matched` those that found a
// file. One name found both below {out} and in the working directory: the latter is "./NAME".
void walk_patterns(Walk& w, const std::vector<ArtifactPattern>& patterns, const ArtifactRoots& roots, int out,
                   std::vector<bool>& matched) {
  for (size_t i = 0; i < patterns.size(); ++i) {
    const ArtifactPattern& p = patterns[i];
    const int from = p.out ? out : roots.fd(p.root);
    if (from < 0) continue;
    std::vector<std::string> dirs, shown;
    const size_t before = w.found.size();
    walk_pattern(w, p, i, compiled(p), 0, from, dirs, shown, -1);
    if (p.bare && out >= 0) {  // also below {out}, named as there
      ArtifactPattern in_out = p;
      in_out.root = -1;
      walk_pattern(w, in_out, i, compiled(p), 0, out, dirs, shown, -1);
    }
    if (w.found.size() > before) matched[i] = true;
  }
  std::set<std::string> in_out;
  for (const Candidate& c : w.found)
    if (c.root < 0) in_out.insert(c.name);
  for (Candidate& c : w.found)
    if (c.root == 0 && in_out.count(c.name)) c.name = "./" + c.name;
}

}  // namespace

ArtifactPattern parse_artifact_pattern(const std::string& text) {
  if (text.empty()) throw UsageError("--artifact needs a path");
  if (text.size() > PATH_MAX)
    throw UsageError(fmt::format("--artifact '{}...' is longer than a path can be", text.substr(0, 60)));
  if (text.find('\0') != std::string::npos) throw UsageError("--artifact holds a NUL byte");
  ArtifactPattern p;
  p.text = text;
  for (size_t at = text.find('{'); at != std::string::npos; at = text.find('{', at + 1)) {
    const size_t close = text.find('}', at);
    const std::string name = close == std::string::npos ? text.substr(at) : text.substr(at, close - at + 1);
    if (name == "{trial}")
      p.trial = true;
    else if (name == "{rank}") {
      if (p.rank) throw UsageError(fmt::format("--artifact '{}' holds {{rank}} twice", text));
      p.rank = true;
    } else if (name == "{out}") {
      if (at != 0 || text.compare(5, 1, "/") != 0)
        throw UsageError(fmt::format(
            "--artifact '{}': {{out}} stands for $REPRO_AUDIT_OUT and may only start the path ({{out}}/FILE)", text));
      p.out = true;
    } else {
      throw UsageError(fmt::format(
          "--artifact '{}': unknown placeholder {} (placeholders: {{out}}, {{trial}}, {{rank}})", text, name));
    }
  }
  if (p.out) {
    p.root = -1;
    for (const auto& c : split(text.substr(6))) {
      if (c == "..")
        throw UsageError(fmt::format(
            "--artifact '{}': '..' leaves $REPRO_AUDIT_OUT; an {{out}} pattern names files inside it", text));
      if (!c.empty() && c != ".") p.below.push_back(c);
    }
    if (p.below.empty()) throw UsageError(fmt::format("--artifact '{}' names no file below {{out}}", text));
  }
  return p;
}

void place_artifact_pattern(ArtifactPattern& p, const std::string& cwd, const std::vector<std::string>& roots,
                            const std::vector<std::string>& cwd_aliases,
                            const std::vector<std::vector<std::string>>& root_aliases) {
  if (p.out) return;
  const std::vector<std::string> given = split(p.text);
  const bool absolute = p.text[0] == '/';
  const bool dotdot = std::find(given.begin(), given.end(), "..") != given.end();
  p.below.clear();
  p.bare = false;
  if (!absolute && !dotdot) {  // below the working directory, as written, and below {out}
    p.root = 0;
    p.bare = true;
    p.shown.clear();
    for (const auto& c : given)
      if (!c.empty() && c != ".") p.below.push_back(c);
    if (p.below.empty()) throw UsageError(fmt::format("--artifact '{}' names no file", p.text));
    return;
  }
  const std::vector<std::string> path = normal_components(absolute ? p.text : cwd + "/" + p.text);
  // The deepest folder that holds it: an --artifact-root always, the working directory only for an
  // absolute path without '..' (a '..' is allowed only where the user named the folder it reaches).
  int best = -2;
  size_t best_depth = 0;
  std::string best_shown;
  const auto consider = [&](int root, const std::string& folder) {
    const std::vector<std::string> f = normal_components(folder);
    if (f.size() >= path.size() || (best >= -1 && f.size() <= best_depth) ||
        !std::equal(f.begin(), f.end(), path.begin()))
      return;
    best = root;
    best_depth = f.size();
    best_shown = "/" + join(f);
  };
  for (size_t r = 0; r < roots.size(); ++r) {
    consider(static_cast<int>(r) + 1, roots[r]);
    if (r < root_aliases.size())
      for (const auto& a : root_aliases[r]) consider(static_cast<int>(r) + 1, a);
  }
  if (!dotdot) {
    consider(0, cwd);
    for (const auto& a : cwd_aliases) consider(0, a);
  }
  if (best < -1)
    throw UsageError(
        fmt::format("--artifact '{}' reaches outside the working directory: exec takes files only below it, or below "
                    "a folder named with --artifact-root DIR",
                    p.text));
  p.root = best;
  p.shown = best_shown;
  p.below.assign(path.begin() + static_cast<long>(best_depth), path.end());
}

std::optional<PathMatch> match_artifact_path(const ArtifactPattern& p, const std::string& path, int trial) {
  const std::vector<std::string> parts = split(path);
  if (parts.size() != p.below.size()) return std::nullopt;
  const std::string t = trial < 0 ? "" : std::to_string(trial);
  PathMatch m;
  std::vector<std::string> shown;
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto c = match_component(compile_component(p.below[i]), parts[i], t);
    if (!c) return std::nullopt;
    shown.push_back(c->shown);
    if (c->rank >= 0) m.rank = c->rank;
  }
  m.name = name_of(p.shown, shown);
  return m;
}

ArtifactRoots::ArtifactRoots(const std::string& scratch, const std::vector<std::string>& roots) : scratch_(scratch) {
  const auto open_root = [&](const std::string& path, const std::string& what) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      for (const int f : fds_) ::close(f);
      throw InputError(fmt::format("{} '{}': {}", what, path, err == ENOTDIR ? "not a folder" : std::strerror(err)));
    }
    fds_.push_back(fd);
  };
  open_root(scratch, "scratch folder");
  open_root(".", "working directory");
  for (const auto& r : roots) open_root(r, "--artifact-root");
  struct stat st {};
  if (::fstat(fds_[0], &st) == 0) scratch_dev_ = st.st_dev, scratch_ino_ = st.st_ino;
}

ArtifactRoots::~ArtifactRoots() {
  for (const int fd : fds_) ::close(fd);
}

TakeResult take_artifacts(const std::vector<ArtifactPattern>& patterns, int trial, const ArtifactRoots& roots,
                          const std::string& run) {
  TakeResult result;
  result.matched.assign(patterns.size(), false);
  Walk w;
  w.roots = &roots;
  w.trial = std::to_string(trial);
  std::string why;
  const Fd run_dir = open_below(roots.scratch_fd(), {run}, &why);
  if (run_dir.fd < 0)
    throw InputError(fmt::format("the command replaced exec's scratch folder {}/{} ({})", roots.scratch(), run, why));
  const Fd out = open_below(run_dir.fd, {"out"}, &why);
  const bool wants_out =
      patterns.empty() || std::any_of(patterns.begin(), patterns.end(), [](const auto& p) { return p.out; });
  if (out.fd < 0 && wants_out) {
    struct stat st {};
    const bool link = ::fstatat(run_dir.fd, "out", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
    result.skipped.push_back(
        {"$REPRO_AUDIT_OUT", "",
         link ? "replaced by a symlink, not followed: nothing in it was taken" : "removed by the command"});
  }
  if (patterns.empty() && out.fd >= 0) {
    std::vector<std::string> dirs;
    walk_all(w, out.fd, dirs, 0);
  }
  walk_patterns(w, patterns, roots, out.fd, result.matched);
  result.skipped.insert(result.skipped.end(), w.skipped.begin(), w.skipped.end());
  if (w.found.empty()) return result;

  if (::mkdirat(run_dir.fd, "artifacts", 0700) != 0)
    throw InputError(fmt::format("cannot take artifacts into {}/{}/artifacts: {}", roots.scratch(), run,
                                 errno == EEXIST ? "the command made it first" : std::strerror(errno)));
  const Fd into = open_dir_at(run_dir.fd, "artifacts");
  if (into.fd < 0)
    throw InputError(
        fmt::format("cannot take artifacts into {}/{}/artifacts: {}", roots.scratch(), run, std::strerror(errno)));
  const std::string into_path = roots.scratch() + "/" + run + "/artifacts";
  std::stable_sort(w.found.begin(), w.found.end(),
                   [](const Candidate& a, const Candidate& b) { return a.name < b.name; });
  std::set<std::pair<dev_t, ino_t>> seen;  // two patterns matched one file
  for (const Candidate& c : w.found) {
    check_stop();
    if (!seen.insert({c.dev, c.ino}).second) continue;
    const int root = c.root < 0 ? out.fd : roots.fd(c.root);
    const std::string pattern = c.pattern == SIZE_MAX ? "" : patterns[c.pattern].text;
    std::optional<Taken> k =
        take_one(c, pattern, root, into.fd, fmt::format("a{}", result.taken.size()), into_path, result.skipped);
    if (k) result.taken.push_back(std::move(*k));
  }
  return result;
}

TreeStamps stamp_tree(int dirfd, const ArtifactRoots& roots, int depth, size_t cap) {
  TreeStamps out;
  std::vector<std::string> dirs;
  size_t seen = 0;
  const std::function<void(int)> walk = [&](int fd) {
    for_each_entry(fd, [&](const std::string& e) {
      struct stat st {};
      if (++seen > cap || e[0] == '.' || ::fstatat(fd, e.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
      dirs.push_back(e);
      if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
        out[join(dirs)] = fmt::format("{}:{}:{}.{}", st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
      } else if (S_ISDIR(st.st_mode) && static_cast<int>(dirs.size()) < depth &&
                 !roots.is_scratch(st.st_dev, st.st_ino)) {
        const Fd sub = open_dir_at(fd, e);
        if (sub.fd >= 0) walk(sub.fd);
      }
      dirs.pop_back();
    });
  };
  walk(dirfd);
  return out;
}

TreeStamps stamp_tree(const std::string& folder, const ArtifactRoots& roots, int depth, size_t cap) {
  const Fd fd(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  return fd.fd < 0 ? TreeStamps{} : stamp_tree(fd.fd, roots, depth, cap);
}

std::vector<std::string> changed_files(const TreeStamps& before, const TreeStamps& after) {
  std::vector<std::string> out;
  for (const auto& [name, stamp] : after)
    if (const auto it = before.find(name); it == before.end() || it->second != stamp) out.push_back(name);
  return out;
}

std::vector<std::string> existing_matches(const ArtifactPattern& pattern, const ArtifactRoots& roots,
                                          std::vector<Skipped>* skipped) {
  if (pattern.out) return {};
  Walk w;
  w.roots = &roots;
  w.literal_links_only = true;
  std::vector<std::string> dirs, shown;
  walk_pattern(w, pattern, 0, compiled(pattern), 0, roots.fd(pattern.root), dirs, shown, -1);
  if (skipped != nullptr) skipped->insert(skipped->end(), w.skipped.begin(), w.skipped.end());
  std::vector<std::string> out;
  for (const auto& c : w.found) out.push_back(c.name);
  return out;
}

std::optional<std::string> read_regular(const std::string& path, int64_t cap, std::string* why) {
  const Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  const auto no = [&](const std::string& w) {
    if (why != nullptr) *why = w;
    return std::nullopt;
  };
  if (fd.fd < 0) return no(errno == ELOOP ? "a symlink, not followed" : std::strerror(errno));
  if (::fstat(fd.fd, &st) != 0 || !S_ISREG(st.st_mode))
    return no(kind_of(st.st_mode) + ", not a regular file: not read");
  if (st.st_size > cap) return no(fmt::format("{} bytes, more than the {} read", st.st_size, cap));
  std::string out;
  read_bounded(fd.fd, st.st_size, path, [&](const char* p, size_t n) { out.append(p, n); });
  return out;
}

std::string sniff_kind(const std::string& path) {
  int64_t size = 0;
  const Fd fd = open_regular(path, &size);
  if (fd.fd < 0) return "bytes";
  unsigned char head[30 + 256] = {};
  size_t got = 0;
  read_bounded(fd.fd, std::min<int64_t>(size, static_cast<int64_t>(sizeof head)), path, [&](const char* p, size_t n) {
    std::memcpy(head + got, p, n);
    got += n;
  });
  if (got >= 30 && std::memcmp(head, "PK\x03\x04", 4) == 0) {
    const size_t name_len = head[26] | (head[27] << 8);
    if (30 + name_len <= got) {
      const std::string first(reinterpret_cast<const char*>(head + 30), name_len);
      if (first.size() >= 8 && first.compare(first.size() - 8, 8, "data.pkl") == 0) return "torch.save";
    }
    return "bytes";
  }
  if (got >= 9) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | head[i];
    if (n >= 2 && n <= (uint64_t{100} << 20) && n <= static_cast<uint64_t>(size) - 8 && head[8] == '{')
      return "safetensors";
  }
  return "bytes";
}

report::DivergenceStats byte_difference(const std::string& a, const std::string& b) {
  report::DivergenceStats s;
  int64_t size_a = 0, size_b = 0;
  const Fd fa = open_regular(a, &size_a), fb = open_regular(b, &size_b);
  if (fa.fd < 0 || fb.fd < 0) {
    s.note = "statistics unavailable: an artifact could not be read back";
    return s;
  }
  // Both read in step, each at most the size fstat gave.
  std::vector<char> ba(kChunk), bb(kChunk);
  const auto fill = [](int fd, std::vector<char>& buf, int64_t& left) {
    size_t got = 0;
    while (left > 0 && got < buf.size()) {
      check_stop();
      const ssize_t n = ::read(fd, buf.data() + got,
                               static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(buf.size() - got))));
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        left = 0;
        break;
      }
      got += static_cast<size_t>(n);
      left -= n;
    }
    return got;
  };
  int64_t left_a = size_a, left_b = size_b, offset = 0;
  size_a = size_b = 0;
  for (;;) {
    const size_t na = fill(fa.fd, ba, left_a), nb = fill(fb.fd, bb, left_b);
    size_a += static_cast<int64_t>(na);
    size_b += static_cast<int64_t>(nb);
    const size_t common = std::min(na, nb);
    for (size_t i = 0; i < common; ++i)
      if (ba[i] != bb[i]) {
        if (s.first_index < 0) s.first_index = offset + static_cast<int64_t>(i);
        ++s.differing;
      }
    offset += static_cast<int64_t>(std::max(na, nb));
    if (na == 0 && nb == 0) break;
  }
  s.numel = std::max(size_a, size_b);
  s.differing += std::abs(size_a - size_b);
  if (s.first_index < 0 && size_a != size_b) s.first_index = std::min(size_a, size_b);
  s.first_index_nd = {s.first_index};
  s.max_abs_diff = std::numeric_limits<double>::quiet_NaN();
  s.max_rel_diff = std::numeric_limits<double>::quiet_NaN();
  s.max_ulp = std::numeric_limits<double>::quiet_NaN();
  s.beyond_tolerance = s.differing;
  s.note = size_a != size_b ? fmt::format("compared by bytes; sizes differ: {} vs {} bytes", size_a, size_b)
                            : fmt::format("compared by bytes: {} of {} bytes differ, the first at offset {}",
                                          s.differing, s.numel, s.first_index);
  return s;
}

}  // namespace ra::exec
