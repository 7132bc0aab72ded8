// SPDX-License-Identifier: Apache-2.0
#include "worker/targets/export_check.h"

#include "audit/common/errors.h"
#include "worker/runtime/child_support.h"
#include "worker/targets/export_program.h"

namespace ra::targets {

nlohmann::json checked_export_model(const std::string& path) {
  try {
    return open_export_archive(path, c10::Device(c10::kMeta), WeightData::Declared).archive.model;
  } catch (const TrialInputError& e) {
    if (e.kind == "usage") throw UsageError(e.what());
    throw InputError(e.what());
  }
}

}  // namespace ra::targets
