// SPDX-License-Identifier: Apache-2.0
// Every built-in probe: its description is complete and consistent with the knowledge base, and
// (for probes that run on the CPU) it runs on the CPU through a fake context, records tensors, and
// gives the same bits twice in one process with the same seed.
#include "probes/registry.h"

#include "audit/knowledge/knowledge.h"
#include "worker/digest/digest.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <doctest/doctest.h>

#include <map>
#include <set>

namespace {

using ra::probes::ProbeContext;

class FakeContext final : public ProbeContext {
 public:
  explicit FakeContext(uint64_t seed) : gen_(at::make_generator<at::CPUGeneratorImpl>(seed)) {}
  c10::Device device() const override { return c10::Device(c10::kCPU); }
  at::Generator& generator() override { return gen_; }
  void record(const std::string& name, const at::Tensor& t) override {
    REQUIRE_MESSAGE(!digests.count(name), "recorded twice: " << name);
    digests[name] = ra::digest(t);
  }
  std::map<std::string, std::string> digests;

 private:
  at::Generator gen_;
};

ra::KnowledgeBase knowledge() { return ra::load_knowledge(RA_SOURCE_KNOWLEDGE); }

}  // namespace

TEST_CASE("all_probes: names are unique and well formed, every field is filled") {
  const auto& probes = ra::probes::all_probes();
  CHECK(probes.size() >= 60);
  std::set<std::string> names;
  for (const auto& p : probes) {
    const auto& info = p->info();
    CAPTURE(info.name);
    CHECK(ra::probes::check_probe_name(info.name).empty());
    CHECK(names.insert(info.name).second);
    CHECK(!info.family.empty());
    CHECK(info.op.find("::") != std::string::npos);
    CHECK((info.cpu || info.cuda));
    CHECK(!info.form.empty());
  }
}

TEST_CASE("all_probes: every knowledge-base id a probe names exists, and the devices agree") {
  const ra::KnowledgeBase kb = knowledge();
  for (const auto& p : ra::probes::all_probes()) {
    const auto& info = p->info();
    if (info.kb.empty()) continue;
    CAPTURE(info.name);
    const ra::KnowledgeEntry* e = kb.find(info.kb);
    REQUIRE_MESSAGE(e != nullptr, "unknown knowledge-base id " << info.kb);
    if (e->device == "cuda") CHECK(info.cuda);
    if (e->device == "cpu") CHECK(info.cpu);
  }
}

TEST_CASE("all_probes: every documented row of use_deterministic_algorithms is covered by a probe") {
  const ra::KnowledgeBase kb = knowledge();
  std::set<std::string> covered;
  for (const auto& p : ra::probes::all_probes()) covered.insert(p->info().kb);
  int documented = 0;
  for (const auto& e : kb.entries) {
    CAPTURE(e.id);
    CHECK_MESSAGE(covered.count(e.id), "no probe covers " << e.id);
    documented += e.documented != ra::Documented::Undocumented;
  }
  CHECK(documented >= 45);
}

TEST_CASE("Probe::run: CPU probes run on the CPU, record tensors and repeat bit for bit in-process") {
  at::set_num_threads(1);  // one thread: the in-process repeat must then be exact for every CPU op
  for (const auto& p : ra::probes::all_probes()) {
    const auto& info = p->info();
    // The memory family records the bits of storage nobody wrote: what they hold is the allocator's
    // business (zero pages on one machine, other bits on a repeat on CI's), never the probe's.
    if (!info.cpu || info.family == "memory") continue;
    CAPTURE(info.name);
    FakeContext a(42), b(42);
    try {
      p->run(a);
      p->run(b);
    } catch (const ra::probes::ProbeSkip& skip) {
      MESSAGE("skipped: " << skip.what());
      continue;
    } catch (const std::exception& e) {
      FAIL("probe threw: " << e.what());
    }
    CHECK(!a.digests.empty());
    CHECK(a.digests == b.digests);
    if (info.direction == ra::probes::Direction::Backward) {
      bool has_grad = false;
      for (const auto& [name, d] : a.digests) has_grad |= name.rfind("grad/", 0) == 0;
      CHECK_MESSAGE(has_grad, "a backward probe records at least one gradient");
    }
  }
}
