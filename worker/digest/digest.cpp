// SPDX-License-Identifier: Apache-2.0
#include "worker/digest/digest.h"

#include "audit/digest/digest_kernel.h"

#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <ATen/TensorOperators.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include <dlfcn.h>

namespace ra {
namespace {

namespace dk = digest_kernel;

// A tensor made ready for digesting: conj/neg views resolved, dense, contiguous, flat.
at::Tensor prepare(const at::Tensor& t) {
  TORCH_CHECK(t.layout() == at::kStrided, "digest: only dense (strided) tensors are supported, got ", t.layout());
  TORCH_CHECK(!t.is_quantized(), "digest: quantized tensors are not supported");
  return t.resolve_conj().resolve_neg().contiguous().reshape({-1});
}

std::vector<int64_t> shape_of(const at::Tensor& t) { return t.sizes().vec(); }

// Elements per piece when a CPU digest reads a tensor in pieces: 64 MiB of copies at most.
constexpr int64_t kPieceBytes = int64_t{64} << 20;

void check_digestible(const at::Tensor& t) {
  TORCH_CHECK(t.layout() == at::kStrided, "digest: only dense (strided) tensors are supported, got ", t.layout());
  TORCH_CHECK(!t.is_quantized(), "digest: quantized tensors are not supported");
}

bool plain(const at::Tensor& t) { return t.is_contiguous() && !t.is_conj() && !t.is_neg(); }

void pieces_of(const std::vector<at::Tensor>& ts, int64_t first, int64_t max_elems, const PieceFn& fn) {
  const int64_t n = ts[0].numel();
  if (n == 0) return;
  const bool all_plain = std::all_of(ts.begin(), ts.end(), plain);
  std::vector<at::Tensor> flat(ts.size());
  if (all_plain || n <= max_elems) {
    for (size_t i = 0; i < ts.size(); ++i) flat[i] = prepare(ts[i]);
    for (int64_t lo = 0; lo < n; lo += max_elems) {
      std::vector<at::Tensor> piece(ts.size());
      for (size_t i = 0; i < ts.size(); ++i) piece[i] = flat[i].narrow(0, lo, std::min(max_elems, n - lo));
      fn(piece, first + lo);
    }
    return;
  }
  const int64_t rows = ts[0].size(0), inner = n / rows;
  if (inner > max_elems) {
    std::vector<at::Tensor> row(ts.size());
    for (int64_t r = 0; r < rows; ++r) {
      for (size_t i = 0; i < ts.size(); ++i) row[i] = ts[i].select(0, r);
      pieces_of(row, first + r * inner, max_elems, fn);
    }
    return;
  }
  const int64_t step = std::max<int64_t>(1, max_elems / inner);
  for (int64_t r = 0; r < rows; r += step) {
    for (size_t i = 0; i < ts.size(); ++i) flat[i] = prepare(ts[i].narrow(0, r, std::min(step, rows - r)));
    fn(flat, first + r * inner);
  }
}

dk::Lanes cpu_lanes(const at::Tensor& flat, uint64_t first_word) {
  const size_t elem = flat.element_size();
  const auto* bytes = static_cast<const uint8_t*>(flat.const_data_ptr());
  const int64_t words = static_cast<int64_t>(elem >= 4 ? flat.numel() * (elem / 4) : flat.numel());
  constexpr int64_t kGrain = 1 << 18;  // words per chunk: 1 MiB of 4-byte words
  // A fixed chunk grid, whatever the thread count; the lanes are sums, so order does not matter.
  const int64_t chunks = (words + kGrain - 1) / kGrain;
  std::vector<dk::Lanes> partial(static_cast<size_t>(chunks));
  const auto one = [&](int64_t c) {
    const int64_t lo = c * kGrain, n = std::min(kGrain, words - lo);
    const uint64_t at = first_word + static_cast<uint64_t>(lo);
    dk::Lanes l;
    if (elem >= 4)
      l = dk::words32(reinterpret_cast<const uint32_t*>(bytes) + lo, static_cast<size_t>(n), at);
    else if (elem == 2)
      l = dk::words16(reinterpret_cast<const uint16_t*>(bytes) + lo, static_cast<size_t>(n), at);
    else
      l = dk::words8(bytes + lo, static_cast<size_t>(n), at);
    partial[static_cast<size_t>(c)] = l;
  };
  // Over the intra-op threads (OpenMP: see cmake/TorchTargets.cmake); a tensor of one chunk stays
  // on the calling thread.
  at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) one(c);
  });
  dk::Lanes total;
  for (const auto& p : partial) total += p;
  return total;
}

