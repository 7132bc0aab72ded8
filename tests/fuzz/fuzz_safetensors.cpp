// SPDX-License-Identifier: Apache-2.0
// The safetensors reader (worker/tensor_io/safetensors.h): a file's bytes, written to a scratch file
// (the reader reads files, as exec and diff give it), through the header checks and the reads.
#include "audit/common/errors.h"
#include "tests/fuzz/fuzz_common.h"
#include "worker/tensor_io/safetensors.h"

#include <cstdio>
#include <string>

#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = ra::fuzz::scratch_path("safetensors");
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  try {
    (void)ra::looks_like_safetensors(path);
    (void)ra::load_safetensors(path);  // an InputError for anything that breaks the format
  } catch (const ra::InputError&) {}
  return 0;
}
