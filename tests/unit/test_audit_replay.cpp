// SPDX-License-Identifier: Apache-2.0
#include "audit/train/replay.h"

#include <doctest/doctest.h>

namespace {

using ra::report::ReplayVerdict;
using ra::report::TensorDigest;

TensorDigest d(const std::string& name, const std::string& digest) { return {name, "float32", {2}, digest}; }

// An uninterrupted 4-step run of one parameter w with Adam, restarting after step 2.
ra::ReplayEvidence evidence() {
  ra::ReplayEvidence e;
  e.steps_before = 2;
  e.steps_total = 4;
  e.reference_state = {d("param/w", "w2"), d("optimizer/w/exp_avg", "m2"), d("generator/cpu", "g2")};
  for (int step = 1; step <= 4; ++step)
    for (const char* t : {"output", "loss", "grad/w", "param/w"})
      e.reference_tensors.push_back(d("step" + std::to_string(step) + "/" + t, std::to_string(step) + t));
  e.reference_tensors.insert(e.reference_tensors.begin(), d("param/w", "w0"));
  e.saved_state = e.reference_state;
  e.restored_state = e.reference_state;
  e.resumed_tensors = {d("param/w", "w0")};
  for (const auto& t : e.reference_tensors)
    if (ra::step_of(t.name) > 2) e.resumed_tensors.push_back(t);
  return e;
}

const ra::report::ReplayComponent& component(const ra::report::Replay& r, const std::string& name) {
  for (const auto& c : r.components)
    if (c.name == name) return c;
  FAIL("no component " << name);
  return r.components.front();
}

}  // namespace

TEST_CASE("state_component") {
  CHECK(ra::state_component("param/fc.weight") == "parameters");
  CHECK(ra::state_component("buffer/bn.running_mean") == "buffers");
  CHECK(ra::state_component("optimizer/fc.weight/exp_avg") == "optimizer");
  CHECK(ra::state_component("generator/cpu") == "generator/cpu");
  CHECK(ra::state_component("generator/cuda:1") == "generator/cuda:1");
}

TEST_CASE("step_of") {
  CHECK(ra::step_of("step3/output") == 3);
  CHECK(ra::step_of("step12/grad/fc.weight") == 12);
  CHECK(ra::step_of("param/step3") == 0);
  CHECK(ra::step_of("stepx/output") == 0);
  CHECK(ra::step_of("output") == 0);
}

TEST_CASE("compare_replay: an identical restore and identical later steps are reproducible") {
  const auto r = ra::compare_replay("default", evidence());
  CHECK(r.verdict == ReplayVerdict::Reproducible);
  CHECK(r.reason.empty());
  CHECK(r.config == "default");
  CHECK(r.steps_before == 2);
  CHECK(r.steps_after == 2);
  CHECK(r.tensors_compared == 8);  // steps 3 and 4 only: the load-time param/w is not compared
  CHECK(r.differing.empty());
  REQUIRE(r.components.size() == 4);
  CHECK(r.components[0].name == "parameters");
  CHECK(r.components[1].name == "buffers");
  CHECK(r.components[1].tensors == 0);
  CHECK(r.components[2].name == "optimizer");
  CHECK(r.components[3].name == "generator/cpu");
  CHECK(r.components[3].description == "the CPU generator state");
}

TEST_CASE("compare_replay: an omitted generator state is the reason, the first differing tensor is kept") {
  auto e = evidence();
  e.omit = {"rng"};
  e.restored_state[2].digest = "seeded";
  e.resumed_tensors[1].digest = "other";  // step3/output
  const auto r = ra::compare_replay("default", e);
  CHECK(r.verdict == ReplayVerdict::Diverged);
  CHECK(r.reason ==
        "the CPU generator state after restore differs from the uninterrupted run's at step 2: the checkpoint did not "
        "restore it (--replay-omit rng)");
  const auto& gen = component(r, "generator/cpu");
  CHECK(!gen.in_checkpoint);
  CHECK(gen.saved_match);
  CHECK(!gen.restored_match);
  CHECK(gen.differing == std::vector<std::string>{"generator/cpu"});
  CHECK(component(r, "optimizer").in_checkpoint);
  REQUIRE(r.differing.size() == 1);
  CHECK(r.differing[0].name == "step3/output");
  CHECK(r.differing[0].reference_digest == "3output");
  CHECK(r.differing[0].other_digest == "other");
}

