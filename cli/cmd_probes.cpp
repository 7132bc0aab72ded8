// SPDX-License-Identifier: Apache-2.0
// `repro-audit probes [--list] [--only GLOB] ...`: the built-in probe suite (probes/), measured on
// this machine under flag configurations, and compared with the knowledge base.
#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/knowledge/knowledge.h"
#include "audit/probes/probe_audit.h"
#include "audit/probes/probe_info.h"
#include "audit/trial/trials.h"
#include "cli/command_table.h"
#include "cli/common.h"
#include "reports/render.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>

namespace ra::cli {
namespace {

struct ProbesArgs : AuditArgs {
  bool list = false;
  std::vector<std::string> only;
  bool no_census = false;
  std::string knowledge;
};

std::string documented_text(const probes::ProbeInfo& info, const KnowledgeBase& kb) {
  const KnowledgeEntry* e = info.kb.empty() ? nullptr : kb.find(info.kb);
  if (!e) return "not listed";
  return fmt::format("{} ({})", to_string(e->documented), e->device);
}

int list(const ProbesArgs& a, const KnowledgeBase& kb) {
  const auto selected = select_probes(probe_catalogue(a.libraries), a.only);
  if (a.out.json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& i : selected) {
      std::vector<std::string> devices;
      if (i.cpu) devices.emplace_back("cpu");
      if (i.cuda) devices.emplace_back("cuda");
      const KnowledgeEntry* e = i.kb.empty() ? nullptr : kb.find(i.kb);
      out.push_back({{"name", i.name},
                     {"family", i.family},
                     {"op", i.op},
                     {"devices", devices},
                     {"direction", probes::to_string(i.direction)},
                     {"role", probes::to_string(i.role)},
                     {"knowledge_id", i.kb.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(i.kb)},
                     {"documented", e ? to_string(e->documented) : "not-listed"},
                     {"documented_device", e ? nlohmann::ordered_json(e->device) : nlohmann::ordered_json(nullptr)},
                     {"form", i.form}});
    }
    write_stdout(out.dump(2) + "\n");
    return 0;
  }
  std::string text = fmt::format("{:<34} {:<15} {:<34} {:<9} {:<9} {}\n", "probe", "family", "op", "device",
                                 "direction", "documented");
  for (const auto& i : selected) {
    const std::string devices = i.cpu && i.cuda ? "cpu,cuda" : i.cpu ? "cpu" : "cuda";
    text += fmt::format("{:<34} {:<15} {:<34} {:<9} {:<9} {}{}\n", i.name, i.family, i.op, devices,
                        probes::to_string(i.direction), documented_text(i, kb),
                        i.role == probes::Role::Control ? ", control" : "");
  }
  text += fmt::format("{} probes\n", selected.size());
  write_stdout(text);
  return 0;
}

int execute(const ProbesArgs& a, const GlobalOptions& global) {
  const KnowledgeBase kb = load_knowledge(a.knowledge.empty() ? knowledge_path() : a.knowledge);
  ProbeRunOptions o;
  o.device = Device::parse(a.device);
  if (a.list) return list(a, kb);
  o.only = a.only;
  o.census = !a.no_census;
  fill_session(o, a, global, default_probe_config_names(o.device));
  o.shard = shard_option(a);
  o.knowledge_digest = file_digest(a.knowledge.empty() ? knowledge_path() : a.knowledge, "knowledge base");
  const ReportJudges judges = load_judges(a, o);
  keep_tensors_option(a.out, judges, o);
  return finish_report(run_probe_suite(o, kb), a.out, judges);
}

}  // namespace

Action attach_probes(CLI::App& sub, const GlobalOptions& global) {
  auto a = std::make_shared<ProbesArgs>();
  sub.add_flag("--list", a->list, "list the probes (name, family, op, device, direction, documented status) and exit");
  sub.add_option("--only", a->only,
                 "run only probes whose name or family matches a shell glob (repeatable, or comma-separated)")
      ->delimiter(',');
  sub.add_flag("--no-census", a->no_census, "skip the alert census (one more run of every probe under det-warn)");
  add_audit_options(sub, *a,
                    {"default,det,threads-1,mkl-cbwr on CPU, default,det,benchmark,cudnn-det on CUDA",
                     "seconds before a child (running many probes) is killed; the running probe is recorded as "
                     "timeout and the rest run again",
                     "shared library to load in every child (repeatable); one exporting ra_probe_plugin_v1 adds "
                     "probes"});
  add_baseline_tensors_option(sub, a->out);
  sub.add_option("--knowledge", a->knowledge, "knowledge-base file (default: share/repro-audit/knowledge/ops.json)");
  return [a, &global] { return execute(*a, global); };
}

}  // namespace ra::cli
