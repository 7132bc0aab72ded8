// SPDX-License-Identifier: Apache-2.0
#include "audit/baseline/allowlist.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/common/json_document.h"
#include "audit/common/log.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <set>

namespace ra {
namespace {

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw InputError(fmt::format("allowlist '{}': {}", path, what));
}

[[noreturn]] void bad_entry(const std::string& path, size_t i, const std::string& what) {
  throw InputError(fmt::format("allowlist '{}': entry {}: {}", path, i, what));
}

std::string string_field(const nlohmann::json& e, const char* key, const std::string& path, size_t i) {
  if (!e.contains(key)) return "";
  if (!e[key].is_string()) bad_entry(path, i, fmt::format("'{}' must be a string", key));
  const std::string s = e[key].get<std::string>();
  if (s.empty()) bad_entry(path, i, fmt::format("'{}' must not be empty", key));
  return s;
}

// What an entry names, for messages: its op or its target.
std::string subject(const AllowEntry& e) { return e.op.empty() ? e.target : e.op; }

// Several entries of one kind in one sentence, however many: "allowlist entries 0 (a), 3 (b), 4 (c)
// and 99997 more (100000 in all)". A list of 100,000 stale entries is one note, not 100,000 lines.
std::string entries_text(const std::vector<const AllowEntry*>& entries) {
  constexpr size_t kNamed = 3;
  std::vector<std::string> named;
  for (size_t i = 0; i < entries.size() && i < kNamed; ++i)
    named.push_back(fmt::format("{} ({})", entries[i]->index, excerpt(subject(*entries[i]))));
  return fmt::format(
      "allowlist entries {}{}", fmt::join(named, ", "),
      entries.size() > kNamed ? fmt::format(" and {} more ({} in all)", entries.size() - kNamed, entries.size()) : "");
}

std::string expired_message(const AllowEntry& e) {
  return fmt::format("allowlist entry {} for {} expired on {}", e.index, subject(e), e.expires);
}

bool config_matches(const AllowEntry& e, const std::string& config) { return e.config.empty() || e.config == config; }

// Collects the matches of one finding: the first unexpired entry, and every expired one.
struct Matches {
  const AllowEntry* allowed = nullptr;
  std::vector<const AllowEntry*> expired;
};

template <typename Pred>
Matches match(const Allowlist& list, const std::string& today, Pred pred) {
  Matches m;
  for (const auto& e : list.entries) {
    if (!pred(e)) continue;
    if (expired(e, today))
      m.expired.push_back(&e);
    else if (!m.allowed)
      m.allowed = &e;
  }
  return m;
}

report::AllowedBy allowed_by(const AllowEntry& e) { return {e.index, e.reason, e.expires}; }

// Records expired entries once each, in entry order.
void note_expired(std::set<int>& seen, const Matches& m) {
  for (const auto* e : m.expired) seen.insert(e->index);
}

// Entries that matched something, allowed or expired.
void note_used(std::set<int>& used, const Matches& m) {
  if (m.allowed) used.insert(m.allowed->index);
  for (const auto* e : m.expired) used.insert(e->index);
}

std::vector<std::string> expired_messages(const Allowlist& list, const std::set<int>& seen) {
  std::vector<std::string> out;
  for (int i : seen) out.push_back(expired_message(list.entries[static_cast<size_t>(i)]));
  return out;
}

bool finding(report::Verdict v) { return v == report::Verdict::Diverged || v == report::Verdict::Raised; }

// An invariance report's variant configurations: allowed when every batch-variant output is covered
// by an unexpired entry whose `target` is the model's file name and whose `output`, if any, is it.
// The entry that allows the first of `items` when every item has an entry that `allows(entry, item)`
// and that has not expired, else nullptr; expired and used entries are noted on the way.
template <class Items, class Allows>
const AllowEntry* allow_every(const Allowlist& list, const std::string& today, const Items& items, Allows allows,
                              std::set<int>& seen, std::set<int>& used) {
  const AllowEntry* first = nullptr;
  bool all = true;
  for (const auto& item : items) {
    const Matches m = match(list, today, [&](const AllowEntry& e) { return allows(e, item); });
    note_expired(seen, m);
    note_used(used, m);
    if (!m.allowed)
      all = false;
    else if (!first)
      first = m.allowed;
  }
  return all ? first : nullptr;
}

void allow_invariance(report::Invariance& inv, const Allowlist& list, const std::string& today, std::set<int>& seen,
                      std::set<int>& used) {
  const std::string model = std::filesystem::path(inv.model).filename().string();
  for (auto& c : inv.configs) {
    c.allowed_by.reset();
    if (c.verdict != "variant") continue;
    const auto allows = [&](const AllowEntry& e, const std::string& output) {
      return config_matches(e, c.config) && e.target == model && (e.output.empty() || e.output == output);
    };
    if (const AllowEntry* first = allow_every(list, today, report::variant_outputs(c), allows, seen, used))
      c.allowed_by = allowed_by(*first);
  }
}

}  // namespace

