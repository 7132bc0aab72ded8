// SPDX-License-Identifier: Apache-2.0
// AOTInductor packages (torch._inductor.aoti_compile_and_package: a .pt2 with compiled code under
// data/aotinductor/), checked and unpacked into the trial's scratch by aoti_package.h (never by
// LibTorch's AOTIModelPackageLoader: see there why), then run by LibTorch's AOTIModelContainerRunner
// for the package's device. Its compiled library is native code that runs in this process: the
// front says so in the report, and `run --no-native` refuses packages. A trial records the package's
// constants ("constant/fc.weight", by their original names) and every output ("output/0", ...).
// Its kernels are compiled and fused, invisible to the op tracer: --trace is dropped with one line. The
// package's build metadata goes to the report; one built for another device, or for CPU
// instructions this machine lacks, is refused before it is loaded. Its identity by content: its
// constants, and its generated C++ without comments (audit/baseline/identity.h).
#include "worker/targets/aoti_package.h"
#include "worker/targets/inputs.h"
#include "worker/targets/target.h"

#include "audit/baseline/identity.h"
#include "audit/common/errors.h"
#include "audit/common/files.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/inductor/aoti_runner/model_container_runner.h>
#include <torch/csrc/inductor/aoti_runner/model_container_runner_cpu.h>
#include <torch/script.h>
#include <torch/version.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <dlfcn.h>
#include <stdlib.h>

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

