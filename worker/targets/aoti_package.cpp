// SPDX-License-Identifier: Apache-2.0
#include "worker/targets/aoti_package.h"
#include "audit/common/json_document.h"

#include "audit/common/errors.h"
#include "worker/runtime/child_support.h"

#include <caffe2/serialize/inline_container.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <set>

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ra::targets {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Creates the folders of `relative` (checked entry names: no "..", no empty component) below `root`.
void make_parents(const std::string& root, const std::string& relative, const std::string& what) {
  for (size_t slash = relative.find('/'); slash != std::string::npos; slash = relative.find('/', slash + 1)) {
    const std::string dir = root + "/" + relative.substr(0, slash);
    struct stat st {};
    if (::mkdir(dir.c_str(), 0700) != 0 && !(errno == EEXIST && ::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)))
      throw InputError(fmt::format("{}: cannot unpack {} into the trial's scratch folder: {}", what, excerpt(relative),
                                   std::strerror(errno)));
  }
}

void write_all(int fd, const char* p, size_t n, const std::string& target, const std::string& what) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      throw InputError(errno == ENOSPC
                           ? fmt::format("{}: no space left in TMPDIR to unpack {}", what, excerpt(target))
                           : fmt::format("{}: cannot unpack {}: {}", what, excerpt(target), std::strerror(errno)));
    p += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

AotiLayout aoti_layout(const std::vector<ZipEntry>& entries, const std::string& model_name, const std::string& what) {
  const auto refuse = [&](const std::string& why) {
    return InputError(fmt::format("{} is an AOTInductor package that repro-audit refuses: {}", what, why));
  };
  if (entries.empty()) throw refuse("it has no entries");
  AotiLayout l;
  const size_t slash = entries[0].name.find('/');
  if (slash == std::string::npos) throw refuse("its entries are not below one top folder, as torch writes packages");
  l.top = entries[0].name.substr(0, slash + 1);
  l.model_dir = l.top + "data/aotinductor/" + model_name;
  const std::string model_prefix = l.model_dir + "/", const_prefix = l.top + "data/constants/";
  std::set<std::string> targets;
  for (const auto& e : entries) {
    if (!starts_with(e.name, l.top) || e.name.size() == l.top.size())
      throw refuse(fmt::format("entry '{}' is not below the top folder '{}', as torch writes packages", excerpt(e.name),
                               excerpt(l.top)));
    if (e.name.back() == '/') continue;  // a folder entry
    std::string target;
    if (starts_with(e.name, model_prefix)) {
      target = e.name;
    } else if (starts_with(e.name, const_prefix)) {
      target = model_prefix + e.name.substr(e.name.rfind('/') + 1);  // beside the library, as the loader puts them
    } else {
      continue;
    }
    if (!targets.insert(target).second)
      throw refuse(fmt::format("two entries would be unpacked to '{}'", excerpt(target)));
    if (l.metadata.empty() && starts_with(e.name, model_prefix) && ends_with(e.name, "wrapper_metadata.json"))
      l.metadata = e.name;
    if (ends_with(e.name, ".so")) l.library = target;  // the last one, as the loader takes it
    if (ends_with(e.name, ".blob")) l.blob = target;
    l.files.emplace_back(e.name, target);
  }
  if (l.files.empty())
    throw refuse(fmt::format("it holds no model '{}' (nothing under {}/)", excerpt(model_name), excerpt(l.model_dir)));
  if (l.metadata.empty()) throw refuse("it has no metadata (a ..._metadata.json beside the compiled code)");
  if (l.library.empty())
    throw refuse(
        "it holds no compiled library (.so), only what LibTorch's loader would compile with a compiler command "
        "taken from the package, which repro-audit never runs: package it again with its library");
  return l;
}

std::map<std::string, std::string> aoti_metadata(std::string_view json, const std::string& what) {
  nlohmann::json j;
  try {
    j = parse_json_document<nlohmann::json>(std::string(json), what + "'s metadata");
  } catch (const nlohmann::json::exception& e) {
    throw InputError(
        fmt::format("{} is an AOTInductor package whose metadata is not JSON: {}", what, excerpt(e.what())));
  }
  if (!j.is_object())
    throw InputError(fmt::format("{} is an AOTInductor package whose metadata is not a JSON object", what));
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string())
      throw InputError(
          fmt::format("{} is an AOTInductor package whose metadata '{}' is not a string", what, excerpt(key)));
    out[key] = value.get<std::string>();
  }
  const auto device = out.find("AOTI_DEVICE_KEY");
  if (device == out.end() || device->second.empty())
    throw InputError(
        fmt::format("{} is an AOTInductor package whose metadata names no device (AOTI_DEVICE_KEY)", what));
  return out;
}

