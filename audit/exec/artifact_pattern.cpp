// SPDX-License-Identifier: Apache-2.0
#include "audit/exec/artifact_pattern.h"

#include "audit/common/errors.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

namespace ra::exec {

using detail::ComponentMatch;
using detail::Tok;
using detail::Token;

namespace {

constexpr size_t kNameMax = 255;  // NAME_MAX: no longer name can be in a folder

Token tok(Tok kind, char c = 0) { return Token{kind, c, {}, false}; }

std::vector<Token> compile_component(const std::string& text) {
  std::vector<Token> out;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 6, "{rank}") == 0) {
      out.push_back(tok(Tok::Digits));
      i += 6;
    } else if (text.compare(i, 7, "{trial}") == 0) {
      out.push_back(tok(Tok::Trial));
      i += 7;
    } else if (text[i] == '*') {
      if (out.empty() || out.back().kind != Tok::Star) out.push_back(tok(Tok::Star));
      ++i;
    } else if (text[i] == '?') {
      out.push_back(tok(Tok::Any));
      ++i;
    } else if (text[i] == '[') {
      size_t j = i + 1;
      bool negate = false;
      if (j < text.size() && (text[j] == '!' || text[j] == '^')) negate = true, ++j;
      const size_t first = j;
      if (j < text.size() && text[j] == ']') ++j;  // a ']' first is a member
      while (j < text.size() && text[j] != ']') ++j;
      if (j >= text.size()) {  // no closing ']': a literal '['
        out.push_back(tok(Tok::Lit, '['));
        ++i;
        continue;
      }
      out.push_back({Tok::Class, 0, text.substr(first, j - first), negate});
      i = j + 1;
    } else if (text[i] == '\\' && i + 1 < text.size()) {
      out.push_back(tok(Tok::Lit, text[i + 1]));
      i += 2;
    } else {
      out.push_back(tok(Tok::Lit, text[i]));
      ++i;
    }
  }
  return out;
}

