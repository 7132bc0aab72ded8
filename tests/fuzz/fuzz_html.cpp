// SPDX-License-Identifier: Apache-2.0
// The HTML renderer on any report the report reader accepts (`report IN.json --html F`): whatever a
// report holds, the page is rendered without a crash, and every value from it is escaped
// (reports/escape.h): the page must never hold a '<' that a value put there. A report whose
// target names carry markup is checked for that.
#include "audit/common/json_document.h"
#include "reports/json_read.h"
#include "reports/render.h"
#include "tests/fuzz/fuzz_common.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>

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
    const std::string page = ra::report::render_html(r);
    // A value's markup never becomes the page's: the marker tag, if a name holds it, shows escaped.
    if (page.find("<ra-fuzz-marker") != std::string::npos) std::abort();
  } catch (const ra::report::ReportError&) {}
  return 0;
}
