// SPDX-License-Identifier: Apache-2.0
// The one catch site. Usage errors (CLI11's, and ours) exit 2 with one line; input errors exit 3;
// in the worker, c10::Error is shown without its C++ backtrace unless --verbose; anything else is
// a bug. The front and the worker share this file with their own command tables (Program).
#include "audit/cmdline/command_line.h"

#include "audit/common/errors.h"
#include "audit/common/log.h"
#include "audit/common/paths.h"
#include "audit/common/stop.h"
#include "reports/escape.h"

#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string_view>

namespace ra::cmdline {
namespace {

// The one line an error gets. Messages quote paths, names and values from input files: their
// control characters (a newline, ESC) are shown as escapes, never sent to the terminal.
int fail(ExitCode code, const std::string& message) {
  std::fprintf(stderr, "repro-audit: %s\n", report::escape::text_line(message).c_str());
  return static_cast<int>(code);
}

// What a command printed on stdout reached it: a failed write (a full disk behind `> file`, a
// descriptor not open for writing) is an input error of its own, whatever verdict the command
// reached, since the caller never read it. audit/common/files.h's write_stdout reports it where it happens;
// this catches what any other write (CLI11's help, std::cout) left behind.
int checked_stdout(int code) {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  std::cout.flush();
  if (flushed && !std::ferror(stdout) && std::cout.good()) return code;
  if (stop_signal() != 0) return static_cast<int>(ExitCode::Interrupted);  // a closed pipe: `| head`
  return fail(ExitCode::Input,
              fmt::format("cannot write to stdout: {}", err != 0 ? std::strerror(err) : "write error"));
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// The subcommand given, or nullptr.
const CLI::App* parsed_subcommand(const CLI::App& app, std::span<const Command> table) {
  for (const auto& c : table)
    if (app.get_subcommand(c.name)->parsed()) return app.get_subcommand(c.name);
  return nullptr;
}

// The first "--name" in argv that the given subcommand does not know, with the closest option it
// does know ("" when none is close): for "unknown option '--atl' (did you mean --atol?)" instead
// of CLI11's "The following arguments were not expected: 1e-3 --atl".
std::optional<std::pair<std::string, std::string>> unknown_option(const CLI::App* sub, int argc, char** argv) {
  if (sub == nullptr) return std::nullopt;
  std::vector<std::string> options;
  for (const CLI::Option* o : sub->get_options())
    for (const auto& l : o->get_lnames()) options.push_back("--" + l);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.rfind("--", 0) != 0) continue;
    const std::string name = arg.substr(0, arg.find('='));
    if (std::find(options.begin(), options.end(), name) == options.end() && name != "--quiet" && name != "--verbose")
      return std::pair{name, closest(name, options)};
  }
  return std::nullopt;
}

// "did you mean": for an unknown subcommand, the closest registered name.
std::string suggestion(const CLI::App& app, std::span<const Command> table, int argc, char** argv) {
  std::vector<std::string> commands;
  for (const auto& c : table)
    if (!c.hidden) commands.push_back(c.name);
  const CLI::App* sub = parsed_subcommand(app, table);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (sub == nullptr && !arg.empty() && arg[0] != '-') {
      if (const std::string c = closest(arg, commands); !c.empty()) return fmt::format(" (did you mean '{}'?)", c);
      return fmt::format(" (commands: {})", fmt::join(commands, ", "));
    }
  }
  return "";
}

}  // namespace

int run(int argc, char** argv, const Program& program) {
  CLI::App app{
      "repro-audit: a determinism auditor for PyTorch models (LibTorch).\n"
      "Exit codes: 0 reproducible, 1 nondeterminism or a regression found, 2 usage error, 3 input error,\n"
      "4 a trial crashed or timed out (verdict incomplete), 130 interrupted.",
      "repro-audit"};
  app.set_version_flag("--version", tool_version());
  app.require_subcommand(1);
  GlobalOptions global;
  for (int i = 0; i < argc; ++i) global.argv.emplace_back(argv[i]);
  app.add_flag("-q,--quiet", global.quiet, "only errors on stderr; no progress");
  app.add_flag("-v,--verbose", global.verbose, "debug logs on stderr, C++ backtraces on errors");

  std::vector<std::pair<CLI::App*, Action>> actions;
  for (const auto& c : program.commands) {
    CLI::App* sub = app.add_subcommand(c.name, c.summary);
    if (c.hidden) sub->group("");
    sub->fallthrough();
    actions.emplace_back(sub, c.attach(*sub, global));
    // A repeatable option (--configs, --shape, ...) takes one value an occurrence, never the
    // arguments after it: CLI11 let it go on eating words up to the next option, so `run
    // --configs=default m.pt --shape 2x3` took the model as a configuration ("model is required").
    // Several values are given as --configs a,b or --configs a --configs b.
    for (CLI::Option* o : sub->get_options())
      if (!o->get_lnames().empty() && o->get_items_expected_max() > 1) o->allow_extra_args(false);
  }

  // "--report=" with nothing after the "=" made CLI11 take the next argument as its value (a report
  // named "--zzz=1"): an empty value is a usage error before anything is parsed.
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.size() > 3 && arg.substr(0, 2) == "--" && arg.back() == '=' && arg.find('=') == arg.size() - 1)
      return fail(ExitCode::Usage, fmt::format("{} has an empty value: give one after the '=', or leave the option out",
                                               arg.substr(0, arg.size() - 1)));
  }

  // exec -- COMMAND...: the command is not the parser's to read.
  int parsed_argc = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) != "--") continue;
    const bool exec = std::any_of(argv + 1, argv + i, [](const char* a) { return std::string_view(a) == "exec"; });
    if (!exec) break;
    global.dashdash = true;
    global.after_dashdash.assign(argv + i + 1, argv + argc);
    parsed_argc = i;
    break;
  }

  try {
    app.parse(parsed_argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return checked_stdout(app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return checked_stdout(app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    return checked_stdout(app.exit(e));
  } catch (const CLI::ExtrasError& e) {
    const CLI::App* sub = parsed_subcommand(app, program.commands);
    if (const auto unknown = unknown_option(sub, argc, argv))
      return fail(ExitCode::Usage, unknown->second.empty()
                                       ? fmt::format("unknown option '{}' for {} (see repro-audit {} --help)",
                                                     unknown->first, sub->get_name(), sub->get_name())
                                       : fmt::format("unknown option '{}' for {} (did you mean {}?)", unknown->first,
                                                     sub->get_name(), unknown->second));
    return fail(ExitCode::Usage, one_line(e.what()) + suggestion(app, program.commands, argc, argv));
  } catch (const CLI::ParseError& e) {
    return fail(ExitCode::Usage, one_line(e.what()) + suggestion(app, program.commands, argc, argv));
  }

  log::set_level(global.verbose ? log::Level::Debug : global.quiet ? log::Level::Error : log::Level::Info);
  try {
    for (auto& [sub, action] : actions)
      if (sub->parsed()) return checked_stdout(action());
    return fail(ExitCode::Usage, "no command given");
  } catch (const Error& e) {
    return fail(e.code(), e.what());
  } catch (const std::exception& e) {
    if (program.library_error)
      if (const auto text = program.library_error(e, global.verbose)) return fail(ExitCode::Input, one_line(*text));
    return fail(ExitCode::Incomplete, fmt::format("internal error: {}", one_line(e.what())));
  }
}

}  // namespace ra::cmdline
