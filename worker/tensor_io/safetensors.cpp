// SPDX-License-Identifier: Apache-2.0
#include "worker/tensor_io/safetensors.h"

#include "audit/common/errors.h"
#include "audit/common/json_document.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>

namespace ra {
namespace {

struct StDtype {
  at::ScalarType type;
  int64_t size;
};

const std::map<std::string, StDtype>& st_dtypes() {
  static const std::map<std::string, StDtype> m = {
      {"F64", {at::kDouble, 8}},
      {"F32", {at::kFloat, 4}},
      {"F16", {at::kHalf, 2}},
      {"BF16", {at::kBFloat16, 2}},
      {"I64", {at::kLong, 8}},
      {"I32", {at::kInt, 4}},
      {"I16", {at::kShort, 2}},
      {"I8", {at::kChar, 1}},
      {"U8", {at::kByte, 1}},
      {"BOOL", {at::kBool, 1}},
      {"U16", {at::kUInt16, 2}},
      {"U32", {at::kUInt32, 4}},
      {"U64", {at::kUInt64, 8}},
      {"F8_E4M3", {at::kFloat8_e4m3fn, 1}},
      {"F8_E5M2", {at::kFloat8_e5m2, 1}},
      {"C64", {at::kComplexFloat, 8}},
  };
  return m;
}

uint64_t header_length(std::ifstream& in) {
  unsigned char b[8] = {};
  in.read(reinterpret_cast<char*>(b), 8);
  if (in.gcount() != 8) return std::numeric_limits<uint64_t>::max();
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | b[i];
  return n;
}

}  // namespace

bool looks_like_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return false;
  const auto size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  const uint64_t n = header_length(in);
  if (n < 2 || n > kMaxSafetensorsHeader || n > size - std::min<uint64_t>(size, 8)) return false;
  char c = 0;
  in.read(&c, 1);
  return in.gcount() == 1 && c == '{';
}

std::string safetensors_header_problem(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const auto size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  const uint64_t n = header_length(in);
  char c = 0;
  in.read(&c, 1);
  if (size < 9 || in.gcount() != 1 || c != '{') return "";
  const std::string looks = "looks like a safetensors file (an 8-byte header length, then a JSON header)";
  if (n > size - 8)
    return fmt::format(
        "{}, but its header length ({} bytes) exceeds the {} bytes that follow it: the file is truncated or "
        "damaged",
        looks, n, size - 8);
  if (n > kMaxSafetensorsHeader)
    return fmt::format("{}, but its header length ({} bytes) exceeds the format's limit of {} MB", looks, n,
                       kMaxSafetensorsHeader >> 20);
  if (n < 2) return fmt::format("{}, but its header length ({} bytes) is too short for a JSON object", looks, n);
  return "";
}

NamedTensors load_safetensors(const std::string& path) {
  const std::string what = fmt::format("safetensors file '{}'", path);
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw InputError(fmt::format("cannot read {}: {}", what, std::strerror(errno)));
  const auto size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  const uint64_t n = header_length(in);
  if (size < 8 || n > kMaxSafetensorsHeader || n > size - 8) {
    const std::string why = safetensors_header_problem(path);
    throw InputError(why.empty() ? fmt::format("{}: its header length does not fit the file", what)
                                 : fmt::format("file '{}' {}", path, why));
  }
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  nlohmann::json header;
  try {
    header = parse_json_document<nlohmann::json>(text, what + "'s header");
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: its header is not JSON ({})", what, excerpt(e.what())));
  }
  if (!header.is_object()) throw InputError(fmt::format("{}: its header is not a JSON object", what));
  const size_t count = header.size() - (header.contains("__metadata__") ? 1 : 0);
  if (count > kMaxSafetensorsTensors)
    throw InputError(fmt::format("{} holds {} tensors, more than the {} repro-audit reads from one file", what, count,
                                 kMaxSafetensorsTensors));
  const uint64_t data_size = size - 8 - n;
  const uint64_t data_start = 8 + n;
  struct Range {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Range> ranges;
  NamedTensors out;
  for (const auto& item : header.items()) {
    const std::string name = item.key();  // not a structured binding: lambdas capture it (clang 14)
    const auto& entry = item.value();
    if (name == "__metadata__") continue;
    const auto bad = [&](const std::string& why) {
      return InputError(fmt::format("{}: tensor '{}' {}", what, excerpt(name), why));
    };
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets"))
      throw bad("lacks dtype, shape or data_offsets");
    const auto& dt = entry["dtype"];
    if (!dt.is_string() || !st_dtypes().count(dt.get<std::string>()))
      throw bad(fmt::format("has an unknown dtype {}", excerpt(dt.dump())));
    const StDtype d = st_dtypes().at(dt.get<std::string>());
    const auto& shape = entry["shape"];
    if (!shape.is_array() || shape.size() > 64) throw bad("has a shape that is not a list of sizes");
    std::vector<int64_t> sizes;
    uint64_t numel = 1;
    for (const auto& s : shape) {
      if (!s.is_number_unsigned() || s.get<uint64_t>() > (uint64_t{1} << 62)) throw bad("has a negative or huge size");
      const uint64_t v = s.get<uint64_t>();
      if (v != 0 && numel > (uint64_t{1} << 62) / v) throw bad("has more elements than any file holds");
      numel *= v;
      sizes.push_back(static_cast<int64_t>(v));
    }
    const auto& off = entry["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      throw bad("has data_offsets that are not two byte offsets");
    const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    if (begin > end || end > data_size)
      throw bad(fmt::format("has bytes {}..{} outside the file's {} data bytes", begin, end, data_size));
    const auto item_size = static_cast<uint64_t>(d.size);  // numel * size could overflow: divide instead
    if ((end - begin) % item_size != 0 || (end - begin) / item_size != numel)
      throw bad(fmt::format("has {} bytes for {} elements of {}", end - begin, numel, dt.get<std::string>()));
    ranges.push_back({begin, end, name});
    at::Tensor t = at::empty(sizes, at::TensorOptions().dtype(d.type));
    in.seekg(static_cast<std::streamoff>(data_start + begin));
    in.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(end - begin));
    if (static_cast<uint64_t>(in.gcount()) != end - begin) throw bad("could not be read whole");
    out.emplace_back(name, std::move(t));
  }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].begin < ranges[i - 1].end && ranges[i].begin != ranges[i].end)
      throw InputError(
          fmt::format("{}: tensors '{}' and '{}' overlap", what, excerpt(ranges[i - 1].name), excerpt(ranges[i].name)));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

}  // namespace ra
