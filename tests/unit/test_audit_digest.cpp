// SPDX-License-Identifier: Apache-2.0
#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "worker/digest/digest.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

#include <unistd.h>

namespace {

at::Tensor randn(std::vector<int64_t> sizes, uint64_t seed = 7) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randn(sizes, gen);
}

at::Tensor float_with_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return at::full({1}, f);
}

}  // namespace

TEST_CASE("digest: a permutation changes it") {
  const at::Tensor x = at::arange(1000, at::kFloat);
  const at::Tensor swapped = x.clone();
  swapped[3] = x[500];
  swapped[500] = x[3];
  CHECK(ra::digest(x) != ra::digest(swapped));
  CHECK(ra::digest(x) != ra::digest(x.flip(0)));
}

TEST_CASE("digest: two changes that cancel in a sum or an XOR still change it") {
  const at::Tensor x = at::zeros({64}, at::kInt);
  at::Tensor y = x.clone();
  y[1] = 5;
  y[2] = -5;  // sum unchanged
  at::Tensor z = x.clone();
  z[1] = 6;
  z[2] = 6;  // XOR unchanged
  CHECK(ra::digest(x) != ra::digest(y));
  CHECK(ra::digest(x) != ra::digest(z));
}

TEST_CASE("digest: +0.0 and -0.0, and NaN payloads, are told apart") {
  CHECK(ra::digest(at::full({1}, 0.0f)) != ra::digest(at::full({1}, -0.0f)));
  const at::Tensor nan_a = float_with_bits(0x7fc00000u), nan_b = float_with_bits(0x7fc00001u);
  CHECK(std::isnan(nan_a.item<float>()));
  CHECK(std::isnan(nan_b.item<float>()));
  CHECK(ra::digest(nan_a) != ra::digest(nan_b));
}

TEST_CASE("digest: a non-contiguous view equals its contiguous copy") {
  const at::Tensor x = randn({33, 47});
  const at::Tensor t = x.t();
  REQUIRE(!t.is_contiguous());
  CHECK(ra::digest(t) == ra::digest(t.contiguous()));
  const at::Tensor strided = x.slice(1, 0, 47, 3);
  CHECK(ra::digest(strided) == ra::digest(strided.contiguous()));
  const at::Tensor expanded = at::ones({1, 5}).expand({4, 5});
  CHECK(ra::digest(expanded) == ra::digest(expanded.contiguous()));
}

TEST_CASE("digest: dtype and shape are part of it") {
  const at::Tensor x = at::arange(12, at::kFloat);
  CHECK(ra::digest(x) != ra::digest(x.reshape({3, 4})));
  CHECK(ra::digest(x.reshape({3, 4})) != ra::digest(x.reshape({4, 3})));
  CHECK(ra::digest(at::zeros({4}, at::kInt)) != ra::digest(at::zeros({4}, at::kFloat)));
}

TEST_CASE("digest: every dtype, and the vectorised kernel agrees with the generic ATen path") {
  const at::Tensor base = randn({257, 31});
  const std::vector<at::ScalarType> types = {at::kBFloat16, at::kHalf, at::kFloat,       at::kDouble,
                                             at::kChar,     at::kByte, at::kShort,       at::kInt,
                                             at::kLong,     at::kBool, at::kComplexFloat};
  std::set<std::string> seen;
  for (const auto type : types) {
    CAPTURE(ra::dtype_name(type));
    at::Tensor t = type == at::kBool                 ? base.gt(0)
                   : at::isIntegralType(type, false) ? (base * 50).to(type)
                                                     : base.to(type);
    const std::string d = ra::digest(t);
    CHECK(d.size() == 32);
    CHECK(d == ra::digest(t.clone()));
    CHECK(d == ra::digest_generic(t));
    // One flipped element changes the digest in every dtype.
    at::Tensor u = t.clone();
    u.view({-1})[100] = type == at::kBool ? at::scalar_tensor(!t.view({-1})[100].item<bool>())
                                          : t.view({-1})[100] + (type == at::kComplexFloat ? 1 : 1);
    CHECK(ra::digest(u) != d);
    seen.insert(d);
  }
  CHECK(seen.size() == types.size());
}

