// SPDX-License-Identifier: Apache-2.0
#include "audit/common/errors.h"
#include "audit/trial/config.h"
#include "audit/trial/trial_spec.h"
#include "tests/unit/switch_values.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

TEST_CASE("parse_config: presets") {
  CHECK(ra::parse_config("default", 4).values.empty());
  const auto det = ra::parse_config("det", 4);
  CHECK(det.values.at("deterministic") == "on");
  CHECK(det.values.at("cublas_workspace") == ":4096:8");
  const auto strict = ra::parse_config("strict", 4);
  CHECK(strict.values.at("cudnn.enabled") == "off");
  CHECK(strict.values.at("tf32.cublas") == "off");
  CHECK(ra::parse_config("threads-N", 8).values.at("threads") == "8");
  CHECK(ra::parse_config("threads-N", 1).values.at("threads") == "2");  // always differs from threads-1
  for (const auto& name : ra::preset_names()) CHECK_NOTHROW(ra::parse_config(name, 2));
}

TEST_CASE("parse_config: key=value lists, from a preset or not") {
  const auto c = ra::parse_config("det+threads=1+tf32.cudnn=false", 4);
  CHECK(c.name == "det+threads=1+tf32.cudnn=false");
  CHECK(c.values.at("deterministic") == "on");
  CHECK(c.values.at("threads") == "1");
  CHECK(c.values.at("tf32.cudnn") == "off");
  CHECK(ra::parse_config("deterministic=warn", 4).values.at("deterministic") == "warn");
}

TEST_CASE("parse_config: bad names and values are usage errors that list the valid ones") {
  try {
    ra::parse_config("detx", 4);
    FAIL("no error");
  } catch (const ra::UsageError& e) {
    CHECK(std::string(e.what()).find("unknown configuration 'detx'") != std::string::npos);
    CHECK(std::string(e.what()).find("cudnn-det") != std::string::npos);
  }
  CHECK_THROWS_AS(ra::parse_config("nosuch=1", 4), ra::UsageError);
  CHECK_THROWS_AS(ra::parse_config("threads=0", 4), ra::UsageError);
  CHECK_THROWS_AS(ra::parse_config("deterministic=maybe", 4), ra::UsageError);
  CHECK_THROWS_AS(ra::parse_config("threads=1+det", 4), ra::UsageError);
  CHECK_THROWS_AS(ra::parse_configs({"default,default"}, 4), ra::UsageError);
}

TEST_CASE("parse_config: a key set twice with two values is a usage error; a preset's value may be overridden") {
  try {
    ra::parse_config("inductor.deterministic=on+inductor.deterministic=off", 4);
    FAIL("no error");
  } catch (const ra::UsageError& e) {
    CHECK(std::string(e.what()) ==
          "in configuration 'inductor.deterministic=on+inductor.deterministic=off': switch 'inductor.deterministic' "
          "is given twice, as on and as off: give it once");
  }
  CHECK_THROWS_AS(ra::parse_config("det+threads=1+threads=2", 4), ra::UsageError);
  CHECK(ra::parse_config("threads=1+threads=1", 4).values.at("threads") == "1");  // the same value twice: one value
  CHECK(ra::parse_config("det+deterministic=warn", 4).values.at("deterministic") == "warn");
}

TEST_CASE("switch_table: each row's fix values are values of its switch, tried where the switch matters") {
  size_t run = 0, invariance = 0;
  for (const auto& s : ra::switch_table()) {
    for (const ra::FixToggle* t : {&s.run_fix, &s.invariance_fix}) {
      if (t->value == nullptr) continue;
      CAPTURE(s.key);
      CHECK_NOTHROW(ra::parse_config(s.key + "=" + t->value, 8));
      CHECK((t->cpu || t->cuda));
      if (s.affects == ra::Affects::Cuda) CHECK_FALSE(t->cpu);  // never tried where it changes nothing
    }
    run += s.run_fix.value != nullptr, invariance += s.invariance_fix.value != nullptr;
  }
  CHECK(run == 22);        // every switch but compile and the fp16/bf16 reductions
  CHECK(invariance == 8);  // what changes the kernel a batch size gets
}

TEST_CASE("config_environment") {
  const auto env = ra::config_environment(ra::parse_config("det+threads=3+mkl_cbwr=COMPATIBLE", 4));
  CHECK(env.at("CUBLAS_WORKSPACE_CONFIG").value() == ":4096:8");
  CHECK(env.at("OMP_NUM_THREADS").value() == "3");
  CHECK(env.at("MKL_CBWR").value() == "COMPATIBLE");
  CHECK(
      !ra::config_environment(ra::parse_config("cublas_workspace=unset", 4)).at("CUBLAS_WORKSPACE_CONFIG").has_value());
}

TEST_CASE("parse_shape") {
  const auto s = ra::parse_shape("8x3x224x224");
  CHECK(s.sizes == std::vector<int64_t>{8, 3, 224, 224});
  CHECK(s.dtype.empty());  // the model's dtype for the input, else float32 (worker/targets/inputs.h)
  CHECK(ra::parse_shape("4:int64").dtype == "int64");
  CHECK(ra::to_string(s) == "8x3x224x224");
  CHECK(ra::to_string(ra::parse_shape("4:int64")) == "4:int64");
  CHECK_THROWS_AS(ra::parse_shape("8xx3"), ra::UsageError);
  CHECK_THROWS_AS(ra::parse_shape("8x3:float99"), ra::UsageError);
}

