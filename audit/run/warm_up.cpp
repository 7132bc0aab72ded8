// SPDX-License-Identifier: Apache-2.0
#include "audit/run/warm_up.h"

#include "audit/common/log.h"
#include "audit/trace/trace_align.h"
#include "audit/trace/trace_io.h"

#include <algorithm>
#include <set>

namespace ra {
namespace {

// Call 1's trace aligned with call `call`'s, both from one trial; nullopt when unreadable.
std::optional<report::TraceSummary> calls_trace(const std::string& path, int call) {
  try {
    return trace::analyse_traces({trace::read_trace(path), trace::read_trace(call_trace_path(path))}, {1, call});
  } catch (const trace::TraceError& e) {
    log::warn("--calls: the traces of call 1 and call {} cannot be compared: {}", call, e.what());
    return std::nullopt;
  }
}

}  // namespace

report::WarmUp compare_calls(const std::vector<TrialRun>& runs, const std::vector<std::string>& traces, int calls) {
  report::WarmUp w;
  w.calls = calls;
  std::set<std::string> mutated;
  std::string trace_path;
  int traced_call = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& result = runs[i].result;
    if (!result || result->status != report::TrialStatus::Ok) continue;
    if (!result->mutated.empty()) {
      mutated.insert(result->mutated.begin(), result->mutated.end());
      continue;
    }
    ++w.trials_compared;
    for (size_t k = 0; k < result->later_calls.size(); ++k) {
      if (result->later_calls[k] == result->tensors) continue;
      const int call = static_cast<int>(k) + 2;
      if (w.trials_differing++ == 0 || call < w.first_call) {
        w.first_call = call;
        w.tensors.clear();
        for (const auto& f : differing_tensors(result->tensors, result->later_calls[k])) w.tensors.push_back(f.name);
      }
      if (result->traced_call == call && i < traces.size() && !traces[i].empty() &&
          (traced_call == 0 || call < traced_call)) {
        trace_path = traces[i];
        traced_call = call;
      }
      break;
    }
  }
  w.mutated.assign(mutated.begin(), mutated.end());
  if (w.mutated.empty() && traced_call > 0) {
    w.trace = calls_trace(trace_path, traced_call);
    if (traced_call != w.first_call) w.trace.reset();  // only where it names the call the report names
  }
  return w;
}

}  // namespace ra
