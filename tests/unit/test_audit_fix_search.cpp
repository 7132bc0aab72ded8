// SPDX-License-Identifier: Apache-2.0
#include "audit/trace/fix_search.h"
#include "audit/trial/config.h"

#include <doctest/doctest.h>

#include <map>
#include <set>

namespace {

using ra::CandidateOutcome;
using ra::Config;
using ra::report::Verdict;

ra::report::ConfigResult failing_cpu() {
  ra::report::ConfigResult c;
  c.name = "default";
  c.verdict = Verdict::Diverged;
  c.switches = {{"deterministic", "", "off"},
                {"fill_uninitialized_memory", "", "on"},
                {"threads", "", "2"},
                {"mkl_cbwr", "", "unset"},
                {"cudnn.benchmark", "", "off"}};
  ra::report::TraceSummary t;
  ra::report::RootCause rc;
  rc.op = "aten::index_put_";
  rc.direction = "forward";
  rc.position = 7;
  t.root_causes.push_back(rc);
  c.trace = t;
  return c;
}

// A fake model: reproducible exactly when every switch in `needed` has its deterministic value;
// `raises` makes deterministic=on raise.
struct FakeModel {
  std::map<std::string, std::string> needed;
  bool raises = false;
  std::vector<std::string> tried;
  CandidateOutcome operator()(const Config& c) {
    tried.push_back(c.name);
    CandidateOutcome o;
    const auto det = c.values.find("deterministic");
    if (raises && det != c.values.end() && det->second == "on") {
      o.verdict = Verdict::Raised;
      o.message = "RuntimeError: index_add_cuda_ does not have a deterministic implementation, but you set ...";
      return o;
    }
    for (const auto& [k, v] : needed) {
      const auto it = c.values.find(k);
      if (it == c.values.end() || it->second != v) {
        o.verdict = Verdict::Diverged;
        ra::report::RootCause rc;
        rc.op = "aten::index_put_";
        rc.direction = "forward";
        o.root_causes.push_back(rc);
        return o;
      }
    }
    return o;
  }
};

// Five interleaved rounds; the machine is slower in round 2 (a busy spell hits both sides of a
// pair), and threads=1 costs half, a little more in round 4.
std::vector<std::vector<std::optional<double>>> fake_time(const std::vector<Config>& configs) {
  std::vector<std::vector<std::optional<double>>> out;
  for (const auto& c : configs) {
    const bool one = c.values.count("threads") && c.values.at("threads") == "1";
    std::vector<std::optional<double>> rounds;
    for (int r = 0; r < 5; ++r) {
      const double slow = r == 2 ? 3.0 : 1.0;
      rounds.push_back(slow * (one ? (r == 4 ? 60.0 : 50.0) : 100.0));
    }
    out.push_back(rounds);
  }
  return out;
}

}  // namespace

TEST_CASE("candidate_toggles") {
  const auto toggles = ra::candidate_toggles(failing_cpu(), ra::Device::cpu());
  std::vector<std::string> keys;
  for (const auto& t : toggles) keys.push_back(t.key + "=" + t.value);
  // fill_uninitialized_memory is already on; CUDA-only switches are left out on the CPU.
  CHECK(keys == std::vector<std::string>{"deterministic=on", "threads=1", "mkl_cbwr=COMPATIBLE"});
  const auto cuda = ra::candidate_toggles(failing_cpu(), ra::Device::cuda());
  std::set<std::string> cuda_keys;
  for (const auto& t : cuda) cuda_keys.insert(t.key);
  CHECK(cuda_keys.count("cudnn.deterministic") == 1);
  CHECK(cuda_keys.count("cudnn.benchmark") == 0);  // already off
  CHECK(cuda_keys.count("mkl_cbwr") == 0);
}

TEST_CASE("with_toggles") {
  const Config base = ra::parse_config("det", 2);
  const Config c = ra::with_toggles(base, {{"threads", "1"}, {"mkl_cbwr", "COMPATIBLE"}});
  CHECK(c.name == "det+threads=1+mkl_cbwr=COMPATIBLE");
  CHECK(c.values.at("deterministic") == "on");
  CHECK(c.values.at("threads") == "1");
  // The name parses back to the same switches.
  CHECK(ra::parse_config(c.name, 2).values == c.values);
}

