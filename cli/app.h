// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace ra::cli {

// The whole command line, in-process: parses argv, runs the subcommand, maps errors to exit codes.
int run(int argc, char** argv);

}  // namespace ra::cli
