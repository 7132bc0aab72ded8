// SPDX-License-Identifier: Apache-2.0
#include "worker/services/service_table.h"

#include "audit/common/device.h"
#include "worker/runtime/cuda_loader.h"

#include <nlohmann/json.hpp>

#include <array>
#include <fstream>
#include <string>

namespace ra::services {
namespace {

// clang-format off
constexpr Service kWorkerCommands[] = {
    {{"env",          "the environment fingerprint",                     false, attach_env},          Cuda::Always},
    {{"lint",         "static scan of a model's graph",                  false, attach_lint},         Cuda::Never},
    {{"diff",         "bitwise diff of two torch.save files",            false, attach_diff},         Cuda::Never},
    {{"__child",      "run one trial, probe child or preflight",         true,  attach_child},        Cuda::Spec},
    {{"__stats",      "divergence statistics between dumps",             true,  attach_stats},        Cuda::Never},
    {{"__catalogue",  "the probe catalogue",                             true,  attach_catalogue},    Cuda::Never},
    {{"__artifacts",  "what exec's artifacts hold and how they differ",  true,  attach_artifacts},    Cuda::Never},
    {{"__op_class",   "the class of a trace's first differing op",       true,  attach_op_class},     Cuda::Never},
    {{"__selftest",   "the self-test's in-process checks",               true,  attach_selftest},     Cuda::DeviceArgument},
    {{"__invariance", "one configuration's batch-invariance sweep",      true,  attach_invariance},   Cuda::Request},
};
// clang-format on
static_assert(std::size(kWorkerCommands) == 10, "a worker command was added or removed");

// The command line's table: the first column of the one above.
constexpr auto kCommands = [] {
  std::array<Command, std::size(kWorkerCommands)> out{};
  for (size_t i = 0; i < out.size(); ++i) out[i] = kWorkerCommands[i].command;
  return out;
}();

// The JSON document of a file a command reads, or a discarded value when it cannot be read.
nlohmann::json cuda_file(const char* path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// A member's text, or "" when it is missing or not a text.
std::string text_of(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : "";
}

bool names_cuda(const nlohmann::json& spec) { return Device::of(text_of(spec, "device")).is_cuda(); }

}  // namespace

std::span<const Command> commands() { return kCommands; }

bool needs_cuda(int argc, char** argv) {
  if (cuda_forced_by_environment()) return true;
  int i = 1;
  while (i < argc && argv[i][0] == '-') ++i;  // global flags: -v, -q
  if (i >= argc) return false;
  const std::string name = argv[i];
  const char* argument = i + 1 < argc ? argv[i + 1] : nullptr;
  for (const auto& s : kWorkerCommands) {
    if (name != s.command.name) continue;
    switch (s.cuda) {
      case Cuda::Never:
        return false;
      case Cuda::Always:
        return true;
      case Cuda::DeviceArgument:
        return argument != nullptr && Device::of(argument).is_cuda();
      case Cuda::Spec: {
        const auto spec = argument != nullptr ? cuda_file(argument) : nlohmann::json();
        return names_cuda(spec) || text_of(spec, "task") == "preflight";
      }
      case Cuda::Request: {  // its request holds a trial spec
        const auto request = argument != nullptr ? cuda_file(argument) : nlohmann::json();
        if (!request.is_object() || !request.contains("spec") || !request.at("spec").is_object()) return false;
        const bool fingerprint = request.contains("fingerprint") && request.at("fingerprint") == true;
        return fingerprint || names_cuda(request.at("spec"));
      }
    }
  }
  return false;
}

}  // namespace ra::services
