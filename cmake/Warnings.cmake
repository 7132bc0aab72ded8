# SPDX-License-Identifier: Apache-2.0
# Our own warnings, as an INTERFACE target so third-party headers are not affected.
add_library(ra_warnings INTERFACE)
target_compile_options(ra_warnings INTERFACE -Wall -Wextra -Wno-unused-parameter)
