// SPDX-License-Identifier: Apache-2.0
// The one check of a torch.export archive (open_export_archive, worker/targets/export_program.h),
// as `run` makes it and as `lint` makes it (the weights declared, on the meta device): a file's bytes
// read as a torch.export archive (export_archive.h), then its models/model.json turned into a
// program: every node's op looked up in the dispatcher, its arguments checked against the schema,
// every value defined before it is read, the graph's outputs against the signature, every weight's
// shape against its placeholder. Nothing runs. Only a TrialInputError (one line, exit 3) may come out.
#include "tests/fuzz/fuzz_common.h"
#include "worker/runtime/child_support.h"
#include "worker/targets/export_archive.h"
#include "worker/targets/export_program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = ra::fuzz::as_file(data, size);
  try {
    (void)ra::targets::open_export_archive(path, c10::Device(c10::kCPU)).program->node_count();
  } catch (const ra::TrialInputError&) {}
  try {
    (void)ra::targets::open_export_archive(path, c10::Device(c10::kMeta), ra::targets::WeightData::Declared)
        .program->node_count();
  } catch (const ra::TrialInputError&) {}
  return 0;
}
