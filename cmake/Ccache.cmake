# SPDX-License-Identifier: Apache-2.0
# Use ccache when it is installed: LibTorch translation units are slow to compile.
find_program(RA_CCACHE ccache)
if(RA_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${RA_CCACHE})
  set(CMAKE_C_COMPILER_LAUNCHER ${RA_CCACHE})
endif()
