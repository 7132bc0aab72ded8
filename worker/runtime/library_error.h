// SPDX-License-Identifier: Apache-2.0
// For the worker's catch site (audit/cmdline/command_line.h, Program::library_error), without LibTorch's headers.
#pragma once

#include <exception>
#include <optional>
#include <string>

namespace ra {

// LibTorch's own error (c10::Error) as its message, with its C++ backtrace only when `verbose`;
// nullopt for any other exception.
std::optional<std::string> library_error_text(const std::exception& e, bool verbose);

}  // namespace ra
