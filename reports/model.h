// SPDX-License-Identifier: Apache-2.0
// The report model: one data structure that every renderer (text, JSON, JUnit, Markdown, HTML)
// reads. It is filled by audit/ and depends on nothing but the standard library and
// nlohmann::json (for the opaque environment fingerprint).
//
// A report is a head that every audit fills (tool, command, environment, allowlist, baseline, shard,
// verdict, exit code, timing) and a body that is one closed alternative chosen by the audit's kind
// (`Body`): the model of `run`, the command of `exec`, the probes of `probes` (each a list of
// targets of its own kind, and a merge of shards is a body of theirs), the sweep of `invariance`,
// the checks of `selftest`. The kind is written in the JSON by its name (`kKinds`) and read back in
// one place. Every consumer (renderers, the JSON writer and both readers, finalize, baseline,
// allowlist, merge) dispatches on it with one `std::visit` over an `overloaded` set, so a new kind
// is one more alternative and a row of `kKinds`, and the compiler lists every place that must say
// what to do with it.
//
// The model is split by concern, and this header keeps only the `Report` that joins them (and what
// is computed over a whole report): core_model.h (verdicts, digests, statistics, trials),
// trace_model.h, probe_model.h, replay_model.h, exec_model.h, target_model.h (a target and its
// configurations), baseline_model.h, fleet_model.h and selftest_model.h. Each concern's JSON writer
// and reader sit side by side in the file beside its header (trace_json.cpp, ...; json_parts.h),
// so a new field touches one header and that file; json.cpp writes and reads the `Report` itself.
// What is computed over a concern's structs sits in <concern>_model.cpp (model.cpp: the report's).
// Include the concern headers you need rather than this one.
//
// Determinism of the tool's own output: every list here is kept in a defined order (targets as
// given, configurations as given, tensors in execution order, trials by repeat index), and
// everything that depends on wall-clock time lives in `Timing` sections that renderers keep apart.
#pragma once

#include "reports/baseline_model.h"
#include "reports/core_model.h"
#include "reports/exec_model.h"
#include "reports/fleet_model.h"
#include "reports/invariance_model.h"
#include "reports/probe_model.h"
#include "reports/selftest_model.h"
#include "reports/target_model.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace ra::report {

inline constexpr int kSchemaVersion = 1;

// Each kind with targets holds targets of its own kind: what every target shares (`common`,
// target_model.h) and the facts only that kind has (`facts`).
struct RunTarget {
  Target common;
  RunFacts facts;
};
struct ExecTarget {
  Target common;
  ExecFacts facts;
};
struct ProbeTarget {
  Target common;
  ProbeFacts facts;
};

// `run`, and a merge of its shards: the model audited, with its configurations.
struct RunBody {
  std::vector<RunTarget> targets;
};

// `exec`, and a merge of its shards: the command audited, with its configurations.
struct ExecBody {
  std::vector<ExecTarget> targets;
};

// `probes`, and a merge of its shards: one target per probe, and with --census the alerts
// cross-tabulated.
struct ProbesBody {
  std::vector<ProbeTarget> targets;
  std::optional<Census> census;
};

// The body of a report, chosen by the audit's kind. `invariance` (reports/invariance_model.h) and
// `selftest` (reports/selftest_model.h) have no targets.
using Body = std::variant<RunBody, ExecBody, ProbesBody, Invariance, SelfTest>;

// The kinds by name, one row per alternative of Body in its order: the name a JSON report and a
// baseline file carry as "kind", read back in one place (reports/json.cpp, `read_kind`), and what
// the kind calls a target (each target's "kind" in the JSON; "" for a kind without targets).
struct KindName {
  std::string_view name;
  std::string_view target;
};
// clang-format off
inline constexpr std::array<KindName, 5> kKinds = {{
    {"run",        "model"},    // RunBody
    {"exec",       "command"},  // ExecBody
    {"probes",     "probe"},    // ProbesBody
    {"invariance", ""},         // Invariance
    {"selftest",   ""},         // SelfTest
}};
// clang-format on
static_assert(kKinds.size() == std::variant_size_v<Body>, "kKinds has one row per alternative of Body");

// The row of a body's kind, and of the alternative B.
const KindName& kind_of(const Body& body);
template <class B, size_t I = 0>
constexpr size_t body_index() {
  static_assert(I < std::variant_size_v<Body>, "not an alternative of Body");
  if constexpr (std::is_same_v<B, std::variant_alternative_t<I, Body>>)
    return I;
  else
    return body_index<B, I + 1>();
}
template <class B>
constexpr const KindName& kind_row() {
  return kKinds[body_index<B>()];
}
// The empty alternative a kind's name stands for; nullopt for a name no row has.
std::optional<Body> body_of_kind(std::string_view name);

// The visitor for `std::visit`: one lambda per alternative, `[](const auto&)` only where every kind
// is truly treated alike.
template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
// Spelled out for clang before 17 (the fuzz build), which lacks C++20's deduction for aggregates.
template <class... F>
overloaded(F...) -> overloaded<F...>;