TEST_CASE("compare_replay: the first differing component in order is the reason") {
  auto e = evidence();
  e.omit = {"optimizer", "rng"};
  e.restored_state[1].digest = "fresh";   // optimizer
  e.restored_state[2].digest = "seeded";  // generator
  e.resumed_tensors.back().digest = "other";
  const auto r = ra::compare_replay("default", e);
  CHECK(r.verdict == ReplayVerdict::Diverged);
  CHECK(r.reason.rfind("the optimizer state after restore differs", 0) == 0);
  CHECK(r.reason.find("--replay-omit optimizer") != std::string::npos);
}

TEST_CASE("compare_replay: a state missing after restore differs too") {
  auto e = evidence();
  e.omit = {"optimizer"};
  e.restored_state.erase(e.restored_state.begin() + 1);  // a fresh optimizer has no state yet
  e.resumed_tensors.back().digest = "other";
  const auto r = ra::compare_replay("default", e);
  CHECK(r.verdict == ReplayVerdict::Diverged);
  CHECK(component(r, "optimizer").differing == std::vector<std::string>{"optimizer/w/exp_avg"});
}

TEST_CASE("compare_replay: a checkpoint that already differs, and a lossy restore") {
  auto e = evidence();
  e.saved_state[0].digest = "drifted";
  e.restored_state[0].digest = "drifted";
  e.resumed_tensors.back().digest = "other";
  auto r = ra::compare_replay("default", e);
  CHECK(
      r.reason ==
      "the model parameters saved by the checkpoint already differ from the uninterrupted run's at step 2: the first 2 "
      "steps did not reproduce in the checkpointing process");
  e.saved_state[0].digest = "w2";
  r = ra::compare_replay("default", e);
  CHECK(r.reason.rfind("the model parameters after restore differ from the uninterrupted run's at step 2, although the "
                       "checkpoint saved them intact",
                       0) == 0);
}

TEST_CASE("compare_replay: divergence after an identical restore") {
  auto e = evidence();
  e.resumed_tensors.back().digest = "other";  // step4/param/w
  const auto r = ra::compare_replay("default", e);
  CHECK(r.verdict == ReplayVerdict::Diverged);
  CHECK(r.reason ==
        "every component of the state matched the uninterrupted run's at step 2 after restore, but the resumed run "
        "diverged at step 4: nondeterminism, or state outside the checkpoint");
  for (const auto& c : r.components) CHECK(c.restored_match);
}

TEST_CASE("compare_replay: an unrestored state that later steps do not use is reproducible, with a note") {
  auto e = evidence();
  e.omit = {"rng"};
  e.restored_state[2].digest = "seeded";
  const auto r = ra::compare_replay("default", e);
  CHECK(r.verdict == ReplayVerdict::Reproducible);
  CHECK(r.reason.find("but the remaining steps do not depend on it") != std::string::npos);
}

TEST_CASE("compare_replay: a reference without state is inconclusive") {
  auto e = evidence();
  e.reference_state.clear();
  const auto r = ra::compare_replay("default", e);
  CHECK(r.verdict == ReplayVerdict::Inconclusive);
  CHECK(r.reason == "the uninterrupted run recorded no training state at step 2");
}

TEST_CASE("run_replay: without a reproducible configuration it is inconclusive and starts no child") {
  ra::ReplayContext ctx;
  ctx.base.steps = 5;
  ctx.omit = {"rng"};  // no scratch folder: a child would dereference it
  ra::report::ConfigResult diverged;
  diverged.name = "default";
  diverged.verdict = ra::report::Verdict::Diverged;
  const auto r = ra::run_replay(ctx, {ra::Config{"default", {}}}, {diverged}, {{}});
  CHECK(r.verdict == ReplayVerdict::Inconclusive);
  CHECK(r.config.empty());
  CHECK(r.steps_before == 2);
  CHECK(r.steps_after == 3);
  CHECK(r.reason.find("no configuration is reproducible") == 0);
}