TEST_CASE("alerted_op") {
  CHECK(ra::alerted_op("RuntimeError: index_add_cuda_ does not have a deterministic implementation, but you set") ==
        "index_add_cuda_");
  CHECK(ra::alerted_op("upsample_bilinear2d_backward_out_cuda does not have a deterministic implementation") ==
        "upsample_bilinear2d_backward_out_cuda");
  CHECK(ra::alerted_op("CUDA out of memory").empty());
}

TEST_CASE("search_fixes: single toggles that fix are minimal, timed against the failing configuration") {
  FakeModel model{{{"threads", "1"}}, false, {}};
  const auto failing = failing_cpu();
  const auto fs =
      ra::search_fixes(failing, ra::parse_config("default", 2), ra::Device::cpu(), std::ref(model), fake_time);
  REQUIRE(fs.candidates.size() == 3);
  CHECK(model.tried ==
        std::vector<std::string>{"default+deterministic=on", "default+threads=1", "default+mkl_cbwr=COMPATIBLE"});
  const auto& t1 = fs.candidates[1];
  CHECK(t1.fixes_all);
  CHECK(t1.minimal);
  CHECK(t1.fixes == std::vector<uint64_t>{7});
  CHECK(t1.cpp == "at::set_num_threads(1);");
  REQUIRE(t1.cost_ratio);
  CHECK(*t1.cost_ratio == doctest::Approx(0.5));  // the busy round cancels out: ratios are paired
  CHECK(*t1.cost_low == doctest::Approx(0.5));
  CHECK(*t1.cost_high == doctest::Approx(0.6));
  CHECK(fs.baseline_median_ms == 100.0);
  CHECK(fs.best == std::vector<size_t>{1});
  CHECK_FALSE(fs.candidates[0].minimal);
  CHECK(fs.candidates[0].fixes.empty());
  CHECK(fs.conclusion == "threads=1 from default makes it reproducible");
}

TEST_CASE("search_fixes: when no toggle fixes alone, the combination is reduced to a minimal set") {
  FakeModel model{{{"deterministic", "on"}, {"threads", "1"}}, false, {}};
  const auto fs =
      ra::search_fixes(failing_cpu(), ra::parse_config("default", 2), ra::Device::cpu(), std::ref(model), fake_time);
  // 3 singles, the combination of 3, then dropping each toggle while it stays reproducible.
  REQUIRE(fs.candidates.size() >= 5);
  CHECK(fs.candidates[3].stage == "combined");
  CHECK(fs.candidates[3].fixes_all);
  REQUIRE(fs.best.size() == 1);
  const auto& best = fs.candidates[fs.best[0]];
  CHECK(best.minimal);
  CHECK(best.fixes_all);
  CHECK(best.config == "default+deterministic=on+threads=1");
  CHECK(best.cpp ==
        "at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);\nat::set_num_threads(1);");
}

TEST_CASE("search_fixes: an op that raises under deterministic mode is named, with alternatives") {
  FakeModel model{{{"never", "x"}}, true, {}};
  const auto fs =
      ra::search_fixes(failing_cpu(), ra::parse_config("default", 2), ra::Device::cpu(), std::ref(model), fake_time);
  CHECK(fs.candidates[0].verdict == Verdict::Raised);
  CHECK(fs.best.empty());
  REQUIRE(fs.no_deterministic.size() == 1);
  CHECK(fs.no_deterministic[0].op == "index_add_cuda_");
  CHECK(fs.no_deterministic[0].alternatives.size() == 3);
  CHECK(fs.conclusion == "no switch makes it reproducible: index_add_cuda_ has no deterministic implementation");
  // The raising toggle is left out of the combination.
  for (const auto& c : fs.candidates)
    if (c.stage == "combined") CHECK(c.config == "default+threads=1+mkl_cbwr=COMPATIBLE");
}

