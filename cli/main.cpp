// SPDX-License-Identifier: Apache-2.0
#include "audit/common/stop.h"
#include "cli/command_table.h"

int main(int argc, char** argv) {
  ra::install_stop_handlers();
  return ra::cli::run(argc, argv);
}
