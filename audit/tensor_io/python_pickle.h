// SPDX-License-Identifier: Apache-2.0
// Reading what Python's torch.save writes when LibTorch's own unpickler cannot.
//
// LibTorch's unpickler knows collections.OrderedDict only as a tensor's (unused) backward hooks:
// it turns one into None, so the most common torch.save file of all, `torch.save(model.
// state_dict(), f)`, fails to load (SETITEMS on None, then the SETITEM and BUILD that restore the
// dict's `_metadata`). This reader interprets the pickle of such a file with Python's semantics
// for the subset torch.save writes for tensors and containers:
//   - protocol 2 opcodes (and the protocol 4 framing, memo and short-string ones);
//   - dict, collections.OrderedDict (its attribute state, `_metadata`, is dropped), list, tuple,
//     str, int, float, bool, None;
//   - tensors rebuilt by torch._utils._rebuild_tensor_v2 (or _rebuild_tensor, _rebuild_parameter)
//     over storages named by persistent ids ('storage', torch.<Type>Storage, key, location,
//     numel), each read once from the archive's data/<key> record, so views share storage.
// Anything else (another class, a sparse or quantized tensor, a big-endian archive) is an
// InputError naming it. It never runs code from the file: globals are matched by name only.
#pragma once

#include <ATen/core/ivalue.h>

#include <string>

namespace ra {

// The value in the torch.save zip archive `bytes` (read from `path`, named in errors). Throws
// InputError when the archive or its pickle cannot be read.
c10::IValue load_python_pickle(const std::string& path, const std::string& bytes);

}  // namespace ra
