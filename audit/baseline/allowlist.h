// SPDX-License-Identifier: Apache-2.0
// Allowlists: known nondeterminism that a person has accepted, with a reason and an optional
// expiry date, honoured by `run`, `probes` and `lint` in their exit codes (`--allowlist FILE`).
//
// The file is JSON: {"allowlist": 1, "entries": [ENTRY, ...]}. An entry names exactly one of
// `op` (an op as the reports spell it: a root cause's op, a probe's op, a lint finding's op) or
// `target` (a probe name, or a model's file name), a non-empty `reason`, and optionally `expires`
// (YYYY-MM-DD, the last day it holds) and `config` (only that configuration). Anything else is an
// input error naming the file and the entry's index (exit 3), raised before any work.
//
// Matching. Only findings are allowed, never incomplete results: a target x configuration whose
// verdict is diverged or raised is *allowed* when an unexpired entry matches it:
//   - `target` equals the target's name (the model's file name, or the probe's name);
//   - `op`: for a probe, equals the probe's op; for a model audited with `--trace`, every root
//     cause of that configuration is covered by some `op` entry (without a trace, or with no root
//     cause, a model's divergence can only be allowed by `target`);
//   - `config`, when given, equals the configuration's name.
// For `lint`, a finding is allowed by an `op` entry equal to its op, or a `target` entry equal to
// the model's file name; entries with a `config` never match a lint finding (lint runs none).
// Crashes and timeouts (exit 4) and a diverged restart-replay are never allowed.
// For `invariance`, a variant configuration is allowed when each of its batch-variant outputs is
// covered by a `target` entry naming the model's file name, narrowed by an optional `output`
// ("output/0"; an entry with `output` matches nothing else).
//
// Expiry. An entry expires after its `expires` day: it holds through that day, and from the next
// day on it allows nothing, and each expired entry that matches a finding is reported as a failure
// of its own ("allowlist entry 2 for aten::index_add expired on 2026-10-01"), so the exit code is 1
// until someone renews or removes it. "Today" is the UTC date of the system clock, or
// REPRO_AUDIT_TODAY=YYYY-MM-DD (a testing aid, so that tests do not depend on the date). Today's
// date never enters a report: only the entries' own expiry dates do, so reports stay
// byte-identical between days as long as the same entries hold.
//
// Op spellings. The same op is spelled `aten::index_put` in `probes --list` and
// `aten::index_put_` in a root cause, and an overload may trail (`aten::add.Tensor`); an entry
// may leave out `aten::`. `same_op` compares the spellings after `normalise_op` (namespace
// `aten::` when none, no overload, no trailing `_` of the in-place form), in this one place.
//
// Entries that do nothing. An `op` entry given to `run` without `--trace` can only match a probe,
// so for a model it is said once on stderr and in the report; likewise an entry that matched no
// finding at all (`Report::allowlist_notes`). Neither changes the exit code. Each kind is one note
// and one warning however many entries it holds: the first three named, then a count.
//
// Entry indices are 0-based positions in `entries`. A config is allowed by the first unexpired
// entry that matches it (for root causes: the entry covering the first root cause).
//
// Flow. The file is read in cli/ before any work (load_allowlist_option, with today's date);
// apply_allowlist sets ConfigResult::allowed_by (LintFinding::allowed_by) and
// Report::allowlist_expired, then calls report::finalize. Renderers only print what the model holds.
#pragma once

#include "reports/lint_model.h"
#include "reports/model.h"

#include <optional>
#include <string>
#include <vector>

namespace ra {

struct AllowEntry {
  int index = 0;   // position in `entries`
  std::string op;  // exactly one of op and target is non-empty
  std::string target;
  std::string reason;
  std::string expires;  // "" when it never expires
  std::string config;   // "" for every configuration
  std::string output;   // with `target`: only this output of an invariance audit ("output/0"); "" for all
};

struct Allowlist {
  std::string path;
  std::vector<AllowEntry> entries;
};

// True for a valid calendar date spelled YYYY-MM-DD.
bool valid_date(const std::string& date);

// Parses an allowlist document; `path` names it in errors. Throws InputError.
Allowlist parse_allowlist(const std::string& text, const std::string& path);
// Reads and parses the file. Throws InputError (missing, unreadable, malformed).
Allowlist load_allowlist(const std::string& path);

// Today's UTC date as YYYY-MM-DD, or REPRO_AUDIT_TODAY when set (UsageError when that is not a date).
std::string today_date();

// "aten::index_put" for "aten::index_put_", "index_put", "aten::index_put_.Tensor" (see above).
std::string normalise_op(const std::string& op);
bool same_op(const std::string& a, const std::string& b);

// True when the entry has expired by `today` (YYYY-MM-DD).
bool expired(const AllowEntry& e, const std::string& today);

// Marks the allowed configurations (`allowed_by`), records expired matching entries in
// `allowlist_expired` and entries that did nothing in `allowlist_notes` (one note per kind, each
// also a warning on stderr), and calls report::finalize.
void apply_allowlist(report::Report& report, const Allowlist& list, const std::string& today);
// Likewise for lint findings; sets the exit code (1 when a finding is not allowed or an entry expired).
void apply_allowlist(report::LintReport& report, const Allowlist& list, const std::string& today);

}  // namespace ra