AotiPackage read_aoti_package(const std::string& path, const std::string& model_name, const std::string& what) {
  AotiPackage p;
  p.entries = checked_zip_entries(path, what);
  p.layout = aoti_layout(p.entries, model_name, what);
  for (const auto& e : p.entries)
    if (e.name == p.layout.metadata && e.size > kMaxAotiMetadataBytes)
      throw InputError(
          fmt::format("{} is an AOTInductor package whose metadata holds {} bytes, more than the {} repro-audit "
                      "reads",
                      what, e.size, kMaxAotiMetadataBytes));
  std::string text;
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    auto [data, size] = reader.getRecord(p.layout.metadata.substr(p.layout.top.size()));
    text.assign(static_cast<const char*>(data.get()), size);
  } catch (const std::exception& e) {
    throw InputError(
        fmt::format("{} is an AOTInductor package whose metadata cannot be read: {}", what, excerpt(error_text(e))));
  }
  p.metadata = aoti_metadata(text, what);
  return p;
}

std::string unpack_aoti_package(const std::string& path, const AotiPackage& package, const std::string& folder,
                                const std::string& what) {
  std::map<std::string, uint64_t> declared;
  for (const auto& e : package.entries) declared[e.name] = e.size;
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    constexpr size_t kChunk = size_t{1} << 20;
    std::vector<char> buf(kChunk);
    for (const auto& [entry, target] : package.layout.files) {
      const std::string record = entry.substr(package.layout.top.size());
      const size_t size = reader.getRecordSize(record);
      if (size != declared[entry])  // our reading of the directory and LibTorch's must agree
        throw InputError(fmt::format("{}: entry {} holds {} bytes where the archive's directory says {}", what,
                                     excerpt(entry), size, declared[entry]));
      make_parents(folder, target, what);
      const std::string out = folder + "/" + target;
      const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd < 0)
        throw InputError(fmt::format("{}: cannot unpack {}: {}", what, excerpt(target), std::strerror(errno)));
      try {
        auto chunks = reader.createChunkReaderIter(record, size, kChunk);
        for (size_t done = 0; done < size;) {
          const size_t got = chunks.next(buf.data());
          if (got == 0) throw InputError(fmt::format("{}: entry {} ends early", what, excerpt(entry)));
          write_all(fd, buf.data(), got, target, what);
          done += got;
        }
      } catch (...) {
        ::close(fd);
        throw;
      }
      if (::close(fd) != 0)
        throw InputError(fmt::format("{}: cannot unpack {}: {}", what, excerpt(target), std::strerror(errno)));
    }
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(
        fmt::format("{} is an AOTInductor package that cannot be unpacked: {}", what, excerpt(error_text(e))));
  }
  const std::string library = folder + "/" + package.layout.library;
  if (const std::string problem = compiled_library_problem(library); !problem.empty())
    throw InputError(
        fmt::format("{} is an AOTInductor package that cannot be loaded: its compiled library {} {}: "
                    "compile the package again",
                    what, excerpt(package.layout.library), problem));
  return library;
}

std::string compiled_library_problem(const std::string& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fmt::format("cannot be opened: {}", std::strerror(errno));
  struct stat st {};
  const bool stated = ::fstat(fd, &st) == 0;
  const uint64_t size = stated ? static_cast<uint64_t>(st.st_size) : 0;
  // Reads `n` bytes at `offset` into `out`; false when the file ends first.
  auto read_at = [&](void* out, size_t n, uint64_t offset) {
    return offset <= size && n <= size - offset && ::pread(fd, out, n, static_cast<off_t>(offset)) == ssize_t(n);
  };
  // Whether [offset, offset + count * each) lies inside the file, without overflow.
  auto inside = [&](uint64_t offset, uint64_t count, uint64_t each) {
    return offset <= size && (each == 0 || count <= (size - offset) / each);
  };
  std::string problem;
  Elf64_Ehdr h{};
  constexpr unsigned char kOrder = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
  if (!stated || !read_at(&h, sizeof h, 0) || std::memcmp(h.e_ident, ELFMAG, SELFMAG) != 0) {
    problem = fmt::format("is not an ELF shared library ({} bytes)", size);
  } else if (h.e_ident[EI_CLASS] != ELFCLASS64 || h.e_ident[EI_DATA] != kOrder || h.e_type != ET_DYN ||
             h.e_phentsize != sizeof(Elf64_Phdr) || (h.e_shoff != 0 && h.e_shentsize != sizeof(Elf64_Shdr))) {
    problem = "is not a 64-bit ELF shared library of this machine's byte order";
  } else if (!inside(h.e_phoff, h.e_phnum, sizeof(Elf64_Phdr)) ||
             (h.e_shoff != 0 && !inside(h.e_shoff, h.e_shnum, sizeof(Elf64_Shdr)))) {
    problem = fmt::format("is cut short: it holds {} bytes, and its ELF header places its tables beyond them", size);
  } else {
    for (uint16_t i = 0; i < h.e_phnum && problem.empty(); ++i) {
      Elf64_Phdr p{};
      if (!read_at(&p, sizeof p, h.e_phoff + uint64_t{i} * sizeof p)) {
        problem = "cannot be read";
      } else if (p.p_type == PT_LOAD && !inside(p.p_offset, p.p_filesz, 1)) {
        problem = p.p_filesz <= UINT64_MAX - p.p_offset
                      ? fmt::format("is cut short: it holds {} bytes, and a segment it loads ends at byte {}", size,
                                    p.p_offset + p.p_filesz)
                      : std::string("is damaged: a segment it loads ends beyond any file");
      }
    }
  }
  ::close(fd);
  return problem;
}

}  // namespace ra::targets
