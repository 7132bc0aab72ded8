// SPDX-License-Identifier: Apache-2.0
// The shard checks of `merge` (audit/fleet/merge_checks.h), as cli/cmd_merge.cpp runs them: each
// shard's report JSON read by the report reader, then every check made before anything is joined.
// The input holds the shards' JSON documents separated by NUL bytes (a byte JSON text never holds),
// so that a pair, or a set, of shards can disagree in every way a hand or another machine can make
// them.
#include "audit/common/errors.h"
#include "audit/common/json_document.h"
#include "audit/fleet/merge_checks.h"
#include "reports/json_read.h"
#include "tests/fuzz/fuzz_common.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input = ra::fuzz::text(data, size);
  std::vector<ra::fleet::ShardFile> shards;
  for (size_t start = 0; start <= input.size() && shards.size() < 8;) {
    const size_t nul = input.find('\0', start);
    const std::string doc = input.substr(start, nul == std::string::npos ? std::string::npos : nul - start);
    try {
      const auto j = ra::parse_json_document<nlohmann::ordered_json>(doc, "shard");
      shards.push_back({"shard" + std::to_string(shards.size() + 1) + ".json", ra::report::report_from_json(j)});
    } catch (const nlohmann::json::exception&) {  // read_report: "not valid JSON", exit 3
      return 0;
    } catch (const ra::report::ReportError&) {  // read_report: the field that is wrong, exit 3
      return 0;
    } catch (const ra::InputError&) {  // parse_json_document: too deep or too many values, exit 3
      return 0;
    }
    if (nul == std::string::npos) break;
    start = nul + 1;
  }
  try {
    (void)ra::fleet::check_shards(shards);
  } catch (const ra::Error&) {  // one line and exit 3 (2 for no shard at all)
  }
  return 0;
}
