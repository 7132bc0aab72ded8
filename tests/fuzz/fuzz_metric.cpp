// SPDX-License-Identifier: Apache-2.0
// exec's --metric matcher (audit/exec/metrics.h): a pattern the user gives and the stdout the command
// prints, both arbitrary bytes. The input's first line is the pattern, the rest is stdout (eight
// times over when the input starts with byte 1, so that lines can pass the 64 KiB cap). Beyond
// crashes and sanitizer reports, the three ways of reading stdout (whole, from a stream, from the
// file) must agree, and no value may exceed the matched line's cap.
#include "audit/common/errors.h"
#include "audit/exec/metrics.h"
#include "tests/fuzz/fuzz_common.h"

#include <cstdlib>
#include <sstream>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input = ra::fuzz::text(data, size);
  const bool repeat = !input.empty() && input[0] == '\x01';
  if (repeat) input.erase(0, 1);
  const size_t nl = input.find('\n');
  if (nl == std::string::npos) return 0;
  ra::exec::MetricSpec spec;
  try {
    spec = ra::exec::parse_metric("m=" + input.substr(0, nl));
  } catch (const ra::UsageError&) {  // one line and exit 2 in the tool
    return 0;
  }
  std::string out = input.substr(nl + 1);
  if (repeat)
    for (int i = 0; i < 3; ++i) out += out;
  const auto whole = ra::exec::extract_metrics({spec}, out);
  std::istringstream stream(out);
  const auto streamed = ra::exec::extract_metrics({spec}, stream);
  const auto file = ra::exec::extract_metrics_file(
      {spec}, ra::fuzz::as_file(reinterpret_cast<const uint8_t*>(out.data()), out.size()));
  if (whole.values != streamed.values || whole.values != file.values || whole.lines_cut != file.lines_cut ||
      !file.unread.empty())
    std::abort();
  for (const auto& v : whole.values.at("m"))
    if (v.size() > ra::exec::kMaxMetricLine) std::abort();
  (void)ra::exec::metric_difference(whole.values.at("m"), {"0.5", "x"});
  (void)ra::exec::cut_lines_note(whole);
  return 0;
}
