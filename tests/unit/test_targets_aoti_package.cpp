// SPDX-License-Identifier: Apache-2.0
// An AOTInductor package's compiled library is checked from its ELF headers before any loader maps
// it: a real shared library passes, and the same library cut short, a file that is no ELF, or a
// header whose tables lie beyond the file each get a reason (issue 40: torch 2.11's loader crashed
// on a library cut to a third, and 2.15's ran it).
#include "tests/unit/temp_folder.h"
#include "worker/targets/aoti_package.h"

#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include <dlfcn.h>
#include <elf.h>

namespace {

// The bytes of the shared library that holds strlen (the C library): a real ELF shared object.
std::string real_library() {
  Dl_info info{};
  REQUIRE(::dladdr(reinterpret_cast<void*>(&::strlen), &info) != 0);
  std::ifstream in(info.dli_fname, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() > 4096);
  return bytes;
}

}  // namespace

TEST_CASE("compiled_library_problem: a whole library passes; cut short, junk or lying headers do not") {
  ra::test::TempFolder dir("ra-aoti");
  const std::string whole = real_library();
  CHECK(ra::targets::compiled_library_problem(dir.write("whole.so", whole)).empty());
  // Cut anywhere past the header: its section table (at the end) or a segment now ends beyond the file.
  for (const size_t keep : {whole.size() / 3, whole.size() - 1, size_t{sizeof(Elf64_Ehdr)}}) {
    CAPTURE(keep);
    const std::string problem = ra::targets::compiled_library_problem(dir.write("cut.so", whole.substr(0, keep)));
    CHECK(problem.rfind("is cut short: it holds " + std::to_string(keep) + " bytes", 0) == 0);
  }
  CHECK(ra::targets::compiled_library_problem(dir.write("short.so", whole.substr(0, 20))) ==
        "is not an ELF shared library (20 bytes)");
  CHECK(ra::targets::compiled_library_problem(dir.write("junk.so", std::string(4096, 'x'))) ==
        "is not an ELF shared library (4096 bytes)");
  CHECK(ra::targets::compiled_library_problem(dir.path + "/absent.so").rfind("cannot be opened: ", 0) == 0);
  // A header whose section table offset would overflow when added to its size is cut short, not wrapped.
  std::string lying = whole;
  Elf64_Ehdr h{};
  std::memcpy(&h, lying.data(), sizeof h);
  h.e_shoff = UINT64_MAX - 8;
  std::memcpy(lying.data(), &h, sizeof h);
  CHECK(ra::targets::compiled_library_problem(dir.write("lying.so", lying)).rfind("is cut short: ", 0) == 0);
  // An executable's class or byte order that is not this machine's.
  std::string other = whole;
  other[EI_CLASS] = ELFCLASS32;
  CHECK(ra::targets::compiled_library_problem(dir.write("other.so", other)) ==
        "is not a 64-bit ELF shared library of this machine's byte order");
}
