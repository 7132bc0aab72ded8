// SPDX-License-Identifier: Apache-2.0
// Zip archives from users (torch.export archives, AOTInductor packages, TorchScript archives),
// checked before anything reads or unpacks an entry.
//
// The problem: LibTorch's readers trust an archive. Its package loader writes each entry to
// "<folder>/<entry name>", so a name with ".." writes outside the folder (zip-slip); its record
// reader allocates whatever size an entry declares and inflates into it, so a megabyte of deflated
// zeros becomes gigabytes per process (a zip bomb); and two entries may share bytes (an overlapping
// bomb), or a name may hold a NUL that one reader cuts and another does not.
//
// The approach: read the central directory ourselves (torch-free, so the front checks an archive
// before any worker starts, and so it is fuzzed without LibTorch) and refuse, with one line naming
// the entry, any archive that breaks one of these rules:
//   * every entry name is relative and plain: not empty, at most kMaxZipNameBytes bytes, no NUL or
//     control character, no backslash, no leading '/' or drive letter, no empty, "." or ".."
//     component (a trailing '/' marks a folder entry), no two entries with one name;
//   * every entry is stored or deflated, unencrypted, and its bytes lie inside the file, before the
//     central directory, apart from every other entry's;
//   * a stored entry's declared size equals its stored size; a deflated entry larger than
//     kZipRatioFloor expands at most kMaxZipRatio times its compressed size;
//   * the declared sizes of all entries add up to at most kMaxZipRatio times the file's size plus
//     kZipExpansionSlack (the budget the man page states).
// What is extracted later is then checked against these declared sizes by the reader itself
// (miniz compares every entry's inflated size and CRC with the central directory's).
//
// The cost: one read of the central directory (46 bytes and a name per entry) and one of each
// entry's 30-byte local header: microseconds for a model's few hundred entries.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ra {

inline constexpr uint64_t kMaxZipRatio = 100;                  // expansion of a deflated entry, and of the archive
inline constexpr uint64_t kZipRatioFloor = uint64_t{1} << 20;  // entries up to 1 MiB may expand more (small JSON)
inline constexpr uint64_t kZipExpansionSlack = uint64_t{64} << 20;
inline constexpr size_t kMaxZipNameBytes = 1024;
inline constexpr uint64_t kMaxZipEntries = uint64_t{1} << 20;

struct ZipEntry {
  std::string name;
  uint16_t method = 0;      // 0 stored, 8 deflated
  uint64_t compressed = 0;  // bytes in the file
  uint64_t size = 0;        // declared size once extracted
  uint64_t header = 0;      // offset of its local header
  uint64_t data = 0;        // offset of its first byte
};

// Why `name` cannot be an entry name that is safe to extract under a folder, as the end of a
// sentence ("has a '..' component"); "" when it is fine.
std::string zip_name_problem(std::string_view name);

// The entries of the zip archive at `path`, after the checks above. Throws InputError beginning
// with `what` ("model 'm.pt2'") for a file that is not a zip archive or breaks a rule.
std::vector<ZipEntry> checked_zip_entries(const std::string& path, const std::string& what);

// The same for an archive of `size` bytes read through `read_at` (one opened already, without
// following a symlink, or bytes in memory): `read_at(at, buf, n)` gives how many bytes it read.
using ZipReadAt = std::function<size_t(uint64_t at, char* buf, size_t n)>;
std::vector<ZipEntry> checked_zip_entries(const ZipReadAt& read_at, uint64_t size, const std::string& what);

// checked_zip_entries for a torch.save file, which stores its records: also an InputError for an
// entry that declares more bytes than the file holds (the checked reader reads every record it keeps).
std::vector<ZipEntry> stored_zip_entries(const ZipReadAt& read_at, uint64_t size, const std::string& what);

// Why LibTorch's zip reader may not open the archive at `path`, as a sentence naming it ("" when it
// may): the reader inflates the records it reads as it opens an archive (`version`,
// `.data/serialization_id`) to whatever size their entries declare (1 GiB from 1 MB of deflated
// zeros), so one that claims more than the file holds is named first. Only the central directory is
// read; the rules above stay the caller's, and a directory that cannot be read is left to the reader.
std::string zip_open_problem(const std::string& path);

// Whether the file at `path` starts like a zip archive ("PK\3\4"). False for an unreadable file.
bool looks_like_zip(const std::string& path);

// Whether `entries` are those of an AOTInductor package: compiled code under data/aotinductor/
// (below the archive's top folder, as torch writes it, or at the top).
bool is_aoti_package(const std::vector<ZipEntry>& entries);

}  // namespace ra
