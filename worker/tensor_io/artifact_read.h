// SPDX-License-Identifier: Apache-2.0
// The worker's side of `exec`'s artifacts (`__artifacts REQUEST RESULT`; the protocol is in
// audit/trial/worker_protocol.h): what each file holds, entry by entry, and how two versions of an entry
// differ, with the readers `diff` uses (worker/tensor_io/tensor_file.h: torch.save through the
// checked pickle reader, safetensors, TorchScript archives). Nothing here runs code from a file.
// Torch-free header.
#pragma once

#include "audit/trial/worker_protocol.h"

namespace ra {

// Reads and compares what `request` asks; a file that cannot be read as its kind is answered
// as kind "bytes" with a note, never an exception.
ArtifactAnswer answer_artifacts(const ArtifactRequest& request);

}  // namespace ra
