// SPDX-License-Identifier: Apache-2.0
// AOTInductor packages (torch._inductor.aoti_compile_and_package: a .pt2 with compiled code under
// data/aotinductor/), run by LibTorch's AOTIModelPackageLoader. A trial records the package's
// constants ("constant/fc.weight", by their original names) and every output ("output/0", ...).
// Its kernels are compiled and fused, invisible to the op tracer: --trace is dropped with one line. The
// package's build metadata goes to the report; one built for another device, or for CPU
// instructions this machine lacks, is refused before it is loaded. Its identity by content: its
// constants, and its generated C++ without comments (audit/baseline/identity.h).
#include "audit/targets/inputs.h"
#include "audit/targets/target.h"

#include "audit/baseline/identity.h"
#include "audit/common/errors.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/script.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <dlfcn.h>

namespace ra::targets {
namespace {

// The CPU feature flags of this machine (/proc/cpuinfo), lower case.
std::set<std::string> cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      std::set<std::string> out;
      std::istringstream words(line.substr(line.find(':') + 1));
      for (std::string w; words >> w;) out.insert(w);
      return out;
    }
  return {};
}

// AOTI_CPU_ISA names ("AVX512 AVX512_VNNI AMX_TILE") that this CPU lacks.
std::vector<std::string> missing_isa(const std::string& isa) {
  const std::set<std::string> flags = cpu_flags();
  if (flags.empty()) return {};  // not Linux's cpuinfo: nothing to check against
  std::vector<std::string> missing;
  std::istringstream words(isa);
  for (std::string w; words >> w;) {
    std::string flag = w;
    std::transform(flag.begin(), flag.end(), flag.begin(), [](unsigned char c) { return std::tolower(c); });
    if (flag == "avx512") flag = "avx512f";  // the foundation; the extensions share cpuinfo's names
    if (!flags.count(flag)) missing.push_back(w);
  }
  return missing;
}

// The package's wrapper library needs libtorch.so by name, which the worker (linked to
// libtorch_cpu alone) has not loaded: load it from the folder libtorch_cpu came from.
void load_libtorch() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&at::globalContext), &info) == 0 || info.dli_fname == nullptr) return;
  std::string dir = info.dli_fname;
  dir = dir.substr(0, dir.rfind('/'));
  (void)dlopen((dir + "/libtorch.so").c_str(), RTLD_NOW | RTLD_GLOBAL);
}

// The digest of the package's generated C++ (wrapper and kernels, in record order), comments out.
std::string compiled_source_digest(const std::string& path) {
  caffe2::serialize::PyTorchStreamReader reader(path);
  std::vector<std::string> names;
  for (const auto& name : reader.getAllRecords())
    if (name.find("aotinductor/") != std::string::npos && name.size() > 4 && name.compare(name.size() - 4, 4, ".cpp") == 0)
      names.push_back(name);
  std::sort(names.begin(), names.end());
  std::string text;
  for (const auto& name : names) {
    auto [data, size] = reader.getRecord(name);
    text += canonical_compiled_source(std::string(static_cast<const char*>(data.get()), size));
  }
  return text_digest(text);
}

class AotiTarget final : public Target {
 public:
  std::string kind() const override { return "an AOTInductor package (compiled, fused kernels)"; }
  Tracing tracing() const override { return Tracing::Compiled; }

