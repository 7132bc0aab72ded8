// SPDX-License-Identifier: Apache-2.0
// The folders the tool writes beside a file the user named (a baseline's kept tensors,
// BASELINE.tensors/; a shard's, REPORT.tensors/), and reading them back.
//
// The problem (issue 51): the writer removed whatever stood at the folder's path before renaming
// its new folder there. A regular file of that name was replaced, and a folder holding a user's own
// files went with them, with exit 0 and no word. A kept file, or the folder, that was a symlink was
// read through.
//
// The approach. Every such folder holds a manifest, `repro-audit.manifest`, written last: a first
// line naming the kind ("repro-audit kept files 1") and then the names of the files it holds, one
// a line. A path is ours when it is a folder, not a symlink, whose manifest is a regular file of that
// kind, and which holds nothing but the manifest and regular files the manifest lists. Only ours is
// replaced; anything else stops the write with one line naming the path and why (InputError, exit
// 3): a regular file, a symlink, a folder without a manifest, a folder with one more file. A folder
// an older release wrote has no manifest, so it is not replaced either: the line says to move it.
// The new folder is made beside the old one under a fresh name (mkdir, which never takes a name
// that exists), filled, and then exchanged with the old one in one renameat2(RENAME_EXCHANGE), so
// that a reader finds the old folder or the new, never neither (where the filesystem cannot
// exchange, the old one is renamed away first). The old folder, now under the fresh name, is checked
// again: if it stopped being ours meanwhile (a file added, the folder swapped for a symlink), the
// exchange is undone and the write fails as above. Then only the files its manifest lists are
// unlinked, and the folder removed; one that is not empty then (a file added in the last instant)
// is left where it is, with a warning naming it. Every step works on descriptors opened without
// following symlinks (the parent folder once, then *at calls), so a symlink planted at any moment is
// moved or refused, never followed.
//
// Readers (kept_file_problem) follow no symlink either: a kept file, or its folder, that is a
// symlink is not read, as `exec` reads no artifact through one (audit/exec/artifacts.h).
//
// The cost: a readdir and an fstatat per file of the old folder, and one more of each after the
// exchange.
#pragma once

#include <map>
#include <string>

namespace ra {

// The manifest's name inside every folder the tool writes.
inline constexpr const char* kFolderManifest = "repro-audit.manifest";

// Writes `folder` whole: `files` (a plain name in the folder -> the file copied there) and the
// manifest. An existing `folder` is replaced only when the tool wrote it (above); with no files, an
// old folder of ours is removed and nothing is written. Throws InputError naming `what` ("the
// baseline's reference tensors") and the path: something there that is not ours, or a failed write
// (nothing is left behind then).
void write_owned_folder(const std::string& folder, const std::map<std::string, std::string>& files,
                        const std::string& what);

// InputError (as write_owned_folder's) unless `folder` is missing or ours: the check before an
// audit starts, so that the user learns of the obstacle before waiting for it.
void check_owned_folder(const std::string& folder, const std::string& what);

// Why the kept file at `path` is not to be read ("'t0-c0.pt' is a symlink, not followed"), "" when
// it is a regular file in a folder that is not a symlink. Follows no symlink (lstat).
std::string kept_file_problem(const std::string& path);

}  // namespace ra