// The shared part of each target of a body (`common`), in order, whatever its kind: `T` is Target
// or const Target. What treats every target alike (loops, timing lists, shard bookkeeping) walks
// these; what a kind means is decided by visiting the body. The targets stay in the body: a list
// lives only as long as the body is left as it is.
template <class T>
class TargetRefs {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::remove_const_t<T>;
    using difference_type = std::ptrdiff_t;
    using pointer = T*;
    using reference = T&;
    iterator() = default;
    explicit iterator(typename std::vector<T*>::const_iterator at) : at_(at) {}
    T& operator*() const { return **at_; }
    T* operator->() const { return *at_; }
    iterator& operator++() {
      ++at_;
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++at_;
      return old;
    }
    bool operator==(const iterator& other) const { return at_ == other.at_; }
    bool operator!=(const iterator& other) const { return at_ != other.at_; }

   private:
    typename std::vector<T*>::const_iterator at_;
  };

  TargetRefs() = default;
  explicit TargetRefs(std::vector<T*> items) : items_(std::move(items)) {}
  // A list to change is also a list to read.
  template <class U, class = std::enable_if_t<std::is_same_v<T, const U>>>
  TargetRefs(const TargetRefs<U>& other) : items_(other.pointers().begin(), other.pointers().end()) {}  // NOLINT

  iterator begin() const { return iterator(items_.begin()); }
  iterator end() const { return iterator(items_.end()); }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  T& operator[](size_t i) const { return *items_[i]; }
  T& front() const { return *items_.front(); }
  const std::vector<T*>& pointers() const { return items_; }

 private:
  std::vector<T*> items_;
};
using Targets = TargetRefs<Target>;
using ConstTargets = TargetRefs<const Target>;

// The shared part of each target of a body that has them (run, exec, probes); none for invariance
// and selftest.
Targets common_targets(Body& body);
ConstTargets common_targets(const Body& body);
// Keeps the targets of a body whose index `keep` accepts, in order, with their kind's facts.
void keep_targets(Body& body, const std::function<bool(size_t)>& keep);

struct Report {
  std::string tool_version;
  std::vector<std::string> command;  // argv, for replay
  nlohmann::ordered_json environment;
  Body body;
  std::vector<std::string> allowlist_expired;  // --allowlist: expired entries that matched, one sentence each
  std::vector<std::string> allowlist_notes;  // --allowlist: entries that did nothing, one sentence each (no exit code)
  std::optional<BaselineComparison> baseline;  // --baseline, compare
  std::optional<Tolerance> tolerance;          // --atol/--rtol as given (statistics count against it)
  bool tolerant = false;                       // --tolerant: a divergence within tolerance does not fail
  std::optional<AutoRepeats> auto_repeats;     // --repeats auto
  std::optional<ShardInfo> shard;              // --shard (absent from a merged report)
  std::optional<Fleet> fleet;                  // merge only
  Verdict verdict = Verdict::Reproducible;
  int exit_code = 0;
  double wall_ms = 0;      // timing
  std::string contention;  // timing: children that shared a GPU (audit/trial/placement.h), "" when none

  // common_targets(body): the shared part of each target, whatever its kind; none for invariance and
  // selftest, whose results are not targets.
  ConstTargets targets() const { return common_targets(body); }
  Targets targets() { return common_targets(body); }
};

// True when a baseline result fails the exit code: a regression, a nondeterministic result
// whose configuration --allowlist did not allow in this report, or (--fail-on-explained) an
// explained one.
bool baseline_failure(const Report& report, const BaselineResult& result);

// The verdict as the renderers print it: to_string(verdict), except that findings the exit code
// accepted are not hidden behind "reproducible": "diverged (allowed: known scatter in the loss)",
// "raised (allowed: ...)", "diverged (within tolerance, --tolerant)". For a target or a report.
std::string verdict_text(const Target& target);
std::string verdict_text(const Report& report);

// Overall verdict and exit code from the targets (precedence: diverged/raised > crashed/timeout >
// reproducible; skipped does not fail). A configuration with `allowed_by` counts as reproducible;
// an expired allowlist entry (`allowlist_expired`) makes the exit code 1. A target's restart-replay counts too: diverged as diverged,
// crashed as crashed; inconclusive does not change the verdict. A baseline result that
// `baseline_failure` counts makes the exit code 1 (the verdict stays what the targets say). A
// self-test's failed check makes the exit code 1. With `tolerant`, a diverged configuration
// within tolerance counts as reproducible for the exit code (its verdict stays diverged).
void finalize(Report& report);

// Why the verdict is incomplete (exit 4), in one line, for stderr: the first configuration (or
// restart-replay, or invariance's negative control) that crashed, timed out or proved nothing, with
// its own reason ("model.pt, configuration det: repeat 0: ..."); "" when nothing in the report
// makes it incomplete. finish_report prints it, so that -q and --json still say why.
std::string incomplete_reason(const Report& report);

}  // namespace ra::report