// 32-bit words of a flat contiguous tensor as int64 values in [0, 2^32), any device.
at::Tensor words_as_int64(const at::Tensor& flat) {
  const auto elem = flat.element_size();
  constexpr int64_t kMask32 = 0xffffffffLL;
  if (elem >= 4) return flat.view(at::kInt).to(at::kLong).bitwise_and(kMask32);
  if (elem == 2) return flat.view(at::kShort).to(at::kLong).bitwise_and(0xffff);
  return flat.view(at::kByte).to(at::kLong);
}

at::Tensor low32(const at::Tensor& x) { return x.bitwise_and(0xffffffffLL); }

}  // namespace

at::ScalarType bits_type(int64_t element_size) {
  switch (element_size) {
    case 1:
      return at::kByte;
    case 2:
      return at::kShort;
    case 4:
      return at::kInt;
    default:
      return at::kLong;
  }
}

std::string dtype_name(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return "float32";
    case at::kDouble:
      return "float64";
    case at::kHalf:
      return "float16";
    case at::kBFloat16:
      return "bfloat16";
    case at::kComplexFloat:
      return "complex64";
    case at::kComplexDouble:
      return "complex128";
    case at::kByte:
      return "uint8";
    case at::kChar:
      return "int8";
    case at::kShort:
      return "int16";
    case at::kInt:
      return "int32";
    case at::kLong:
      return "int64";
    case at::kBool:
      return "bool";
    default: {
      std::string s = c10::toString(type);
      std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
      return s;
    }
  }
}

namespace {

// The lanes of a CPU tensor, read piece by piece where it is not contiguous.
dk::Lanes cpu_tensor_lanes(const at::Tensor& t) {
  check_digestible(t);
  if (plain(t)) return cpu_lanes(t.reshape({-1}), 0);
  const int64_t elem = static_cast<int64_t>(t.element_size());
  const uint64_t words_per_element = elem >= 4 ? static_cast<uint64_t>(elem / 4) : 1;
  dk::Lanes lanes;
  pieces_of({t}, 0, std::max<int64_t>(1, kPieceBytes / elem), [&](const std::vector<at::Tensor>& p, int64_t first) {
    lanes += cpu_lanes(p[0], static_cast<uint64_t>(first) * words_per_element);
  });
  return lanes;
}

}  // namespace

void for_each_piece(const std::vector<at::Tensor>& ts, int64_t max_elems, const PieceFn& fn) {
  for (const auto& t : ts) check_digestible(t);
  TORCH_INTERNAL_ASSERT(!ts.empty() && max_elems > 0);
  pieces_of(ts, 0, max_elems, fn);
}

