// SPDX-License-Identifier: Apache-2.0
// The knowledge base (share/knowledge/ops.json, or --knowledge).
#include "audit/common/errors.h"
#include "audit/knowledge/knowledge.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)ra::parse_knowledge(ra::fuzz::text(data, size), "fuzz.json");
  } catch (const ra::Error&) {}
  return 0;
}
