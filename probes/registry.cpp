// SPDX-License-Identifier: Apache-2.0
#include "probes/registry.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <stdexcept>

namespace ra::probes {
namespace {

ProbeList& registry() {
  static ProbeList list;
  static std::once_flag built;
  std::call_once(built, [] {
    ProbeList all;
    register_convolution(all);
    register_scatter_index(all);
    register_pooling(all);
    register_resampling(all);
    register_losses(all);
    register_recurrent(all);
    register_embedding(all);
    register_reductions(all);
    register_linear_algebra(all);
    register_attention(all);
    register_memory(all);
    register_batch_invariance(all);
    std::set<std::string> seen;
    for (const auto& p : all) {
      const std::string& name = p->info().name;
      if (const std::string bad = check_probe_name(name); !bad.empty())
        throw std::logic_error("built-in probe '" + name + "': " + bad);
      if (!seen.insert(name).second) throw std::logic_error("built-in probe '" + name + "' is registered twice");
    }
    list = std::move(all);
  });
  return list;
}

}  // namespace

const ProbeList& all_probes() { return registry(); }

const Probe* find_probe(std::string_view name) {
  for (const auto& p : registry())
    if (p->info().name == name) return p.get();
  return nullptr;
}

std::string check_probe_name(std::string_view name) {
  if (name.empty()) return "the name is empty";
  const bool ok = std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
  });
  return ok ? "" : "a probe name may only hold a-z, 0-9, '_', '.' and '-'";
}

void add_probes(ProbeList extra) {
  ProbeList& list = registry();
  for (auto& p : extra) {
    const std::string& name = p->info().name;
    if (const std::string bad = check_probe_name(name); !bad.empty())
      throw std::invalid_argument("probe '" + name + "': " + bad);
    if (find_probe(name)) throw std::invalid_argument("probe '" + name + "' is already registered");
    list.push_back(std::move(p));
  }
}

}  // namespace ra::probes
