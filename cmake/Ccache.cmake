# SPDX-License-Identifier: Apache-2.0
# Use ccache when it is installed: LibTorch translation units are slow to compile. CCACHE_BASEDIR
# makes paths inside the source tree relative, so that a fresh clone elsewhere (CI) reuses what
# an earlier build compiled. The sloppiness lets ccache cache translation units that use our
# precompiled headers (cmake/Precompiled.cmake, cmake/TorchTargets.cmake).
find_program(RA_CCACHE ccache)
if(RA_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(RA_CCACHE_LAUNCHER ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${CMAKE_SOURCE_DIR}
      CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime ${RA_CCACHE})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${RA_CCACHE_LAUNCHER})
  set(CMAKE_C_COMPILER_LAUNCHER ${RA_CCACHE_LAUNCHER})
endif()
