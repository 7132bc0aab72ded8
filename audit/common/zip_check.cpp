// SPDX-License-Identifier: Apache-2.0
#include "audit/common/zip_check.h"

#include "audit/common/errors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <set>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ra {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50, kLocator64Sig = 0x07064b50;
constexpr uint32_t k32 = 0xFFFFFFFFu;

uint64_t le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// The file, read at offsets; every read is checked against its size. Opened by name, or read
// through a ZipReadAt (an archive opened already, or bytes in memory).
class File {
 public:
  File(const std::string& path, const std::string& what) : what_(what) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO must not block the open
    struct stat st {};
    if (fd_ < 0 || ::fstat(fd_, &st) != 0)
      throw InputError(fmt::format("{} cannot be read: {}", what, std::strerror(errno)));
    if (!S_ISREG(st.st_mode)) throw InputError(fmt::format("{} is not a regular file", what));
    size_ = static_cast<uint64_t>(st.st_size);
  }
  File(ZipReadAt read_at, uint64_t size, const std::string& what)
      : what_(what), read_at_(std::move(read_at)), size_(size) {}
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  uint64_t size() const { return size_; }
  std::string read(uint64_t at, uint64_t n) const {
    if (at > size_ || n > size_ - at) fail("is cut short: a record reaches past the end of the file");
    std::string out(n, '\0');
    if (read_at_) {
      if (read_at_(at, out.data(), n) != n) throw InputError(fmt::format("{} cannot be read: it shrank", what_));
      return out;
    }
    for (uint64_t done = 0; done < n;) {
      const ssize_t got = ::pread(fd_, out.data() + done, n - done, static_cast<off_t>(at + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0)
        throw InputError(fmt::format("{} cannot be read: {}", what_, got < 0 ? std::strerror(errno) : "it shrank"));
      done += static_cast<uint64_t>(got);
    }
    return out;
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw InputError(fmt::format("{} is a zip archive that repro-audit cannot read: it {}", what_, why));
  }

 private:
  std::string what_;
  ZipReadAt read_at_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

const unsigned char* bytes(const std::string& s) { return reinterpret_cast<const unsigned char*>(s.data()); }

// The name as a message may show it: control bytes as \xNN, cut long.
std::string shown(std::string_view name) {
  std::string out;
  for (const char c : name.substr(0, std::min(name.size(), kMaxQuoted))) {
    const auto u = static_cast<unsigned char>(c);
    out += u < 0x20 || u == 0x7f ? fmt::format("\\x{:02x}", u) : std::string(1, c);
  }
  return name.size() > kMaxQuoted ? fmt::format("{}... ({} bytes)", out, name.size()) : out;
}

struct Directory {
  uint64_t entries = 0, size = 0, offset = 0;
  uint64_t end = 0;  // where the central directory must end: the (zip64) end record
};

// The end of central directory record: the last signature in the file's final 64 KiB and 22 bytes,
// as miniz finds it, then the zip64 record when its locator precedes it.
Directory find_directory(const File& f) {
  if (f.size() < 22) f.fail("is too short to hold a zip directory");
  const uint64_t span = std::min<uint64_t>(f.size(), 0xFFFF + 22);
  const std::string tail = f.read(f.size() - span, span);
  size_t at = std::string::npos;
  for (size_t i = span - 22 + 1; i-- > 0;)
    if (le(bytes(tail) + i, 4) == kEndSig) {
      at = i;
      break;
    }
  if (at == std::string::npos)
    f.fail("has no end of central directory record (damaged, truncated, or not written by PyTorch)");
  const unsigned char* e = bytes(tail) + at;
  Directory d;
  d.end = f.size() - span + at;
  if (le(e + 4, 2) != 0 || le(e + 6, 2) != 0) f.fail("spans several disks");
  d.entries = le(e + 10, 2);
  d.size = le(e + 12, 4);
  d.offset = le(e + 16, 4);
  if (d.end >= 20) {
    const std::string loc = f.read(d.end - 20, 20);
    if (le(bytes(loc), 4) == kLocator64Sig) {
      const uint64_t at64 = le(bytes(loc) + 8, 8);
      if (at64 > d.end - 20) f.fail("has a zip64 locator that points past itself");
      const std::string r = f.read(at64, 56);
      if (le(bytes(r), 4) != kEnd64Sig) f.fail("has a zip64 locator that points at no zip64 record");
      if (le(bytes(r) + 16, 4) != 0 || le(bytes(r) + 20, 4) != 0) f.fail("spans several disks");
      d.entries = le(bytes(r) + 32, 8);
      d.size = le(bytes(r) + 40, 8);
      d.offset = le(bytes(r) + 48, 8);
      d.end = at64;
    }
  }
  if (d.offset > d.end || d.size > d.end - d.offset) f.fail("has a central directory that lies outside the file");
  if (d.entries > kMaxZipEntries)
    f.fail(fmt::format("declares {} entries, more than the {} repro-audit reads", d.entries, kMaxZipEntries));
  if (d.entries * 46 > d.size) f.fail("has a central directory too small for the entries it declares");
  return d;
}

}  // namespace

