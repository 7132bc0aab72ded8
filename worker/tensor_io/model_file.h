// SPDX-License-Identifier: Apache-2.0
// What a model file is when it is not a TorchScript archive (torch-free declaration: the worker's
// command-line files include it; tensor_file.cpp implements it with LibTorch's zip reader and the
// checked pickle reader).
#pragma once

#include <string>

namespace ra {

// Why the file at `path` cannot be audited as a TorchScript model, with the next step, as the end
// of a sentence that begins "model 'PATH' ": "is a torch.export archive (torch.export.save) ...",
// "holds a pickled __main__.Net (torch.save(model)) ...", "holds tensors saved with torch.save (a
// state_dict or a checkpoint) ...", a legacy torch.save file, an AOTInductor package, another zip
// archive, not a zip archive. "" for a TorchScript archive (whose loading error, if any, says more).
// Reads the archive's record names and, for a torch.save file, its pickle with the checked reader:
// it runs nothing from the file.
std::string not_torchscript_because(const std::string& path);

// What kind of PyTorch archive `path` is, from its zip's record names (the file is opened once):
// a TorchScript archive (torch.jit.save: code/ and constants.pkl), a torch.export archive
// (models/model.json), an AOTInductor package (compiled code under data/aotinductor/), a
// torch.save file (data.pkl), or Other (anything else, including a file that is not a zip).
enum class ArchiveKind { TorchScript, Export, Aoti, TorchSave, Other };
ArchiveKind archive_kind(const std::string& path);

}  // namespace ra
