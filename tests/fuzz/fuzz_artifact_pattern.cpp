// SPDX-License-Identifier: Apache-2.0
// exec's --artifact patterns (audit/exec/artifacts.h): the parser, the placement below the working
// directory or an --artifact-root, and the component matcher against a path. The input is the
// pattern, then after the first newline the path it is matched against (the pattern's own
// components when there is none).
#include "audit/common/errors.h"
#include "audit/exec/artifacts.h"
#include "tests/fuzz/fuzz_common.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string s = ra::fuzz::text(data, size);
  const size_t nl = s.find('\n');
  const std::string text = s.substr(0, nl);
  try {
    ra::exec::ArtifactPattern p = ra::exec::parse_artifact_pattern(text);
    ra::exec::place_artifact_pattern(p, "/srv/proj", {"/data/ckpt", "/srv"}, {"/home/u/proj"}, {{"/mnt/ckpt"}, {}});
    if (p.below.empty()) std::abort();  // a placed pattern names something below its root
    for (const auto& c : p.below)
      if (c.empty() || c == "." || c == "..") std::abort();  // nothing that leaves the root
    std::string own;
    for (const auto& c : p.below) own += (own.empty() ? "" : "/") + c;
    const std::string path = nl == std::string::npos ? own : s.substr(nl + 1);
    for (const int trial : {3, -1}) {
      const auto m = ra::exec::match_artifact_path(p, path, trial);
      if (m && m->name.find("..") != std::string::npos && path.find("..") == std::string::npos &&
          text.find("..") == std::string::npos)
        std::abort();  // a name holds only what the path and the pattern spell
    }
  } catch (const ra::Error&) {}
  return 0;
}
