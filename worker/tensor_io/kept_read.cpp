// SPDX-License-Identifier: Apache-2.0
#include "worker/tensor_io/kept_read.h"

#include "audit/common/errors.h"
#include "worker/digest/digest.h"
#include "worker/digest/tensor_stats.h"
#include "worker/tensor_io/python_pickle.h"

#include <ATen/core/Dict.h>
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ra {
namespace {

// What a kept file may hold: the bytes of the tensors declared for it (their storages, each a
// contiguous copy as the recorder keeps it), and a pickle of at most 64 KiB plus 1 KiB and the name
// for each tensor (a tensor's record takes about 150 bytes). Saturates instead of overflowing; a
// dtype this torch does not know adds nothing, so a file holding it is refused.
PickleBudget declared_budget(const std::vector<report::TensorDigest>& declared) {
  const auto add = [](uint64_t& total, uint64_t n) {
    if (__builtin_add_overflow(total, n, &total)) total = UINT64_MAX;
  };
  PickleBudget b{0, uint64_t{64} << 10};
  for (const auto& t : declared) {
    add(b.pickle_bytes, 1024 + t.name.size());
    uint64_t bytes = 0;
    for (int i = 0; i < static_cast<int>(at::ScalarType::NumOptions); ++i) {
      const auto type = static_cast<at::ScalarType>(i);
      if (type == at::ScalarType::Undefined || dtype_name(type) != t.dtype) continue;
      bytes = c10::elementSize(type);
      break;
    }
    for (const int64_t d : t.shape)
      if (d < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes)) bytes = UINT64_MAX;
    add(b.storage_bytes, bytes);
  }
  return b;
}

struct OpenFd {
  int fd = -1;
  explicit OpenFd(int f) : fd(f) {}
  ~OpenFd() {
    if (fd >= 0) ::close(fd);
  }
  OpenFd(const OpenFd&) = delete;
  OpenFd& operator=(const OpenFd&) = delete;
};

// The dict the file holds, or nullopt with `problem` set: why it cannot be read, as a sentence that
// names the file, or "" when it does not exist.
std::optional<c10::impl::GenericDict> read_dump(const DumpFile& f, std::string& problem) {
  const auto slash = f.path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : f.path.substr(0, slash);
  const std::string leaf = slash == std::string::npos ? f.path : f.path.substr(slash + 1);
  // The folder and the file, each opened without following a symlink.
  const OpenFd dir(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir.fd < 0) {
    const int err = errno;
    if (err != ENOENT)
      problem = fmt::format("file '{}' lies in '{}', {}", f.path, folder,
                            err == ELOOP || err == ENOTDIR ? "a symlink, not followed" : std::strerror(err));
    return std::nullopt;
  }
  const OpenFd file(::openat(dir.fd, leaf.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (file.fd < 0) {
    const int err = errno;
    if (err != ENOENT)
      problem = fmt::format("file '{}' {}", f.path, err == ELOOP ? "is a symlink, not followed" : std::strerror(err));
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    problem = fmt::format("file '{}' is not a regular file", f.path);
    return std::nullopt;
  }
  try {
    const c10::IValue v =
        load_python_pickle_fd(f.path, file.fd, f.declared.empty() ? PickleBudget{} : declared_budget(f.declared));
    if (v.isGenericDict()) return v.toGenericDict();
    problem = fmt::format("file '{}' holds a {}, not the dict of tensors a dump holds", f.path, v.tagKind());
  } catch (const InputError& e) {
    problem = e.what();
  }
  return std::nullopt;
}

// Why `t`, read as `name` from `f`, is not what `f` declares for it ("" when it is, or nothing is declared).
std::string undeclared(const DumpFile& f, const std::string& name, const c10::IValue& v) {
  if (!v.isTensor()) return fmt::format("file '{}' holds '{}' as a {}, not a tensor", f.path, name, v.tagKind());
  if (f.declared.empty()) return "";
  const at::Tensor& t = v.toTensor();
  for (const auto& d : f.declared)
    if (d.name == name) {
      if (d.dtype == dtype_name(t.scalar_type()) && d.shape == t.sizes().vec()) return "";
      return fmt::format("file '{}' holds '{}' as {}[{}], not the {}[{}] declared for it", f.path, name,
                         dtype_name(t.scalar_type()), fmt::join(t.sizes(), "x"), d.dtype, fmt::join(d.shape, "x"));
    }
  return fmt::format("file '{}' holds '{}', which is not declared for it", f.path, name);
}

// The note for a file that cannot be read as it should (`why` names it): a kept file's own fault is
// named with the file; a trial's dump costs its statistics only.
std::string unreadable(const DumpFile& f, const std::string& why) {
  if (!f.declared.empty()) return "kept tensors unreadable: " + why;
  return fmt::format("tensor values not available (trial dump unreadable: {})", why);
}

}  // namespace

std::optional<std::map<std::string, at::Tensor>> read_own_dump(const std::string& path, std::string& problem) {
  const auto d = read_dump(DumpFile{path, {}}, problem);
  if (!d) return std::nullopt;
  std::map<std::string, at::Tensor> out;
  for (const auto& item : *d) {
    if (!item.value().isTensor()) {
      problem = fmt::format("file '{}' holds '{}' as a {}, not a tensor", path, item.key().toStringRef(),
                            item.value().tagKind());
      return std::nullopt;
    }
    out.emplace(item.key().toStringRef(), item.value().toTensor());
  }
  return out;
}

std::map<std::string, report::DivergenceStats> dump_differences(const DumpFile& a, const DumpFile& b,
                                                                const std::vector<std::string>& names,
                                                                const std::optional<report::Tolerance>& tolerance) {
  std::string problem_a, problem_b;
  const auto da = read_dump(a, problem_a), db = read_dump(b, problem_b);
  const auto missing = [](const DumpFile& f, const std::string& problem) -> std::string {
    if (!problem.empty()) return unreadable(f, problem);
    if (!f.declared.empty()) return unreadable(f, fmt::format("file '{}' is missing", f.path));
    return "tensor values not available (trial dump missing)";
  };
  const std::string unread = !da ? missing(a, problem_a) : !db ? missing(b, problem_b) : "";
  std::map<std::string, report::DivergenceStats> out;
  for (const auto& name : names) {
    report::DivergenceStats s;
    const auto kept_wrong = [&name](const DumpFile& f, const c10::impl::GenericDict& d) -> std::string {
      if (d.contains(name)) {
        const std::string why = undeclared(f, name, d.at(name));
        return why.empty() ? "" : unreadable(f, why);
      }
      if (f.declared.empty()) return "";
      return unreadable(f, fmt::format("file '{}' holds no '{}', though it is declared for it", f.path, name));
    };
    if (!unread.empty()) {
      s.note = unread;
    } else if (std::string why = kept_wrong(a, *da); !why.empty()) {
      s.note = std::move(why);
    } else if (std::string why_b = kept_wrong(b, *db); !why_b.empty()) {
      s.note = std::move(why_b);
    } else if (!da->contains(name) || !db->contains(name)) {
      s.note = "tensor missing from one run";
    } else {
      s = tensor_difference(da->at(name).toTensor(), db->at(name).toTensor(), tolerance);
    }
    out[name] = s;
  }
  return out;
}

}  // namespace ra