TEST_CASE("digest: independent of chunking and thread count") {
  // Sizes around the kernel's 65536-word chunk, and a few million words.
  for (int64_t n : {0L, 1L, 65535L, 65536L, 65537L, 200001L, 3000000L}) {
    CAPTURE(n);
    const at::Tensor x = randn({n});
    const int threads = at::get_num_threads();
    at::set_num_threads(1);
    const std::string one = ra::digest(x);
    at::set_num_threads(std::max(2, threads));
    const std::string many = ra::digest(x);
    at::set_num_threads(threads);
    CHECK(one == many);
    CHECK(one == ra::digest_generic(x));
  }
}

TEST_CASE("dtype_name") {
  CHECK(ra::dtype_name(at::kFloat) == "float32");
  CHECK(ra::dtype_name(at::kBFloat16) == "bfloat16");
  CHECK(ra::dtype_name(at::kBool) == "bool");
}

TEST_CASE("file_digest: a file's bytes as a uint8 tensor, streamed across chunks; bytes_digest likewise") {
  // 2.5 MiB: more than one of file_digest's 1 MiB chunks, so the global word index must carry on.
  const at::Tensor bytes = at::randint(0, 256, {(5 << 20) / 2}, at::TensorOptions().dtype(at::kByte));
  char name[] = "/tmp/ra-digest-XXXXXX";
  const int fd = ::mkstemp(name);
  REQUIRE(fd >= 0);
  ::close(fd);
  std::ofstream(name, std::ios::binary)
      .write(static_cast<const char*>(bytes.data_ptr()), static_cast<std::streamsize>(bytes.numel()));
  const std::string whole = ra::digest(bytes);
  CHECK(ra::file_digest(name, "model") == whole);
  CHECK(ra::digest_kernel::bytes_digest(bytes.data_ptr(), static_cast<size_t>(bytes.numel())) == whole);
  // One byte more or one byte changed is another digest.
  std::ofstream(name, std::ios::binary | std::ios::app).put('\0');
  CHECK(ra::file_digest(name, "model") != whole);
  std::remove(name);
  CHECK_THROWS_AS(ra::file_digest(name, "model"), ra::InputError);
  CHECK(ra::digest_kernel::bytes_digest("ab", 2) != ra::digest_kernel::bytes_digest("ba", 2));
}

TEST_CASE("digest: an expanded view is read in pieces, never whole, and equals its contiguous copy") {
  // 3000 x 4000 floats of 4 stored values: more than one 64 MiB piece would be with kPieceBytes
  // smaller, so pieces are checked directly below too.
  const at::Tensor base = at::arange(4, at::kFloat);
  const at::Tensor view = base.view({1, 4, 1}).expand({3000, 4, 1000}).permute({0, 2, 1});
  CHECK(ra::digest(view) == ra::digest(view.contiguous()));
  CHECK(ra::digest(base.expand({5, 4}).t()) == ra::digest(base.expand({5, 4}).t().contiguous()));

  // for_each_piece: consecutive, flat, contiguous pieces of at most max_elems (or one innermost
  // run), in logical order, for several tensors at once.
  const at::Tensor a = at::arange(60, at::kFloat).view({3, 4, 5}).transpose(0, 2);  // 5 x 4 x 3, strided
  const at::Tensor b = a.contiguous();
  for (int64_t max : {1, 7, 12, 13, 59, 60, 1000}) {
    std::vector<float> seen;
    int64_t next = 0;
    ra::for_each_piece({a, b}, max, [&](const std::vector<at::Tensor>& p, int64_t first) {
      CHECK(first == next);
      CHECK(p[0].is_contiguous());
      CHECK(p[0].dim() == 1);
      CHECK(p[0].numel() <= std::max<int64_t>(max, 3));
      CHECK(at::equal(p[0], p[1]));
      for (int64_t i = 0; i < p[0].numel(); ++i) seen.push_back(p[0][i].item<float>());
      next = first + p[0].numel();
    });
    CHECK(next == 60);
    CHECK(at::equal(at::tensor(seen), b.reshape({-1})));
  }
}