TEST_CASE("parse_config: the attention and reduced-precision switches; strict turns cuDNN attention off") {
  const auto c = ra::parse_config(
      "det+sdpa.cudnn=off+sdpa.flash=0+sdpa.mem_efficient=false+cublas.fp16_reduction=off"
      "+cublas.bf16_reduction=on",
      4);
  CHECK(c.values.at("sdpa.cudnn") == "off");
  CHECK(c.values.at("sdpa.flash") == "off");
  CHECK(c.values.at("sdpa.mem_efficient") == "off");
  CHECK(c.values.at("cublas.fp16_reduction") == "off");
  CHECK(c.values.at("cublas.bf16_reduction") == "on");
  CHECK(ra::parse_config("strict", 4).values.at("sdpa.cudnn") == "off");
  CHECK(ra::parse_config("det", 4).values.count("sdpa.cudnn") == 0);  // det is PyTorch's recipe, as documented
  CHECK(ra::switch_snippet("sdpa.cudnn", "off").python == "torch.backends.cuda.enable_cudnn_sdp(False)");
  CHECK(ra::switch_snippet("cublas.bf16_reduction", "off").cpp ==
        "at::globalContext().setAllowBF16ReductionCuBLAS(false);");
  CHECK_THROWS_AS(ra::parse_config("sdpa.cudnn=maybe", 4), ra::UsageError);
}

TEST_CASE("switch_snippet: each row gives every value of its switch a line, in the form labelled with it") {
  for (const auto& s : ra::switch_table()) {
    const std::vector<std::string> values = ra::test::switch_values(s);
    // A labelled form names a value of its switch, and only the last form has no label.
    for (const char* text : {s.cpp, s.python}) {
      std::string rest = text;
      for (size_t bar = rest.find(" | "); bar != std::string::npos; bar = rest.find(" | ")) {
        const std::string form = rest.substr(0, bar), label = form.substr(0, form.find(':'));
        CAPTURE(s.key);
        CAPTURE(form);
        CHECK(std::find(values.begin(), values.end(), label) != values.end());
        rest = rest.substr(bar + 3);
      }
    }
    // A variable is an Environment switch's, and threads' (set beside torch.set_num_threads).
    CHECK((s.applied == ra::Applied::Environment) == (!s.env_var.empty() && s.key != "threads"));
    for (const auto& value : values) {
      CAPTURE(s.key);
      CAPTURE(value);
      ra::Snippet snippet;
      CHECK_NOTHROW(snippet = ra::switch_snippet(s.key, value));  // a placeholder the snippet lacks throws
      CHECK(snippet.cpp.find(" | ") == std::string::npos);
      CHECK(snippet.python.find(" | ") == std::string::npos);
      if (s.applied != ra::Applied::Compile) CHECK_FALSE(snippet.python.empty());
    }
  }
  // Each form of a switch whose line differs by value, and an environment switch's.
  CHECK(ra::switch_snippet("deterministic", "warn").cpp ==
        "at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);");
  CHECK(ra::switch_snippet("deterministic", "off").python == "torch.use_deterministic_algorithms(False)");
  CHECK(ra::switch_snippet("deterministic", "on").python == "torch.use_deterministic_algorithms(True)");
  CHECK(ra::switch_snippet("compile", "on").python ==
        "os.environ.pop(\"TORCH_COMPILE_DISABLE\", None)  # before torch is imported");
  CHECK(ra::switch_snippet("compile", "off").cpp ==
        "setenv(\"TORCH_COMPILE_DISABLE\", \"1\", 1);  // before torch is loaded");
  CHECK(ra::switch_snippet("inductor.cache", "unset").python.empty());
  CHECK(ra::switch_snippet("inductor.cache", "cold").python.find("tempfile.mkdtemp()") != std::string::npos);
  CHECK(ra::switch_snippet("nccl.nvls", "unset").cpp == "unsetenv(\"NCCL_NVLS_ENABLE\");");
  CHECK(ra::switch_snippet("inductor.deterministic", "off").cpp ==
        "setenv(\"TORCHINDUCTOR_DETERMINISTIC\", \"0\", 1);  // before torch is loaded");
  CHECK(ra::switch_snippet("tf32.cudnn", "on").cpp ==
        "for (auto op : {at::Float32Op::CONV, at::Float32Op::RNN}) at::globalContext().setFloat32Precision("
        "at::Float32Backend::CUDA, op, at::Float32Precision::TF32);");
  CHECK(ra::switch_snippet("threads", "2").python == "torch.set_num_threads(2)");
  CHECK(ra::switch_snippet("cublas_workspace", "unset").cpp ==
        "unsetenv(\"CUBLAS_WORKSPACE_CONFIG\");  // before the first CUDA call");
  CHECK(ra::switch_snippet("pythonhashseed", "0").python ==
        "os.environ[\"PYTHONHASHSEED\"] = \"0\"  # in the environment Python starts with (too late inside it)");
  CHECK(ra::switch_snippet("no.such", "on").cpp.empty());
}
