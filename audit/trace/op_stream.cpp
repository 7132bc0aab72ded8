// SPDX-License-Identifier: Apache-2.0
#include "audit/trace/op_stream.h"

#include "audit/trace/trace_align.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <tuple>
#include <unordered_map>

namespace ra::trace {
namespace {

constexpr size_t kRecordBytes = 24;
constexpr size_t kRecordChars = 32;  // base64 of 24 bytes, no padding
constexpr size_t kNameChars = 4;     // base64 of a 3-byte op index
constexpr uint64_t kKeyMask = (uint64_t{1} << 48) - 1;

// FNV-1a, 64 bits: stable across builds and machines, unlike std::hash.
class Hash {
 public:
  Hash& add(const std::string& s) {
    for (const char c : s) byte(static_cast<unsigned char>(c));
    byte(0x1f);  // a separator, so that "ab"+"c" and "a"+"bc" differ
    return *this;
  }
  Hash& add(int64_t v) { return add(std::to_string(v)); }
  uint64_t value() const { return h_; }

 private:
  void byte(unsigned char c) {
    h_ ^= c;
    h_ *= 0x100000001b3ULL;
  }
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

void add_tensors(Hash& h, const std::vector<TensorRef>& tensors, bool digests) {
  h.add(static_cast<int64_t>(tensors.size()));
  for (const auto& t : tensors) {
    h.add(t.dtype);
    for (const int64_t s : t.shape) h.add(s);
    if (digests) h.add(t.digest);
  }
}

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Base64 of `n` bytes, n a multiple of 3 (so no padding).
void base64(std::string& out, const unsigned char* b, size_t n) {
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t v = (uint32_t{b[i]} << 16) | (uint32_t{b[i + 1]} << 8) | b[i + 2];
    for (int shift = 18; shift >= 0; shift -= 6) out += kAlphabet[(v >> shift) & 63];
  }
}

int sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

void put(unsigned char* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

uint64_t get(const unsigned char* in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{in[i]} << (8 * i);
  return v;
}

struct Packed {
  uint64_t key = 0;  // 48 bits
  uint32_t step = 0;
  uint64_t inputs = 0;
  uint64_t outputs = 0;
};

// Decodes `chars` (4 characters per 3 bytes) into `out`; false when a character is not base64.
bool unbase64(const char* chars, size_t n, unsigned char* out) {
  for (size_t i = 0; i < n; i += 4) {
    uint32_t v = 0;
    for (size_t k = 0; k < 4; ++k) {
      const int s = sextet(chars[i + k]);
      if (s < 0) return false;
      v = (v << 6) | static_cast<uint32_t>(s);
    }
    out[i / 4 * 3] = static_cast<unsigned char>(v >> 16);
    out[i / 4 * 3 + 1] = static_cast<unsigned char>(v >> 8);
    out[i / 4 * 3 + 2] = static_cast<unsigned char>(v);
  }
  return true;
}

std::vector<Packed> unpack(const report::OpStreamThread& t) {
  if (t.packed.size() != t.records * kRecordChars)
    throw OpStreamError(fmt::format("thread {}: {} characters for {} records", t.thread, t.packed.size(), t.records));
  std::vector<Packed> out;
  out.reserve(t.records);
  std::array<unsigned char, kRecordBytes> b{};
  for (size_t r = 0; r < t.records; ++r) {
    if (!unbase64(t.packed.data() + r * kRecordChars, kRecordChars, b.data()))
      throw OpStreamError(fmt::format("thread {}: record {} is not base64", t.thread, r));
    out.push_back(
        {get(b.data(), 6), static_cast<uint32_t>(get(b.data() + 6, 2)), get(b.data() + 8, 8), get(b.data() + 16, 8)});
  }
  return out;
}

// The op-table index of each record, or an empty vector when the stream keeps no names.
std::vector<uint32_t> unpack_names(const report::OpStreamThread& t, size_t ops) {
  std::vector<uint32_t> out;
  if (t.names.empty()) return out;
  if (t.names.size() != t.records * kNameChars)
    throw OpStreamError(
        fmt::format("thread {}: {} name characters for {} records", t.thread, t.names.size(), t.records));
  std::array<unsigned char, 3> b{};
  for (size_t r = 0; r < t.records; ++r) {
    if (!unbase64(t.names.data() + r * kNameChars, kNameChars, b.data()))
      throw OpStreamError(fmt::format("thread {}: the name of record {} is not base64", t.thread, r));
    const auto index = static_cast<uint32_t>(get(b.data(), 3));
    if (index >= ops)
      throw OpStreamError(fmt::format("thread {}: record {} names op {} of {}", t.thread, r, index, ops));
    out.push_back(index);
  }
  return out;
}

int phase_rank(const std::string& phase) { return phase == "forward" ? 0 : phase == "backward" ? 1 : 2; }

}  // namespace

report::OpStream pack_op_stream(const Trace& trace) {
  report::OpStream out;
  std::unordered_map<uint64_t, size_t> index_of_order;
  for (size_t i = 0; i < trace.records.size(); ++i) index_of_order[trace.records[i].order] = i;
  std::map<std::tuple<std::string, std::string, std::string, std::string, std::string, std::string, std::string>,
           uint32_t>
      op_index;
  std::map<uint32_t, size_t> thread_slot;
  for (size_t i = 0; i < trace.records.size(); ++i) {
    const Record& r = trace.records[i];
    // What the op is (alignment's key without the step, which the record holds apart).
    Hash key;
    key.add(r.kind).add(r.op).add(r.phase);
    if (r.parent >= 0) {
      const auto p = index_of_order.find(static_cast<uint64_t>(r.parent));
      key.add(p == index_of_order.end() ? std::string("?") : trace.records[p->second].op);
    }
    add_tensors(key, r.inputs, false);
    Hash inputs;
    add_tensors(inputs, r.inputs, true);
    inputs.add(r.scalars);
    Hash outputs;
    add_tensors(outputs, r.outputs, true);
    std::array<unsigned char, kRecordBytes> b{};
    put(b.data(), key.value() & kKeyMask, 6);
    put(b.data() + 6, static_cast<uint64_t>(std::clamp(r.step, 0, 0xffff)), 2);
    put(b.data() + 8, inputs.value(), 8);
    put(b.data() + 16, outputs.value(), 8);

    // What names it: one table entry per distinct op and place in the model.
    const Provenance where = provenance(trace, i);
    const auto [it, fresh] = op_index.try_emplace(
        std::tuple(r.op, r.phase, where.direction, where.node, where.forward_op, where.module, where.source),
        static_cast<uint32_t>(out.ops.size()));
    if (fresh)
      out.ops.push_back({r.op, r.phase, where.direction, where.node, where.forward_op, where.module, where.source});
    std::array<unsigned char, 3> name{};
    put(name.data(), it->second, 3);

    const auto [slot, new_thread] = thread_slot.try_emplace(r.thread, out.threads.size());
    if (new_thread) out.threads.push_back({r.thread, 0, "", ""});
    report::OpStreamThread& t = out.threads[slot->second];
    base64(t.packed, b.data(), b.size());
    base64(t.names, name.data(), name.size());
    ++t.records;
  }
  std::sort(out.threads.begin(), out.threads.end(), [](const auto& a, const auto& b) { return a.thread < b.thread; });
  return out;
}

OpStreamComparison compare_op_streams(const report::OpStream& baseline, const report::OpStream& current) {
  OpStreamComparison out;
  // Alignment keys: (what the op is, step), interned over both streams.
  std::unordered_map<uint64_t, uint32_t> keys;
  const auto intern = [&](const std::vector<Packed>& records) {
    std::vector<uint32_t> ids;
    ids.reserve(records.size());
    for (const auto& p : records)
      ids.push_back(keys.try_emplace((p.key << 16) | p.step, static_cast<uint32_t>(keys.size())).first->second);
    return ids;
  };
  const auto thread_of = [](const report::OpStream& s, uint32_t thread) -> const report::OpStreamThread* {
    for (const auto& t : s.threads)
      if (t.thread == thread) return &t;
    return nullptr;
  };
  std::vector<uint32_t> threads;
  for (const auto* s : {&baseline, &current})
    for (const auto& t : s->threads) threads.push_back(t.thread);
  std::sort(threads.begin(), threads.end());
  threads.erase(std::unique(threads.begin(), threads.end()), threads.end());

  // The first changed op so far, ordered by (step, phase rank, thread, index), and its name.
  std::optional<std::tuple<uint32_t, int, uint32_t, size_t>> best;
  std::optional<uint32_t> best_name;
  for (const uint32_t thread : threads) {
    const auto* bt = thread_of(baseline, thread);
    const auto* ct = thread_of(current, thread);
    const std::vector<Packed> b = bt ? unpack(*bt) : std::vector<Packed>{};
    const std::vector<Packed> c = ct ? unpack(*ct) : std::vector<Packed>{};
    const std::vector<uint32_t> names = ct ? unpack_names(*ct, current.ops.size()) : std::vector<uint32_t>{};
    const auto pairs = align_sequences(intern(b), intern(c));
    out.unmatched_baseline += b.size() - pairs.size();
    out.unmatched_current += c.size() - pairs.size();
    for (const auto& [i, j] : pairs) {
      if (b[i].outputs == c[j].outputs) continue;
      ++out.changed_ops;
      if (b[i].inputs != c[j].inputs) continue;
      const std::optional<uint32_t> name = names.empty() ? std::nullopt : std::optional<uint32_t>(names[j]);
      const int rank = name ? phase_rank(current.ops[*name].phase) : 0;
      const auto at = std::tuple(c[j].step, rank, thread, j);
      if (!best || at < *best) {
        best = at;
        best_name = name;
      }
    }
  }
  if (best) {
    report::RootCause rc;
    if (best_name) {
      const report::OpStreamOp& op = current.ops[*best_name];
      rc.op = op.op;
      rc.direction = op.direction;
      rc.node = op.node;
      rc.forward_op = op.forward_op;
      rc.module = op.module;
      rc.source = op.source;
      rc.phase = op.phase;
    } else {
      // Two baselines: neither keeps names, only where the op sits.
      rc.op = fmt::format("record {} of thread {}", std::get<3>(*best), std::get<2>(*best));
      rc.direction = "unknown";
    }
    rc.step = static_cast<int>(std::get<0>(*best));
    rc.thread = std::get<2>(*best);
    rc.position = std::get<3>(*best);
    rc.runs_diverged = rc.runs_compared = 1;
    rc.propagated = out.changed_ops - 1;
    out.first_changed = std::move(rc);
  }
  return out;
}

}  // namespace ra::trace
