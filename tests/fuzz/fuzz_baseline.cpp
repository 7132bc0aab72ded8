// SPDX-License-Identifier: Apache-2.0
// Baseline JSON (--baseline, compare): a baseline document, or a report read as one.
#include "audit/common/json_document.h"
#include "reports/baseline_file.h"
#include "reports/json_read.h"
#include "tests/fuzz/fuzz_common.h"

#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::ordered_json j;
  try {
    j = ra::parse_json_document<nlohmann::ordered_json>(ra::fuzz::text(data, size), "report");
  } catch (const nlohmann::json::exception&) {  // audit/baseline/baseline.cpp: "not valid JSON", exit 3
    return 0;
  } catch (const ra::InputError&) {  // parse_json_document: too deep or too many values, exit 3
    return 0;
  }
  try {
    (void)ra::report::baseline_from_json(j);
  } catch (const ra::report::ReportError&) {}
  try {
    std::string schema;
    (void)ra::report::results_from_json(j, schema);
  } catch (const ra::report::ReportError&) {}
  return 0;
}