// AOTI_CPU_ISA names ("AVX512 AVX512_VNNI AMX_TILE") that this CPU lacks. INVALID_VEC_ISA is Inductor's
// name for no vector ISA at all (scalar code, what it compiles under ATEN_CPU_CAPABILITY=default): any
// CPU runs it.
std::vector<std::string> missing_isa(const std::string& isa) {
  const std::set<std::string> flags = cpu_flags();
  if (flags.empty()) return {};  // not Linux's cpuinfo: nothing to check against
  std::vector<std::string> missing;
  std::istringstream words(isa);
  for (std::string w; words >> w;) {
    if (w == "INVALID_VEC_ISA") continue;
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
    if (name.find("aotinductor/") != std::string::npos && name.size() > 4 &&
        name.compare(name.size() - 4, 4, ".cpp") == 0)
      names.push_back(name);
  std::sort(names.begin(), names.end());
  std::string text;
  for (const auto& name : names) {
    auto [data, size] = reader.getRecord(name);
    text += canonical_compiled_source(std::string(static_cast<const char*>(data.get()), size));
  }
  return text_digest(text);
}

// The folder a package is unpacked into: a fresh one below the trial's scratch (the parent removes
// that whatever this process does, a crash in the package's code included), removed with its
// contents when the target goes. Without a scratch (a test's in-process child), a private one
// under TMPDIR.
class UnpackFolder {
 public:
  explicit UnpackFolder(const std::string& scratch) {
    const std::string base = scratch.empty() ? own_.emplace().path() : scratch;
    std::string name = base + "/aoti-XXXXXX";
    if (::mkdtemp(name.data()) == nullptr)
      throw InputError(fmt::format("cannot make a folder to unpack the package in {}: {}", base, std::strerror(errno)));
    path_ = name;
  }
  ~UnpackFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  UnpackFolder(const UnpackFolder&) = delete;
  UnpackFolder& operator=(const UnpackFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::optional<ScratchDir> own_;
  std::string path_;
};

class AotiTarget final : public Target {
 public:
  std::string kind() const override { return "an AOTInductor package (compiled, fused kernels)"; }
  Tracing tracing() const override { return Tracing::Compiled; }

  std::vector<std::string> load(const TrialSpec& spec, const c10::Device& device) override {
    if (spec.precision == "float64")  // the front does not ask; said here too, should it ever
      throw TrialInputError("an AOTInductor package cannot run in float64: its kernels are compiled for one dtype");
    if (spec.mode == "train")
      throw TrialInputError(
          "--mode train needs autograd, which an AOTInductor package's compiled code does not have: "
          "audit training with a TorchScript archive of the model",
          "usage");
    const std::string what = fmt::format("model '{}'", spec.model);
    AotiPackage package;
    try {
      package = read_aoti_package(spec.model, "model", what);  // every entry checked; nothing unpacked yet
    } catch (const InputError& e) {
      throw TrialInputError(e.what());
    }
    package_ = package.metadata;
    const std::string key = package_.at("AOTI_DEVICE_KEY");
    if (key != c10::DeviceTypeName(device.type(), true))
      throw TrialInputError(
          fmt::format("model '{}' is an AOTInductor package compiled for {}, not {}: compile it again for "
                      "{}, or audit it with --device {}",
                      spec.model, excerpt(key), spec.device.to_string(), spec.device.to_string(), excerpt(key)));
    if (device.is_cpu() && package_.count("AOTI_CPU_ISA"))
      if (const auto missing = missing_isa(package_.at("AOTI_CPU_ISA")); !missing.empty())
        throw TrialInputError(
            fmt::format("model '{}' is an AOTInductor package compiled for CPUs with {}, which this CPU "
                        "lacks: compile it again on this machine",
                        spec.model, excerpt(fmt::format("{}", fmt::join(missing, ", ")))));
    // Unpacked into the trial's scratch, which the parent removes whatever this process does.
    std::string library;
    try {
      unpacked_.emplace(spec.scratch);
      library = unpack_aoti_package(spec.model, package, unpacked_->path(), what);
    } catch (const InputError& e) {
      throw TrialInputError(e.what());
    }
    load_libtorch();
    try {
      // LibTorch's runner for the package's device, as its package loader builds it.
      auto& registry = torch::inductor::getAOTIModelRunnerRegistry();
      c10::Device runner_device(key);
      if (device.has_index()) runner_device.set_index(device.index());
      const std::string cubins = unpacked_->path() + "/" + package.layout.model_dir;
      if (const auto it = registry.find(key); it != registry.end()) {
        runner_ = it->second(library, 1, runner_device.str(), cubins, /*run_single_threaded=*/false);
      } else if (device.is_cpu()) {
        runner_ = std::make_unique<torch::inductor::AOTIModelContainerRunnerCpu>(library, 1, false);
      } else {
        throw TrialInputError(
            fmt::format("model '{}' is an AOTInductor package for {}, for which this LibTorch has no runner",
                        spec.model, excerpt(key)));
      }
      if (!package.layout.blob.empty())
        runner_->update_constant_buffer_from_blob(unpacked_->path() + "/" + package.layout.blob);
      graph_digest_ = compiled_source_digest(spec.model);
    } catch (const TrialInputError&) {
      throw;
    } catch (const std::exception& e) {
      throw TrialInputError(fmt::format("model '{}' is an AOTInductor package that cannot be loaded: {}", spec.model,
                                        excerpt(error_text(e), 600)));
    }
    const Inputs in = load_inputs(spec, device);
    if (!in.kwargs.empty())
      throw TrialInputError(
          "an AOTInductor package takes its inputs by position: give a tensor or a tuple of tensors, not a dict");
    for (const auto& a : in.args) {
      if (!a.isTensor())
        throw TrialInputError("an AOTInductor package takes tensors only: its inputs file holds something else");
      inputs_.push_back(a.toTensor());
    }
    descriptions_ = in.descriptions;
    return descriptions_;
  }

  std::map<std::string, std::string> package() const override { return package_; }

  std::vector<std::string> check() override {
    try {
      (void)runner_->run(inputs_);
    } catch (const std::exception& e) {
      // The runner's own text names only its failed call; the kernel's reason went to the log.
      throw TrialInputError(
          fmt::format("the compiled package rejects the inputs ({}): a package runs the input shapes and "
                      "dtypes it was compiled for",
                      fmt::join(descriptions_, ", ")));
    }
    // The release that compiled the package, where its metadata names it (torch writes none; the
    // GUIDE's snippet adds "torch_version"). A package from another release loads and runs, both ways
    // between 2.11 and 2.15 (its library calls torch through AOTInductor's C shim), with the outputs
    // Python's aoti_load_package gives; but its fused kernels are that release's code, so an upgrade
    // audit of the package tests only the ATen calls it makes.
    const auto release = [](const std::string& v) { return v.substr(0, v.find('+')); };
    if (const auto it = package_.find("torch_version");
        it != package_.end() && release(it->second) != release(TORCH_VERSION))
      return {
          fmt::format("this AOTInductor package was compiled by torch {} and runs under torch {}: its fused "
                      "kernels are {}'s code and only the ATen calls it makes are {}'s (compile it again under {} "
                      "to audit that release's compiler)",
                      excerpt(it->second), TORCH_VERSION, excerpt(release(it->second)), TORCH_VERSION, TORCH_VERSION)};
    return {};
  }

  // The package's constants by their original names ("fc.weight"), sorted: the runner's map has no order.
  std::map<std::string, at::Tensor> constants() const {
    const auto constants = runner_->extract_constants_map(/*use_inactive=*/false);
    const auto original = runner_->getConstantNamesToOriginalFQNs();
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

  std::vector<report::TensorDigest> state_digests() override {
    Recorder rec(false);
    for (const auto& [name, t] : constants()) rec.add("constant/" + name, t);
    for (size_t i = 0; i < inputs_.size(); ++i) rec.add(fmt::format("input/{}", i), inputs_[i]);
    return std::move(rec.tensors());
  }

  c10::IValue call(const std::vector<c10::IValue>& args) override {
    std::vector<at::Tensor> tensors;
    for (const auto& a : args) tensors.push_back(a.toTensor());
    return c10::IValue(runner_->run(tensors));
  }

  void run(Recorder& rec, std::vector<report::TensorDigest>&) override {
    for (const auto& [name, t] : constants()) rec.add("constant/" + name, t);
    const std::vector<at::Tensor> out = runner_->run(inputs_);
    for (size_t i = 0; i < out.size(); ++i) rec.add(fmt::format("output/{}", i), out[i]);
  }

 private:
  std::map<std::string, std::string> package_;
  std::optional<UnpackFolder> unpacked_;  // declared before the runner: removed after it unloads the library
  std::unique_ptr<torch::inductor::AOTIModelContainerRunner> runner_;
  std::string graph_digest_;
  std::vector<at::Tensor> inputs_;
  std::vector<std::string> descriptions_;
};

}  // namespace

std::unique_ptr<Target> open_aoti_target() { return std::make_unique<AotiTarget>(); }

}  // namespace ra::targets