TEST_CASE("search_fixes: nothing to toggle") {
  auto failing = failing_cpu();
  failing.switches = {{"deterministic", "", "on"},
                      {"fill_uninitialized_memory", "", "on"},
                      {"threads", "", "1"},
                      {"mkl_cbwr", "", "COMPATIBLE"}};
  FakeModel model{{{"never", "x"}}, false, {}};
  const auto fs = ra::search_fixes(failing, ra::parse_config("det", 2), ra::Device::cpu(), std::ref(model), fake_time);
  CHECK(fs.candidates.empty());
  CHECK(model.tried.empty());
  CHECK(fs.conclusion.find("already at its deterministic setting") != std::string::npos);
}

TEST_CASE("search_fixes: every candidate that ran is timed, raising ones are not") {
  FakeModel model{{{"threads", "1"}}, true, {}};
  const auto fs =
      ra::search_fixes(failing_cpu(), ra::parse_config("default", 2), ra::Device::cpu(), std::ref(model), fake_time);
  REQUIRE(fs.candidates.size() == 3);
  CHECK_FALSE(fs.candidates[0].cost_ratio.has_value());  // deterministic=on raised
  REQUIRE(fs.candidates[2].cost_ratio.has_value());      // mkl_cbwr ran and did not fix: still priced
  CHECK(*fs.candidates[2].cost_ratio == doctest::Approx(1.0));
  CHECK(*fs.candidates[1].cost_ratio == doctest::Approx(0.5));
}

TEST_CASE("search_fixes: when no candidate fixes it, nothing is timed") {
  FakeModel model{{{"never", "x"}}, false, {}};
  int timings = 0;
  const ra::TimeFn counting = [&](const std::vector<Config>& configs) {
    ++timings;
    return fake_time(configs);
  };
  const auto fs =
      ra::search_fixes(failing_cpu(), ra::parse_config("default", 2), ra::Device::cpu(), std::ref(model), counting);
  CHECK(fs.best.empty());
  CHECK(fs.conclusion == "no combination of the candidate switches makes it reproducible");
  CHECK(timings == 0);
  CHECK_FALSE(fs.baseline_median_ms.has_value());
  for (const auto& c : fs.candidates) CHECK_FALSE(c.cost_ratio.has_value());
}

TEST_CASE("same_cost: fixes whose intervals overlap cost the same within noise") {
  ra::report::FixCandidate a, b;
  a.cost_low = 0.4, a.cost_high = 0.6, b.cost_low = 0.55, b.cost_high = 0.9;
  CHECK(ra::report::same_cost(a, b));
  b.cost_low = 0.61;
  CHECK_FALSE(ra::report::same_cost(a, b));
  b.cost_low.reset();
  CHECK_FALSE(ra::report::same_cost(a, b));  // unmeasured: not comparable
}

TEST_CASE("candidate_toggles: the attention backends are tried only where attention is the root cause") {
  const auto keys_of = [](const ra::report::ConfigResult& failing, const ra::Device& device) {
    std::set<std::string> keys;
    for (const auto& t : ra::candidate_toggles(failing, device)) keys.insert(t.key + "=" + t.value);
    return keys;
  };
  // index_put_ is the root cause: no SDPA switch on either device.
  for (const ra::Device& device : {ra::Device::cpu(), ra::Device::cuda()})
    for (const auto& k : keys_of(failing_cpu(), device)) CHECK_MESSAGE(k.rfind("sdpa.", 0) != 0, k);
  // cuDNN attention's backward is (as measured on an H200 under det): all three backends on CUDA,
  // flash (which has a CPU kernel) on the CPU.
  auto attention = failing_cpu();
  attention.trace->root_causes.front().op = "aten::_scaled_dot_product_cudnn_attention_backward";
  attention.trace->root_causes.front().direction = "backward";
  const auto cuda = keys_of(attention, ra::Device::cuda());
  CHECK(cuda.count("sdpa.cudnn=off") == 1);
  CHECK(cuda.count("sdpa.flash=off") == 1);
  CHECK(cuda.count("sdpa.mem_efficient=off") == 1);
  const auto cpu = keys_of(attention, ra::Device::cpu());
  CHECK(cpu.count("sdpa.flash=off") == 1);
  CHECK(cpu.count("sdpa.cudnn=off") == 0);
  // Already off in the failing trials: not a candidate.
  attention.switches.push_back({"sdpa.cudnn", "off", "off"});
  CHECK(keys_of(attention, ra::Device::cuda()).count("sdpa.cudnn=off") == 0);
}

