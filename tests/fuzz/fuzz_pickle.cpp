// SPDX-License-Identifier: Apache-2.0
// The torch.save reader (worker/tensor_io/python_pickle.h): a file's bytes through the checked
// reader, once within a kept file's budget and once without, the flattening into named tensors,
// and the digest (of tensors up to 64Ki elements: a view may legitimately claim up to 2^30, which
// would only slow the fuzzer down).
#include "audit/common/errors.h"
#include "tests/fuzz/fuzz_common.h"
#include "worker/digest/digest.h"
#include "worker/tensor_io/python_pickle.h"
#include "worker/tensor_io/tensor_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes = ra::fuzz::text(data, size);
  // As a kept file is read (worker/tensor_io/kept_read.h): within what its baseline declares.
  try {
    (void)ra::load_python_pickle("kept.pt", bytes, ra::PickleBudget{uint64_t{1} << 14, uint64_t{1} << 16});
  } catch (const ra::InputError&) {}
  try {
    const c10::IValue v = ra::load_python_pickle("fuzz.pt", bytes);
    ra::NamedTensors out;
    ra::flatten_tensors(v, "", out, "fuzz.pt");
    for (const auto& [name, t] : out)
      if (t.numel() <= (int64_t{1} << 16)) (void)ra::digest(t);
  } catch (const ra::InputError&) {}
  return 0;
}
