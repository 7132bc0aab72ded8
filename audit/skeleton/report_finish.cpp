// SPDX-License-Identifier: Apache-2.0
#include "audit/skeleton/report_finish.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/common/log.h"
#include "audit/common/owned_folder.h"
#include "audit/common/progress.h"
#include "audit/common/stop.h"
#include "audit/skeleton/changed_ops.h"
#include "audit/trial/worker_client.h"
#include "reports/baseline_file.h"
#include "reports/escape.h"
#include "reports/render.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>

namespace ra {
namespace {

// The size of the op streams a baseline file holds, logged once it is written.
void log_baseline_size(const report::Report& rep, const std::string& path) {
  uint64_t records = 0, bytes = 0;
  for (const auto& t : rep.targets())
    for (const auto& c : t.configs)
      if (c.op_stream) records += c.op_stream->records(), bytes += c.op_stream->packed_bytes();
  if (records > 0)
    log::info("baseline {}: op streams of {} records stored in {} bytes ({:.0f} per record)", path, records, bytes,
              static_cast<double>(bytes) / static_cast<double>(records));
}

// Compares with the baseline. Where both sides kept reference tensors, one worker measures how far
// each changed tensor moved: a first comparison collects the requests, the second reads the answers.
void compare_with_baseline(report::Report& rep, const ReportJudges& judges) {
  if (!has_kept_tensors(rep) || !has_kept_tensors(judges.baseline->results)) {
    apply_baseline(rep, *judges.baseline);
    return;
  }
  const ScratchDir scratch;
  BatchedDiff stats(scratch, judges.timeout_s, rep.tolerance);
  // What each side's kept files hold, as its baseline or report declares: the bound on what is read.
  const auto declare = [&stats](const report::Report& r) {
    for (const auto& t : r.targets())
      for (const auto& c : t.configs)
        if (!c.reference_tensors.empty()) stats.declare(c.reference_tensors, c.reference);
  };
  declare(rep);
  declare(judges.baseline->results);
  {
    report::Report first = rep;
    apply_baseline(first, *judges.baseline, stats.collect());
  }
  stats.resolve();
  apply_baseline(rep, *judges.baseline, stats.answer());
}

// --baseline-tensors: the baseline written with each configuration's reference tensors copied to
// BASELINE.tensors/ first (t<target>-c<config>.pt), which the baseline then names.
std::string baseline_with_tensors(const report::Report& rep, const std::string& path) {
  report::Report named = rep;
  std::map<std::string, std::string> files;
  const report::Targets targets = named.targets();
  for (size_t t = 0; t < targets.size(); ++t)
    for (size_t c = 0; c < targets[t].configs.size(); ++c) {
      std::string& kept = targets[t].configs[c].reference_tensors;
      if (kept.empty()) continue;
      const std::string name = fmt::format("t{}-c{}.pt", t, c);
      files[name] = kept;
      kept = name;
    }
  const std::string folder = path + ".tensors";
  write_owned_folder(folder, files, "the baseline's reference tensors");
  return report::render_baseline(named, files.empty() ? "" : std::filesystem::path(folder).filename().string());
}

}  // namespace

int finish_report(report::Report rep, const ReportOutputs& out, const ReportJudges& judges) {
  if (judges.allowlist) apply_allowlist(rep, *judges.allowlist, judges.today);
  if (judges.baseline) {
    compare_with_baseline(rep, judges);
    name_changed_ops(rep, *judges.baseline);
    rep.baseline->fail_on_explained = judges.fail_on_explained;
    report::finalize(rep);
  }
  // Each file is written whole (temporary file, rename) or not at all; a stop signal is honoured
  // between them.
  const auto write = [](const std::string& path, const auto& render) {
    if (path.empty()) return;
    check_stop();
    write_file_atomic(path, render());
  };
  write(out.report, [&] { return report::render_json(rep); });
  write(out.junit, [&] { return report::render_junit(rep); });
  write(out.markdown, [&] { return report::render_markdown(rep); });
  write(out.html, [&] { return report::render_html(rep); });
  write(out.save_baseline, [&] {
    return out.baseline_tensors ? baseline_with_tensors(rep, out.save_baseline) : report::render_baseline(rep);
  });
  if (!out.save_baseline.empty()) log_baseline_size(rep, out.save_baseline);
  check_stop();
  close_status_line();  // a progress line left open on the terminal (progress.h) is erased first
  write_stdout(out.json ? report::render_json(rep) : report::render_text(rep));
  // An incomplete verdict says why in one line on stderr too: -q, --json and a CI log that keeps
  // only stderr would otherwise show exit 4 and nothing else.
  if (rep.exit_code == static_cast<int>(ExitCode::Incomplete)) {
    const std::string why = report::incomplete_reason(rep);
    std::fprintf(stderr, "repro-audit: verdict incomplete: %s\n",
                 why.empty() ? "a trial crashed or timed out (the report says which)"
                             : report::escape::text_line(cut_message(why)).c_str());
  }
  return rep.exit_code;
}

}  // namespace ra
