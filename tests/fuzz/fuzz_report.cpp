// SPDX-License-Identifier: Apache-2.0
// Report JSON, as `report` and `compare` read it (cli/cmd_report.cpp): parse, read the model, and
// render what was read the way `report` does (text, Markdown, JUnit, JSON).
#include "audit/common/errors.h"
#include "audit/common/json_document.h"
#include "reports/json_read.h"
#include "reports/render.h"
#include "tests/fuzz/fuzz_common.h"

#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::ordered_json j;
  try {
    j = ra::parse_json_document<nlohmann::ordered_json>(ra::fuzz::text(data, size), "report");
  } catch (const nlohmann::json::exception&) {  // cli/cmd_report.cpp: "not valid JSON", exit 3
    return 0;
  } catch (const ra::InputError&) {  // parse_json_document: too deep or too many values, exit 3
    return 0;
  }
  try {
    const ra::report::Report r = ra::report::report_from_json(j);
    (void)ra::report::render_text(r);
    (void)ra::report::render_markdown(r);
    (void)ra::report::render_junit(r);
    (void)ra::report::render_json(r);
  } catch (const ra::report::ReportError&) {}
  return 0;
}