  std::vector<std::string> load(const TrialSpec& spec, const c10::Device& device) override {
    if (spec.mode == "train")
      throw TrialInputError("--mode train needs autograd, which an AOTInductor package's compiled code does not have: "
                            "audit training with a TorchScript archive of the model", "usage");
    try {
      package_ = torch::inductor::AOTIModelPackageLoader::load_metadata_from_package(spec.model, "model");
    } catch (const std::exception& e) {
      throw TrialInputError(fmt::format("model '{}' is an AOTInductor package whose metadata cannot be read: {}", spec.model,
                                        error_text(e)));
    }
    const std::string key = package_.count("AOTI_DEVICE_KEY") ? package_.at("AOTI_DEVICE_KEY") : "";
    if (!key.empty() && key != c10::DeviceTypeName(device.type(), true))
      throw TrialInputError(fmt::format("model '{}' is an AOTInductor package compiled for {}, not {}: compile it again for "
                                        "{}, or audit it with --device {}",
                                        spec.model, key, spec.device, spec.device, key));
    if (device.is_cpu() && package_.count("AOTI_CPU_ISA"))
      if (const auto missing = missing_isa(package_.at("AOTI_CPU_ISA")); !missing.empty())
        throw TrialInputError(fmt::format("model '{}' is an AOTInductor package compiled for CPUs with {}, which this CPU "
                                          "lacks: compile it again on this machine",
                                          spec.model, fmt::join(missing, ", ")));
    load_libtorch();
    try {
      loader_ = std::make_unique<torch::inductor::AOTIModelPackageLoader>(
          spec.model, "model", /*run_single_threaded=*/false, /*num_runners=*/1,
          device.has_index() ? device.index() : static_cast<c10::DeviceIndex>(-1));
      graph_digest_ = compiled_source_digest(spec.model);
    } catch (const std::exception& e) {
      throw TrialInputError(fmt::format("model '{}' is an AOTInductor package that cannot be loaded: {}", spec.model,
                                        error_text(e)));
    }
    const Inputs in = load_inputs(spec, device);
    if (!in.kwargs.empty())
      throw TrialInputError("an AOTInductor package takes its inputs by position: give a tensor or a tuple of tensors, not a dict");
    for (const auto& a : in.args) {
      if (!a.isTensor()) throw TrialInputError("an AOTInductor package takes tensors only: its inputs file holds something else");
      inputs_.push_back(a.toTensor());
    }
    descriptions_ = in.descriptions;
    return descriptions_;
  }

  std::map<std::string, std::string> package() const override {
    return {package_.begin(), package_.end()};
  }

  std::vector<std::string> check() override {
    try {
      (void)loader_->run(inputs_);
    } catch (const std::exception& e) {
      // The runner's own text names only its failed call; the kernel's reason went to the log.
      throw TrialInputError(fmt::format("the compiled package rejects the inputs ({}): a package runs the input shapes and "
                                        "dtypes it was compiled for",
                                        fmt::join(descriptions_, ", ")));
    }
    return {};
  }

  // The package's constants by their original names ("fc.weight"), sorted: the runner's map has no order.
  std::map<std::string, at::Tensor> constants() const {
    const auto constants = loader_->get_runner()->extract_constants_map(/*use_inactive=*/false);
    const auto original = loader_->get_runner()->getConstantNamesToOriginalFQNs();
    std::map<std::string, at::Tensor> sorted;
    for (const auto& [name, t] : constants) {
      const auto it = original.find(name);
      sorted[it == original.end() || it->second.empty() ? name : it->second] = t;
    }
    return sorted;
  }

  Identity identity() const override {
    NamedTensors weights;
    for (const auto& [name, t] : constants()) weights.emplace_back("constant/" + name, t);
    return {weights_identity(weights), graph_digest_};
  }

  void run(Recorder& rec, std::vector<report::TensorDigest>&) override {
    for (const auto& [name, t] : constants()) rec.add("constant/" + name, t);
    const std::vector<at::Tensor> out = loader_->run(inputs_);
    for (size_t i = 0; i < out.size(); ++i) rec.add(fmt::format("output/{}", i), out[i]);
  }

 private:
  std::unordered_map<std::string, std::string> package_;
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader_;
  std::string graph_digest_;
  std::vector<at::Tensor> inputs_;
  std::vector<std::string> descriptions_;
};

}  // namespace

std::unique_ptr<Target> open_aoti_target() { return std::make_unique<AotiTarget>(); }

}  // namespace ra::targets
