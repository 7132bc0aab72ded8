// SPDX-License-Identifier: Apache-2.0
#include "cli/app.h"

int main(int argc, char** argv) { return ra::cli::run(argc, argv); }