std::string zip_name_problem(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.size() > kMaxZipNameBytes) return fmt::format("is longer than {} bytes", kMaxZipNameBytes);
  for (const char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u == 0) return "holds a NUL byte";
    // Other control bytes stay: torch.jit.save names an archive's folder after the file, whatever
    // its name holds; they cannot lead out of a folder, and every message escapes them.
    if (c == '\\') return "holds a backslash";
  }
  if (name.front() == '/') return "is an absolute path";
  if (name.size() >= 2 && name[1] == ':' && std::isalpha(static_cast<unsigned char>(name[0])))
    return "starts with a drive letter";
  const std::string_view body = name.back() == '/' ? name.substr(0, name.size() - 1) : name;  // a folder entry
  for (size_t begin = 0; begin <= body.size();) {
    const size_t end = std::min(body.find('/', begin), body.size());
    const std::string_view part = body.substr(begin, end - begin);
    if (part.empty()) return "has an empty component ('//')";
    if (part == "." || part == "..") return fmt::format("has a '{}' component", part);
    if (part.size() > 255) return "has a component longer than 255 bytes";
    begin = end + 1;
  }
  return "";
}

namespace {

// The entries, after the rules above (`rules`), or only as the directory declares them.
std::vector<ZipEntry> entries_of(const File& f, const std::string& what, bool rules = true) {
  const Directory d = find_directory(f);
  const std::string dir = f.read(d.offset, d.size);
  std::vector<ZipEntry> out;
  std::set<std::string_view> names;
  out.reserve(static_cast<size_t>(d.entries));
  size_t at = 0;
  const auto entry_fail = [&](size_t index, const std::string& why) {
    throw InputError(fmt::format("{}: archive entry {} {}: repro-audit refuses the archive", what, index, why));
  };
  for (uint64_t i = 0; i < d.entries; ++i) {
    if (dir.size() - at < 46 || le(bytes(dir) + at, 4) != kCentralSig) f.fail("has a damaged central directory");
    const unsigned char* c = bytes(dir) + at;
    const uint64_t flags = le(c + 8, 2), name_len = le(c + 28, 2), extra_len = le(c + 30, 2),
                   comment_len = le(c + 32, 2);
    if (dir.size() - at - 46 < name_len + extra_len + comment_len) f.fail("has a damaged central directory");
    ZipEntry e;
    e.name.assign(dir, at + 46, name_len);
    e.method = static_cast<uint16_t>(le(c + 10, 2));
    e.compressed = le(c + 20, 4);
    e.size = le(c + 24, 4);
    e.header = le(c + 42, 4);
    const uint64_t disk = le(c + 34, 2);
    // The zip64 extra field holds, in order, each of the three that is 0xFFFFFFFF above.
    for (size_t x = at + 46 + name_len; x + 4 <= at + 46 + name_len + extra_len;) {
      const uint64_t id = le(bytes(dir) + x, 2), len = le(bytes(dir) + x + 2, 2);
      if (x + 4 + len > at + 46 + name_len + extra_len) f.fail("has a damaged extra field");
      if (id == 1) {
        size_t p = x + 4;
        const auto next = [&](uint64_t& field) {
          if (field != k32) return;
          if (p + 8 > x + 4 + len) f.fail("has a damaged zip64 field");
          field = le(bytes(dir) + p, 8);
          p += 8;
        };
        next(e.size);
        next(e.compressed);
        next(e.header);
      }
      x += 4 + len;
    }
    at += 46 + name_len + extra_len + comment_len;
    if (disk != 0) f.fail("spans several disks");
    if (!rules) {
      out.push_back(std::move(e));
      continue;
    }
    const std::string shown_name = shown(e.name);
    if (const std::string why = zip_name_problem(e.name); !why.empty())
      entry_fail(i, fmt::format("'{}': its name {}, which could write outside the folder it is unpacked into",
                                shown_name, why));
    if (flags & 1) entry_fail(i, fmt::format("'{}' is encrypted", shown_name));
    if (e.method != 0 && e.method != 8)
      entry_fail(i, fmt::format("'{}' uses compression method {} (only stored and deflated entries are read)",
                                shown_name, e.method));
    if (e.method == 0 && e.compressed != e.size)
      entry_fail(i, fmt::format("'{}' is stored, but declares {} bytes for its {} stored bytes", shown_name, e.size,
                                e.compressed));
    if (e.method == 8 && e.size > kZipRatioFloor && e.size / kMaxZipRatio > e.compressed)
      entry_fail(
          i, fmt::format("'{}' would expand from {} to {} bytes, more than {} times (a zip bomb, or an archive "
                         "compressed by another tool: save it again with PyTorch, which stores entries uncompressed)",
                         shown_name, e.compressed, e.size, kMaxZipRatio));
    out.push_back(std::move(e));
  }
  if (!rules) return out;
  for (const auto& e : out)
    if (!names.insert(e.name).second)
      throw InputError(
          fmt::format("{}: two archive entries are named '{}': repro-audit refuses the archive", what, shown(e.name)));
  // Each entry's bytes: after its local header, before the central directory, apart from the others.
  std::vector<const ZipEntry*> by_offset;
  for (auto& e : out) {
    const std::string h = f.read(e.header, 30);
    if (le(bytes(h), 4) != kLocalSig)
      f.fail(fmt::format("has no local header where entry '{}' says it begins", shown(e.name)));
    e.data = e.header + 30 + le(bytes(h) + 26, 2) + le(bytes(h) + 28, 2);
    if (e.data > d.offset || e.compressed > d.offset - e.data)
      f.fail(fmt::format("has an entry '{}' whose bytes reach past the end of its data", shown(e.name)));
    by_offset.push_back(&e);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const ZipEntry* a, const ZipEntry* b) { return a->header < b->header; });
  for (size_t i = 1; i < by_offset.size(); ++i)
    if (by_offset[i]->header < by_offset[i - 1]->data + by_offset[i - 1]->compressed)
      throw InputError(
          fmt::format("{}: archive entries '{}' and '{}' share bytes (an overlapping zip bomb, or a damaged "
                      "archive): repro-audit refuses the archive",
                      what, shown(by_offset[i - 1]->name), shown(by_offset[i]->name)));
  // The budget: what the entries declare, all together, against the file's size.
  uint64_t total = 0;
  const uint64_t budget = f.size() > (UINT64_MAX - kZipExpansionSlack) / kMaxZipRatio
                              ? UINT64_MAX
                              : f.size() * kMaxZipRatio + kZipExpansionSlack;
  for (const auto& e : out)
    if (__builtin_add_overflow(total, e.size, &total) || total > budget)
      throw InputError(
          fmt::format("{}: its entries declare more than {} bytes once extracted, over the budget of {} times "
                      "the archive's {} bytes plus {} MiB: repro-audit refuses the archive",
                      what, budget, kMaxZipRatio, f.size(), kZipExpansionSlack >> 20));
  return out;
}

