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