TEST_CASE("search_fixes: cuDNN attention under det is fixed by sdpa.cudnn=off alone") {
  auto failing = failing_cpu();
  failing.name = "det";
  failing.switches = {
      {"deterministic", "on", "on"}, {"cudnn.benchmark", "off", "off"}, {"cublas_workspace", ":4096:8", ":4096:8"}};
  failing.trace->root_causes.front().op = "aten::_scaled_dot_product_cudnn_attention_backward";
  FakeModel model{{{"sdpa.cudnn", "off"}}, false, {}};
  const auto r = ra::search_fixes(failing, ra::parse_config("det", 2), ra::Device::cuda(), std::ref(model), fake_time);
  REQUIRE(r.best.size() == 1);
  const auto& fix = r.candidates[r.best.front()];
  CHECK(fix.config == "det+sdpa.cudnn=off");
  CHECK(fix.cpp == "at::globalContext().setSDPUseCuDNN(false);");
  CHECK(fix.python == "torch.backends.cuda.enable_cudnn_sdp(False)");
  CHECK(r.conclusion == "sdpa.cudnn=off from det makes it reproducible");
}

TEST_CASE("search_fixes: a fix that computes further from float64 is a downgrade, named after the others") {
  // Any switch fixes it; deterministic=on by rounding to bfloat16: 310 ULP from float64 where the
  // failing configuration's reference repeat had 3.
  auto failing = failing_cpu();
  ra::report::ReferenceError e;
  e.name = "output", e.dtype = "float32", e.numel = 64, e.max_ulp = 3;
  failing.referee.emplace();
  failing.referee->errors = {e};
  const ra::EvaluateFn model = [&](const Config& c) {
    const auto value = [&c](const char* key) {
      const auto it = c.values.find(key);
      return it == c.values.end() ? std::string() : it->second;
    };
    CandidateOutcome o;
    o.errors = {e};
    if (value("deterministic") == "on") o.errors[0].max_ulp = 310;
    if (value("mkl_cbwr") == "COMPATIBLE") o.verdict = Verdict::Diverged;
    return o;
  };
  const auto fs = ra::search_fixes(failing, ra::parse_config("default", 2), ra::Device::cpu(), model, fake_time);
  REQUIRE(fs.candidates.size() == 3);
  REQUIRE(fs.candidates[0].accuracy);
  CHECK(fs.candidates[0].downgrade());
  CHECK(fs.candidates[0].accuracy->from_ulp == 3);
  REQUIRE(fs.candidates[1].accuracy);
  CHECK(fs.candidates[1].accuracy->change == ra::report::AccuracyChange::Unchanged);
  CHECK(fs.candidates[2].accuracy);  // it ran: measured, though not a fix
  CHECK(fs.best == std::vector<size_t>{0, 1});
  CHECK(fs.conclusion == "threads=1 or deterministic=on (a downgrade) from default make it reproducible");
  CHECK(ra::report::cheapest_fix(fs) == &fs.candidates[1]);
  // Without a referee (off, AOTI, a float64 run that failed): no figures, nothing claimed.
  failing.referee.reset();
  const auto plain = ra::search_fixes(failing, ra::parse_config("default", 2), ra::Device::cpu(), model, fake_time);
  for (const auto& c : plain.candidates) CHECK_FALSE(c.accuracy.has_value());
  CHECK(plain.conclusion == "deterministic=on or threads=1 from default make it reproducible");
}
