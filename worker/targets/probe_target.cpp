// SPDX-License-Identifier: Apache-2.0
// The probe target: one probe of the suite (probes/), run through its ProbeContext. Its inputs
// come from its own CPU generator, seeded from the trial seed and the probe's name, so they do
// not depend on which other probes ran in the same child; the global generators are reseeded
// before every run. A probe that cannot run here throws probes::ProbeSkip from run().
#include "worker/targets/target.h"

#include "probes/registry.h"

#include <ATen/CPUGeneratorImpl.h>

namespace ra::targets {
namespace {

uint64_t probe_seed(uint64_t seed, const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return seed ^ h;
}

class Context final : public probes::ProbeContext {
 public:
  Context(c10::Device device, uint64_t seed, Recorder& recorder)
      : device_(device), gen_(at::make_generator<at::CPUGeneratorImpl>(seed)), recorder_(recorder) {}
  c10::Device device() const override { return device_; }
  at::Generator& generator() override { return gen_; }
  void record(const std::string& name, const at::Tensor& t) override { recorder_.add(name, t); }

 private:
  c10::Device device_;
  at::Generator gen_;
  Recorder& recorder_;
};

class ProbeTarget final : public Target {
 public:
  explicit ProbeTarget(const probes::Probe& probe) : probe_(probe) {}
  std::string kind() const override { return "probe"; }
  Tracing tracing() const override { return Tracing::OpByOp; }

  std::vector<std::string> load(const TrialSpec& spec, const c10::Device& device) override {
    seed_ = spec.seed;
    device_ = device;
    return {probe_.info().form};
  }
  std::vector<std::string> check() override { return {}; }
  void run(Recorder& rec, std::vector<report::TensorDigest>&) override {
    seed_generators(seed_);
    Context ctx(device_, probe_seed(seed_, probe_.info().name), rec);
    probe_.run(ctx);
    synchronize(device_);
  }

 private:
  const probes::Probe& probe_;
  uint64_t seed_ = 0;
  c10::Device device_{c10::kCPU};
};

}  // namespace

std::unique_ptr<Target> open_probe_target(const std::string& name) {
  const probes::Probe* probe = probes::find_probe(name);
  return probe ? std::make_unique<ProbeTarget>(*probe) : nullptr;
}

}  // namespace ra::targets