TEST_CASE("digest_kernel: words32, words16 and words8 equal the sum of mix_word, at any start and length") {
  // The fast loops (eight words at a time, keys stepped instead of multiplied, the u terms summed
  // once) against the definition, across their tail lengths and where the 32-bit word index
  // wraps: a start past 4 Gi words stands for the chunks of a tensor over 4 Gi words.
  namespace dk = ra::digest_kernel;
  std::vector<uint32_t> w32(300);
  std::vector<uint16_t> w16(300);
  std::vector<uint8_t> w8(300);
  for (size_t i = 0; i < w32.size(); ++i) {
    w32[i] = static_cast<uint32_t>(i * 2654435761u) ^ static_cast<uint32_t>(i << 29);
    w16[i] = static_cast<uint16_t>(w32[i] >> 7);
    w8[i] = static_cast<uint8_t>(w32[i] >> 13);
  }
  auto reference = [](const auto* w, size_t n, uint64_t first) {
    dk::Lanes l;
    for (size_t i = 0; i < n; ++i) l += dk::mix_word(first + i, w[i]);
    return l;
  };
  auto same = [](const dk::Lanes& x, const dk::Lanes& y) { return x.a == y.a && x.b == y.b; };
  for (uint64_t first : {uint64_t{0}, uint64_t{5}, uint64_t{0xfffffffa}, uint64_t{0x1fffffff0}}) {
    for (size_t n = 0; n <= w32.size(); ++n) {
      CHECK(same(dk::words32(w32.data(), n, first), reference(w32.data(), n, first)));
      CHECK(same(dk::words16(w16.data(), n, first), reference(w16.data(), n, first)));
      CHECK(same(dk::words8(w8.data(), n, first), reference(w8.data(), n, first)));
    }
  }
  // Every instruction set this CPU has, not only the one the dispatch picks.
  int tested = 0;
  for (const dk::Isa isa : {dk::Isa::Scalar, dk::Isa::Avx2, dk::Isa::Avx512}) {
    if (!dk::words32_on(isa, w32.data(), 0, 0)) continue;
    ++tested;
    for (uint64_t first : {uint64_t{3}, uint64_t{0xfffffff0}})
      for (size_t n = 0; n <= 70; ++n) {
        CHECK(same(*dk::words32_on(isa, w32.data() + 1, n, first), reference(w32.data() + 1, n, first)));
        CHECK(same(*dk::words16_on(isa, w16.data() + 1, n, first), reference(w16.data() + 1, n, first)));
        CHECK(same(*dk::words8_on(isa, w8.data() + 1, n, first), reference(w8.data() + 1, n, first)));
      }
  }
  CHECK(tested >= 1);
  MESSAGE("instruction sets tested here: ", tested, " of 3");
}

namespace {

// The lanes the fused CUDA kernel would sum for flat contiguous `t` launched with `step` threads:
// every thread's share of digest_arith.h's split, computed here on the CPU.
ra::digest_kernel::Lanes kernel_split_lanes(const at::Tensor& t, uint64_t step) {
  namespace dk = ra::digest_kernel;
  const int elem = static_cast<int>(t.element_size());
  const int word = dk::word_bytes_for_element(elem);
  const uint64_t n = static_cast<uint64_t>(t.numel()) * static_cast<uint64_t>(elem / word);
  const void* data = t.const_data_ptr();
  const uint64_t head = dk::head_words(reinterpret_cast<uintptr_t>(data), static_cast<uint64_t>(word), n);
  dk::Lanes total;
  for (uint64_t tid = 0; tid < step; ++tid) {
    if (word == 4)
      total += dk::thread_lanes(static_cast<const uint32_t*>(data), n, head, tid, step, 0);
    else if (word == 2)
      total += dk::thread_lanes(static_cast<const uint16_t*>(data), n, head, tid, step, 0);
    else
      total += dk::thread_lanes(static_cast<const uint8_t*>(data), n, head, tid, step, 0);
  }
  return total;
}

}  // namespace

