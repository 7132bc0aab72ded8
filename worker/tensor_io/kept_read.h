// SPDX-License-Identifier: Apache-2.0
// The files divergence statistics read (`__stats`, audit/trial/worker.h): a trial's dump in the
// scratch folder, or a kept file (a baseline's --baseline-tensors file, a shard's), each a pickled
// Dict[str, Tensor] as the trial recorder writes it (worker/runtime/child_support.h).
//
// The problem (issue 51): a kept file comes from elsewhere, yet it was read like a trial's own dump,
// by LibTorch's unpickler: an empty, cut or foreign file was reported as "trial dump missing", which
// blamed the trial; a kept file, or its folder, that was a symlink was followed; and an entry that
// claimed 1 GiB (1 MB deflated) was inflated into memory. The approach: every dump is opened without
// following a symlink, its own name or its folder's (O_NOFOLLOW, then openat), only a regular file
// is read, and it is read by the checked reader (worker/tensor_io/python_pickle.h), which refuses an
// entry that claims more than the file holds. A kept file also comes with the tensors its baseline
// declares (names, dtypes, shapes): its storages may hold no more bytes than those tensors need, its
// pickle no more than their count and names call for, checked before anything is inflated; a
// compared tensor must have its declared dtype and shape. A file that fails any of this gets notes
// naming the file and what is wrong with it, never an exception. The cost: an fstat, the zip's
// directory read once, and a sum over the declared tensors.
#pragma once

#include "reports/core_model.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace at {
class Tensor;
}

namespace ra {

// A file to read: a trial's dump (`declared` empty), or a kept file with the tensors its baseline
// (or shard report) declares it holds.
struct DumpFile {
  std::string path;
  std::vector<report::TensorDigest> declared;
};

// Loads both files and compares the named tensors (tensor_difference, `a` the reference). Names
// missing from a file, and files that cannot be read, get a note instead of numbers.
std::map<std::string, report::DivergenceStats> dump_differences(
    const DumpFile& a, const DumpFile& b, const std::vector<std::string>& names,
    const std::optional<report::Tolerance>& tolerance = std::nullopt);

// The tensors of a dump our own child wrote in the scratch (the float64 referee's), by name, read as
// a trial's dump is; nullopt with `problem` set (or "" when the file does not exist) otherwise.
std::optional<std::map<std::string, at::Tensor>> read_own_dump(const std::string& path, std::string& problem);

}  // namespace ra
