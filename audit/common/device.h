// SPDX-License-Identifier: Apache-2.0
// The device an audit runs on, as the user names it: `cpu`, `cuda` (the GPU CUDA makes current) or
// `cuda:N`. Parsed once at each edge: the command line (--device, parse), and the JSON between the
// front and the worker (the trial spec: from_string); everything between, the TrialSpec included,
// passes this type. Text appears only in JSON, on the command line and in the report's fields
// (to_string); the worker turns a Device into a c10::Device in one place
// (worker/runtime/child_support.cpp). Torch-free: the front uses it.
#pragma once

#include <optional>
#include <string>

namespace ra {

struct Device {
  enum class Kind { Cpu, Cuda };
  Kind kind = Kind::Cpu;
  int index = -1;  // N of cuda:N; -1 for cpu and for plain cuda

  static Device cpu() { return Device{}; }
  static Device cuda(int index = -1) { return Device{Kind::Cuda, index}; }

  bool is_cuda() const { return kind == Kind::Cuda; }
  // "cpu" or "cuda": the device type the knowledge base, the probes and the default configurations
  // are chosen by.
  std::string type() const { return is_cuda() ? "cuda" : "cpu"; }
  // "cpu", "cuda" or "cuda:N", as given.
  std::string to_string() const;
  bool operator==(const Device& other) const { return kind == other.kind && index == other.index; }
  bool operator!=(const Device& other) const { return !(*this == other); }

  // The device `text` names (cpu, cuda, cuda:N with N of at most four digits), or nullopt.
  static std::optional<Device> from_string(const std::string& text);
  // The same, for a --device value: throws UsageError "unknown device '...' (use cpu, cuda or cuda:N)".
  static Device parse(const std::string& text);
  // The device a report, or a request the worker sniffs before parsing it, names, where anything
  // not CUDA is the CPU (that text was parsed at the edge already).
  static Device of(const std::string& text);
  // "cpu" or "cuda:N" for a device text (plain "cuda" is device 0), so that the devices two
  // reports name compare by meaning; a text that names no device comes back as it is.
  static std::string canonical(const std::string& text);
};

}  // namespace ra
