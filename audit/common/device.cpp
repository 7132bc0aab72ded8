// SPDX-License-Identifier: Apache-2.0
#include "audit/common/device.h"

#include "audit/common/errors.h"

#include <fmt/format.h>

#include <cstdlib>

namespace ra {

std::string Device::to_string() const {
  if (!is_cuda()) return "cpu";
  return index < 0 ? "cuda" : fmt::format("cuda:{}", index);
}

std::optional<Device> Device::from_string(const std::string& text) {
  if (text == "cpu") return Device{};
  if (text == "cuda") return Device{Kind::Cuda, -1};
  if (text.rfind("cuda:", 0) != 0) return std::nullopt;
  const std::string index = text.substr(5);
  if (index.empty() || index.size() > 4 || index.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return Device{Kind::Cuda, std::atoi(index.c_str())};
}

Device Device::parse(const std::string& text) {
  if (const auto d = from_string(text)) return *d;
  throw UsageError(fmt::format("unknown device '{}' (use cpu, cuda or cuda:N)", text));
}

Device Device::of(const std::string& text) {
  if (const auto d = from_string(text)) return *d;
  return text.rfind("cuda", 0) == 0 ? Device{Kind::Cuda, -1} : Device{};
}

std::string Device::canonical(const std::string& text) {
  const std::optional<Device> d = from_string(text);
  return d && d->is_cuda() && d->index < 0 ? "cuda:0" : text;
}

}  // namespace ra
