// SPDX-License-Identifier: Apache-2.0
// Switches applied in process and read back (worker/runtime/switches.h). The TF32 flags live in
// torch's CPU library too, so their bookkeeping is checked here without a GPU.
#include "tests/unit/switch_values.h"
#include "worker/runtime/switches.h"

#include <ATen/Context.h>

#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace {

std::string effective(const std::string& key, const std::string& value) {
  ra::Config c;
  c.values[key] = value;
  for (const auto& s : ra::read_switches(c))
    if (s.key == key) return s.effective;
  return "missing";
}

ra::Config config(const std::string& key, const std::string& value) {
  ra::Config c;
  c.values[key] = value;
  return c;
}

}  // namespace

TEST_CASE("apply_switches: TF32 keeps torch's legacy and new flags in agreement") {
  auto& ctx = at::globalContext();
  for (const char* value : {"on", "off", "on"}) {
    const bool on = std::string(value) == "on";
    ra::apply_switches(config("tf32.cublas", value));
    ra::apply_switches(config("tf32.cudnn", value));
    // allowTF32CuBLAS() throws when the legacy matmul precision and the new per-op one disagree,
    // which is what TunableOp hit on every float32 GEMM.
    CHECK(ctx.allowTF32CuBLAS() == on);
    CHECK((ctx.float32MatmulPrecision() != at::Float32MatmulPrecision::HIGHEST) == on);
    CHECK(ctx.allowTF32CuDNN() == on);
    CHECK(effective("tf32.cublas", value) == value);
    CHECK(effective("tf32.cudnn", value) == value);
  }
}

TEST_CASE("read_switches: an environment override of TF32 shows as overridden") {
  ra::apply_switches(config("tf32.cublas", "on"));
  ra::apply_switches(config("tf32.cudnn", "on"));
  setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
  CHECK(effective("tf32.cublas", "on") == "off (overridden by NVIDIA_TF32_OVERRIDE=0)");
  CHECK(effective("tf32.cudnn", "on") == "off (overridden by NVIDIA_TF32_OVERRIDE=0)");
  const auto s = ra::read_switches(config("tf32.cublas", "on"));
  CHECK(ra::switch_mismatches(s).find("switch 'tf32.cublas' asked for on but off (overridden") != std::string::npos);
  unsetenv("NVIDIA_TF32_OVERRIDE");
  ra::apply_switches(config("tf32.cublas", "off"));
  setenv("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "1", 1);
  CHECK(effective("tf32.cublas", "off") == "on (overridden by TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1)");
  unsetenv("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE");
  CHECK(effective("tf32.cublas", "off") == "off");
  // Leave the process as PyTorch starts: cuDNN TF32 on, cuBLAS TF32 off.
  ra::apply_switches(config("tf32.cudnn", "on"));
}

TEST_CASE("apply_switches: the attention backends and cuBLAS reduced-precision reductions are set and read back") {
  // Torch's CPU library keeps these flags, so they are checked here without a GPU.
  auto& ctx = at::globalContext();
  for (const char* value : {"off", "on"}) {
    const bool on = std::string(value) == "on";
    for (const char* key :
         {"sdpa.cudnn", "sdpa.flash", "sdpa.mem_efficient", "cublas.fp16_reduction", "cublas.bf16_reduction"}) {
      ra::apply_switches(config(key, value));
      CHECK_MESSAGE(effective(key, value) == value, key);
    }
    CHECK(ctx.userEnabledCuDNNSDP() == on);
    CHECK(ctx.userEnabledFlashSDP() == on);
    CHECK(ctx.userEnabledMemEfficientSDP() == on);
    CHECK((ctx.allowFP16ReductionCuBLAS() == at::CuBLASReductionOption::AllowReducedPrecisionWithSplitK) == on);
    CHECK((ctx.allowBF16ReductionCuBLAS() == at::CuBLASReductionOption::AllowReducedPrecisionWithSplitK) == on);
  }
  // Split-K refused as well (Python's `= (False, False)`) is not plain "off": read back as it is.
  ctx.setAllowFP16ReductionCuBLAS(false, false);
  CHECK(effective("cublas.fp16_reduction", "off") == "off (split-K off too)");
  ctx.setAllowFP16ReductionCuBLAS(true, true);
  // Every switch a LibTorch child reports is in the list read back.
  size_t listed = 0;
  for (const auto& s : ra::read_switches(ra::Config{}))
    listed += s.key == "sdpa.cudnn" || s.key == "sdpa.flash" || s.key == "sdpa.mem_efficient" ||
              s.key == "cublas.fp16_reduction" || s.key == "cublas.bf16_reduction";
  CHECK(listed == 5);
}

TEST_CASE("apply_switches: every in-process switch of the table is set to each of its values and read back") {
  // What a LibTorch trial starts with, put back at the end.
  std::map<std::string, std::string> start;
  for (const auto& s : ra::read_switches(ra::Config{})) start[s.key] = s.effective;
  size_t checked = 0;
  for (const auto& s : ra::switch_table()) {
    if (s.applied != ra::Applied::Context) continue;
    const std::vector<std::string> values = ra::test::switch_values(s);
    for (const auto& value : values) {
      CAPTURE(s.key);
      CAPTURE(value);
      ra::apply_switches(config(s.key, value));
      CHECK(effective(s.key, value) == value);
    }
    ra::apply_switches(config(s.key, start.at(s.key)));
    CHECK(effective(s.key, "") == start.at(s.key));
    ++checked;
  }
  CHECK(checked == 13);
  // Every switch a LibTorch trial reports has a value read back.
  for (const auto& s : ra::read_switches(ra::Config{})) {
    CAPTURE(s.key);
    CHECK(s.effective != "?");
  }
}
