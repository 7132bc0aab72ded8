// SPDX-License-Identifier: Apache-2.0
#include "audit/trial/placement.h"

#include "audit/common/errors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

namespace ra {
namespace {

std::vector<std::string> split_devices(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(sep, start);
    out.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

}  // namespace

std::vector<int> parse_devices(const std::string& text) {
  std::vector<int> out;
  for (const auto& item : split_devices(text, ',')) {
    const std::optional<Device> gpu = Device::from_string(item);
    if (!gpu || !gpu->is_cuda() || gpu->index < 0)
      throw UsageError(fmt::format("--devices '{}': '{}' is not a GPU (expected cuda:N, comma-separated)", text, item));
    const int n = gpu->index;
    if (std::find(out.begin(), out.end(), n) != out.end())
      throw UsageError(fmt::format("--devices '{}': cuda:{} is named twice", text, n));
    out.push_back(n);
  }
  return out;
}

std::optional<DevicePlacement> place_devices(const std::vector<int>& requested, const Device& device, int jobs,
                                             int available, const std::optional<std::string>& parent_visible) {
  std::vector<int> gpus = requested;
  if (!requested.empty()) {
    if (!device.is_cuda())
      throw UsageError(
          fmt::format("--devices places trials on GPUs: it goes with --device cuda, not {}", device.to_string()));
    if (device.index >= 0)
      throw UsageError(fmt::format("--devices names the GPUs itself: use --device cuda, not {}", device.to_string()));
    for (int g : requested)
      if (g >= available)
        throw UsageError(fmt::format("--devices names cuda:{}, but this machine shows {} GPU{}", g, available,
                                     available == 1 ? "" : "s"));
  } else {
    if (!device.is_cuda() || jobs < 2) return std::nullopt;
    if (device.index >= 0 || available < 2) {
      // One GPU for every child: the children see what the parent sees.
      DevicePlacement p;
      p.visible = {""};
      p.names = {device.index < 0 ? std::string("cuda:0") : device.to_string()};
      p.per_slot = jobs;
      return p;
    }
    for (int g = 0; g < std::min(jobs, available); ++g) gpus.push_back(g);
  }
  std::vector<std::string> parent;
  if (parent_visible) parent = split_devices(*parent_visible, ',');
  DevicePlacement p;
  for (int g : gpus) {
    p.names.push_back(fmt::format("cuda:{}", g));
    p.visible.push_back(parent_visible && static_cast<size_t>(g) < parent.size() ? parent[static_cast<size_t>(g)]
                                                                                 : std::to_string(g));
  }
  const int n = static_cast<int>(gpus.size());
  p.per_slot = std::max(1, (jobs + n - 1) / n);
  return p;
}

std::string contention_note(const DevicePlacement& placement, int jobs) {
  const int at_once = std::min(placement.per_slot, jobs);
  if (at_once < 2 || placement.names.empty()) return "";
  std::string gpus;
  for (const auto& name : placement.names) gpus += (gpus.empty() ? "" : ", ") + name;
  return fmt::format("up to {} children at once shared {}{}; their timings include each other's work", at_once,
                     placement.names.size() > 1 ? "each of " : "", gpus);
}

}  // namespace ra
