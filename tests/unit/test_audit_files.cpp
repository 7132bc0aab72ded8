// SPDX-License-Identifier: Apache-2.0
// Output paths (audit/common/files.h): what write_file_atomic replaces and what it writes through.
#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/common/paths.h"
#include "tests/unit/temp_folder.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using Folder = ra::test::TempFolder;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("output_target") {
  Folder dir;
  using Kind = ra::OutputTarget::Kind;
  CHECK(ra::output_target(dir.file("new.json")).kind == Kind::Replace);
  { std::ofstream(dir.file("old.json")) << "x"; }
  CHECK(ra::output_target(dir.file("old.json")).kind == Kind::Replace);
  REQUIRE(::mkfifo(dir.file("fifo").c_str(), 0600) == 0);
  CHECK(ra::output_target(dir.file("fifo")).kind == Kind::Through);
  CHECK(ra::output_target("/dev/stdout").kind == Kind::Through);
  CHECK(ra::output_target("/dev/null").kind == Kind::Through);
  REQUIRE(::symlink("old.json", dir.file("link").c_str()) == 0);
  const auto linked = ra::output_target(dir.file("link"));
  CHECK(linked.kind == Kind::Replace);
  CHECK(linked.path == dir.file("old.json"));
  REQUIRE(::symlink("fifo", dir.file("to-fifo").c_str()) == 0);
  CHECK(ra::output_target(dir.file("to-fifo")).kind == Kind::Through);
  REQUIRE(::symlink("loop-b", dir.file("loop-a").c_str()) == 0);
  REQUIRE(::symlink("loop-a", dir.file("loop-b").c_str()) == 0);
  CHECK_THROWS_AS(ra::output_target(dir.file("loop-a")), ra::InputError);
  CHECK_THROWS_AS(ra::output_target(dir.path), ra::InputError);
}

TEST_CASE("write_file_atomic") {
  Folder dir;
  { std::ofstream(dir.file("target.json")) << "old"; }
  ::chmod(dir.file("target.json").c_str(), 0600);
  REQUIRE(::symlink("target.json", dir.file("link.json").c_str()) == 0);
  ra::write_file_atomic(dir.file("link.json"), "new");
  struct stat st {};
  REQUIRE(::lstat(dir.file("link.json").c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  CHECK(slurp(dir.file("target.json")) == "new");
  REQUIRE(::stat(dir.file("target.json").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);  // a replaced file keeps its mode
  // Nothing is left beside it.
  CHECK(::access((dir.file("target.json") + ".tmp." + std::to_string(::getpid())).c_str(), F_OK) != 0);
  // A device is written through and stays a device.
  ra::write_file_atomic("/dev/null", "discarded");
  REQUIRE(::lstat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
}

TEST_CASE("shown_source: installed packages relative to site-packages, the user's files to the working directory") {
  const std::string venv = "/home/u/.cache/repro-audit/venv/lib/python3.11/site-packages/";
  CHECK(ra::shown_path(venv + "torch/nn/modules/linear.py", "/work") == "torch/nn/modules/linear.py");
  CHECK(ra::shown_path("/usr/lib/python3/dist-packages/transformers/x.py", "/") == "transformers/x.py");
  CHECK(ra::shown_path("/home/u/proj/train.py", "/home/u/proj") == "train.py");
  CHECK(ra::shown_path("/home/u/project/train.py", "/home/u/proj") == "/home/u/project/train.py");  // not under it
  CHECK(ra::shown_path("/elsewhere/m.py", "/work") == "/elsewhere/m.py");
  CHECK(ra::shown_source(venv + "torch/nn/modules/linear.py:134: return F.linear(x, w)", "/") ==
        "torch/nn/modules/linear.py:134: return F.linear(x, w)");
  CHECK(ra::shown_source("/home/u/proj/m.py:18 (node sum_1)", "/home/u/proj") == "m.py:18 (node sum_1)");
  CHECK(ra::shown_source("node add_3", "/work") == "node add_3");
  // A long line is cut with an ellipsis, never inside a character.
  const std::string code(ra::kShownCode - 1, 'x');
  const std::string cut = ra::shown_source("/w/m.py:3: " + code + "éé", "/w");
  CHECK(cut == "m.py:3: " + code + "…");
  const std::string fits = code.substr(1) + "é";  // kShownCode bytes exactly
  CHECK(ra::shown_source("/w/m.py:3: " + fits, "/w") == "m.py:3: " + fits);
}

TEST_CASE("traced_source: a traced module's 'PATH(LINE): FUNCTION' becomes the line of code, read from PATH") {
  Folder folder;
  const std::string dir = folder.path, file = folder.file("model.py");
  std::ofstream(file) << "import torch\n\n    return self.lin(x)  \n";
  CHECK(ra::traced_source(file + ":3: " + file + "(3): forward") == file + ":3: return self.lin(x)");
  CHECK(ra::traced_source(dir + "/gone.py:3: " + dir + "/gone.py(3): forward") == dir + "/gone.py:3 (in forward)");
  CHECK(ra::traced_source(file + ":3: y = x + 1") == file + ":3: y = x + 1");  // scripted: as it is
}
