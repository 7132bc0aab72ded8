// SPDX-License-Identifier: Apache-2.0
// The one escaping layer: every string that comes from outside the tool (a file or tensor name, a
// shard's host, a message a model raised, a whole report read back from JSON) is escaped for the
// format it is written into, where it is written, by the functions below.
//
// Problem: a value that carries the format's own syntax rewrites the document around it. A file
// named "x\nverdict: reproducible (exit 0)" printed a fake verdict line in the text summary; a
// shard host holding ``` closed the Markdown code fence and rendered a heading and a remote image;
// ESC sequences from a shard's JSON reached the terminal.
// Approach: one function per format, each making a value inert there: text and stderr get one
// line with visible escapes (\n, \r, \t, \x1b, and \xNN for bytes that are not UTF-8); Markdown
// gets its punctuation backslash-escaped, code spans and fences longer than any backtick run
// inside; HTML and XML get entities, and U+FFFD where the format cannot carry a character. JSON is
// nlohmann's job (reports/utf8.h's make_printable keeps its bytes readable). Cost: one pass per
// value, nothing at all for values that hold no special character.
#pragma once

#include <string>
#include <string_view>

namespace ra::report::escape {

// One line of text (the stdout summary, a stderr message, a CI log): newline, carriage return and
// tab become \n \r \t; every other control character (C0, DEL, C1: ESC is \x1b) and every byte
// that is not UTF-8 becomes \xNN. The result never holds a control character.
std::string text_line(std::string_view s);

// Several lines of text (a stack, a multi-line message): each line as text_line, the lines after
// the first starting with `indent`, so that no part of the value starts a line of the document.
std::string text_block(std::string_view s, std::string_view indent);

// Inline Markdown (a table cell, a list item): the punctuation Markdown reads (\ ` * _ [ ] < > | # ~ !)
// is backslash-escaped, '&' becomes an entity, a line break becomes a space.
std::string markdown(std::string_view s);

// A Markdown code span: a backtick fence longer than any run of backticks in `s`; '|' escaped for
// tables, line breaks as spaces.
std::string markdown_code(std::string_view s);

// A fenced Markdown code block of `text`, each line prefixed by `indent`: the fence is longer than
// any run of backticks in the text, so no line of it can close the block.
std::string markdown_block(std::string_view text, std::string_view lang = "", std::string_view indent = "");

// HTML element content and double- or single-quoted attribute values: & < > " ' become entities;
// control characters other than tab, newline and carriage return, and noncharacters, become
// U+FFFD; bytes that are not UTF-8 show as \xNN.
std::string html(std::string_view s);

// XML 1.0 (JUnit): & < > " ' become entities, carriage return a character reference; in an
// attribute, tab and newline are references too (parsers keep them). Characters XML cannot carry
// become U+FFFD; bytes that are not UTF-8 show as \xNN.
enum class XmlContext { Text, Attribute };
std::string xml(std::string_view s, XmlContext where = XmlContext::Attribute);

}  // namespace ra::report::escape

// The renderers' short names for the calls above, brought in with `using` where a renderer makes
// many of them.
namespace ra::report::escaped {
inline std::string ln(std::string_view s) { return escape::text_line(s); }
inline std::string md(std::string_view s) { return escape::markdown(s); }
inline std::string esc(std::string_view s) { return escape::html(s); }
inline std::string xml(std::string_view s) { return escape::xml(s); }
}  // namespace ra::report::escaped
