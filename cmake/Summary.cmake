# SPDX-License-Identifier: Apache-2.0
# One summary at the end of configure: what was found, so a build log says what it built against.
set(_ra_cudnn "not found")
if(DEFINED CAFFE2_USE_CUDNN AND CAFFE2_USE_CUDNN)
  set(_ra_cudnn "used by torch")
endif()
file(GLOB _ra_cudnn_headers "${TORCH_INSTALL_PREFIX}/../nvidia/cudnn/include/cudnn_version.h"
     "${CUDAToolkit_INCLUDE_DIRS}/cudnn_version.h" "/usr/include/cudnn_version.h"
     "/usr/include/x86_64-linux-gnu/cudnn_version.h")
foreach(_h IN LISTS _ra_cudnn_headers)
  file(STRINGS "${_h}" _ra_v REGEX "#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ")
  string(REGEX REPLACE ".*CUDNN_MAJOR ([0-9]+).*CUDNN_MINOR ([0-9]+).*CUDNN_PATCHLEVEL ([0-9]+).*"
         "\\1.\\2.\\3" _ra_cudnn "${_ra_v}")
  break()
endforeach()
message(STATUS "")
message(STATUS "repro-audit ${PROJECT_VERSION} configuration")
message(STATUS "  build type   : ${CMAKE_BUILD_TYPE}")
message(STATUS "  torch        : ${Torch_VERSION} (${TORCH_INSTALL_PREFIX})")
if(RA_WITH_CUDA)
  message(STATUS "  CUDA         : ${CUDAToolkit_VERSION} (torch built with CUDA; fingerprint reads devices)")
else()
  message(STATUS "  CUDA         : not used (CPU-only torch)")
endif()
message(STATUS "  cuDNN        : ${_ra_cudnn}")
message(STATUS "  CLI11 ${CLI11_VERSION}, nlohmann_json ${nlohmann_json_VERSION}, spdlog ${spdlog_VERSION}, fmt ${fmt_VERSION}, doctest ${doctest_VERSION}")
message(STATUS "  ccache       : ${RA_CCACHE}")
message(STATUS "")
