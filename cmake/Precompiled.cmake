# SPDX-License-Identifier: Apache-2.0
# The torch-free libraries' shared precompiled header: nlohmann/json and fmt cost several seconds of
# parsing per translation unit on a 2-core machine.
# (LibTorch's own precompiled header is in TorchTargets.cmake.)
add_library(ra_plain_pch STATIC ${CMAKE_CURRENT_LIST_DIR}/plain_pch.cpp)
target_link_libraries(ra_plain_pch PRIVATE nlohmann_json::nlohmann_json fmt::fmt-header-only ra_warnings)
# Not CLI11: its headers define namespace-scope validator objects, whose constructors every file
# including them would compile again, used or not.
target_precompile_headers(ra_plain_pch PRIVATE <nlohmann/json.hpp> <fmt/format.h> <fmt/ranges.h> <map> <optional>
                          <string> <vector>)

# ra_plain_target(TARGET): a torch-free TARGET parses json and fmt once per build.
function(ra_plain_target target)
  target_precompile_headers(${target} REUSE_FROM ra_plain_pch)
endfunction()

# ra_unity(TARGET...): each TARGET's files compile as one translation unit (CMake's unity build).
# Most of a file's compile time here is instantiating the templates of the headers it shares with
# its neighbours (LibTorch's, json's, fmt's, CLI11's); one unit per library does that once. Only
# for libraries whose files share no file-local names (a clash is a compile error, not a bug).
function(ra_unity)
  set_target_properties(${ARGN} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16)
endfunction()
