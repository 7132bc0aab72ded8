// SPDX-License-Identifier: Apache-2.0
#include "audit/exec/artifacts.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

#include <glob.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace ra::exec {
namespace {

namespace fs = std::filesystem;

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

std::string literal(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '_' ? std::string(1, c) : std::string("\\") + c;
}

// The regular expression a glob pattern with placeholders stands for: wildcards within one path
// component, {rank} and {trial} captured, in `groups` order ('r' or 't').
std::regex pattern_regex(const std::string& pattern, const std::string& trial, const std::string& out, std::string& groups) {
  std::string re;
  for (size_t i = 0; i < pattern.size();) {
    if (pattern.compare(i, 6, "{rank}") == 0) {
      re += "([0-9]+)";
      groups += 'r';
      i += 6;
    } else if (pattern.compare(i, 7, "{trial}") == 0) {
      re += "(" + trial + ")";
      groups += 't';
      i += 7;
    } else if (pattern.compare(i, 5, "{out}") == 0) {
      for (const char c : out) re += literal(c);
      i += 5;
    } else if (pattern[i] == '*') {
      re += "[^/]*";
      ++i;
    } else if (pattern[i] == '?') {
      re += "[^/]";
      ++i;
    } else if (pattern[i] == '[') {
      const size_t close = pattern.find(']', i + 1);
      if (close == std::string::npos) {
        re += "\\[";
        ++i;
      } else {
        std::string cls = pattern.substr(i + 1, close - i - 1);
        if (!cls.empty() && cls[0] == '!') cls[0] = '^';
        re += "[" + cls + "]";
        i = close + 1;
      }
    } else {
      re += literal(pattern[i]);
      ++i;
    }
  }
  return std::regex(re);
}

// A failed take in words: a full disk says so and where (std::filesystem::copy_file reports a short
// copy as EIO, so the destination's free space decides), not "Input/output error".
[[noreturn]] void take_failed(const std::string& from, const std::string& to, int err, const std::string& what) {
  const std::string folder = fs::path(to).parent_path().string();
  struct statvfs st {};
  const bool full = err == ENOSPC || err == EDQUOT ||
                    (err == EIO && ::statvfs(folder.c_str(), &st) == 0 && st.f_bavail * st.f_frsize < (64u << 10));
  if (full) throw InputError(fmt::format("no space left in {} while taking artifact '{}'", folder, from));
  throw InputError(fmt::format("cannot take artifact '{}': {}", from, what));
}

void move_file(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) == 0) return;
  if (errno != EXDEV) take_failed(from, to, errno, std::strerror(errno));
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) take_failed(from, to, ec.value(), ec.message());
  ::unlink(from.c_str());
}

std::vector<std::string> glob_files(const std::string& pattern) {
  glob_t g{};
  std::vector<std::string> out;
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      struct stat st {};
      if (::stat(g.gl_pathv[i], &st) == 0 && S_ISREG(st.st_mode)) out.emplace_back(g.gl_pathv[i]);
    }
  ::globfree(&g);
  return out;
}

}  // namespace

ArtifactPattern parse_artifact_pattern(const std::string& text) {
  if (text.empty()) throw UsageError("--artifact needs a path");
  ArtifactPattern p{text};
  for (size_t at = text.find('{'); at != std::string::npos; at = text.find('{', at + 1)) {
    const size_t close = text.find('}', at);
    const std::string name = close == std::string::npos ? text.substr(at) : text.substr(at, close - at + 1);
    if (name == "{trial}") p.trial = true;
    else if (name == "{rank}") {
      if (p.rank) throw UsageError(fmt::format("--artifact '{}' holds {{rank}} twice", text));
      p.rank = true;
    } else if (name == "{out}") {
      if (at != 0 || text.compare(5, 1, "/") != 0)
        throw UsageError(fmt::format("--artifact '{}': {{out}} stands for $REPRO_AUDIT_OUT and may only start the path ({{out}}/FILE)", text));
      p.out = true;
    } else {
      throw UsageError(fmt::format("--artifact '{}': unknown placeholder {} (placeholders: {{out}}, {{trial}}, {{rank}})", text, name));
    }
  }
  if (p.out && text.size() <= 6) throw UsageError(fmt::format("--artifact '{}' names no file below {{out}}", text));
  return p;
}

