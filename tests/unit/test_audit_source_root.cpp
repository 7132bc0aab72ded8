// SPDX-License-Identifier: Apache-2.0
// Where a model's source file lies in the user's repository (audit/common/source_root.h), as
// lint --sarif names it to code scanning.
#include "audit/common/source_root.h"
#include "tests/unit/temp_folder.h"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

namespace {

// root/.git/, root/src/net.py, root/sub/ and, outside the repository, other/net.py.
struct Tree {
  ra::test::TempFolder dir{"ra-source-root"};
  std::string root = dir.file("repo");
  Tree() {
    for (const char* folder : {"repo", "repo/.git", "repo/src", "repo/sub", "other"})
      REQUIRE(::mkdir(dir.file(folder).c_str(), 0700) == 0);
    dir.write("repo/src/net.py", "import torch\n");
    dir.write("other/net2.py", "import torch\n");
  }
};

}  // namespace

TEST_CASE("repository_root") {
  Tree t;
  CHECK(ra::repository_root(t.root) == t.root);
  CHECK(ra::repository_root(t.root + "/sub") == t.root);
  CHECK(ra::repository_root(t.root + "/src") == t.root);
  // A worktree's .git is a file.
  REQUIRE(::mkdir(t.dir.file("repo/sub/inner").c_str(), 0700) == 0);
  t.dir.write("repo/sub/inner/.git", "gitdir: /elsewhere\n");
  CHECK(ra::repository_root(t.root + "/sub/inner") == t.root + "/sub/inner");
}

TEST_CASE("repository_path") {
  Tree t;
  const std::string cwd = t.root + "/sub";
  // Inside the root, absolute or relative to the working directory.
  CHECK(ra::repository_path(t.root + "/src/net.py", t.root, cwd) == "src/net.py");
  CHECK(ra::repository_path("../src/net.py", t.root, cwd) == "src/net.py");
  CHECK(ra::repository_path(t.root + "/sub/../src/./net.py", t.root, cwd) == "src/net.py");
  // Another machine's path: the longest tail that is a file under the root.
  CHECK(ra::repository_path("/home/alice/proj/src/net.py", t.root, cwd) == "src/net.py");
  CHECK(ra::repository_path("src/net.py", t.root, "/nowhere") == "src/net.py");
  // The same file through a symlinked root.
  REQUIRE(::symlink(t.root.c_str(), t.dir.file("link").c_str()) == 0);
  CHECK(ra::repository_path(t.root + "/src/net.py", t.dir.file("link"), cwd) == "src/net.py");
  CHECK(ra::repository_path(t.dir.file("link/src/net.py"), t.root, cwd) == "src/net.py");
  // A file found nowhere under the root, a folder, nothing at all.
  CHECK_FALSE(ra::repository_path(t.dir.file("other/net2.py"), t.root, cwd).has_value());
  CHECK_FALSE(ra::repository_path("/home/alice/proj/src/missing.py", t.root, cwd).has_value());
  CHECK_FALSE(ra::repository_path(t.root + "/src", t.root, cwd).has_value());
  CHECK_FALSE(ra::repository_path("", t.root, cwd).has_value());
  CHECK_FALSE(ra::repository_path("src/net.py", t.dir.file("no-such-root"), cwd).has_value());
  // An installed package's file is never the user's code, even where the repository holds a copy.
  REQUIRE(::mkdir(t.dir.file("repo/torch").c_str(), 0700) == 0);
  t.dir.write("repo/torch/linear.py", "");
  CHECK(ra::repository_path("/venv/lib/python3.11/site-packages/torch/linear.py", t.root, cwd) == std::nullopt);
  CHECK(ra::repository_path("/usr/lib/python3/dist-packages/torch/linear.py", t.root, cwd) == std::nullopt);
  CHECK(ra::repository_path("/elsewhere/torch/linear.py", t.root, cwd) == "torch/linear.py");
}
