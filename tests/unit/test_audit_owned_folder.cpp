// SPDX-License-Identifier: Apache-2.0
// The folders the tool writes (audit/common/owned_folder.h): only a folder an earlier write of ours
// made, holding nothing else, is replaced; anything else in the way stays as it was and is named.
#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/common/owned_folder.h"
#include "tests/unit/temp_folder.h"

#include <doctest/doctest.h>

#include <dirent.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

namespace {

using Folder = ra::test::TempFolder;

std::string slurp(const std::string& path) { return ra::read_file(path, "file"); }

std::vector<std::string> entries(const std::string& folder) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(folder.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.emplace_back(e->d_name);
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The message write_owned_folder throws, "" when it writes.
std::string write_error(const std::string& folder, const std::map<std::string, std::string>& files) {
  try {
    ra::write_owned_folder(folder, files, "the kept tensors");
  } catch (const ra::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("write_owned_folder") {
  Folder dir;
  const std::string a = dir.write("a.src", "first"), b = dir.write("b.src", "second");
  const std::string kept = dir.file("g.json.tensors");

  // A new folder: the files and the manifest that lists them.
  REQUIRE(write_error(kept, {{"t0-c0.pt", a}, {"t0-c1.pt", b}}).empty());
  CHECK(entries(kept) == std::vector<std::string>{"repro-audit.manifest", "t0-c0.pt", "t0-c1.pt"});
  CHECK(slurp(kept + "/t0-c1.pt") == "second");
  CHECK(slurp(kept + "/repro-audit.manifest") == "repro-audit kept files 1\nt0-c0.pt\nt0-c1.pt\n");

  // Ours: replaced whole, and nothing of it is left beside it.
  REQUIRE(write_error(kept, {{"t0-c0.pt", b}}).empty());
  CHECK(entries(kept) == std::vector<std::string>{"repro-audit.manifest", "t0-c0.pt"});
  CHECK(slurp(kept + "/t0-c0.pt") == "second");
  CHECK(entries(dir.path) == std::vector<std::string>{"a.src", "b.src", "g.json.tensors"});
  CHECK_NOTHROW(ra::check_owned_folder(kept, "the kept tensors"));

  // One more file in it: not ours any more; it stays, with the user's file.
  dir.write("g.json.tensors/precious.txt", "mine");
  std::string error = write_error(kept, {{"t0-c0.pt", a}});
  CHECK(error.find("cannot keep the kept tensors in '" + kept + "': it holds 'precious.txt'") == 0);
  CHECK_THROWS_AS(ra::check_owned_folder(kept, "the kept tensors"), ra::InputError);
  CHECK(slurp(kept + "/precious.txt") == "mine");
  CHECK(slurp(kept + "/t0-c0.pt") == "second");
  CHECK(entries(dir.path) == std::vector<std::string>{"a.src", "b.src", "g.json.tensors"});
  // Nothing to write does not remove it either.
  CHECK(!write_error(kept, {}).empty());
  CHECK(slurp(kept + "/precious.txt") == "mine");

  // A regular file in the way, a folder without a manifest, a symlink to a folder of ours, a
  // manifest of another kind, a listed name that is a folder: each stays, named in one line.
  const std::string file = dir.write("f.json.tensors", "precious");
  CHECK(write_error(file, {{"t0-c0.pt", a}}).find("it is a regular file") != std::string::npos);
  CHECK(slurp(file) == "precious");
  REQUIRE(::mkdir(dir.file("h.json.tensors").c_str(), 0700) == 0);
  dir.write("h.json.tensors/precious.txt", "mine");
  CHECK(
      write_error(dir.file("h.json.tensors"), {{"t0-c0.pt", a}}).find("it is a folder without repro-audit.manifest") !=
      std::string::npos);
  CHECK(slurp(dir.file("h.json.tensors/precious.txt")) == "mine");
  REQUIRE(write_error(dir.file("ours"), {{"t0-c0.pt", a}}).empty());
  REQUIRE(::symlink(dir.file("ours").c_str(), dir.file("l.json.tensors").c_str()) == 0);
  CHECK(write_error(dir.file("l.json.tensors"), {{"t0-c0.pt", b}}).find("it is a symlink") != std::string::npos);
  struct stat st {};
  CHECK((::lstat(dir.file("l.json.tensors").c_str(), &st) == 0 && S_ISLNK(st.st_mode)));
  CHECK(slurp(dir.file("ours/t0-c0.pt")) == "first");
  REQUIRE(::mkdir(dir.file("m.json.tensors").c_str(), 0700) == 0);
  dir.write("m.json.tensors/repro-audit.manifest", "another tool 1\nx\n");
  CHECK(write_error(dir.file("m.json.tensors"), {{"t0-c0.pt", a}}).find("is not one repro-audit wrote") !=
        std::string::npos);
  REQUIRE(write_error(dir.file("n"), {{"t0-c0.pt", a}}).empty());
  REQUIRE(::unlink(dir.file("n/t0-c0.pt").c_str()) == 0);
  REQUIRE(::mkdir(dir.file("n/t0-c0.pt").c_str(), 0700) == 0);
  CHECK(write_error(dir.file("n"), {{"t0-c0.pt", b}}).find("'t0-c0.pt' in it is a folder") != std::string::npos);

  // Ours, with nothing to write: removed; missing, with nothing to write: nothing made.
  REQUIRE(write_error(dir.file("ours"), {}).empty());
  CHECK_FALSE(::access(dir.file("ours").c_str(), F_OK) == 0);
  REQUIRE(write_error(dir.file("none"), {}).empty());
  CHECK_FALSE(::access(dir.file("none").c_str(), F_OK) == 0);
  CHECK(write_error(dir.file("no-such-folder/none"), {}).empty());
  // A source that cannot be read: an error, and nothing left behind.
  CHECK(write_error(dir.file("p"), {{"t0-c0.pt", dir.file("no-such-source")}}).find("No such file") !=
        std::string::npos);
  CHECK_FALSE(::access(dir.file("p").c_str(), F_OK) == 0);
  for (const auto& e : entries(dir.path)) CHECK(e.find(".tmp-") == std::string::npos);
}

TEST_CASE("kept_file_problem") {
  Folder dir;
  REQUIRE(::mkdir(dir.file("g.json.tensors").c_str(), 0700) == 0);
  const std::string kept = dir.write("g.json.tensors/t0-c0.pt", "bytes");
  CHECK(ra::kept_file_problem(kept).empty());
  CHECK(ra::kept_file_problem(dir.file("g.json.tensors/t0-c1.pt")) == "is missing");
  REQUIRE(::symlink(kept.c_str(), dir.file("g.json.tensors/t0-c2.pt").c_str()) == 0);
  CHECK(ra::kept_file_problem(dir.file("g.json.tensors/t0-c2.pt")) == "is a symlink, not followed");
  REQUIRE(::mkfifo(dir.file("g.json.tensors/t0-c3.pt").c_str(), 0600) == 0);
  CHECK(ra::kept_file_problem(dir.file("g.json.tensors/t0-c3.pt")) == "is a FIFO, not a regular file");
  REQUIRE(::symlink(dir.file("g.json.tensors").c_str(), dir.file("link.tensors").c_str()) == 0);
  CHECK(ra::kept_file_problem(dir.file("link.tensors/t0-c0.pt")) ==
        "lies in '" + dir.file("link.tensors") + "', a symlink, not followed");
}