std::vector<Taken> take_artifacts(const std::vector<ArtifactPattern>& patterns, int trial, const std::string& out_dir,
                                  const std::string& into, std::vector<bool>& matched) {
  std::vector<Taken> out;
  matched.assign(patterns.size(), false);
  const std::string t = std::to_string(trial);
  std::vector<std::pair<std::string, Taken>> found;  // source path, what it becomes
  if (patterns.empty()) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(out_dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_regular_file()) {
        Taken k;
        k.name = fs::relative(it->path(), out_dir).string();
        found.emplace_back(it->path().string(), k);
      }
  }
  for (size_t i = 0; i < patterns.size(); ++i) {
    const ArtifactPattern& p = patterns[i];
    const std::string expanded = replace_all(replace_all(replace_all(p.text, "{out}", out_dir), "{trial}", t), "{rank}", "*");
    std::string groups;
    const std::regex re = pattern_regex(p.text, t, out_dir, groups);
    for (const auto& path : glob_files(expanded)) {
      std::smatch m;
      if (!std::regex_match(path, m, re)) continue;
      Taken k;
      k.pattern = p.text;
      // The name: the path as matched, with the run's number put back to {trial} where the pattern
      // has it (from the last group to the first, so that earlier positions stay valid).
      std::string name = path;
      for (size_t g = groups.size(); g-- > 0;) {
        if (groups[g] == 'r') k.rank = m.length(g + 1) > 6 ? -1 : std::stoi(m[g + 1].str());
        if (groups[g] == 't') name.replace(static_cast<size_t>(m.position(g + 1)), static_cast<size_t>(m.length(g + 1)), "{trial}");
      }
      if (p.out) name = name.substr(out_dir.size() + 1);
      k.name = name;
      found.emplace_back(path, k);
      matched[i] = true;
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.second.name < b.second.name; });
  std::error_code ec;
  fs::create_directories(into, ec);
  for (size_t i = 0; i < found.size(); ++i) {
    if (i > 0 && found[i].first == found[i - 1].first) continue;  // two patterns matched one file
    Taken k = found[i].second;
    k.path = fmt::format("{}/a{}", into, out.size());
    move_file(found[i].first, k.path);
    struct stat st {};
    if (::stat(k.path.c_str(), &st) == 0) k.bytes = st.st_size;
    k.digest = file_digest(k.path, "artifact");
    out.push_back(std::move(k));
  }
  return out;
}

std::vector<std::string> existing_matches(const ArtifactPattern& pattern) {
  if (pattern.out) return {};
  return glob_files(replace_all(replace_all(pattern.text, "{trial}", "*"), "{rank}", "*"));
}

std::string sniff_kind(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "bytes";
  const auto size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  unsigned char head[30 + 256] = {};
  in.read(reinterpret_cast<char*>(head), sizeof head);
  const auto got = static_cast<size_t>(in.gcount());
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
    if (n >= 2 && n <= (uint64_t{100} << 20) && n <= size - 8 && head[8] == '{') return "safetensors";
  }
  return "bytes";
}

report::DivergenceStats byte_difference(const std::string& a, const std::string& b) {
  report::DivergenceStats s;
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  if (!fa || !fb) {
    s.note = "statistics unavailable: an artifact could not be read back";
    return s;
  }
  std::vector<char> ba(size_t{1} << 20), bb(size_t{1} << 20);
  int64_t offset = 0;
  int64_t size_a = 0, size_b = 0;
  while (fa || fb) {
    fa.read(ba.data(), static_cast<std::streamsize>(ba.size()));
    fb.read(bb.data(), static_cast<std::streamsize>(bb.size()));
    const auto na = static_cast<size_t>(fa ? ba.size() : fa.gcount());
    const auto nb = static_cast<size_t>(fb ? bb.size() : fb.gcount());
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
                            : fmt::format("compared by bytes: {} of {} bytes differ, the first at offset {}", s.differing,
                                          s.numel, s.first_index);
  return s;
}

}  // namespace ra::exec
