// SPDX-License-Identifier: Apache-2.0
#include "audit/probes/batch_classes.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <string_view>
#include <tuple>

namespace ra {

std::vector<std::vector<int64_t>> batch_classes(const std::vector<report::TensorDigest>& tensors) {
  constexpr std::string_view kPrefix = "row@M=";
  std::vector<std::pair<int64_t, const report::TensorDigest*>> rows;
  for (const auto& t : tensors) {
    if (t.name.rfind(kPrefix, 0) != 0) continue;
    int64_t m = 0;
    const char* begin = t.name.data() + kPrefix.size();
    const char* end = t.name.data() + t.name.size();
    if (const auto [at, ec] = std::from_chars(begin, end, m); ec != std::errc() || at != end || begin == end) continue;
    rows.emplace_back(m, &t);
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // Classes keyed by what must be equal; each class's index is fixed by its smallest size.
  std::map<std::tuple<std::string, std::vector<int64_t>, std::string>, size_t> index;
  std::vector<std::vector<int64_t>> out;
  for (const auto& [m, t] : rows) {
    const auto [it, added] = index.try_emplace(std::make_tuple(t->dtype, t->shape, t->digest), out.size());
    if (added) out.emplace_back();
    out[it->second].push_back(m);
  }
  return out;
}

}  // namespace ra
