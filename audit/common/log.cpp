// SPDX-License-Identifier: Apache-2.0
#include "audit/common/log.h"

#include "audit/common/progress.h"
#include "reports/escape.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <unistd.h>
#include <atomic>
#include <cstdlib>

namespace ra::log {
namespace {

std::atomic<Level> g_level{Level::Info};

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    const bool color = isatty(STDERR_FILENO) && std::getenv("NO_COLOR") == nullptr;
    sink->set_color_mode(color ? spdlog::color_mode::automatic : spdlog::color_mode::never);
    auto l = std::make_shared<spdlog::logger>("repro-audit", sink);
    l->set_pattern("%^[%l]%$ %v");
    l->set_level(spdlog::level::trace);
    return l;
  }();
  return *instance;
}

}  // namespace

void set_level(Level l) { g_level = l; }
Level level() { return g_level; }

// One record is one line: messages quote names, paths and values from input files (a shard's host,
// a model's op), whose control characters are shown as escapes (reports/escape.h), never sent to
// the terminal: no ESC sequence, no line that pretends to be another record. A progress line on the
// terminal is erased first (progress.h): the next tick draws it again below the record.
void write(Level l, std::string_view raw) {
  const std::string message = report::escape::text_line(raw);
  if (l != Level::Off) close_status_line();
  switch (l) {
    case Level::Debug:
      logger().debug(message);
      break;
    case Level::Info:
      logger().info(message);
      break;
    case Level::Warn:
      logger().warn(message);
      break;
    case Level::Error:
      logger().error(message);
      break;
    case Level::Off:
      break;
  }
}

}  // namespace ra::log
