// SPDX-License-Identifier: Apache-2.0
// What an AOTInductor package (torch._inductor.aoti_compile_and_package) holds, read and unpacked
// without LibTorch's AOTIModelPackageLoader, which the audit cannot trust with a hostile file: it
// writes each entry to "/tmp/XXXXXX/<entry name>" (".." in a name writes anywhere), creates that
// folder in /tmp whatever TMPDIR says and leaves it when the load fails, and runs a compiler
// command taken from the package when the package has no compiled library.
//
// Here instead: the zip is checked first (audit/common/zip_check.h: every entry name, the declared
// sizes, the budget); the layout is the loader's (the archive's top folder, then
// data/aotinductor/<model>/ for the compiled code and data/constants/ for constants unpacked beside
// it) and is computed from the names alone; the metadata JSON is parsed into strings; and the
// files the runner needs are unpacked, streamed in chunks, into a folder the caller owns (the
// trial's scratch). worker/targets/aoti.cpp then builds LibTorch's runner on that folder.
// Everything before unpack_aoti_package reads names and one small JSON entry, so it is fuzzed
// (tests/fuzz/fuzz_aoti.cpp) without loading any code.
#pragma once

#include "audit/common/zip_check.h"

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ra::targets {

inline constexpr uint64_t kMaxAotiMetadataBytes = uint64_t{1} << 20;

struct AotiLayout {
  std::string top;        // the archive's top folder with its '/' ("net/"): every entry is below it
  std::string model_dir;  // "net/data/aotinductor/model": the loader's model directory
  std::string metadata;   // the wrapper's metadata entry, "" when the package has none
  std::string library;    // the compiled library (.so), as unpacked (below the unpack folder)
  std::string blob;       // the weights blob (.blob) as unpacked, "" when none
  // Entry name -> path below the unpack folder, for every file the runner needs.
  std::vector<std::pair<std::string, std::string>> files;
};

// The layout of the package whose checked entries are `entries`, for model `model_name`. Throws
// InputError beginning with `what` when the entries do not share one top folder, when two files
// would be unpacked to one path, or when there is no compiled library.
AotiLayout aoti_layout(const std::vector<ZipEntry>& entries, const std::string& model_name, const std::string& what);

// The metadata (a JSON object of strings: AOTI_DEVICE_KEY, AOTI_CPU_ISA, ...). Throws InputError
// beginning with `what` for anything else.
std::map<std::string, std::string> aoti_metadata(std::string_view json, const std::string& what);

// A package read as above: its entries, layout and metadata (from its metadata entry).
struct AotiPackage {
  std::vector<ZipEntry> entries;
  AotiLayout layout;
  std::map<std::string, std::string> metadata;
};
AotiPackage read_aoti_package(const std::string& path, const std::string& model_name, const std::string& what);

// Why the compiled library at `file` is not one the dynamic loader can map whole, or "" when it
// is: not an ELF shared object of this machine's class and byte order, or a file whose ELF headers
// describe program headers, loadable segments or section headers beyond its end (a package cut
// short). dlopen maps such a file without complaint on some releases and crashes or runs garbage
// later, so the runner is never built on one.
std::string compiled_library_problem(const std::string& file);

// Unpacks the layout's files of the package at `path` into `folder` (which must exist and be
// ours), creating files that must not exist yet; returns the path of the compiled library. Throws
// InputError for a read or write that fails, and for a compiled library with a problem (above).
std::string unpack_aoti_package(const std::string& path, const AotiPackage& package, const std::string& folder,
                                const std::string& what);

}  // namespace ra::targets
