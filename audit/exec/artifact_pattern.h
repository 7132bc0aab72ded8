// SPDX-License-Identifier: Apache-2.0
// exec's --artifact patterns matched one path component at a time (the patterns themselves, and
// parse_artifact_pattern, place_artifact_pattern and match_artifact_path: audit/exec/artifacts.h).
// The problem: the walk that takes artifacts opens one folder at a time through descriptors
// (never a path glob(3) would follow through symlinks), so it needs a matcher for one name against
// one pattern component, that no pattern can make slow. The approach: a component is compiled
// once into tokens (literal, ?, [class], *, {rank}'s digits, {trial}) and matched by a table of
// suffix matches. The cost: O(tokens x length) time and memory per name, no recursion.
#pragma once

#include "audit/exec/artifacts.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ra::exec::detail {

enum class Tok : uint8_t { Lit, Any, Class, Star, Digits, Trial };
struct Token {
  Tok kind = Tok::Lit;
  char c = 0;
  std::string set;  // Class: the characters and ranges between [ and ]
  bool negate = false;
};

struct ComponentMatch {
  std::string shown;  // the name with the run's number put back to {trial}
  int rank = -1;      // {rank}'s digits, -1 without (or too many digits)
};

// A pattern's components below its root, compiled.
std::vector<std::vector<Token>> compiled(const ArtifactPattern& p);

// A component with no wildcard and no {rank}: matched by its name, without reading the folder.
bool literal(const std::vector<Token>& toks);

// The name a literal component stands for in run `trial`.
std::string literal_name(const std::vector<Token>& toks, const std::string& trial);

// Whether `name` matches `toks` ("" for `trial`: any digits). A table of suffix matches (token t
// onwards against name[j..]), then one pass that takes each wildcard as long as the rest allows:
// O(tokens x length), no recursion, whatever the pattern.
std::optional<ComponentMatch> match_component(const std::vector<Token>& toks, const std::string& name,
                                              const std::string& trial);

// Components joined by '/', from `from` on.
std::string join(const std::vector<std::string>& parts, size_t from = 0);

// An artifact's name: its components below the root, after `shown` ("" below {out} or for a
// relative pattern, else the root).
std::string name_of(const std::string& shown, const std::vector<std::string>& parts);

}  // namespace ra::exec::detail
