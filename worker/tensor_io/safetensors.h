// SPDX-License-Identifier: Apache-2.0
// safetensors files (Hugging Face's format: an 8-byte little-endian header length, a JSON header
// naming each tensor's dtype, shape and byte range, then the raw bytes), read with the same
// distrust as torch.save files: every size is checked against the file before anything is
// allocated, and a header that lies is an InputError naming the file and the tensor.
#pragma once

#include "worker/tensor_io/tensor_file.h"

#include <string>

namespace ra {

// The largest header this reader accepts (the format's own limit is 100 MB).
inline constexpr uint64_t kMaxSafetensorsHeader = uint64_t{100} << 20;
// The most tensors one file may hold: what the tool reads and reports one by one (exec writes one
// result entry per tensor). A model's file holds hundreds to a few thousand.
inline constexpr size_t kMaxSafetensorsTensors = size_t{1} << 16;

// Whether the file at `path` starts like a safetensors file: a header length that fits the file,
// then '{'. Reads 9 bytes.
bool looks_like_safetensors(const std::string& path);

// Why a file that starts like a safetensors file (8 bytes, then '{') cannot be read as one because of
// its header length, as the end of a sentence that begins "file 'PATH' " ("looks like a safetensors
// file, but its header length (N bytes) exceeds the M bytes that follow it ..."); "" otherwise.
std::string safetensors_header_problem(const std::string& path);

// The tensors of the safetensors file at `path`, by name in name order (CPU, contiguous).
// InputError for a file that breaks the format: a header that is not JSON or not an object, an
// unknown dtype, a negative or overflowing shape, a byte range outside the data or of the wrong
// length for its shape and dtype, two tensors whose ranges overlap, or more than
// kMaxSafetensorsTensors tensors.
NamedTensors load_safetensors(const std::string& path);

}  // namespace ra
