# SPDX-License-Identifier: Apache-2.0
# Use ccache when it is installed: LibTorch translation units are slow to compile. CCACHE_BASEDIR
# makes paths inside the source tree relative, so that a fresh clone elsewhere (CI) reuses what
# an earlier build compiled. The sloppiness lets ccache cache translation units that use our
# precompiled headers (cmake/Precompiled.cmake, cmake/TorchTargets.cmake). nvcc goes through it too:
# the fused CUDA digest alone took 115 s of a fresh build (and of every pip install) on 2 cores.
find_program(RA_CCACHE ccache)
if(RA_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(RA_CCACHE_LAUNCHER ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${CMAKE_SOURCE_DIR}
      CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime ${RA_CCACHE})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${RA_CCACHE_LAUNCHER})
  set(CMAKE_C_COMPILER_LAUNCHER ${RA_CCACHE_LAUNCHER})
  if(NOT CMAKE_CUDA_COMPILER_LAUNCHER)
    set(CMAKE_CUDA_COMPILER_LAUNCHER ${RA_CCACHE_LAUNCHER})
  endif()
endif()
