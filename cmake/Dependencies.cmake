# SPDX-License-Identifier: Apache-2.0
# Every dependency, found with a minimum version. LibTorch comes from the pinned torch wheel
# (CMAKE_PREFIX_PATH=torch.utils.cmake_prefix_path, which ./dev passes); the rest from Debian.
# Naming an architecture list skips torch's GPU-detection try_run, which needs a GPU and a CUDA
# dialect the host compiler settings do not give it.
if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(TORCH_CUDA_ARCH_LIST "9.0")
endif()
# torch's cuda.cmake sets an unset CMAKE_CUDA_STANDARD to CMAKE_CXX_STANDARD (20), which CMake 3.25
# cannot express for nvcc: name one it can until the CUDA digest's dialect is chosen (below).
set(CMAKE_CUDA_STANDARD 17)
find_package(Torch REQUIRED)
# The supported releases (cmake/TorchReleases.cmake): an older torch is one line, never a page of
# compiler errors from headers or a link that cannot work; an untested newer one builds, with one line.
# The pip build checked its torch before project() (cmake/WheelTorch.cmake).
if(NOT SKBUILD)
  ra_check_torch_release("${Torch_VERSION}" "choose another with REPRO_AUDIT_TORCH=${RA_TORCH_NEWEST_TESTED} ./dev "
                         "build, or CMAKE_PREFIX_PATH (torch at ${Torch_DIR})")
endif()
# The python of that torch's environment: the tests ask it what torch measures. ./dev passes it;
# otherwise the venv around Torch_DIR (<venv>/lib/pythonX.Y/site-packages/torch/share/cmake/Torch).
set(RA_TORCH_PYTHON "" CACHE FILEPATH "python of the environment whose torch the build uses")
if(NOT RA_TORCH_PYTHON)
  string(REGEX REPLACE "/lib/python[^/]*/site-packages/.*$" "/bin/python" _ra_guess "${Torch_DIR}")
  set(RA_TORCH_PYTHON "${_ra_guess}" CACHE FILEPATH "python of the environment whose torch the build uses" FORCE)
endif()
find_package(CLI11 2.1 REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(fmt 9 REQUIRED)
find_package(spdlog 1.10 REQUIRED)
if(RA_TESTS)
  find_package(doctest 2.4 REQUIRED)
endif()
find_package(Threads REQUIRED)
include(${CMAKE_CURRENT_LIST_DIR}/Re2.cmake)  # re2::re2, for exec's --metric matcher

# Our binaries find LibTorch through DT_RPATH, not DT_RUNPATH: LD_LIBRARY_PATH naming another torch
# (a second venv, a LibTorch archive) cannot then slip other libraries under a worker built against
# this one. A moved or replaced environment is still caught: the worker compares the torch it
# loaded with the one it was built against (worker/runtime/fingerprint.h), and the front names a
# worker the loader could not start (audit/trial/worker_client.h).
add_link_options(LINKER:--disable-new-dtags)

# Directory of libtorch*.so, for RPATH and for the fingerprint.
list(GET TORCH_LIBRARIES 0 _ra_first_torch_lib)
find_library(RA_TORCH_CPU_LIBRARY torch_cpu PATHS "${TORCH_INSTALL_PREFIX}/lib" NO_DEFAULT_PATH)
get_filename_component(RA_TORCH_LIBRARY_DIR "${RA_TORCH_CPU_LIBRARY}" DIRECTORY)

# A CUDA build of torch brings the CUDA toolkit targets; we use them for the fingerprint and, when
# nvcc is there too, for the fused CUDA digest (worker/digest/digest_cuda.cu). Its default
# architectures: PTX for any GPU from Turing on (the driver compiles it once) and machine code for
# Hopper; set RA_CUDA_ARCHITECTURES to choose others. -DRA_CUDA_DIGEST=OFF leaves it out.
set(RA_WITH_CUDA OFF)
set(RA_WITH_CUDA_DIGEST OFF)
option(RA_CUDA_DIGEST "Build the fused CUDA digest kernel when nvcc is found" ON)
set(RA_CUDA_ARCHITECTURES "75-virtual;90-real" CACHE STRING "GPU architectures of the fused CUDA digest")
if(TARGET torch_cuda OR TARGET CUDA::cudart)
  find_package(CUDAToolkit QUIET)
  if(TARGET CUDA::cudart)
    set(RA_WITH_CUDA ON)
  endif()
endif()
if(RA_WITH_CUDA AND RA_CUDA_DIGEST)
  include(CheckLanguage)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS "${CUDAToolkit_NVCC_EXECUTABLE}")
    set(CMAKE_CUDA_COMPILER "${CUDAToolkit_NVCC_EXECUTABLE}")
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    # C++20 for CUDA as for C++: from torch 2.14 on its headers use std::bit_width and
    # std::strong_ordering (c10/util/intrusive_ptr.h), which worker/digest/digest_cuda.cu includes.
    # CMake 3.25 (Debian 12) knows no C++20 flag for nvcc, so it is passed by hand there.
    if(DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA_STANDARD 20)
    else()
      unset(CMAKE_CUDA_STANDARD)
      set(CMAKE_CUDA_STANDARD_REQUIRED OFF)
      string(APPEND CMAKE_CUDA_FLAGS " -std=c++20")
    endif()
    find_library(RA_C10_CUDA_LIBRARY c10_cuda PATHS "${TORCH_INSTALL_PREFIX}/lib" NO_DEFAULT_PATH)
    if(RA_C10_CUDA_LIBRARY)
      set(RA_WITH_CUDA_DIGEST ON)
    endif()
  endif()
endif()
