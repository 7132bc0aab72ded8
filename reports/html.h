// SPDX-License-Identifier: Apache-2.0
// Internal to the HTML renderer (reports/html*.cpp): escaping, the stable element ids, small markup
// helpers, and the sections the other files write for render_html (reports/html.cpp opens with the
// essay on the document's design and its timing markers).
#pragma once

#include "reports/model.h"
#include "reports/render.h"

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

// Sections of the page, each a <section> with a stable id (the banner, the heat map and the timing
// section are in reports/html.cpp).
void environment_section(std::string& out, const Report& r);  // id="environment", html_environment.cpp
void root_causes_section(std::string& out, const Report& r);  // id="root-causes", html_sections.cpp
void fixes_section(std::string& out, const Report& r);        // id="fixes", html_sections.cpp
// id="census", html_sections.cpp: a probes report's census, or where one comes from.
void census_section(std::string& out, const Report& r, const std::optional<Census>& census);
void details_section(std::string& out, const Report& r);    // id="details", html_details.cpp
void checklist_section(std::string& out, const Report& r);  // id="checklist" (exec), html_details.cpp
void baseline_section(std::string& out, const Report& r);   // id="baseline" (only with one), html_baseline.cpp

}  // namespace ra::report::html