TEST_CASE("digest_arith: the CUDA kernel's split of a buffer among threads adds up to the digest, for every dtype") {
  // The kernel's threads take strided words of an unaligned head, 16-byte vectors of the body and
  // a tail; here every share is summed on the CPU for grids of several sizes and buffers starting
  // at every offset of a vector, and must give digest()'s bits (and digest_generic()'s).
  namespace dk = ra::digest_kernel;
  const std::vector<at::ScalarType> dtypes = {at::kFloat,        at::kDouble,        at::kHalf, at::kBFloat16,
                                              at::kComplexFloat, at::kComplexDouble, at::kByte, at::kChar,
                                              at::kShort,        at::kInt,           at::kLong, at::kBool};
  const at::Tensor bits = at::randint(0, 256, {16 * (65536 + 3 + 16)}, at::kByte);
  for (const at::ScalarType type : dtypes) {
    const int64_t elem = static_cast<int64_t>(c10::elementSize(type));
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{17}, int64_t{1000}, int64_t{65536 + 3}}) {
      for (int64_t skip : {int64_t{0}, int64_t{1}, int64_t{3}}) {  // elements: moves the start off 16 bytes
        const int64_t bytes = n * elem;
        at::Tensor t = bits.narrow(0, 0, bytes + 16 * elem).view(type).narrow(0, skip, n);
        if (type == at::kBool) t = t.view(at::kByte).bitwise_and(1).view(at::kBool);
        INFO(ra::dtype_name(type), " n=", n, " skip=", skip);
        const std::string want = ra::digest(t);
        CHECK(ra::digest_generic(t) == want);
        for (uint64_t step : {uint64_t{1}, uint64_t{3}, uint64_t{32}, uint64_t{1280}}) {
          CHECK(dk::finish(kernel_split_lanes(t, step), ra::dtype_name(type), {n}) == want);
        }
      }
    }
  }
}

TEST_CASE("digest_arith: a thread's share keys words by their global index past 4 Gi words") {
  // A tensor over 4 Gi words is not allocated here: its chunks start past 2^32, which `first`
  // stands for. The split must agree with the CPU kernel and the definition there, and the keys
  // use the low 32 bits of the index (so a start 2^32 further gives the same lanes).
  namespace dk = ra::digest_kernel;
  std::vector<uint32_t> w(1000);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<uint32_t>(i * 0x9E3779B1u + 12345u);
  for (uint64_t first : {uint64_t{0xffffff00}, uint64_t{0x100000000} - 3, uint64_t{0x2fffffff0}}) {
    dk::Lanes split;
    for (uint64_t tid = 0; tid < 7; ++tid) split += dk::thread_lanes(w.data() + 1, 999, 3, tid, 7, first);
    const dk::Lanes cpu = dk::words32(w.data() + 1, 999, first);
    const dk::Lanes wrapped = dk::words32(w.data() + 1, 999, first + 0x100000000);
    CHECK(split.a == cpu.a);
    CHECK(split.b == cpu.b);
    CHECK(wrapped.a == cpu.a);
    CHECK(wrapped.b == cpu.b);
  }
}

