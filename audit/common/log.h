// SPDX-License-Identifier: Apache-2.0
// A tiny logging facade so that audit/ and probes/ do not depend on spdlog. Logs go to stderr.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace ra::log {

enum class Level { Debug, Info, Warn, Error, Off };

void set_level(Level level);
Level level();
void write(Level level, std::string_view message);

template <typename... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  if (level() <= Level::Debug) write(Level::Debug, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  if (level() <= Level::Info) write(Level::Info, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  if (level() <= Level::Warn) write(Level::Warn, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace ra::log
