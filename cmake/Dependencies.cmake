# SPDX-License-Identifier: Apache-2.0
# Every dependency, found with a minimum version. LibTorch comes from the pinned torch wheel
# (CMAKE_PREFIX_PATH=torch.utils.cmake_prefix_path, which ./dev passes); the rest from Debian.
# We compile no CUDA code; naming an architecture list skips torch's GPU-detection try_run, which
# needs a GPU and a CUDA dialect the host compiler settings do not give it.
if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(TORCH_CUDA_ARCH_LIST "9.0")
endif()
set(CMAKE_CUDA_STANDARD 17)
find_package(Torch 2.11 REQUIRED)
find_package(CLI11 2.1 REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(fmt 9 REQUIRED)
find_package(spdlog 1.10 REQUIRED)
find_package(doctest 2.4 REQUIRED)
find_package(Threads REQUIRED)

# Directory of libtorch*.so, for RPATH and for the fingerprint.
list(GET TORCH_LIBRARIES 0 _ra_first_torch_lib)
find_library(RA_TORCH_CPU_LIBRARY torch_cpu PATHS "${TORCH_INSTALL_PREFIX}/lib" NO_DEFAULT_PATH)
get_filename_component(RA_TORCH_LIBRARY_DIR "${RA_TORCH_CPU_LIBRARY}" DIRECTORY)

# A CUDA build of torch brings the CUDA toolkit targets; we use them only for the fingerprint.
set(RA_WITH_CUDA OFF)
if(TARGET torch_cuda OR TARGET CUDA::cudart)
  find_package(CUDAToolkit QUIET)
  if(TARGET CUDA::cudart)
    set(RA_WITH_CUDA ON)
  endif()
endif()
