// SPDX-License-Identifier: Apache-2.0
// Reading what Python's torch.save writes, from files that may be hostile.
//
// The problem. torch.save files come from colleagues, CI artifacts and downloads. LibTorch's own
// unpickler trusts them: a tensor record may claim more elements than its storage holds (read past
// the end as data), a string may claim gigabytes, containers may nest until the stack overflows. It
// also knows collections.OrderedDict only as a tensor's backward hooks, so the most common file of
// all, `torch.save(model.state_dict(), f)`, fails to load with it. repro-audit therefore reads every
// torch.save file with this reader, never with LibTorch's unpickler.
//
// The approach. A small pickle machine interprets, with Python's semantics, the subset torch.save
// and LibTorch's pickle_save write:
//   - protocol 2 opcodes, and the protocol 4 framing, memo and short-string ones;
//   - dict, collections.OrderedDict (its attribute state, `_metadata`, is dropped), list, tuple,
//     str, bytes, int, float, bool, None, and the list and type-tag helpers of torch.jit._pickle;
//   - tensors rebuilt by torch._utils._rebuild_tensor_v2 (or _rebuild_tensor, _rebuild_parameter)
//     over storages named by persistent ids ('storage', torch.<Type>Storage, key, location,
//     numel), each read once from the archive's data/<key> record, so views share storage.
// It never runs code from the file: globals are matched by name only, and anything else (another
// class, a sparse or quantized tensor, a big-endian archive) is an InputError naming it.
//
// What it checks, so that memory and time stay bounded by the file's real content:
//   - every record's size against the file before it is read (a zip entry may claim gigabytes);
//   - every storage's element count against its record, before anything is allocated;
//   - every tensor's offset, sizes and strides against its storage (no negative values, no
//     overflow, no element past the end), as torch.load's set_() does; a view may reach stored
//     elements many times (expand), but not more than kMaxViewExcess elements beyond its storage;
//   - string, frame and memo lengths against the pickle, the number of objects the pickle makes,
//     and the nesting of containers (kMaxDepth; a container that holds itself is refused).
// Containers live in an arena while the pickle runs, so a hostile nesting is measured, and
// refused, without recursion; only a checked tree is turned into IValues. A tensor the file gets
// wrong is reported with its key path ("layer1/weight") where the value is reachable.
#pragma once

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <string>

namespace ra {

// Containers nested deeper than this are refused (state dicts nest a few levels).
inline constexpr int kMaxDepth = 1000;
// A tensor may have at most this many elements more than the storage it views.
inline constexpr int64_t kMaxViewExcess = int64_t{1} << 30;
// The most objects (values, containers, marks, memo entries) one pickle may make.
inline constexpr int64_t kMaxPickleObjects = int64_t{1} << 22;

// What a file is declared to hold, where something says so (a baseline's kept tensors: the dtypes
// and shapes the baseline names, worker/tensor_io/kept_read.h): a storage or a pickle that claims
// more is refused before anything is read or inflated. Without it, the file's own size bounds every
// record (torch.save stores records uncompressed; a zip entry may claim gigabytes deflated).
struct PickleBudget {
  uint64_t storage_bytes = UINT64_MAX;  // every storage of the file together
  uint64_t pickle_bytes = UINT64_MAX;   // data.pkl
};

// The value in the torch.save zip archive held in `bytes`, named `path` in errors. Throws
// InputError when the archive or its pickle cannot be read or breaks a check above.
c10::IValue load_python_pickle(const std::string& path, const std::string& bytes, const PickleBudget& budget = {});

// The same for the file at `path`, read record by record (the file is never held whole).
c10::IValue load_python_pickle_file(const std::string& path, const PickleBudget& budget = {});

// The same for the file open at `fd` (named `path` in errors; the caller chose how to open it),
// read with pread; `fd` stays open.
c10::IValue load_python_pickle_fd(const std::string& path, int fd, const PickleBudget& budget = {});

}  // namespace ra
