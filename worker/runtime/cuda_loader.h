// SPDX-License-Identifier: Apache-2.0
// LibTorch's CUDA half, loaded on demand. The worker links libtorch_cpu and libc10 only, so a CPU
// trial never maps cuBLAS, cuDNN, NCCL and the rest (about half a second of start-up, and GPU
// memory on a machine that has one). Work that asks for a CUDA device, and the fingerprint, load
// libtorch_cuda.so with dlopen first: its static constructors register torch's CUDA hooks. That
// must happen before anything asks torch whether CUDA exists, because at::detail::getCUDAHooks()
// keeps the first answer it gives, so the worker decides in main(), before parsing.
#pragma once

#include <string>

namespace ra {

// Loads libtorch_cuda.so from the folder of the libtorch_cpu.so in use (RTLD_GLOBAL), once.
// Returns "" on success, or why it could not (a CPU-only torch, missing CUDA libraries); a worker
// without the CUDA half then behaves as on a machine without a GPU.
std::string load_cuda();

// Whether load_cuda() succeeded in this process.
bool cuda_loaded();

// REPRO_AUDIT_LOAD_CUDA=1: load the CUDA half whatever the command (the worker and both
// benchmarks read it alike); =0 never loads it in the benchmarks (a CPU-only comparison).
bool cuda_forced_by_environment();
bool cuda_refused_by_environment();

// One line for a program's first output: "CUDA half: loaded (libtorch_cuda.so)" or why not.
std::string cuda_loader_line();

}  // namespace ra
