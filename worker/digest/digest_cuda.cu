// SPDX-License-Identifier: Apache-2.0
// The fused CUDA digest: the lanes of digest_arith.h computed in one pass over a tensor's bytes on
// its device, with no host copy and no temporaries. Built by nvcc into a small module
// (repro-audit-digest-cuda.so) beside the worker, which loads it with dlopen the first time it
// digests a CUDA tensor (worker/digest/digest.cpp), after libtorch_cuda.so is loaded: a CPU trial
// never maps it. Without the module, digest.cpp falls back to the same sums in ATen operations.
//
// Each thread sums mix_word over a grid-strided share of the words (16-byte loads where the buffer
// is aligned; the split is digest_arith.h's, tested on the CPU), a warp adds its threads' lanes
// with shuffles, and one atomic add per warp and lane lands in the 2-word result. Sums modulo 2^64 commute, so the order of the atomics does not
// change a bit of the result.
//
// A second entry point, ra_digest_cuda_lanes_batch, takes up to kBatchMax tensors in one launch
// (digest_arith.h's Batch, passed by value as the kernel's parameter): the tracer's path, where
// launches, not bytes, were the cost (issue 31: 1.77x on an H200). It adds into results that are
// zero already, so it needs no memset, and it reads the SM count once per device.
#include "audit/digest/digest_arith.h"

#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

namespace {

namespace dk = ra::digest_kernel;

constexpr int kThreads = 256;

// Each thread sums its share (digest_arith.h's thread_lanes), each warp adds its threads' lanes, and
// one thread per warp adds them to the result.
template <typename Word>
__global__ void lanes_kernel(const Word* w, uint64_t n, uint64_t head, uint64_t first, unsigned long long* out) {
  const uint64_t tid = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t step = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  dk::Lanes l = dk::thread_lanes(w, n, head, tid, step, first);
  for (int offset = warpSize / 2; offset > 0; offset /= 2) {
    l.a += __shfl_down_sync(0xffffffffu, l.a, offset);
    l.b += __shfl_down_sync(0xffffffffu, l.b, offset);
  }
  if ((threadIdx.x & (warpSize - 1)) == 0) {
    atomicAdd(out, static_cast<unsigned long long>(l.a));
    atomicAdd(out + 1, static_cast<unsigned long long>(l.b));
  }
}

template <typename Word>
cudaError_t launch(const void* data, uint64_t n_words, uint64_t first, unsigned long long* out, int blocks,
                   cudaStream_t stream) {
  const uint64_t head = dk::head_words(reinterpret_cast<uintptr_t>(data), sizeof(Word), n_words);
  lanes_kernel<Word><<<blocks, kThreads, 0, stream>>>(static_cast<const Word*>(data), n_words, head, first, out);
  return cudaGetLastError();
}

// Each block works on one item of the batch (digest_arith.h's batch_thread_lanes: the split is
// tested on the CPU); the reductions are the one-tensor kernel's. A block's threads share its item,
// so the warp reduction adds lanes of one tensor only.
__global__ void batch_kernel(const __grid_constant__ dk::Batch batch) {
  uint32_t item = 0;
  dk::Lanes l = dk::batch_thread_lanes(batch, blockIdx.x, threadIdx.x, &item);
  for (int offset = warpSize / 2; offset > 0; offset /= 2) {
    l.a += __shfl_down_sync(0xffffffffu, l.a, offset);
    l.b += __shfl_down_sync(0xffffffffu, l.b, offset);
  }
  if ((threadIdx.x & (warpSize - 1)) == 0) {
    unsigned long long* out = batch.items[item].out;
    atomicAdd(out, static_cast<unsigned long long>(l.a));
    atomicAdd(out + 1, static_cast<unsigned long long>(l.b));
  }
}

// The SM count of `device`, asked once per device (0 and an error where it cannot be read).
constexpr int kMaxDevices = 64;
int sm_count(int device, cudaError_t* error) {
  static int counts[kMaxDevices] = {};
  *error = cudaSuccess;
  if (device < 0 || device >= kMaxDevices) return 0;
  int& n = counts[device];  // benign race: every writer stores the same value
  if (n > 0) return n;
  int sms = 0;
  if (const cudaError_t err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
      err != cudaSuccess) {
    (void)cudaGetLastError();
    *error = err;
    return 0;
  }
  n = sms;
  return n;
}

}  // namespace

