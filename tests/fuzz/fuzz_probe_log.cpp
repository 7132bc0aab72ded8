// SPDX-License-Identifier: Apache-2.0
// A probe child's line log (audit/trial/probe_protocol.h), which a dying child may leave torn, and
// a trial's result document: read by the parent, never trusted.
#include "audit/trial/probe_protocol.h"
#include "audit/trial/trial_spec.h"
#include "tests/fuzz/fuzz_common.h"

#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)ra::read_probe_log(ra::fuzz::as_file(data, size));  // never throws: a bad line ends the log
  const nlohmann::json j = nlohmann::json::parse(ra::fuzz::text(data, size), nullptr, false);
  if (!j.is_discarded()) {
    try {
      (void)ra::trial_result_from_json(j);
    } catch (const std::exception&) {  // read_result (audit/trial/trials.cpp) turns any into "no result"
    }
  }
  return 0;
}
