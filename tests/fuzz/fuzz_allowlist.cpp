// SPDX-License-Identifier: Apache-2.0
// Allowlists (--allowlist).
#include "audit/baseline/allowlist.h"
#include "audit/common/errors.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)ra::parse_allowlist(ra::fuzz::text(data, size), "fuzz.json");
  } catch (const ra::Error&) {}
  return 0;
}
