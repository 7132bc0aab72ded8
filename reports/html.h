// SPDX-License-Identifier: Apache-2.0
// Internal to the HTML renderer (reports/html*.cpp): escaping, the stable element ids, small markup
// helpers, and the sections the other files write for render_html (reports/html.cpp opens with the
// essay on the document's design and its timing markers).
#pragma once

#include "reports/model.h"
#include "reports/render.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ra::report::html {

// Escapes text for HTML element content and double- or single-quoted attribute values: the markup
// characters (& < > " ') become entities; control characters other than tab, newline and carriage
// return, and bytes that are not UTF-8, become U+FFFD.
std::string esc(std::string_view s);

// Stable ids, by position in the model: "t3" (a target), "t3-c1" (its second configuration),
// "t3-c1-f2" (a fix candidate of that configuration).
std::string target_id(size_t target);
std::string config_id(size_t target, size_t config);
std::string fix_id(size_t target, size_t config, size_t candidate);

// The command line as a POSIX shell would take it back (arguments quoted where needed).
std::string shell_line(const std::vector<std::string>& argv);

// "float32[8x64]"
std::string tensor_type(const std::string& dtype, const std::vector<int64_t>& shape);

// Markup used across sections: a verdict badge, an escaped <code> span, and a message (one line as
// a paragraph, several as a <pre> block).
std::string badge(const char* verdict);
std::string badge(Verdict v);
std::string code(const std::string& s);
std::string message(const std::string& m);

// A section of the page: its id, the nav's label, and what writes it.
struct Section {
  const char* id;
  const char* label;
  std::function<void(std::string&)> write;
};

// What a page is made of, chosen by the report's kind: the title, the sections in order, and the
// body's clock figures for the timing section.
struct Page {
  std::string title;
  std::vector<Section> sections;
  std::string timing;
};

// What a kind with targets adds to the sections every such page shares, for its targets by index
// (reports/<kind>_render.cpp fills it; the frame writes the rest).
struct TargetParts {
  // The heat map: its heading, a column after the target's name (probes: the family) with each
  // target's cell (markup), and what a target's notes add after "configuration-dependent".
  const char* matrix_label = "Matrix";
  const char* column = nullptr;
  std::function<std::string(size_t)> cell;
  std::function<void(std::vector<std::string>&, size_t)> notes;
  // Fix searches ran the command (exec): untraced runs, no root cause counted.
  bool command = false;
  // The details: the hint under the heading ("" for the frame's), the inputs' names of a target (a
  // model's), what its facts line adds after its mode (text), and what follows its configurations.
  const char* details_hint = "";
  std::function<std::vector<std::string>(size_t)> input_names;
  std::function<std::string(size_t)> facts;
  std::function<void(std::string&, size_t)> details;
  // The census section: a probes report's census, and what follows it (the probes' facts); without
  // a census the section says where one comes from.
  std::optional<Census> census;
  std::function<void(std::string&)> census_tail;
};

// The sections a page with targets may hold, in the frame's words; each kind's page chooses and
// orders them.
struct TargetSections {
  Section verdict, environment, matrix, baseline, root_causes, fixes, census, details;
  // The page's usual order, as run's and probes' pages have it (exec's leads with other sections).
  std::vector<Section> in_order() const {
    return {verdict, environment, matrix, baseline, root_causes, fixes, census, details};
  }
};
TargetSections target_sections(const Report& r, TargetParts parts);
// The page of a report with targets: its title (the target's name, or `what` for several), the
// sections, and the targets' clock figures.
Page targets_page(const Report& r, const std::string& what, std::vector<Section> sections);

// Sections of the page, each a <section> with a stable id (the banner, the heat map and the timing
// section are in reports/html.cpp).
void environment_section(std::string& out, const Report& r);  // id="environment", html_environment.cpp
void root_causes_section(std::string& out, const Report& r);  // id="root-causes", html_sections.cpp
// id="fixes", html_sections.cpp; `command`: exec's searches, each candidate runs of the command.
void fixes_section(std::string& out, const Report& r, bool command);
// id="census", html_sections.cpp: a probes report's census, or where one comes from.
void census_section(std::string& out, const Report& r, const std::optional<Census>& census,
                    const std::function<void(std::string&)>& tail);
void details_section(std::string& out, const Report& r, const TargetParts& parts);  // id="details", html_details.cpp
void baseline_section(std::string& out, const Report& r);  // id="baseline" (only with one), html_baseline.cpp
// A table of differing tensors (or entries: `what`); `cls` names the kind of finding for a reader or a
// test (diverged-tensor, dependence-tensor, replay-tensor), `trials` adds how many trials differed.
void tensor_table(std::string& out, const std::vector<TensorFinding>& fs, const char* cls, bool trials,
                  const char* what = "tensor");
// A link to a target's details when the report has one of that name, else the name.
std::string target_link(const Report& r, const std::string& name);

// Each kind's page, in its own file (reports/<kind>_render.cpp).
Page run_page(const Report& r, const RunBody& body);
Page exec_page(const Report& r, const ExecBody& body);
Page probes_page(const Report& r, const ProbesBody& body);

}  // namespace ra::report::html
