// SPDX-License-Identifier: Apache-2.0
// Baseline JSON (--baseline, compare): a baseline document, or a report read as one, and the kept
// files it names, looked at beside it as load_baseline looks (audit/common/owned_folder.h).
#include "audit/common/json_document.h"
#include "audit/common/owned_folder.h"
#include "reports/baseline_file.h"
#include "reports/json_read.h"
#include "tests/fuzz/fuzz_common.h"

#include <nlohmann/json.hpp>

#include <cstdio>

#include <sys/stat.h>
#include <unistd.h>

namespace {

// Where the kept files are looked for: a folder made once, holding a tensors folder with one file
// (golden.json.tensors/t0-c0.pt) and a symlink to that folder (linked.json.tensors), so that a seed
// naming either reaches both answers.
const std::string& beside() {
  static const std::string dir = [] {
    const std::string d = ra::fuzz::scratch_path("kept");
    ::mkdir(d.c_str(), 0700);
    ::mkdir((d + "/golden.json.tensors").c_str(), 0700);
    if (std::FILE* f = std::fopen((d + "/golden.json.tensors/t0-c0.pt").c_str(), "wb")) std::fclose(f);
    (void)::symlink("golden.json.tensors", (d + "/linked.json.tensors").c_str());
    return d;
  }();
  return dir;
}

}  // namespace

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
    const ra::report::Report r = ra::report::baseline_from_json(j);
    for (const auto& t : r.targets())
      for (const auto& c : t.configs)
        if (!c.reference_tensors.empty()) (void)ra::kept_file_problem(beside() + "/" + c.reference_tensors);
  } catch (const ra::report::ReportError&) {}
  try {
    std::string schema;
    (void)ra::report::results_from_json(j, schema);
  } catch (const ra::report::ReportError&) {}
  return 0;
}
