// SPDX-License-Identifier: Apache-2.0
// The HTML report's stylesheet and script: share/html/report.css and share/html/report.js, embedded
// at build time (cmake/EmbedHtml.cmake generates the definitions), so that rendering needs no
// share/ folder at run time.
#pragma once

#include <string_view>

namespace ra::report::html::assets {

extern const std::string_view kCss;
extern const std::string_view kJs;

}  // namespace ra::report::html::assets
