// SPDX-License-Identifier: Apache-2.0
// What `repro-audit selftest` reports. The JSON writer and reader of these structs sit beside them
// in reports/selftest_json.cpp.
#pragma once

#include <string>
#include <vector>

namespace ra::report {

struct Report;

// `repro-audit selftest`: checks that the tool works on this machine and device (audit/selftest/selftest.h),
// each passed or failed with its evidence in one sentence.
struct SelfCheck {
  std::string name;  // digests | switches | detection | fingerprint | tracing
  bool passed = false;
  std::string evidence;  // what was measured, or why it failed
};

struct SelfTest {
  std::string device;  // "cpu", "cuda:0"
  std::vector<SelfCheck> checks;
};

// "all 5 checks passed", or "2 of 5 checks failed: detection, tracing".
std::string selftest_summary(const SelfTest& self);

// The renderers' parts (selftest_render.cpp): the text summary, the Markdown summary, and the HTML
// section in place of the verdict banner; each takes the report's head and its body.
std::string selftest_text(const Report& report, const SelfTest& self);
std::string selftest_markdown(const Report& report, const SelfTest& self);
std::string selftest_html_section(const Report& report, const SelfTest& self);

}  // namespace ra::report
