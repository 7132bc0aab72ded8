// SPDX-License-Identifier: Apache-2.0
// What a probe target adds (`repro-audit probes`, probes/): its facts and the alert census over the
// suite. The JSON writer and reader of these structs sit beside them in reports/probe_json.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ra::report {

// A batch-invariance probe's batch sizes grouped into classes whose anchor rows had identical bits
// in one configuration's reference repeat (audit/probes/batch_classes.h): one class is invariant.
struct BatchClasses {
  std::string config;
  std::vector<std::vector<int64_t>> classes;  // sizes increasing; classes by their smallest size
};

// What a probe target adds: its description, the documentation's word on it, the alert census
// (the probe run once under use_deterministic_algorithms(True, warn_only=True)), and where the
// measurement disagrees with the documentation.
struct ProbeFacts {
  std::string family;
  std::string op;
  std::string direction;          // forward | backward
  std::string role;               // probe | control
  std::string form;               // what is run
  std::string knowledge_id;       // knowledge-base entry, "" when none
  std::string documented;         // made-deterministic | raises | undocumented | not-listed
  std::string documented_device;  // cpu | cuda | any, "" when not listed
  std::string doc_row;
  std::string advice;
  std::string census;               // alerted-diverged | alerted-stable | silent-diverged | stable | "" (no census)
  std::vector<std::string> alerts;  // alert messages seen in the census run
  std::vector<std::string> disagreements;   // measurement vs documentation, one sentence each
  std::vector<BatchClasses> batch_classes;  // family batch-invariance only, one per configuration run
  // False for a probe whose facts the file it was read from does not hold: a baseline keeps a
  // probe's identity, not its facts.
  bool known() const { return !family.empty(); }
};

// The alert census cross-tabulated over probes (names in suite order).
struct Census {
  std::string config;  // the configuration the census ran under
  std::vector<std::string> alerted_diverged, alerted_stable, silent_diverged, stable, not_run;
};

}  // namespace ra::report