TEST_CASE("digest_arith: a batch's grid split among tensors adds up to each tensor's digest") {
  // The batched CUDA kernel (ra_digest_cuda_lanes_batch) gives each packed tensor a share of one
  // grid (plan_batch), each block finds its tensor (item_of_block), and each thread sums its share
  // (batch_thread_lanes). Here every block and thread of the grid runs on the CPU, for batches of
  // mixed dtypes, sizes and unaligned starts, under grids too small and large enough for the words.
  namespace dk = ra::digest_kernel;
  const at::Tensor bits = at::randint(0, 256, {16 * (70000 + 16)}, at::kByte);
  struct Case {
    at::ScalarType type;
    int64_t n, skip;
  };
  const std::vector<Case> cases = {{at::kFloat, 1000, 1}, {at::kHalf, 70000, 3},     {at::kByte, 1, 0},
                                   {at::kDouble, 17, 1},  {at::kBool, 5000, 5},      {at::kBFloat16, 300, 0},
                                   {at::kInt, 65536, 0},  {at::kComplexFloat, 9, 2}, {at::kChar, 255, 7},
                                   {at::kLong, 2, 1},     {at::kShort, 33, 1},       {at::kFloat, 1, 0}};
  std::vector<at::Tensor> tensors;
  for (const auto& c : cases) {
    const int64_t elem = static_cast<int64_t>(c10::elementSize(c.type));
    at::Tensor t = bits.narrow(0, 0, (c.n + 16) * elem).view(c.type).narrow(0, c.skip, c.n);
    if (c.type == at::kBool) t = t.view(at::kByte).bitwise_and(1).view(at::kBool);
    tensors.push_back(t);  // where it lies: a skip moves its start off 16 bytes
  }
  for (const uint64_t max_blocks : {uint64_t{1}, uint64_t{5}, uint64_t{40}, uint64_t{1056}, uint64_t{100000}}) {
    CAPTURE(max_blocks);
    dk::Batch b;
    std::vector<unsigned long long> out(2 * tensors.size(), 0);
    for (size_t i = 0; i < tensors.size(); ++i) {
      const int elem = static_cast<int>(tensors[i].element_size());
      const int word = dk::word_bytes_for_element(elem);
      dk::BatchItem& it = b.items[b.count++];
      it.data = tensors[i].const_data_ptr();
      it.words = static_cast<uint64_t>(tensors[i].numel()) * static_cast<uint64_t>(elem / word);
      it.out = out.data() + 2 * i;
      it.word_bytes = static_cast<uint32_t>(word);
    }
    dk::plan_batch(b, max_blocks);
    // Every item has blocks, in order and without gaps; a grid big enough gives each what it needs.
    uint32_t next = 0;
    uint64_t wanted = 0;
    for (uint32_t i = 0; i < b.count; ++i) {
      CHECK(b.items[i].first_block == next);
      CHECK(b.items[i].blocks >= 1);
      next += b.items[i].blocks;
      wanted += (b.items[i].words + dk::kBatchThreads - 1) / dk::kBatchThreads;
    }
    CHECK(b.blocks == next);
    CHECK(b.blocks <= max_blocks + b.count);  // at least one block each, else at most the grid
    if (wanted <= max_blocks) CHECK(b.blocks == wanted);
    for (uint32_t block = 0; block < b.blocks; ++block)
      for (uint32_t thread = 0; thread < dk::kBatchThreads; ++thread) {
        uint32_t item = 0;
        const dk::Lanes l = dk::batch_thread_lanes(b, block, thread, &item);
        CHECK_MESSAGE((block >= b.items[item].first_block && block < b.items[item].first_block + b.items[item].blocks),
                      "block ", block, " went to item ", item);
        b.items[item].out[0] += l.a;
        b.items[item].out[1] += l.b;
      }
    for (size_t i = 0; i < tensors.size(); ++i) {
      const dk::Lanes lanes{out[2 * i], out[2 * i + 1]};
      CHECK(dk::finish(lanes, ra::dtype_name(tensors[i].scalar_type()), tensors[i].sizes().vec()) ==
            ra::digest(tensors[i]));
    }
  }
}