// The module's first entry point, looked up with dlsym. Sets the two uint64 words at `out` (device
// memory of `device`) to the lanes of `n_words` words of `word_bytes` (1, 2 or 4) bytes at `data`
// (device memory, aligned to its word size), word 0 having global index `first`. Work is queued on
// the current stream of `device`; nothing waits. Returns nullptr, or why it could not queue it.
extern "C" __attribute__((visibility("default"))) const char* ra_digest_cuda_lanes(const void* data, uint64_t n_words,
                                                                                   int word_bytes, uint64_t first,
                                                                                   void* out, int device) {
  if (word_bytes != 1 && word_bytes != 2 && word_bytes != 4) return "word size must be 1, 2 or 4 bytes";
  if (reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(word_bytes) != 0) return "data is not word-aligned";
  int sms = 0;
  if (const cudaError_t err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
      err != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it, so torch's next check does not see it
    return cudaGetErrorString(err);
  }
  if (sms <= 0) return "the device reports no multiprocessors";
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
  auto* sums = static_cast<unsigned long long*>(out);
  cudaError_t err = cudaMemsetAsync(sums, 0, 2 * sizeof(unsigned long long), stream);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return cudaGetErrorString(err);
  }
  if (n_words == 0) return nullptr;
  // Enough resident blocks to fill every SM, no more than the words need.
  const uint64_t wanted = (n_words + kThreads - 1) / kThreads;
  const int blocks =
      static_cast<int>(wanted < static_cast<uint64_t>(sms) * 8 ? wanted : static_cast<uint64_t>(sms) * 8);
  switch (word_bytes) {
    case 4:
      err = launch<uint32_t>(data, n_words, first, sums, blocks, stream);
      break;
    case 2:
      err = launch<uint16_t>(data, n_words, first, sums, blocks, stream);
      break;
    default:
      err = launch<uint8_t>(data, n_words, first, sums, blocks, stream);
      break;
  }
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

// The batched entry point, looked up with dlsym: adds the lanes of each item of `batch` (a
// digest_arith.h Batch of 1 to kBatchMax items, its plan not yet made) to the item's 2-word result,
// which must be zero before (and is not zeroed here), in one launch on the current stream of
// `device`. Every item's data and result are device memory of `device`. Nothing waits. Returns
// nullptr, or why it could not queue the launch (then nothing was queued).
extern "C" __attribute__((visibility("default"))) const char* ra_digest_cuda_lanes_batch(void* batch_in, int device) {
  auto* batch = static_cast<dk::Batch*>(batch_in);
  if (batch->count == 0) return nullptr;
  if (batch->count > dk::kBatchMax) return "too many tensors for one batch";
  for (uint32_t i = 0; i < batch->count; ++i) {
    const dk::BatchItem& it = batch->items[i];
    if (it.word_bytes != 1 && it.word_bytes != 2 && it.word_bytes != 4) return "word size must be 1, 2 or 4 bytes";
    if (reinterpret_cast<uintptr_t>(it.data) % it.word_bytes != 0) return "data is not word-aligned";
    if (it.words == 0) return "an empty tensor in a batch";
  }
  cudaError_t err = cudaSuccess;
  const int sms = sm_count(device, &err);
  if (err != cudaSuccess) return cudaGetErrorString(err);
  if (sms <= 0) return "the device reports no multiprocessors";
  dk::plan_batch(*batch, static_cast<uint64_t>(sms) * 8);
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
  batch_kernel<<<batch->blocks, dk::kBatchThreads, 0, stream>>>(*batch);
  err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}