bool in_class(const Token& t, char c) {
  bool hit = false;
  for (size_t i = 0; i < t.set.size(); ++i) {
    if (i + 2 < t.set.size() && t.set[i + 1] == '-') {
      const auto lo = static_cast<unsigned char>(t.set[i]), hi = static_cast<unsigned char>(t.set[i + 2]);
      if (lo <= static_cast<unsigned char>(c) && static_cast<unsigned char>(c) <= hi) hit = true;
      i += 2;
    } else if (t.set[i] == c) {
      hit = true;
    }
  }
  return hit != t.negate;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// An absolute path's components, `.` and `..` resolved by text.
std::vector<std::string> normal_components(const std::string& absolute) {
  std::vector<std::string> out;
  for (const auto& c : split(absolute)) {
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      if (!out.empty()) out.pop_back();
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

namespace detail {

bool literal(const std::vector<Token>& toks) {
  return std::all_of(toks.begin(), toks.end(),
                     [](const Token& t) { return t.kind == Tok::Lit || t.kind == Tok::Trial; });
}

std::string literal_name(const std::vector<Token>& toks, const std::string& trial) {
  std::string s;
  for (const auto& t : toks) s += t.kind == Tok::Trial ? trial : std::string(1, t.c);
  return s;
}

std::optional<ComponentMatch> match_component(const std::vector<Token>& toks, const std::string& name,
                                              const std::string& trial) {
  const size_t n = name.size(), nt = toks.size();
  if (n == 0 || n > kNameMax || name == "." || name == "..") return std::nullopt;
  if (name[0] == '.' && (toks.empty() || toks[0].kind != Tok::Lit))
    return std::nullopt;  // as glob: '*' skips hidden names
  size_t least = 0;
  for (const auto& t : toks)
    least += t.kind == Tok::Star ? 0 : t.kind == Tok::Trial && !trial.empty() ? trial.size() : 1;
  if (least > n) return std::nullopt;
  std::vector<uint8_t> ok((nt + 1) * (n + 1), 0);
  const auto at = [&](size_t t, size_t j) -> uint8_t& { return ok[t * (n + 1) + j]; };
  at(nt, n) = 1;
  for (size_t t = nt; t-- > 0;) {
    const Token& k = toks[t];
    for (size_t j = n + 1; j-- > 0;) {
      const bool more = j < n;
      switch (k.kind) {
        case Tok::Lit:
          at(t, j) = more && name[j] == k.c && at(t + 1, j + 1);
          break;
        case Tok::Any:
          at(t, j) = more && at(t + 1, j + 1);
          break;
        case Tok::Class:
          at(t, j) = more && in_class(k, name[j]) && at(t + 1, j + 1);
          break;
        case Tok::Star:
          at(t, j) = at(t + 1, j) || (more && at(t, j + 1));
          break;
        case Tok::Trial:
          if (!trial.empty()) {
            at(t, j) =
                name.compare(j, trial.size(), trial) == 0 && j + trial.size() <= n && at(t + 1, j + trial.size());
            break;
          }
          [[fallthrough]];
        case Tok::Digits:
          at(t, j) = more && is_digit(name[j]) && (at(t + 1, j + 1) || at(t, j + 1));
          break;
      }
    }
  }
  if (!at(0, 0)) return std::nullopt;
  ComponentMatch m;
  size_t j = 0;
  for (size_t t = 0; t < nt; ++t) {
    const Token& k = toks[t];
    size_t next = j + 1;
    if (k.kind == Tok::Star) {
      next = n;
      while (!at(t + 1, next)) --next;
    } else if (k.kind == Tok::Digits || (k.kind == Tok::Trial && trial.empty())) {
      size_t end = j;
      while (end < n && is_digit(name[end])) ++end;
      next = end;
      while (!at(t + 1, next)) --next;
    } else if (k.kind == Tok::Trial) {
      next = j + trial.size();
    }
    const std::string span = name.substr(j, next - j);
    if (k.kind == Tok::Trial)
      m.shown += "{trial}";
    else
      m.shown += span;
    if (k.kind == Tok::Digits) m.rank = span.size() > 6 ? -1 : std::stoi(span);
    j = next;
  }
  return m;
}

std::string join(const std::vector<std::string>& parts, size_t from) {
  std::string out;
  for (size_t i = from; i < parts.size(); ++i) out += (i > from ? "/" : "") + parts[i];
  return out;
}

std::string name_of(const std::string& shown, const std::vector<std::string>& parts) {
  return shown.empty() ? join(parts) : (shown == "/" ? "" : shown) + "/" + join(parts);
}

std::vector<std::vector<Token>> compiled(const ArtifactPattern& p) {
  std::vector<std::vector<Token>> out;
  for (const auto& c : p.below) out.push_back(compile_component(c));
  return out;
}

}  // namespace detail

using detail::join;
using detail::match_component;
using detail::name_of;

ArtifactPattern parse_artifact_pattern(const std::string& text) {
  if (text.empty()) throw UsageError("--artifact needs a path");
  if (text.size() > PATH_MAX)
    throw UsageError(fmt::format("--artifact '{}...' is longer than a path can be", text.substr(0, 60)));
  if (text.find('\0') != std::string::npos) throw UsageError("--artifact holds a NUL byte");
  ArtifactPattern p;
  p.text = text;
  for (size_t at = text.find('{'); at != std::string::npos; at = text.find('{', at + 1)) {
    const size_t close = text.find('}', at);
    const std::string name = close == std::string::npos ? text.substr(at) : text.substr(at, close - at + 1);
    if (name == "{trial}")
      p.trial = true;
    else if (name == "{rank}") {
      if (p.rank) throw UsageError(fmt::format("--artifact '{}' holds {{rank}} twice", text));
      p.rank = true;
    } else if (name == "{out}") {
      if (at != 0 || text.compare(5, 1, "/") != 0)
        throw UsageError(fmt::format(
            "--artifact '{}': {{out}} stands for $REPRO_AUDIT_OUT and may only start the path ({{out}}/FILE)", text));
      p.out = true;
    } else {
      throw UsageError(fmt::format(
          "--artifact '{}': unknown placeholder {} (placeholders: {{out}}, {{trial}}, {{rank}})", text, name));
    }
  }
  if (p.out) {
    p.root = -1;
    for (const auto& c : split(text.substr(6))) {
      if (c == "..")
        throw UsageError(fmt::format(
            "--artifact '{}': '..' leaves $REPRO_AUDIT_OUT; an {{out}} pattern names files inside it", text));
      if (!c.empty() && c != ".") p.below.push_back(c);
    }
    if (p.below.empty()) throw UsageError(fmt::format("--artifact '{}' names no file below {{out}}", text));
  }
  return p;
}

void place_artifact_pattern(ArtifactPattern& p, const std::string& cwd, const std::vector<std::string>& roots,
                            const std::vector<std::string>& cwd_aliases,
                            const std::vector<std::vector<std::string>>& root_aliases) {
  if (p.out) return;
  const std::vector<std::string> given = split(p.text);
  const bool absolute = p.text[0] == '/';
  const bool dotdot = std::find(given.begin(), given.end(), "..") != given.end();
  p.below.clear();
  p.bare = false;
  if (!absolute && !dotdot) {  // below the working directory, as written, and below {out}
    p.root = 0;
    p.bare = true;
    p.shown.clear();
    for (const auto& c : given)
      if (!c.empty() && c != ".") p.below.push_back(c);
    if (p.below.empty()) throw UsageError(fmt::format("--artifact '{}' names no file", p.text));
    return;
  }
  const std::vector<std::string> path = normal_components(absolute ? p.text : cwd + "/" + p.text);
  // The deepest folder that holds it: an --artifact-root always, the working directory only for an
  // absolute path without '..' (a '..' is allowed only where the user named the folder it reaches).
  int best = -2;
  size_t best_depth = 0;
  std::string best_shown;
  const auto consider = [&](int root, const std::string& folder) {
    const std::vector<std::string> f = normal_components(folder);
    if (f.size() >= path.size() || (best >= -1 && f.size() <= best_depth) ||
        !std::equal(f.begin(), f.end(), path.begin()))
      return;
    best = root;
    best_depth = f.size();
    best_shown = "/" + join(f);
  };
  for (size_t r = 0; r < roots.size(); ++r) {
    consider(static_cast<int>(r) + 1, roots[r]);
    if (r < root_aliases.size())
      for (const auto& a : root_aliases[r]) consider(static_cast<int>(r) + 1, a);
  }
  if (!dotdot) {
    consider(0, cwd);
    for (const auto& a : cwd_aliases) consider(0, a);
  }
  if (best < -1)
    throw UsageError(
        fmt::format("--artifact '{}' reaches outside the working directory: exec takes files only below it, or below "
                    "a folder named with --artifact-root DIR",
                    p.text));
  p.root = best;
  p.shown = best_shown;
  p.below.assign(path.begin() + static_cast<long>(best_depth), path.end());
}

std::optional<PathMatch> match_artifact_path(const ArtifactPattern& p, const std::string& path, int trial) {
  const std::vector<std::string> parts = split(path);
  if (parts.size() != p.below.size()) return std::nullopt;
  const std::string t = trial < 0 ? "" : std::to_string(trial);
  PathMatch m;
  std::vector<std::string> shown;
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto c = match_component(compile_component(p.below[i]), parts[i], t);
    if (!c) return std::nullopt;
    shown.push_back(c->shown);
    if (c->rank >= 0) m.rank = c->rank;
  }
  m.name = name_of(p.shown, shown);
  return m;
}

}  // namespace ra::exec
