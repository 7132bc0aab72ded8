// SPDX-License-Identifier: Apache-2.0
// Trace files: how a trial child hands its op trace (audit/trace/trace_record.h) to the parent.
//
// JSON lines, so a trace of 100k records is written and read one small object at a time:
//   {"format":"repro-audit/trace","version":1,"device":"cuda:0","dropped":0,"capacity":..,
//    "memory_bytes":..,"records":N}
// then N lines, one record each, with short keys (keys at their default value are left out):
//   {"th":0,"ord":12,"op":"aten::add","kind":"op","ph":"forward","step":1,"seq":40,"par":-1,
//    "mod":"encoder","src":"model.py:3","sc":"<16 hex>","in":[["float32",[8,64],"<32 hex>"]],
//    "out":[...]}
// The file is written to a temporary name and renamed, so a reader sees a whole trace or none;
// the record count in the header still catches a file cut short by other means.
#pragma once

#include "audit/trace/trace_record.h"

#include <stdexcept>
#include <string>

namespace ra::trace {

inline constexpr int kTraceVersion = 1;

// A trace file that cannot be read: missing, not a trace, another version, a malformed line, or
// fewer or more records than its header says. The message is one line naming the file (and line).
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Writes `trace` atomically; throws ra::InputError (audit/common/errors.h) when the folder is not writable.
void write_trace(const std::string& path, const Trace& trace);

// Reads a trace written by write_trace; records come back sorted by `order`. Throws TraceError.
Trace read_trace(const std::string& path);

}  // namespace ra::trace
