// SPDX-License-Identifier: Apache-2.0
// audit/common/zip_check.h on zips built here byte by byte (so that each rule is met by exactly one
// defect), and the message helpers of audit/common/errors.h.
#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/common/zip_check.h"

#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

namespace {

struct Item {
  std::string name;
  std::string data;     // the bytes in the file
  uint16_t method = 0;  // as declared
  uint64_t size = 0;    // declared size; 0 = data.size()
  int64_t header = -1;  // declared local header offset; -1 = where it is written
};

void put(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
}

// A zip of `items`, each after a local header, then the central directory and its end record.
std::string zip_of(const std::vector<Item>& items) {
  std::string out, dir;
  for (const auto& it : items) {
    const uint64_t at = out.size();
    const uint64_t size = it.size ? it.size : it.data.size();
    put(out, 0x04034b50, 4), put(out, 20, 2), put(out, 0, 2), put(out, it.method, 2), put(out, 0, 4), put(out, 0, 4);
    put(out, it.data.size(), 4), put(out, size, 4), put(out, it.name.size(), 2), put(out, 0, 2);
    out += it.name + it.data;
    put(dir, 0x02014b50, 4), put(dir, 20, 2), put(dir, 20, 2), put(dir, 0, 2), put(dir, it.method, 2), put(dir, 0, 4);
    put(dir, 0, 4), put(dir, it.data.size(), 4), put(dir, size, 4), put(dir, it.name.size(), 2), put(dir, 0, 2);
    put(dir, 0, 2), put(dir, 0, 2), put(dir, 0, 2), put(dir, 0, 4),
        put(dir, it.header >= 0 ? static_cast<uint64_t>(it.header) : at, 4);
    dir += it.name;
  }
  const uint64_t dir_at = out.size();
  out += dir;
  put(out, 0x06054b50, 4), put(out, 0, 2), put(out, 0, 2), put(out, items.size(), 2), put(out, items.size(), 2);
  put(out, dir.size(), 4), put(out, dir_at, 4), put(out, 0, 2);
  return out;
}

// The entries of the zip of `items`, or the InputError's message.
std::string check(const ra::ScratchDir& dir, const std::vector<Item>& items,
                  std::vector<ra::ZipEntry>* entries = nullptr) {
  const std::string path = dir.path() + "/a.zip";
  std::ofstream(path, std::ios::binary) << zip_of(items);
  try {
    const auto got = ra::checked_zip_entries(path, "model 'a.zip'");
    if (entries) *entries = got;
    return "";
  } catch (const ra::InputError& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("zip_name_problem") {
  CHECK(ra::zip_name_problem("archive/data/aotinductor/model/c0.wrapper.so").empty());
  CHECK(ra::zip_name_problem("archive/.data/version").empty());
  CHECK(ra::zip_name_problem("archive/folder/").empty());
  CHECK(ra::zip_name_problem("model/../../../../tmp/x/PWNED") == "has a '..' component");
  CHECK(ra::zip_name_problem("a/./b") == "has a '.' component");
  CHECK(ra::zip_name_problem("/etc/passwd") == "is an absolute path");
  CHECK(ra::zip_name_problem("C:/x") == "starts with a drive letter");
  CHECK(ra::zip_name_problem("a\\..\\b") == "holds a backslash");
  CHECK(ra::zip_name_problem(std::string("a\0b", 3)) == "holds a NUL byte");
  CHECK(ra::zip_name_problem("m\x1b[31mred\x7f/data/0").empty());  // torch.jit.save of such a file name
  CHECK(ra::zip_name_problem("a//b") == "has an empty component ('//')");
  CHECK(ra::zip_name_problem("") == "is empty");
  CHECK(ra::zip_name_problem(std::string(2000, 'a')) == "is longer than 1024 bytes");
}

TEST_CASE("checked_zip_entries") {
  const ra::ScratchDir dir;
  std::vector<ra::ZipEntry> entries;
  CHECK(check(dir, {{"a/x", "hello"}, {"a/y", "world!"}}, &entries).empty());
  REQUIRE(entries.size() == 2);
  CHECK(entries[1].name == "a/y");
  CHECK(entries[1].size == 6);
  CHECK(entries[1].data == 30 + 3 + 5 + 30 + 3);
  CHECK(check(dir, {{"a/../../x", "x"}}).find("has a '..' component") != std::string::npos);
  CHECK(check(dir, {{"a/x", "x"}, {"a/x", "y"}}).find("two archive entries are named 'a/x'") != std::string::npos);
  CHECK(check(dir, {{"a/x", "1234", 0, 4096}}).find("declares 4096 bytes for its 4 stored bytes") != std::string::npos);
  CHECK(check(dir, {{"a/x", "1234", 12}}).find("compression method 12") != std::string::npos);
  // A deflated entry of 1 GiB from 4 bytes: a zip bomb, refused before anything inflates it.
  CHECK(check(dir, {{"a/x", "1234", 8, uint64_t{1} << 30}}).find("would expand from 4 to 1073741824 bytes") !=
        std::string::npos);
  // Small entries may expand more, but all together stay within the budget.
  std::vector<Item> many;
  for (int i = 0; i < 70; ++i) many.push_back({"a/" + std::to_string(i), "1234", 8, uint64_t{1} << 20});
  CHECK(check(dir, many).find("over the budget of 100 times") != std::string::npos);
  // Two entries sharing bytes (an overlapping bomb).
  CHECK(check(dir, {{"a/x", "12345678"}, {"a/y", "", 0, 0, 0}}).find("share bytes") != std::string::npos);
  // An entry whose local header lies elsewhere than the directory says.
  CHECK(check(dir, {{"a/x", "1234", 0, 0, 3}}).find("no local header") != std::string::npos);
  // Not a zip at all, and a directory cut short.
  const std::string path = dir.path() + "/not.zip";
  std::ofstream(path, std::ios::binary) << "just text, no zip here";
  CHECK_THROWS_WITH_AS(ra::checked_zip_entries(path, "model 'not.zip'"),
                       doctest::Contains("no end of central directory"), ra::InputError);
}

TEST_CASE("excerpt") {
  CHECK(ra::excerpt("short") == "short");
  const std::string big(1000, 'x');
  CHECK(ra::excerpt(big) == std::string(200, 'x') + "... (1000 bytes)");
  // Never inside a UTF-8 character: "é" is two bytes, the cut falls back to its first.
  const std::string accents = std::string(199, 'a') + "\xc3\xa9" + std::string(100, 'b');
  CHECK(ra::excerpt(accents) == std::string(199, 'a') + "... (301 bytes)");
}

TEST_CASE("cut_message") {
  const std::string message =
      "not a repro-audit report (its schema is '" + std::string(50 << 20, 'x') + "'): save it again";
  const ra::InputError e(message);
  const std::string what = e.what();
  CHECK(what.size() < 1100);
  CHECK(what.rfind("not a repro-audit report (its schema is 'xxx", 0) == 0);
  CHECK(what.find("bytes cut") != std::string::npos);
  CHECK(what.ends_with("'): save it again"));
  CHECK(ra::InputError("short message").what() == std::string("short message"));
}

TEST_CASE("zip_open_problem") {
  const ra::ScratchDir dir;
  const auto problem = [&](const std::vector<Item>& items) {
    const std::string path = dir.path() + "/o.zip";
    std::ofstream(path, std::ios::binary) << zip_of(items);
    return ra::zip_open_problem(path);
  };
  CHECK(problem({{"archive/version", "3\n"}, {"archive/data.pkl", "x"}}).empty());
  // The records LibTorch's reader inflates as it opens an archive may not claim more than the file.
  const std::string bomb = problem({{"archive/version", std::string(64, '\0'), 8, uint64_t{1} << 30}});
  CHECK(bomb.find("archive entry 'archive/version' claims 1073741824 bytes, more than the file's ") !=
        std::string::npos);
  CHECK(!problem({{"archive/.data/serialization_id", std::string(64, '\0'), 8, uint64_t{1} << 30}}).empty());
  // Another record, another rule broken: the caller's to name (a weights record, read only when asked for).
  CHECK(problem({{"archive/version", "3\n"}, {"archive/data/0", std::string(64, '\0'), 8, uint64_t{1} << 30}}).empty());
  CHECK(problem({{"../version", "3\n"}}).empty());
}