namespace {

// The fused CUDA kernel's entry point (digest_cuda.cu) and where it came from, or null and why
// not. The module is the one beside the running executable, or REPRO_AUDIT_CUDA_DIGEST's path;
// "off" there keeps ATen's arithmetic. Looked up once, on the first CUDA digest, when
// libtorch_cuda.so and the CUDA runtime the module needs are loaded already.
using CudaLanesFn = const char* (*)(const void* data, uint64_t n_words, int word_bytes, uint64_t first, void* out,
                                    int device);
using CudaBatchFn = const char* (*)(void* batch, int device);
struct CudaKernel {
  CudaLanesFn fn = nullptr;
  CudaBatchFn batch = nullptr;
  std::string about;
};

const CudaKernel& cuda_kernel() {
  static const CudaKernel kernel = []() {
    CudaKernel k;
    std::string path;
    if (const char* env = std::getenv("REPRO_AUDIT_CUDA_DIGEST"); env != nullptr && *env != '\0') {
      if (std::string(env) == "off") {
        k.about = "ATen operations (REPRO_AUDIT_CUDA_DIGEST=off)";
        return k;
      }
      path = env;
    } else {
      std::error_code ec;
      path =
          (std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "repro-audit-digest-cuda.so").string();
    }
    void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (module == nullptr) {
      const char* why = dlerror();
      k.about = "ATen operations (no fused kernel: " + std::string(why ? why : path) + ")";
      return k;
    }
    k.fn = reinterpret_cast<CudaLanesFn>(dlsym(module, "ra_digest_cuda_lanes"));
    k.batch = reinterpret_cast<CudaBatchFn>(dlsym(module, "ra_digest_cuda_lanes_batch"));
    k.about = k.fn != nullptr ? "fused kernel " + path : "ATen operations (" + path + " has no entry point)";
    return k;
  }();
  return kernel;
}

std::atomic<bool> fused_disabled{false};
std::atomic<bool> batch_disabled{false};

// Queues the lanes of CUDA tensor `t` into `slot` (2 contiguous int64 on its device) with the fused
// kernel. False when the kernel cannot take it: another device, no module, an unaligned buffer.
bool fused_lanes_into(const at::Tensor& t, at::Tensor& slot) {
  if (!t.is_cuda() || slot.device() != t.device() || slot.scalar_type() != at::kLong || slot.numel() != 2 ||
      !slot.is_contiguous()) {
    return false;
  }
  const CudaLanesFn kernel = cuda_kernel().fn;
  if (kernel == nullptr || fused_disabled.load()) return false;
  const at::Tensor flat = prepare(t);  // checks what check_digestible checks
  const int elem = static_cast<int>(flat.element_size());
  const int word = dk::word_bytes_for_element(elem);
  if (reinterpret_cast<uintptr_t>(flat.const_data_ptr()) % static_cast<uintptr_t>(word) != 0) return false;
  const uint64_t words = static_cast<uint64_t>(flat.numel()) * static_cast<uint64_t>(elem / word);
  const char* error = kernel(flat.const_data_ptr(), words, word, 0, slot.mutable_data_ptr(), t.device().index());
  if (error == nullptr) return true;
  // A kernel that cannot run here (a GPU its architectures do not cover: "no kernel image is
  // available") costs speed, not the digest: ATen's arithmetic takes over for the process.
  if (!fused_disabled.exchange(true))
    std::fprintf(stderr, "repro-audit: warning: the fused CUDA digest cannot run on %s (%s); digesting with ATen\n",
                 t.device().str().c_str(), error);
  return false;
}

// Lanes from their sums as a 2-element int64 tensor on the host.
dk::Lanes lanes_of(const at::Tensor& sums) {
  const at::Tensor host = sums.cpu();
  dk::Lanes lanes;
  lanes.a = static_cast<uint64_t>(host[0].item<int64_t>());
  lanes.b = static_cast<uint64_t>(host[1].item<int64_t>());
  return lanes;
}

}  // namespace

std::string digest(const at::Tensor& t) {
  if (t.device().is_cpu()) return dk::finish(cpu_tensor_lanes(t), dtype_name(t.scalar_type()), shape_of(t));
  if (t.is_cuda()) {
    at::Tensor slot = at::empty({2}, t.options().dtype(at::kLong));
    if (fused_lanes_into(t, slot)) return dk::finish(lanes_of(slot), dtype_name(t.scalar_type()), shape_of(t));
  }
  return digest_generic(t);
}

namespace {

// The two lane sums of a flat contiguous tensor as a 2-element int64 tensor on its device; nothing
// waits for the device.
at::Tensor generic_lanes(const at::Tensor& flat) {
  const at::Tensor all = flat.numel() == 0 ? at::empty({0}, flat.options().dtype(at::kLong)) : words_as_int64(flat);
  const int64_t n = all.numel();
  constexpr int64_t kChunk = 1 << 22;  // bounds the temporaries: 4 Mi words at a time
  using dk::kK1, dk::kK2, dk::kK3, dk::kK4, dk::kP1, dk::kP2, dk::kP3, dk::kP4;
  at::Tensor sums = at::zeros({2}, all.options());
  for (int64_t lo = 0; lo < n; lo += kChunk) {
    const int64_t len = std::min(kChunk, n - lo);
    const at::Tensor u = all.narrow(0, lo, len);
    const at::Tensor j = at::arange(lo, lo + len, all.options());
    const at::Tensor ka = low32(j * static_cast<int64_t>(kP1)).bitwise_xor(static_cast<int64_t>(kK1));
    const at::Tensor kb = low32(j * static_cast<int64_t>(kP2)).bitwise_xor(static_cast<int64_t>(kK2));
    const at::Tensor kc = low32(j * static_cast<int64_t>(kP3)).bitwise_xor(static_cast<int64_t>(kK3));
    const at::Tensor kd = low32(j * static_cast<int64_t>(kP4)).bitwise_xor(static_cast<int64_t>(kK4));
    const at::Tensor r16 = low32(u * 65536).bitwise_or(u.floor_divide(65536));
    const at::Tensor r8 = low32(u * 256).bitwise_or(u.floor_divide(1 << 24));
    // Products of two values below 2^32 wrap modulo 2^64 in int64, as the CPU kernel's uint64 does.
    sums[0] += (u.bitwise_xor(ka) * r16.bitwise_xor(kb) + u * (int64_t{1} << 32)).sum();
    sums[1] += (u.bitwise_xor(kc) * r8.bitwise_xor(kd) + u).sum();
  }
  return sums;
}

}  // namespace

