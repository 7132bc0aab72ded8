// SPDX-License-Identifier: Apache-2.0
// Shape specs (--shape 8x3x224x224:float32) and configurations (--configs det+threads=2,strict).
#include "audit/common/errors.h"
#include "audit/trial/config.h"
#include "audit/trial/trial_spec.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string s = ra::fuzz::text(data, size);
  try {
    (void)ra::parse_shape(s);
  } catch (const ra::Error&) {}
  try {
    (void)ra::parse_config(s, 4);
  } catch (const ra::Error&) {}
  try {
    (void)ra::parse_configs({s, s}, 2);
  } catch (const ra::Error&) {}
  return 0;
}