std::string normalise_op(const std::string& op) {
  std::string out = op.find("::") == std::string::npos ? "aten::" + op : op;
  if (const auto dot = out.find('.', out.find("::") + 2); dot != std::string::npos) out.resize(dot);
  if (out.size() > 1 && out.back() == '_' && out[out.size() - 2] != '_') out.pop_back();  // not "__and__"
  return out;
}

bool same_op(const std::string& a, const std::string& b) { return normalise_op(a) == normalise_op(b); }

bool valid_date(const std::string& d) {
  if (d.size() != 10 || d[4] != '-' || d[7] != '-') return false;
  for (int i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (d[static_cast<size_t>(i)] < '0' || d[static_cast<size_t>(i)] > '9') return false;
  const int y = std::stoi(d.substr(0, 4)), m = std::stoi(d.substr(5, 2)), day = std::stoi(d.substr(8, 2));
  if (m < 1 || m > 12 || day < 1) return false;
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return day <= kDays[m - 1] + (m == 2 && leap ? 1 : 0);
}

Allowlist parse_allowlist(const std::string& text, const std::string& path) {
  nlohmann::json doc;
  try {
    doc = parse_json_document<nlohmann::json>(text, fmt::format("allowlist '{}'", path));
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number too large
    bad(path, fmt::format("not valid JSON ({})", e.what()));
  }
  if (!doc.is_object()) bad(path, "the document must be an object");
  for (const auto& [key, value] : doc.items())
    if (key != "allowlist" && key != "entries") bad(path, fmt::format("unknown key '{}'", key));
  if (!doc.contains("allowlist") || !doc["allowlist"].is_number_integer() || doc["allowlist"].get<int64_t>() != 1)
    bad(path, "\"allowlist\" must be 1 (the format version)");
  if (!doc.contains("entries") || !doc["entries"].is_array()) bad(path, "\"entries\" must be an array");
  Allowlist list;
  list.path = path;
  const nlohmann::json& entries = doc["entries"];
  for (size_t i = 0; i < entries.size(); ++i) {
    const nlohmann::json& e = entries[i];
    if (!e.is_object()) bad_entry(path, i, "must be an object");
    for (const auto& [key, value] : e.items())
      if (key != "op" && key != "target" && key != "reason" && key != "expires" && key != "config" && key != "output")
        bad_entry(path, i, fmt::format("unknown key '{}'", key));
    AllowEntry a;
    a.index = static_cast<int>(i);
    a.op = string_field(e, "op", path, i);
    a.target = string_field(e, "target", path, i);
    if (a.op.empty() == a.target.empty()) bad_entry(path, i, "needs exactly one of 'op' and 'target'");
    a.reason = string_field(e, "reason", path, i);
    if (a.reason.empty()) bad_entry(path, i, "needs a non-empty 'reason'");
    a.expires = string_field(e, "expires", path, i);
    if (e.contains("expires") && !valid_date(a.expires))
      bad_entry(path, i, fmt::format("'expires' must be a date YYYY-MM-DD, not '{}'", a.expires));
    a.config = string_field(e, "config", path, i);
    a.output = string_field(e, "output", path, i);
    if (!a.output.empty() && a.target.empty())
      bad_entry(path, i, "'output' narrows a 'target' entry (an invariance audit's model file): add 'target'");
    list.entries.push_back(std::move(a));
  }
  return list;
}

Allowlist load_allowlist(const std::string& path) { return parse_allowlist(read_file(path, "allowlist"), path); }

std::string today_date() {
  if (const char* env = std::getenv("REPRO_AUDIT_TODAY"); env && *env) {
    if (!valid_date(env)) throw UsageError(fmt::format("REPRO_AUDIT_TODAY must be a date YYYY-MM-DD, not '{}'", env));
    return env;
  }
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  return fmt::format("{:04}-{:02}-{:02}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
}

bool expired(const AllowEntry& e, const std::string& today) { return !e.expires.empty() && e.expires < today; }

namespace {

// A target the allowlist judges: its shared part, and a probe's op (null for a model or a command,
// whose divergence is matched by its root causes).
struct Judged {
  report::Target* target;
  const std::string* probe_op;
};

// The targets' findings: by target name, by a probe's op, or a model's divergence by its root
// causes (every one must be covered). Notes whether models were traced.
void allow_targets(const std::vector<Judged>& targets, const Allowlist& list, const std::string& today,
                   std::set<int>& seen, std::set<int>& used, bool& traced_models, bool& untraced_models) {
  for (const Judged& j : targets)
    for (const auto& c : j.target->configs)
      if (!j.probe_op) (c.trace ? traced_models : untraced_models) = true;
  for (const Judged& j : targets) {
    report::Target* t = j.target;
    const std::string* op = j.probe_op;  // not a structured binding: clang 14 cannot capture one
    for (auto& c : t->configs) {
      c.allowed_by.reset();
      if (!finding(c.verdict)) continue;
      const Matches by_target = match(list, today, [&](const AllowEntry& e) {
        return config_matches(e, c.name) && e.output.empty() &&
               (e.target == t->name || (op && !e.op.empty() && same_op(e.op, *op)));
      });
      note_expired(seen, by_target);
      note_used(used, by_target);
      if (by_target.allowed) {
        c.allowed_by = allowed_by(*by_target.allowed);
        continue;
      }
      // A model's divergence by its root causes: every one must be covered.
      if (op || !c.trace || c.trace->root_causes.empty()) continue;
      const auto allows = [&](const AllowEntry& e, const report::RootCause& rc) {
        return config_matches(e, c.name) && !e.op.empty() && same_op(e.op, rc.op);
      };
      if (const AllowEntry* first = allow_every(list, today, c.trace->root_causes, allows, seen, used))
        c.allowed_by = allowed_by(*first);
    }
  }
}

// The targets of run and exec (matched by name or root causes), and of probes (also by their op).
template <class Element>
std::vector<Judged> models(std::vector<Element>& targets) {
  std::vector<Judged> out;
  for (auto& t : targets) out.push_back({&t.common, nullptr});
  return out;
}
std::vector<Judged> probes(std::vector<report::ProbeTarget>& targets) {
  std::vector<Judged> out;
  for (auto& t : targets) out.push_back({&t.common, &t.facts.op});
  return out;
}

}  // namespace

void apply_allowlist(report::Report& report, const Allowlist& list, const std::string& today) {
  std::set<int> seen, used;
  bool traced_models = false, untraced_models = false;
  const auto targets = [&](const std::vector<Judged>& judged_targets) {
    allow_targets(judged_targets, list, today, seen, used, traced_models, untraced_models);
  };
  std::visit(report::overloaded{[&](report::RunBody& b) { targets(models(b.targets)); },
                                [&](report::ExecBody& b) { targets(models(b.targets)); },
                                [&](report::ProbesBody& b) { targets(probes(b.targets)); },
                                [&](report::Invariance& inv) { allow_invariance(inv, list, today, seen, used); },
                                [](report::SelfTest&) {}},
             report.body);
  report.allowlist_expired = expired_messages(list, seen);
  // Entries that did nothing, by why: an op a model's untraced run cannot match, or no finding.
  std::vector<const AllowEntry*> untraceable, unmatched;
  for (const auto& e : list.entries)
    if (!used.count(e.index))
      (!e.op.empty() && untraced_models && !traced_models ? untraceable : unmatched).push_back(&e);
  report.allowlist_notes.clear();
  if (untraceable.size() == 1)
    report.allowlist_notes.push_back(
        fmt::format("allowlist entry {} names op {}, which only a trace can match in a model: run with --trace",
                    untraceable[0]->index, untraceable[0]->op));
  else if (!untraceable.empty())
    report.allowlist_notes.push_back(fmt::format(
        "{} name ops, which only a trace can match in a model: run with --trace", entries_text(untraceable)));
  if (unmatched.size() == 1)
    report.allowlist_notes.push_back(
        fmt::format("allowlist entry {} ({}) matched no finding", unmatched[0]->index, subject(*unmatched[0])));
  else if (!unmatched.empty())
    report.allowlist_notes.push_back(fmt::format("{} matched no finding", entries_text(unmatched)));
  for (const auto& note : report.allowlist_notes) log::warn("{}", note);
  report::finalize(report);
}

void apply_allowlist(report::LintReport& report, const Allowlist& list, const std::string& today) {
  std::set<int> seen;
  const std::string model = std::filesystem::path(report.model).filename().string();
  for (auto& f : report.findings) {
    const Matches m = match(list, today, [&](const AllowEntry& e) {
      return e.config.empty() && e.output.empty() &&
             ((!e.op.empty() && same_op(e.op, f.op)) || (!e.target.empty() && e.target == model));
    });
    note_expired(seen, m);
    f.allowed_by.reset();
    if (m.allowed) f.allowed_by = allowed_by(*m.allowed);
  }
  report.allowlist_expired = expired_messages(list, seen);
  report.exit_code = report::lint_exit_code(report);
}

}  // namespace ra
