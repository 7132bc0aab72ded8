// SPDX-License-Identifier: Apache-2.0
#include "audit/common/progress.h"

#include "audit/common/log.h"
#include "reports/escape.h"

#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <cstdio>

#include <sys/ioctl.h>
#include <unistd.h>

namespace ra {
namespace {

std::atomic<bool> g_line_open{false};  // a progress line is on the terminal, without its newline

}  // namespace

std::string eta_text(double s) {
  if (!(s > 0.5)) return "";
  const long total = std::lround(s);
  if (total < 60) return fmt::format("ETA {} s", total);
  return fmt::format("ETA {} min {} s", total / 60, total % 60);
}

std::string fit_to_columns(const std::string& line, size_t columns) {
  const auto lead = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; };
  size_t width = 0;
  for (const char c : line) width += lead(c) ? 1 : 0;
  if (columns == 0 || width <= columns) return line;
  size_t kept = 0, end = 0;  // the bytes of the first columns - 1 characters
  for (; end < line.size(); ++end)
    if (lead(line[end]) && kept++ == columns - 1) break;
  return line.substr(0, end) + "\u2026";
}

void status_line(const std::string& line, bool end) {
  // `line` names targets, cells and configurations: one line, no control characters (reports/escape.h).
  std::string text = report::escape::text_line(line);
  winsize size{};
  // The last column is left free: a terminal that wraps on writing it would move to the next row.
  if (!end && ::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1)
    text = fit_to_columns(text, size.ws_col - 1U);
  std::fprintf(stderr, "\r%s\033[K%s", text.c_str(), end ? "\n" : "");
  std::fflush(stderr);
  g_line_open = !end;
}

void close_status_line(bool keep) {
  if (!g_line_open.exchange(false)) return;
  std::fputs(keep ? "\n" : "\r\033[K", stderr);
  std::fflush(stderr);
}

// The mean wall time per finished item times the items left, less the time since the last one
// finished (spent on those left): it counts down while a child runs, and is gone once overdue.
std::string Progress::eta() const {
  if (done_ == 0 || done_ >= total_) return "";
  const auto now = std::chrono::steady_clock::now();
  const double per_item = std::chrono::duration<double>(last_done_ - start_).count() / static_cast<double>(done_);
  const double since = std::chrono::duration<double>(now - last_done_).count();
  return eta_text(per_item * static_cast<double>(total_ - done_) - since);
}

void Progress::done(const std::string& what) {
  ++done_;
  last_done_ = std::chrono::steady_clock::now();
  const std::string eta_part = eta();
  const std::string line = fmt::format("[{}/{}] {}{}{}", done_, total_, what, eta_part.empty() ? "" : ", ", eta_part);
  if (terminal_)
    status_line(line, end_ == LineEnd::AtTotal && done_ >= total_);
  else
    log::debug("{}", report::escape::text_line(line));
}

void Progress::show(const std::string& what) const {
  if (terminal_) status_line(what, false);
}

void Progress::still_running(size_t number, const std::string& what, double elapsed_ms, size_t others) const {
  if (elapsed_ms < 1000) return;  // just started: the line still says what finished before it
  const std::string eta_part = eta();
  show(fmt::format("run {}/{} ({}): {:.0f} s, still running{}{}{}", number, total_, what, std::floor(elapsed_ms / 1000),
                   others == 0 ? "" : fmt::format(" (and {} more)", others), eta_part.empty() ? "" : ", ", eta_part));
}

}  // namespace ra
