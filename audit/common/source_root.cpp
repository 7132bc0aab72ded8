// SPDX-License-Identifier: Apache-2.0
#include "audit/common/source_root.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <vector>

#include <sys/stat.h>

namespace ra {
namespace {

bool is_regular_file_at(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// `path` with every symlink resolved, "" when it does not exist.
std::string resolved_path(const std::string& path) {
  char buffer[PATH_MAX];
  return ::realpath(path.c_str(), buffer) == nullptr ? std::string() : std::string(buffer);
}

// `path` from `folder` when it lies inside it (both resolved), else "".
std::string path_inside(const std::string& path, const std::string& folder) {
  if (folder == "/") return path.size() > 1 ? path.substr(1) : std::string();
  if (path.size() > folder.size() + 1 && path.compare(0, folder.size(), folder) == 0 && path[folder.size()] == '/')
    return path.substr(folder.size() + 1);
  return "";
}

}  // namespace

std::string repository_root(const std::string& cwd) {
  std::string dir = cwd;
  while (!dir.empty()) {
    struct stat st {};
    if (::stat((dir + "/.git").c_str(), &st) == 0) return dir;
    if (dir == "/") break;
    const size_t slash = dir.rfind('/');
    dir = slash == 0 ? "/" : slash == std::string::npos ? "" : dir.substr(0, slash);
  }
  return cwd;
}

std::optional<std::string> repository_path(const std::string& file, const std::string& root, const std::string& cwd) {
  if (file.empty()) return std::nullopt;
  for (const char* packages : {"/site-packages/", "/dist-packages/"})
    if (("/" + file).find(packages) != std::string::npos) return std::nullopt;
  const std::string base = resolved_path(root);
  if (base.empty()) return std::nullopt;
  const std::string absolute = file.front() == '/' || cwd.empty() ? file : cwd + "/" + file;
  if (is_regular_file_at(absolute))
    if (std::string inner = path_inside(resolved_path(absolute), base); !inner.empty()) return inner;
  // The longest tail of the path as written that names a file under the root.
  std::vector<std::string> parts;
  for (size_t begin = 0; begin <= file.size();) {
    const size_t end = std::min(file.find('/', begin), file.size());
    const std::string part = file.substr(begin, end - begin);
    if (part == "..")
      parts.clear();  // a tail never climbs out of the root
    else if (!part.empty() && part != ".")
      parts.push_back(part);
    begin = end + 1;
  }
  for (size_t first = 0; first < parts.size(); ++first) {
    std::string tail;
    for (size_t i = first; i < parts.size(); ++i) tail += (tail.empty() ? "" : "/") + parts[i];
    if (is_regular_file_at(base + (base == "/" ? "" : "/") + tail)) return tail;
  }
  return std::nullopt;
}

}  // namespace ra
