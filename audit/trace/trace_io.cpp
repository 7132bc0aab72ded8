// SPDX-License-Identifier: Apache-2.0
#include "audit/trace/trace_io.h"
#include "audit/common/json_document.h"

#include "audit/common/files.h"
#include "audit/common/paths.h"

#include <fmt/format.h>

#include <limits>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <unordered_map>

namespace ra::trace {
namespace {

using json = nlohmann::json;

constexpr const char* kFormat = "repro-audit/trace";

json tensors_json(const std::vector<TensorRef>& ts) {
  json a = json::array();
  for (const auto& t : ts) a.push_back(json::array({t.dtype, t.shape, t.digest}));
  return a;
}

// An integer field, checked: nlohmann converts any number, and a float out of the type's range
// (6.7e64 as a uint64_t) is undefined behaviour. Found by tests/fuzz/fuzz_trace.cpp.
template <typename T>
T integer(const json& v) {
  if (!v.is_number_integer()) throw std::runtime_error("expected an integer");
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) throw std::runtime_error("integer out of range");
    return static_cast<T>(u);
  }
  const int64_t i = v.get<int64_t>();
  if (i < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
      (i > 0 && static_cast<uint64_t>(i) > static_cast<uint64_t>(std::numeric_limits<T>::max())))
    throw std::runtime_error("integer out of range");
  return static_cast<T>(i);
}

template <typename T>
T integer_or(const json& j, const char* key, T fallback) {
  return j.contains(key) ? integer<T>(j.at(key)) : fallback;
}

std::vector<TensorRef> tensors_from(const json& a) {
  std::vector<TensorRef> ts;
  ts.reserve(a.size());
  for (const auto& t : a) {
    if (!t.is_array() || t.size() != 3) throw std::runtime_error("a tensor is not [dtype, shape, digest]");
    std::vector<int64_t> shape;
    if (!t[1].is_array()) throw std::runtime_error("a tensor's shape is not an array");
    for (const auto& d : t[1]) shape.push_back(integer<int64_t>(d));
    ts.push_back({t[0].get<std::string>(), std::move(shape), t[2].get<std::string>(), ""});  // no row digest in files
  }
  return ts;
}

std::string record_line(const Record& r) {
  json j = {{"th", r.thread}, {"ord", r.order}, {"op", r.op}, {"kind", r.kind}, {"ph", r.phase}, {"step", r.step}};
  if (r.seq != -1) j["seq"] = r.seq;
  if (r.parent != -1) j["par"] = r.parent;
  if (!r.module.empty()) j["mod"] = r.module;
  if (!r.source.empty()) j["src"] = r.source;
  if (!r.scalars.empty()) j["sc"] = r.scalars;
  j["in"] = tensors_json(r.inputs);
  j["out"] = tensors_json(r.outputs);
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Record record_from(const json& j) {
  if (!j.is_object()) throw std::runtime_error("not a JSON object");
  Record r;
  r.thread = integer<uint32_t>(j.at("th"));
  r.order = integer<uint64_t>(j.at("ord"));
  r.op = j.at("op").get<std::string>();
  r.kind = j.at("kind").get<std::string>();
  r.phase = j.at("ph").get<std::string>();
  r.step = integer<int>(j.at("step"));
  r.seq = integer_or<int64_t>(j, "seq", -1);
  r.parent = integer_or<int64_t>(j, "par", -1);
  r.module = j.value("mod", std::string());
  r.source = j.value("src", std::string());
  r.scalars = j.value("sc", std::string());
  r.inputs = tensors_from(j.at("in"));
  r.outputs = tensors_from(j.at("out"));
  return r;
}

}  // namespace

void write_trace(const std::string& path, const Trace& trace) {
  std::string out = json({{"format", kFormat},
                          {"version", kTraceVersion},
                          {"device", trace.device},
                          {"dropped", trace.dropped},
                          {"capacity", trace.capacity},
                          {"memory_bytes", trace.memory_bytes},
                          {"records", trace.records.size()}})
                        .dump(-1, ' ', false, json::error_handler_t::replace);
  out += '\n';
  for (const auto& r : trace.records) {
    out += record_line(r);
    out += '\n';
  }
  write_file_atomic(path, out);
}

Trace read_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(fmt::format("trace '{}' cannot be read: {}", path, std::strerror(errno)));
  Trace trace;
  std::string line;
  if (!std::getline(in, line)) throw TraceError(fmt::format("trace '{}' is empty", path));
  uint64_t expected = 0;
  try {
    const json h = parse_json_document<json>(line, fmt::format("trace '{}' line 1", path));
    if (!h.is_object() || h.value("format", std::string()) != kFormat)
      throw TraceError(fmt::format("'{}' line 1: not a repro-audit trace", path));
    if (integer<int>(h.at("version")) != kTraceVersion)
      throw TraceError(fmt::format("'{}' line 1: trace version {} (this build reads {})", path, h.at("version").dump(),
                                   kTraceVersion));
    trace.device = h.at("device").get<std::string>();
    trace.dropped = integer<uint64_t>(h.at("dropped"));
    trace.capacity = integer<uint64_t>(h.at("capacity"));
    trace.memory_bytes = integer<uint64_t>(h.at("memory_bytes"));
    expected = integer<uint64_t>(h.at("records"));
  } catch (const TraceError&) {
    throw;
  } catch (const std::exception& e) {
    throw TraceError(fmt::format("'{}' line 1: bad trace header: {}", path, e.what()));
  }
  // The header's count is the file's word: room for no more records than the rest of the file
  // could hold (each takes a line of at least 3 bytes), so a tiny file cannot claim gigabytes.
  const auto here = in.tellg();
  in.seekg(0, std::ios::end);
  const auto end = in.tellg();
  in.seekg(here);
  const uint64_t left = here >= 0 && end >= here ? static_cast<uint64_t>(end - here) : 0;
  trace.records.reserve(std::min<uint64_t>(expected, left / 3));
  uint64_t line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (trace.records.size() == expected)
      throw TraceError(fmt::format("'{}' line {}: more records than the {} the header says", path, line_no, expected));
    try {
      trace.records.push_back(
          record_from(parse_json_document<json>(line, fmt::format("trace '{}' line {}", path, line_no))));
    } catch (const std::exception& e) {
      throw TraceError(fmt::format("'{}' line {}: malformed record: {}", path, line_no, e.what()));
    }
  }
  if (trace.records.size() != expected)
    throw TraceError(
        fmt::format("'{}': {} of {} records (the trace is cut short)", path, trace.records.size(), expected));
  // Places in source as reports show them (audit/common/paths.h): a traced module's line read from
  // its file, an installed package's files relative to site-packages, the user's relative to the
  // working directory. Few distinct places
  // recur over many records, so each is rewritten once.
  static const std::string cwd = working_directory();
  std::unordered_map<std::string, std::string> shown;
  for (auto& r : trace.records) {
    if (r.source.empty()) continue;
    auto it = shown.find(r.source);
    if (it == shown.end()) it = shown.emplace(r.source, shown_source(traced_source(r.source), cwd)).first;
    r.source = it->second;
  }
  const auto by_order = [](const Record& a, const Record& b) { return a.order < b.order; };
  if (!std::is_sorted(trace.records.begin(), trace.records.end(), by_order))
    std::stable_sort(trace.records.begin(), trace.records.end(), by_order);
  return trace;
}

}  // namespace ra::trace
