// SPDX-License-Identifier: Apache-2.0
// The torch.export archive reader (worker/targets/export_archive.h): a file's bytes through the zip
// checks (audit/common/zip_check.h), LibTorch's record reader, models/model.json (schema, inputs,
// nodes, the canonical graph) and the weights read from their records, as `run` reads an archive
// before NativeRT opens it. Only a TrialInputError (one line, exit 3) may come out.
#include "tests/fuzz/fuzz_common.h"
#include "worker/runtime/child_support.h"
#include "worker/targets/export_archive.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = ra::fuzz::as_file(data, size);
  try {
    (void)ra::targets::read_export_archive(path);
  } catch (const ra::TrialInputError&) {}
  return 0;
}
