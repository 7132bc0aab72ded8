# SPDX-License-Identifier: Apache-2.0
# How a target that needs LibTorch is built. Two things make this file worth its own concern:
#   * Speed. A translation unit that includes LibTorch's headers spends 40 to 130 s of a 2-core
#     machine parsing them. Every torch target reuses one precompiled header (RA_TORCH_PCH_HOST's),
#     so the headers are parsed once per build, not once per file.
#   * What gets loaded. torch's own `torch` target links libtorch.so, which pulls libtorch_cuda.so
#     and with it cuBLAS, cuDNN, NCCL ... into every process, about half a second of start-up for
#     a CPU trial. Our torch targets link libtorch_cpu and libc10 only; the worker loads the CUDA
#     half with dlopen when a CUDA device is asked for (worker/runtime/cuda_loader.h).
#   * fmt. The wheel ships fmt 12 headers in its include folder, which comes before /usr/include
#     for every torch target and shadows Debian's fmt 9; Debian's compiled libfmt does not link
#     against fmt 12 declarations, so every target uses fmt::fmt-header-only. fmt's versioned
#     inline namespaces keep the two versions apart, and the interfaces between torch and
#     torch-free files use standard types only (log::write takes a std::string_view).
# Torch-free targets never call these functions, so a torch include there fails to compile.

# The compile-side usage requirements of torch (include folders, definitions, options), without
# its link line.
add_library(ra_torch_headers INTERFACE)
target_include_directories(ra_torch_headers SYSTEM INTERFACE $<TARGET_PROPERTY:torch,INTERFACE_INCLUDE_DIRECTORIES>)
target_compile_definitions(ra_torch_headers INTERFACE $<TARGET_PROPERTY:torch,INTERFACE_COMPILE_DEFINITIONS>)
target_compile_options(ra_torch_headers INTERFACE $<TARGET_PROPERTY:torch,INTERFACE_COMPILE_OPTIONS>)
# The wheel's ATen parallelises with OpenMP, and at::parallel_for is an inline `#pragma omp
# parallel` compiled into whichever file calls it: without -fopenmp it runs on one thread. So torch
# files compile with it (the precompiled header too: _OPENMP must match), and their users link the
# libgomp.so.1 that libtorch_cpu loads anyway (the wheel's copy, found through the RPATH), so the
# process has one OpenMP runtime whose threads the digest shares with the model's ops.
target_compile_options(ra_torch_headers INTERFACE -fopenmp)
# -fPIC, not the compiler's default -fPIE: position-independent executable code reads another
# library's data (a vtable such as torch::optim::Adam's, c10::UndefinedTensorImpl::_singleton) from
# a copy the executable holds (a copy relocation), sized as the headers it was built with said.
# Started with another torch's libraries, whose sizes differ, the dynamic loader then prints its own
# "Symbol ... has different size" lines before the worker can say which torch it found (issue 40).
# -fPIC reads that data through the GOT, so the worker's own one-line check is all a user sees
# (tests/torch/test_torch_mismatch.py counts the copy relocations).
target_compile_options(ra_torch_headers INTERFACE -fPIC)


# The shared precompiled header. The first torch library defined, the probe catalogue (probes/),
# builds it (REUSE_FROM names a target that exists already), and every other torch target reuses
# it: a target of its own would compile an empty file against it, 4 s of a fresh build (loading
# the header is most of a small torch file's time).
set(RA_TORCH_PCH_HEADERS <torch/script.h> <ATen/ATen.h> <ATen/record_function.h>
    <torch/csrc/jit/serialization/pickle.h>)
set(RA_TORCH_PCH_HOST ra_probes)

# ra_torch_target(TARGET): TARGET compiles against LibTorch's headers with the shared precompiled
# header and links its CPU half. Only the link passes on to TARGET's users: a torch-free file that
# links a torch library (the worker's command line) does not see LibTorch's headers, so it keeps
# the cheaper torch-free precompiled header and Debian's fmt.
function(ra_torch_target target)
  target_link_libraries(${target} PRIVATE ra_torch_headers PUBLIC $<LINK_ONLY:torch_cpu> $<LINK_ONLY:c10>)
  target_link_options(${target} PUBLIC -fopenmp)
  if(target STREQUAL RA_TORCH_PCH_HOST)
    target_precompile_headers(${target} PRIVATE ${RA_TORCH_PCH_HEADERS})
  else()
    target_precompile_headers(${target} REUSE_FROM ${RA_TORCH_PCH_HOST})
  endif()
  set_property(TARGET ${target} PROPERTY INSTALL_RPATH "${RA_TORCH_LIBRARY_DIR}")  # cmake/Rpath.cmake
endfunction()
