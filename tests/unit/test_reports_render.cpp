// SPDX-License-Identifier: Apache-2.0
// The determinism contract across renderers, on a report with every verdict, root causes, a fix
// search, a replay and timing figures: changing only the timing figures changes only the timing
// sections (JSON "timing", the HTML and Markdown timing blocks) and leaves JUnit alone.
#include "reports/render.h"
#include "tests/unit/report_samples.h"

#include <doctest/doctest.h>

namespace {

std::string without_block(const std::string& s) {
  const size_t b = s.find(ra::report::kTimingBegin);
  const size_t e = s.find(ra::report::kTimingEnd);
  REQUIRE(b != std::string::npos);
  REQUIRE(e > b);
  return s.substr(0, b) + s.substr(e);
}

}  // namespace

TEST_CASE("renderers: timing figures stay in the timing sections") {
  const ra::report::Report a = ra::test::every_verdict_report(10);
  const ra::report::Report b = ra::test::every_verdict_report(20);
  auto ja = ra::report::to_json(a), jb = ra::report::to_json(b);
  CHECK(ja != jb);
  ja.erase("timing");
  jb.erase("timing");
  constexpr auto replace = nlohmann::json::error_handler_t::replace;  // the sample holds bytes that are not UTF-8
  CHECK(ja.dump(-1, ' ', false, replace) == jb.dump(-1, ' ', false, replace));
  CHECK(ra::report::render_junit(a) == ra::report::render_junit(b));
  for (const auto render : {&ra::report::render_html, &ra::report::render_markdown}) {
    const std::string ra = render(a), rb = render(b);
    CHECK(ra != rb);
    CHECK(without_block(ra) == without_block(rb));
  }
}