std::vector<ZipEntry> stored_entries_of(const File& f, const std::string& what) {
  std::vector<ZipEntry> entries = entries_of(f, what);
  for (const ZipEntry& e : entries)
    if (e.size > f.size())
      throw InputError(
          fmt::format("{}: archive entry '{}' claims {} bytes, more than the file's {} (PyTorch stores "
                      "its records uncompressed): repro-audit refuses the archive",
                      what, shown(e.name), e.size, f.size()));
  return entries;
}

}  // namespace

std::vector<ZipEntry> checked_zip_entries(const std::string& path, const std::string& what) {
  return entries_of(File(path, what), what);
}

std::vector<ZipEntry> checked_zip_entries(const ZipReadAt& read_at, uint64_t size, const std::string& what) {
  return entries_of(File(read_at, size, what), what);
}

std::vector<ZipEntry> stored_zip_entries(const ZipReadAt& read_at, uint64_t size, const std::string& what) {
  return stored_entries_of(File(read_at, size, what), what);
}

std::string zip_open_problem(const std::string& path) {
  const std::string what = fmt::format("file '{}'", path);
  try {
    const File f(path, what);
    for (const ZipEntry& e : entries_of(f, what, /*rules=*/false)) {
      const std::string_view leaf = std::string_view(e.name).substr(e.name.rfind('/') + 1);
      if ((leaf == "version" || leaf == "serialization_id") && e.size > f.size())
        return fmt::format(
            "{}: archive entry '{}' claims {} bytes, more than the file's {}: repro-audit refuses the "
            "archive",
            what, shown(e.name), e.size, f.size());
    }
  } catch (const InputError&) {
    // A directory that cannot be read: LibTorch's reader fails on it too, and says so in its words.
  }
  return "";
}

bool looks_like_zip(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return false;
  }
  char head[4] = {};
  const bool zip = ::pread(fd, head, 4, 0) == 4 && std::memcmp(head, "PK\x03\x04", 4) == 0;
  ::close(fd);
  return zip;
}

bool is_aoti_package(const std::vector<ZipEntry>& entries) {
  return std::any_of(entries.begin(), entries.end(), [](const ZipEntry& e) {
    const size_t slash = e.name.find('/');
    return e.name.rfind("data/aotinductor/", 0) == 0 ||
           (slash != std::string::npos && e.name.compare(slash + 1, 17, "data/aotinductor/") == 0);
  });
}

}  // namespace ra
