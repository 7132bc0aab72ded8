// SPDX-License-Identifier: Apache-2.0
// The escaping layer (reports/escape.h): each format's function makes a hostile value inert there.
#include "reports/escape.h"
#include "reports/utf8.h"

#include <doctest/doctest.h>

#include <string>

using namespace ra::report;

TEST_CASE("text_line") {
  CHECK(escape::text_line("plain name.pt") == "plain name.pt");
  CHECK(escape::text_line("m\nverdict: reproducible (exit 0)") == "m\\nverdict: reproducible (exit 0)");
  CHECK(escape::text_line("a\rb\tc") == "a\\rb\\tc");
  CHECK(escape::text_line("\x1b[31mred\x7f") == "\\x1b[31mred\\x7f");
  CHECK(escape::text_line(std::string("nul\0x", 5)) == "nul\\x00x");
  CHECK(escape::text_line("caf\xe9") == "caf\\xe9");  // not UTF-8
  CHECK(escape::text_line("\xc2\x9b"
                          "2J") == "\\xc2\\x9b2J");                                    // C1 CSI
  CHECK(escape::text_line("caf\xc3\xa9 \xe2\x9c\x93") == "caf\xc3\xa9 \xe2\x9c\x93");  // UTF-8 stays
  for (const char* hostile : {"a\nb", "\x1b]0;t\x07", "x\r\ny", "\xc2\x85next"}) {
    const std::string out = escape::text_line(hostile);
    for (const char c : out) CHECK(static_cast<unsigned char>(c) >= 0x20);
  }
}

TEST_CASE("text_block") {
  CHECK(escape::text_block("one", "  ") == "one");
  CHECK(escape::text_block("one\ntwo\n", "    ") == "one\n    two");
  CHECK(escape::text_block("x\nverdict: reproducible (exit 0)", "  ") == "x\n  verdict: reproducible (exit 0)");
  CHECK(escape::text_block("a\x1b[2J\nb\r", "  ") == "a\\x1b[2J\n  b\\r");
}

TEST_CASE("markdown") {
  CHECK(escape::markdown("a_b *c*") == "a\\_b \\*c\\*");
  CHECK(escape::markdown("# h\n![i](u)") == "\\# h \\!\\[i\\](u)");
  CHECK(escape::markdown("a|b & <c>") == "a\\|b &amp; \\<c\\>");
}

TEST_CASE("markdown_code") {
  CHECK(escape::markdown_code("x") == "`x`");
  CHECK(escape::markdown_code("a``b") == "```a``b```");
  CHECK(escape::markdown_code("`x") == "`` `x ``");
  CHECK(escape::markdown_code("a|b\nc") == "`a\\|b c`");
}

TEST_CASE("markdown_block") {
  CHECK(escape::markdown_block("x = 1", "python") == "```python\nx = 1\n```\n");
  CHECK(escape::markdown_block("a\nb\n", "", "  ") == "  ```\n  a\n  b\n  ```\n");
  // A run of backticks in the text, at any length, cannot close the block.
  const std::string host = "x\n```\n# pwned\n````\n";
  const std::string block = escape::markdown_block(host);
  CHECK(block.rfind("`````\n", 0) == 0);
  CHECK(block.substr(block.size() - 6) == "`````\n");
}

TEST_CASE("html") {
  CHECK(escape::html("<script>alert('x')</script> & \"q\"") ==
        "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
  CHECK(escape::html("a\x1b"
                     "b") ==
        "a\xef\xbf\xbd"
        "b");  // ESC: U+FFFD
  CHECK(escape::html("caf\xe9") == "caf\\xe9");
  CHECK(escape::html("line\nbreak\tok") == "line\nbreak\tok");
}

TEST_CASE("xml") {
  CHECK(escape::xml("a<b>&\"'") == "a&lt;b&gt;&amp;&quot;&apos;");
  CHECK(escape::xml("a\nb\tc\rd") == "a&#10;b&#9;c&#13;d");
  CHECK(escape::xml("a\nb\tc", escape::XmlContext::Text) == "a\nb\tc");
  CHECK(escape::xml("x\x01y") == "x\xef\xbf\xbdy");
  CHECK(escape::xml("caf\xe9") == "caf\\xe9");
}

TEST_CASE("printable") {
  CHECK(printable("\xc2\x9b", true) == "\\xc2\\x9b");
  CHECK(printable("\xc2\x9b", false) == "\xc2\x9b");
  CHECK(printable("\xc2\xa0", true) == "\xc2\xa0");  // U+00A0 is no control
}