std::string digest_generic(const at::Tensor& t) {
  return dk::finish(lanes_of(generic_lanes(prepare(t))), dtype_name(t.scalar_type()), shape_of(t));
}

digest_kernel::Lanes digest_lanes_cpu(const at::Tensor& t) { return cpu_tensor_lanes(t); }

std::string cuda_digest_implementation() { return cuda_kernel().about; }

struct CudaLanesBatch::Pending {
  dk::Batch batch;
  std::vector<at::Tensor> flats;  // what the packed items read: alive until the launch is queued
  std::vector<int64_t> rows;
  std::vector<int64_t> failed;  // rows no path could digest, until flush() returns them
};

CudaLanesBatch::CudaLanesBatch(at::Tensor slots) : slots_(std::move(slots)), pending_(std::make_unique<Pending>()) {
  TORCH_CHECK(slots_.is_cuda() && slots_.scalar_type() == at::kLong && slots_.dim() == 2 && slots_.size(1) == 2 &&
                  slots_.is_contiguous(),
              "CudaLanesBatch: slots must be a contiguous [N, 2] int64 CUDA tensor");
}

CudaLanesBatch::~CudaLanesBatch() {
  try {
    (void)flush();
  } catch (...) {  // a destructor must not throw
  }
}

bool CudaLanesBatch::available() { return cuda_kernel().batch != nullptr && !batch_disabled.load(); }

void CudaLanesBatch::add(const at::Tensor& t, int64_t row) {
  TORCH_CHECK(row >= 0 && row < slots_.size(0), "CudaLanesBatch: row ", row, " out of range");
  check_digestible(t);
  if (!t.is_cuda() || t.device() != slots_.device() || !available()) {
    at::Tensor slot = slots_.select(0, row);
    digest_lanes_into(t, slot);
    return;
  }
  if (t.numel() == 0) return;  // lanes of nothing: the row's zeros
  at::Tensor flat = plain(t) ? t : prepare(t);
  const int elem = static_cast<int>(flat.element_size());
  const int word = dk::word_bytes_for_element(elem);
  const void* data = flat.const_data_ptr();
  if (reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(word) != 0) {
    at::Tensor slot = slots_.select(0, row);
    digest_lanes_into(t, slot);
    return;
  }
  Pending& p = *pending_;
  dk::BatchItem& it = p.batch.items[p.batch.count++];
  it.data = data;
  it.words = static_cast<uint64_t>(flat.numel()) * static_cast<uint64_t>(elem / word);
  it.out = reinterpret_cast<unsigned long long*>(slots_.mutable_data_ptr<int64_t>() + 2 * row);
  it.word_bytes = static_cast<uint32_t>(word);
  p.flats.push_back(std::move(flat));
  p.rows.push_back(row);
  if (p.batch.count == dk::kBatchMax) launch();
}

std::vector<int64_t> CudaLanesBatch::flush() {
  launch();
  return std::exchange(pending_->failed, {});
}

void CudaLanesBatch::launch() {
  Pending& p = *pending_;
  std::vector<int64_t>& failed = p.failed;
  if (p.batch.count == 0) return;
  const char* error = available() ? cuda_kernel().batch(&p.batch, slots_.device().index()) : "disabled";
  if (error != nullptr) {
    // Nothing was queued: the rows are still zero, and the one-tensor path fills them.
    if (!batch_disabled.exchange(true))
      std::fprintf(
          stderr,
          "repro-audit: warning: the batched CUDA digest cannot run on %s (%s); digesting one tensor at a time\n",
          slots_.device().str().c_str(), error);
    for (size_t i = 0; i < p.flats.size(); ++i) {
      try {
        at::Tensor slot = slots_.select(0, p.rows[i]);
        digest_lanes_into(p.flats[i], slot);
      } catch (const std::exception&) {
        failed.push_back(p.rows[i]);
      }
    }
  }
  p.batch.count = 0;
  p.flats.clear();
  p.rows.clear();
}

void digest_lanes_into(const at::Tensor& t, at::Tensor& slot) {
  if (fused_lanes_into(t, slot)) return;
  slot.copy_(generic_lanes(prepare(t)), /*non_blocking=*/true);
}

}  // namespace ra
