// SPDX-License-Identifier: Apache-2.0
// An AOTInductor package's entry names and metadata (worker/targets/aoti_package.h): a file's bytes
// through the zip checks (every entry name, the declared sizes, the budget), the package's layout
// and its metadata JSON, everything the worker reads before it unpacks a package; nothing is loaded.
// Also every entry name on its own through zip_name_problem. Only an InputError may come out.
#include "audit/common/errors.h"
#include "audit/common/zip_check.h"
#include "tests/fuzz/fuzz_common.h"
#include "worker/targets/aoti_package.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = ra::fuzz::as_file(data, size);
  try {
    (void)ra::targets::read_aoti_package(path, "model", "model 'fuzz.pt2'");
  } catch (const ra::InputError&) {}
  (void)ra::zip_name_problem(ra::fuzz::text(data, size));
  try {
    (void)ra::targets::aoti_metadata(ra::fuzz::text(data, size), "model 'fuzz.pt2'");
  } catch (const ra::InputError&) {}
  return 0;
}
