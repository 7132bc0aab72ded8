// SPDX-License-Identifier: Apache-2.0
// Where a file of Python source lies in the user's repository, for reports that a code host shows
// on the line (lint --sarif: GitHub code scanning and GitLab take paths relative to the repository
// root, and match them against the files committed there).
//
// Problem: the files a model's graph names are paths of the machine that made it. An archive
// exported in the same checkout names files inside the repository; one exported on a laptop and
// committed names /home/alice/proj/src/net.py, while CI lints it in its runner's checkout, /home/runner/ci/proj.
// Approach: a file that lies inside the root (symlinks resolved on both sides) is named by its path
// from the root; any other is named by the longest tail of its path that is a regular file under
// the root (src/net.py, else net.py). Files of installed packages (site-packages, dist-packages) are
// never the user's code, and a file found nowhere under the root has no place there. Cost: a few
// stat calls per distinct file; the answer depends on the tree as it is, never on the clock.
#pragma once

#include <optional>
#include <string>

namespace ra {

// The repository that holds `cwd`: the nearest folder at or above it with a `.git` entry (a folder,
// or a worktree's file), else `cwd` itself. `cwd` is absolute.
std::string repository_root(const std::string& cwd);

// `file` (absolute, or relative to `cwd`) as a path relative to `root` ("src/net.py"), by the rule
// above; nullopt where it names no regular file under `root`, or a file of an installed package.
std::optional<std::string> repository_path(const std::string& file, const std::string& root, const std::string& cwd);

}  // namespace ra
