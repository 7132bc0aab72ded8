// SPDX-License-Identifier: Apache-2.0
#include "audit/selftest/selftest_invariance.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace ra {
namespace {

constexpr const char* kLinear = "batch.linear";
constexpr const char* kLayerNorm = "batch.layer_norm";
constexpr const char* kDetect = "batch.detect-control";

// The classes a probe of the suite's report gave under default, or nullptr when it did not run there.
const std::vector<std::vector<int64_t>>* classes_of(const report::Report& r, const std::string& name) {
  for (const auto& t : std::get<report::ProbesBody>(r.body).targets)
    if (t.common.name == name)
      for (const auto& b : t.facts.batch_classes)
        if (b.config == "default") return &b.classes;
  return nullptr;
}

std::string shown(const std::vector<std::vector<int64_t>>& classes) {
  std::vector<std::string> parts;
  for (const auto& c : classes) parts.push_back(fmt::format("{{{}}}", fmt::join(c, ",")));
  return fmt::format("{}", fmt::join(parts, " | "));
}

}  // namespace

LinearRows read_linear_rows(const std::string& path) {
  try {
    const auto j = nlohmann::json::parse(read_file(path, "self-test invariance measurement"));
    return {j.at("sizes").get<std::vector<int64_t>>(), j.at("linear_differs_at").get<std::vector<int64_t>>()};
  } catch (const nlohmann::json::exception& e) {
    throw Error(ExitCode::Incomplete, std::string("the worker's invariance measurement is malformed: ") + e.what());
  }
}

std::vector<std::string> invariance_check_probes() { return {kLinear, kLayerNorm, kDetect}; }

report::SelfCheck invariance_check(const report::Report& probes, const LinearRows& measured) {
  report::SelfCheck check{"invariance", false, ""};
  const auto* linear = classes_of(probes, kLinear);
  const auto* norm = classes_of(probes, kLayerNorm);
  const auto* detect = classes_of(probes, kDetect);
  if (!linear || !norm || !detect) {
    check.evidence =
        fmt::format("the probes {}, {} and {} did not all run under default", kLinear, kLayerNorm, kDetect);
    return check;
  }
  std::vector<std::string> wrong;
  const bool variant_here = !measured.differs_at.empty();
  const std::string where = variant_here
                                ? fmt::format("at {} of {} sizes (first at M = {})", measured.differs_at.size(),
                                              measured.sizes.size(), measured.differs_at.front())
                                : "";
  if (variant_here && linear->size() < 2)
    wrong.push_back(fmt::format("{} found one class, but a Linear row differed in-process {}", kLinear, where));
  if (norm->size() != 1) wrong.push_back(fmt::format("the control {} was variant: {}", kLayerNorm, shown(*norm)));
  const bool detected = detect->size() == 2 && detect->front() == std::vector<int64_t>{1};
  if (!detected)
    wrong.push_back(fmt::format("{} did not split into {{1}} and the rest ({}): the comparison cannot see one ulp",
                                kDetect, shown(*detect)));
  check.passed = wrong.empty();
  if (!check.passed) {
    check.evidence = fmt::format("{}", fmt::join(wrong, "; "));
    return check;
  }
  const std::string controls =
      fmt::format("{} invariant over {} sizes; {} split at one ulp, so a difference is visible", kLayerNorm,
                  measured.sizes.size(), kDetect);
  check.evidence =
      variant_here
          ? fmt::format("a Linear row differed in-process from batch 1 {}; {} found it variant ({} classes); {}", where,
                        kLinear, linear->size(), controls)
          : fmt::format(
                "a Linear row kept its bits at every size tried in-process ({}: {} class{}), so this library "
                "gives no real positive here; passed on the controls: {}",
                kLinear, linear->size(), linear->size() == 1 ? "" : "es", controls);
  return check;
}

}  // namespace ra
