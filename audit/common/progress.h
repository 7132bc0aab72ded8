// SPDX-License-Identifier: Apache-2.0
// Progress of a batch of children on stderr: "[3/12] det repeat 1: 612 ms, ETA 6 s", and while a
// child runs long, "run 4/12 (det): 14 s, still running". On a terminal (SessionOptions::progress:
// stdout and stderr both terminals, no --quiet) it is one line that rewrites itself ('\r' and
// ESC[K) and ends with a newline when the batch is done; otherwise it goes to the debug log only,
// and the "still running" lines nowhere. A log record written while the line is open first erases
// it (log.cpp), so that no record starts in the middle of a progress line.
//
// Whoever plans the work owns the line and sets its total; the runner that runs the children
// numbers, ticks and reports them (audit/trial/runner.h: ChildProgress; the rounds of `run`,
// `probes` and `exec` in audit/skeleton/rounds.h). The work never counts itself.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace ra {

// Who ends the line with its newline: the last item done (a batch of known size), or its owner
// through close_status_line (work that plans more as it goes, such as invariance's fix search, whose
// line would otherwise end, and stay, after each of its rounds).
enum class LineEnd { AtTotal, ByOwner };

class Progress {
 public:
  Progress(size_t total, bool terminal, LineEnd end = LineEnd::AtTotal)
      : total_(total), terminal_(terminal), end_(end), start_(std::chrono::steady_clock::now()) {}
  // One more of `total` finished; `what` describes it. The ETA extrapolates the mean time per
  // finished item (children run side by side, so this is wall time, not CPU time), less the time
  // since the last one finished.
  void done(const std::string& what);
  // Work under way, on a terminal only: rewrites the line with `what` without counting anything.
  void show(const std::string& what) const;
  // "run 4/12 (det): 14 s, still running": item `number` (from 1) of `total`, described by
  // `what`, has run `elapsed_ms`; `others` more run beside it. The ETA follows, from the items
  // finished so far, once there are some. Nothing for a child under a second old.
  void still_running(size_t number, const std::string& what, double elapsed_ms, size_t others = 0) const;
  void add(size_t more) { total_ += more; }  // work found on the way (a retry after a crash)
  size_t finished() const { return done_; }
  size_t total() const { return total_; }
  bool terminal() const { return terminal_; }  // drawn on the terminal, else logged

 private:
  std::string eta() const;

  size_t total_;
  size_t done_ = 0;
  bool terminal_;
  LineEnd end_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_done_;
};

// "ETA 6 s", "ETA 2 min 10 s"; "" when nothing remains.
std::string eta_text(double seconds_left);

// `line` cut to `columns` terminal columns (one per UTF-8 character), its last kept one an
// ellipsis; as it is when it fits or `columns` is 0 (unknown).
std::string fit_to_columns(const std::string& line, size_t columns);

// The terminal's progress line: rewrites it with `line` (escaped to one line), ending it with a
// newline when `end`. A line that stays open is cut to one column less than stderr's terminal is
// wide: one that wrapped would leave its first rows behind, since '\r' and ESC[K erase only the
// row the cursor is on. Only for a terminal (the callers check).
void status_line(const std::string& line, bool end);
// Erases the progress line if one is open (before a log record), or ends it with a newline
// (`keep`: before output that must follow it, such as the summary on stdout).
void close_status_line(bool keep = false);

}  // namespace ra
