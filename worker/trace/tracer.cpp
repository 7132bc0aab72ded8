// SPDX-License-Identifier: Apache-2.0
// See worker/trace/tracer.h for the design.
#include "worker/trace/tracer.h"

#include "audit/digest/digest_kernel.h"
#include "worker/digest/digest.h"
#include "worker/runtime/child_support.h"

#include <ATen/Functions.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/jit/frontend/source_range.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace ra::trace {
namespace {

namespace dk = digest_kernel;

constexpr const char* kPhases[] = {"forward", "backward", "optimizer"};
std::atomic<int> g_phase{0};
std::atomic<int> g_step{0};

constexpr int64_t kUndefined = -1;    // an undefined (None) tensor
constexpr int64_t kUnsupported = -2;  // sparse, quantized, ...: no digest

struct RawTensor {
  int64_t slot = kUndefined;
  at::ScalarType dtype = at::kFloat;
  bool on_device = false;
  uint32_t shape_begin = 0;
  uint32_t ndim = 0;
  // Row-slice mode: the slot of the row slice's digest, where dim 0 is the batch (32 bits, so that
  // a record's memory stays what it was; a slot beyond them gets no row digest).
  int32_t row_slot = static_cast<int32_t>(kUndefined);
};

struct RawRecord {
  uint32_t thread = 0;
  uint32_t op = 0;  // name id
  bool node = false;
  uint8_t phase = 0;
  int32_t step = 0;
  int64_t seq = -1;
  int64_t parent = -1;    // index into records
  int64_t location = -1;  // location id
  std::string scalars;
  uint32_t in_begin = 0, in_count = 0, out_begin = 0, out_count = 0;
  bool dropped = false;
};

bool is_engine_wrapper(const char* name) {
  static constexpr std::string_view kPrefix = "autograd::engine::evaluate_function";
  return std::strncmp(name, kPrefix.data(), kPrefix.size()) == 0;
}

// FNV-1a over the non-tensor arguments, tagged by type, so that "the same tensors but another
// scalar" is a different input.
class ScalarHash {
 public:
  void add(const c10::IValue& v) {
    any_ = true;
    if (v.isNone()) return feed_tag('N');
    if (v.isBool()) return feed_tag('B'), feed(v.toBool());
    if (v.isInt()) return feed_tag('I'), feed(v.toInt());
    if (v.isDouble()) return feed_tag('D'), feed(v.toDouble());
    if (v.isString()) return feed_tag('S'), feed_bytes(v.toStringRef().data(), v.toStringRef().size());
    if (v.isIntList()) {
      feed_tag('L');
      for (int64_t x : v.toIntVector()) feed(x);
      return;
    }
    if (v.isDoubleList()) {
      feed_tag('F');
      for (double x : v.toDoubleVector()) feed(x);
      return;
    }
    if (v.isBoolList()) {
      feed_tag('b');
      for (bool x : v.toBoolList()) feed(x);
      return;
    }
    if (v.isDevice()) {
      const std::string s = v.toDevice().str();
      return feed_tag('d'), feed_bytes(s.data(), s.size());
    }
    const std::string kind = v.tagKind();  // generators, objects: only their kind
    feed_tag('?');
    feed_bytes(kind.data(), kind.size());
  }
  std::string hex() const { return any_ ? fmt::format("{:016x}", h_) : ""; }

 private:
  template <class T>
  void feed(T x) {
    feed_bytes(&x, sizeof x);
  }
  void feed_tag(char c) { feed_bytes(&c, 1); }
  void feed_bytes(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ b[i]) * 0x100000001b3ull;
  }
  uint64_t h_ = 0xcbf29ce484222325ull;
  bool any_ = false;
};

// Tensors of an argument or result (lists flattened), or nothing for a non-tensor value.
template <class F>
bool for_each_tensor(const c10::IValue& v, const F& f) {
  if (v.isTensor()) return f(v.toTensor()), true;
  if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector()) f(t);
    return true;
  }
  if (v.isList()) {
    const auto list = v.toListRef();
    bool tensors = false;
    for (const auto& e : list) {
      if (e.isTensor())
        f(e.toTensor()), tensors = true;
      else if (e.isNone())
        f(at::Tensor()), tensors = true;
    }
    return tensors;
  }
  if (v.isTuple()) {
    bool tensors = false;
    for (const auto& e : v.toTupleRef().elements()) tensors |= for_each_tensor(e, f);
    return tensors;
  }
  return false;
}

// The last `n` values: an op called from the TorchScript interpreter sees the interpreter's whole
// stack as its inputs and outputs; its own arguments and results are on top.
c10::ArrayRef<const c10::IValue> last(c10::ArrayRef<const c10::IValue> values, size_t n) {
  return n < values.size() ? values.slice(values.size() - n) : values;
}

// "encoder.layers.0" from the interpreter's module hierarchy ("TOP(Model)::forward",
// "encoder(Encoder)::forward", ...); "" at the top level or outside the interpreter. A method a
// module calls on itself (torchvision's `self._conv_forward`) adds a "SELF(...)" entry: not a
// submodule, so it is left out ("conv1", not "SELF.conv1.SELF").
std::string module_path() {
  std::string path;
  const auto hierarchy = torch::jit::currentModuleHierarchy();
  for (size_t i = 1; i < hierarchy.size(); ++i) {
    const std::string& entry = hierarchy[i];
    const std::string name = entry.substr(0, entry.find('('));
    if (name.empty() || name == "SELF") continue;
    if (!path.empty()) path += '.';
    path += name;
  }
  return path;
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "file.py:12: y = torch.matmul(x, w)" for the innermost TorchScript frame (the original Python
// file when the archive kept debug information, else "<function>:<line>" in the archive's code).
std::string source_location() {
  const auto stack = torch::jit::currentCallstack();
  if (stack.empty()) return "";
  const torch::jit::StackEntry& frame = stack.front();  // innermost first
  torch::jit::SourceRange range = frame.range;
  auto source = range.source();
  if (!source) return frame.filename;
  if (auto original = source->findSourceRangeThatGenerated(range)) {
    range = *original;
    source = range.source();
    if (!source) return frame.filename;
  }
  const size_t line = source->lineno_for_offset(range.start());
  const std::string code = trim(source->get_line(line).str());
  const auto& file = source->filename();
  if (file && !file->empty()) return fmt::format("{}:{}: {}", *file, source->lineno_to_source_lineno(line), code);
  return fmt::format("{}:{}: {}", frame.filename, line + 1, code);
}

struct OpenNode {
  int64_t record;
  int depth;  // FUNCTION depth when the node started
};

struct ThreadState {
  const void* owner = nullptr;  // the tracer this state belongs to
  uint32_t thread = 0;
  int depth = 0;  // FUNCTION ops open on this thread (engine wrappers excluded)
  std::vector<OpenNode> nodes;
  int wrappers = 0;        // autograd engine wrappers open
  int64_t last_node = -1;  // the node that ended last inside the open wrapper
};

enum class What { Op, Node, Nested, Wrapper, Dropped };

struct Ctx : at::ObserverContext {
  Ctx(What w, int64_t r) : what(w), record(r) {}
  What what;
  int64_t record;
  std::vector<at::Tensor> written;  // an op that may write its arguments: what it read
};

// Batch norms update their running statistics in place, though their schemas do not say so.
bool batch_norm_op(const char* name) {
  static const std::unordered_set<std::string_view> ops = {"aten::batch_norm",
                                                           "aten::native_batch_norm",
                                                           "aten::_native_batch_norm_legit",
                                                           "aten::_batch_norm_impl_index",
                                                           "aten::_batch_norm_with_update",
                                                           "aten::cudnn_batch_norm",
                                                           "aten::miopen_batch_norm",
                                                           "aten::instance_norm",
                                                           "aten::batch_norm_update_stats"};
  return ops.count(name) > 0;
}

}  // namespace

void set_phase(const char* phase, int step) {
  for (int i = 0; i < 3; ++i)
    if (std::strcmp(kPhases[i], phase) == 0) g_phase = i;
  g_step = step;
}

struct Tracer::State {
  c10::Device device;
  uint64_t capacity;
  std::optional<RowSlice> rows;
  at::CallbackHandle handle = 0;

  std::mutex mu;
  std::vector<RawRecord> records;
  std::vector<RawTensor> tensors;
  std::vector<int64_t> shapes;
  std::vector<dk::Lanes> cpu_slots;
  at::Tensor device_slots;  // [capacity, 2] int64 on `device`, zeroed, allocated on first use
  // The batched device digests (CudaLanesBatch), made with device_slots; off with
  // REPRO_AUDIT_TRACE_BATCH=0 (read when the tracer is made), or where the module lacks the kernel.
  bool batch_wanted = true;
  std::unique_ptr<CudaLanesBatch> batch;
  uint64_t used = 0;
  uint64_t dropped = 0;
  uint64_t reused = 0;  // digests taken from the cache
  int64_t capture_order = -1;
  std::vector<at::Tensor> captured;
  Tracer::Call captured_call;
  bool full = false;
  std::vector<std::string> names;
  std::unordered_map<std::string, uint32_t> name_ids;
  std::unordered_map<const char*, uint32_t> op_name_ids;  // dispatcher names are stable pointers
  std::vector<std::pair<std::string, std::string>> locations;
  std::unordered_map<std::string, int64_t> location_ids;
  uint32_t threads = 0;

  State(const c10::Device& d, uint64_t cap, std::optional<RowSlice> r) : device(d), capacity(cap), rows(r) {
    cpu_slots.reserve(
        std::min<uint64_t>(cap, uint64_t{1} << 16));  // grown as used: a large capacity costs nothing unused
    const char* batch_env = std::getenv("REPRO_AUDIT_TRACE_BATCH");
    batch_wanted = batch_env == nullptr || std::string_view(batch_env) != "0";
  }

  ThreadState& thread_state() {
    thread_local ThreadState ts;
    if (ts.owner != this) {
      ts = ThreadState{};
      ts.owner = this;
      std::lock_guard lock(mu);
      ts.thread = threads++;
    }
    return ts;
  }

  uint32_t name_id(const char* name, bool stable) {
    if (stable) {
      const auto it = op_name_ids.find(name);
      if (it != op_name_ids.end()) return it->second;
    }
    auto [it, inserted] = name_ids.emplace(name, static_cast<uint32_t>(names.size()));
    if (inserted) names.emplace_back(name);
    if (stable) op_name_ids.emplace(name, it->second);
    return it->second;
  }

  int64_t location_id(std::string module, std::string source) {
    std::string key = module + '\n' + source;
    auto [it, inserted] = location_ids.emplace(std::move(key), static_cast<int64_t>(locations.size()));
    if (inserted) locations.emplace_back(std::move(module), std::move(source));
    return it->second;
  }

  // A digest already taken of the same bits: its slot, else -1. An op's inputs are mostly earlier
  // ops' outputs (or views and detached aliases of them), so this halves the digesting. Two
  // tensors hold the same bits when they view the same storage at the same offset with the same
  // dtype, sizes and strides, and the storage's version counter has not moved since (every
  // in-place op bumps it; views and detach() share it). The storage is held weakly, so its
  // address cannot be reused while it is cached. Inference tensors have no version counter and
  // are always digested.
  //
  // A contiguous tensor's digest lanes depend only on its bytes, not on its shape (the shape joins
  // the digest when the trace is collected, from the record): so contiguous views of the same bytes,
  // such as view, reshape, flatten, squeeze or a no-op contiguous(), share one key, with the
  // element count in place of sizes and strides. conj and neg views read other values than the
  // bytes: their flags are part of the key.
  struct CacheKey {
    const c10::StorageImpl* storage;
    int64_t offset;
    at::ScalarType dtype;
    std::vector<int64_t> sizes, strides;
    bool conj = false, neg = false;
    bool operator==(const CacheKey&) const = default;
  };
  struct CacheKeyHash {
    size_t operator()(const CacheKey& k) const {
      size_t h = std::hash<const void*>()(k.storage) ^ (static_cast<size_t>(k.offset) * 0x9e3779b97f4a7c15ull);
      for (int64_t v : k.sizes) h = h * 31 + static_cast<size_t>(v);
      return h;
    }
  };
  //
  // Version counters miss two kinds of writes, so a storage also has a generation that such
  // writes bump: ops that update an argument their schema does not mark as written (batch norm's
  // running statistics), and writes through a `.data` alias, which carries a counter of its own.
  // After any op whose schema writes an argument, or one of the batch norms, every storage it
  // read or wrote moves to a new generation; a cached digest is reused only in its generation.
  struct Cached {
    c10::weak_intrusive_ptr<c10::StorageImpl> storage;
    int64_t version;
    uint64_t generation;
    int64_t slot;
  };
  std::unordered_map<CacheKey, Cached, CacheKeyHash> cache;
  std::unordered_map<const c10::StorageImpl*, uint64_t> generations;
  std::unordered_map<const char*, bool> writes_memo;  // by the dispatcher's stable name pointer
  static constexpr size_t kCacheLimit = 1 << 14;

  uint64_t generation(const c10::StorageImpl* storage) const {
    const auto it = generations.find(storage);
    return it == generations.end() ? 0 : it->second;
  }
  void touch(const at::Tensor& t) {
    if (t.defined() && t.has_storage()) ++generations[t.storage().unsafeGetStorageImpl()];
  }

  // Whether the op may write one of its arguments: its schema says so (add_, copy_, the foreach
  // ops, out= variants), or it is a batch norm, which updates its running statistics unannounced.
  bool writes_arguments(const at::RecordFunction& fn) {
    const char* name = fn.name();
    if (const auto it = writes_memo.find(name); it != writes_memo.end()) return it->second;
    bool writes = batch_norm_op(name);
    if (!writes) {
      if (const auto op_name = fn.operator_name()) {
        if (const auto handle = c10::Dispatcher::singleton().findOp(*op_name)) writes = handle->schema().is_mutable();
      }
    }
    writes_memo.emplace(name, writes);
    return writes;
  }

  static std::optional<CacheKey> cache_key(const at::Tensor& t) {
    if (t.is_inference() || !t.has_storage()) return std::nullopt;
    if (t.is_contiguous())
      return CacheKey{t.storage().unsafeGetStorageImpl(),
                      t.storage_offset(),
                      t.scalar_type(),
                      {t.numel()},
                      {1},
                      t.is_conj(),
                      t.is_neg()};
    return CacheKey{t.storage().unsafeGetStorageImpl(),
                    t.storage_offset(),
                    t.scalar_type(),
                    t.sizes().vec(),
                    t.strides().vec(),
                    t.is_conj(),
                    t.is_neg()};
  }

  int64_t cached_slot(const std::optional<CacheKey>& key, const at::Tensor& t) {
    if (!key) return -1;
    const auto it = cache.find(*key);
    if (it == cache.end() || it->second.storage.expired() || it->second.version != t._version() ||
        it->second.generation != generation(key->storage))
      return -1;
    return it->second.slot;
  }

  void remember(std::optional<CacheKey> key, const at::Tensor& t, int64_t slot) {
    if (!key) return;
    if (cache.size() >= kCacheLimit) {
      cache.clear();
      generations.clear();
    }
    const uint64_t gen = generation(key->storage);
    cache.insert_or_assign(
        std::move(*key),
        Cached{c10::weak_intrusive_ptr<c10::StorageImpl>(t.storage().getWeakStorageImpl()), t._version(), gen, slot});
  }

  // Digests `t` into slot `slot`: at once on the CPU, queued on a device.
  void digest_into_slot(const at::Tensor& t, int64_t slot, bool on_device) {
    if (!on_device) {
      cpu_slots[static_cast<size_t>(slot)] = digest_lanes_cpu(t);
      return;
    }
    if (!device_slots.defined()) {
      device_slots = at::zeros({static_cast<int64_t>(capacity), 2}, t.options().dtype(at::kLong));
      if (batch_wanted && t.is_cuda() && CudaLanesBatch::available())
        batch = std::make_unique<CudaLanesBatch>(device_slots);
    }
    if (batch) {
      batch->add(t, slot);
    } else {
      at::Tensor s = device_slots.select(0, slot);
      digest_lanes_into(t, s);
    }
  }

  // Row-slice mode: the digest of `t`'s row where its dim 0 is the batch's size.
  void add_row(const at::Tensor& t, RawTensor& r) {
    if (!rows || r.slot < 0 || t.dim() == 0 || t.size(0) != rows->batch || used >= static_cast<uint64_t>(INT32_MAX))
      return;
    const auto slot = static_cast<int32_t>(used++);
    cpu_slots.resize(used);
    try {
      digest_into_slot(t.narrow(0, rows->row, 1), slot, r.on_device);
      r.row_slot = slot;
    } catch (const std::exception&) {
      r.row_slot = static_cast<int32_t>(kUnsupported);
    }
  }

  // Digest slots a tensor may take.
  size_t slots_per_tensor() const { return rows ? 2 : 1; }

  // Digests `t` into a new slot, or reuses the slot of an unchanged digested tensor (the caller
  // holds `mu` and checked the capacity).
  void add_tensor(const at::Tensor& t) {
    RawTensor r;
    if (t.defined()) {
      r.dtype = t.scalar_type();
      r.shape_begin = static_cast<uint32_t>(shapes.size());
      r.ndim = static_cast<uint32_t>(t.dim());
      for (int64_t s : t.sizes()) shapes.push_back(s);
      if (t.layout() != at::kStrided || t.is_quantized() || t.is_meta()) {
        r.slot = kUnsupported;
      } else {
        r.on_device = !t.device().is_cpu();
        std::optional<CacheKey> key = cache_key(t);
        r.slot = cached_slot(key, t);
        if (r.slot >= 0) {
          ++reused;
        } else {
          r.slot = static_cast<int64_t>(used++);
          cpu_slots.resize(used);
          try {
            digest_into_slot(t, r.slot, r.on_device);
            remember(std::move(key), t, r.slot);
          } catch (const std::exception&) {
            r.slot = kUnsupported;  // a tensor the digest cannot read (no storage, ...): never the model's failure
            r.on_device = false;
          }
        }
        add_row(t, r);
      }
    }
    tensors.push_back(r);
  }

  // Queues the batched digests of the tensors added since tensors[from] (one launch for up to
  // kBatchMax of them). A tensor no path could digest has no digest, as when add_tensor fails.
  void flush_batch(size_t from) {
    if (!batch) return;
    std::vector<int64_t> failed;
    try {
      failed = batch->flush();
    } catch (const std::exception&) {
      failed.push_back(-1);  // unknown rows: every tensor of this flush
    }
    if (failed.empty()) return;
    const bool all = failed.front() == -1;
    for (size_t i = from; i < tensors.size(); ++i) {
      RawTensor& r = tensors[i];
      if (r.on_device && r.row_slot >= 0 &&
          (all || std::find(failed.begin(), failed.end(), r.row_slot) != failed.end()))
        r.row_slot = static_cast<int32_t>(kUnsupported);
      if (r.on_device && r.slot >= 0 && (all || std::find(failed.begin(), failed.end(), r.slot) != failed.end())) {
        r.slot = kUnsupported;
        r.on_device = false;
      }
    }
    cache.clear();  // it may name those slots
    generations.clear();
  }

  // The captured record's call, before the op runs: its arguments with every tensor copied to the CPU.
  void keep_call(const at::RecordFunction& fn) {
    const std::optional<c10::OperatorName> op = fn.operator_name();
    if (!op) return;
    captured_call.name = op->name;
    captured_call.overload = op->overload_name;
    for (const c10::IValue& v : last(fn.inputs(), fn.num_inputs())) captured_call.arguments.push_back(cpu_copy(v));
  }

  static at::Tensor cpu_copy(const at::Tensor& t) {
    if (!t.defined()) return t;
    return t.is_cpu() ? t.detach().clone() : t.detach().to(at::kCPU);
  }

  static c10::IValue cpu_copy(const c10::IValue& v) {
    if (v.isTensor()) return cpu_copy(v.toTensor());
    if (v.isTensorList()) {
      c10::List<at::Tensor> out;
      for (const at::Tensor& t : v.toTensorVector()) out.push_back(cpu_copy(t));
      return out;
    }
    if (v.isList()) {
      const c10::List<c10::IValue> in = v.toList();
      c10::impl::GenericList out(in.elementType());
      for (const c10::IValue& e : in) out.push_back(cpu_copy(e));
      return out;
    }
    return v;
  }

  // Reserves room for `n` digests (and a new record); false (and the trace is full from now on) when
  // there is none. Records count against the capacity too, so that ops without tensors cannot grow
  // the trace past it (a forward of 1M ops once took 1.76 GB).
  bool room_for(size_t n, bool record) {
    if (!full && used + records.size() + n + (record ? 1 : 0) <= capacity) return true;
    full = true;
    return false;
  }

  std::unique_ptr<at::ObserverContext> start(const at::RecordFunction& fn) {
    ThreadState& ts = thread_state();
    const bool node = fn.scope() == at::RecordScope::BACKWARD_FUNCTION;
    int64_t parent = -1;
    if (!node) {
      if (is_engine_wrapper(fn.name())) {
        ++ts.wrappers;
        ts.last_node = -1;
        return std::make_unique<Ctx>(What::Wrapper, -1);
      }
      const int base = ts.nodes.empty() ? 0 : ts.nodes.back().depth;
      if (ts.depth++ != base) return std::make_unique<Ctx>(What::Nested, -1);
      parent = !ts.nodes.empty() ? ts.nodes.back().record : (ts.wrappers > 0 ? ts.last_node : -1);
    }
    // The observer's own ops are not recorded, bump no version counter and create no graph.
    at::RecordFunctionGuard no_recording(false);
    c10::impl::ExcludeDispatchKeyGuard no_autograd(c10::autograd_dispatch_keyset_with_ADInplaceOrView);

    RawRecord rec;
    rec.thread = ts.thread;
    rec.node = node;
    rec.phase = static_cast<uint8_t>(g_phase.load());
    rec.step = g_step.load();
    rec.seq = fn.seqNr();
    rec.parent = parent;
    ScalarHash scalars;
    std::vector<at::Tensor> inputs;
    for (const c10::IValue& v : last(fn.inputs(), node ? fn.inputs().size() : fn.num_inputs()))
      if (!for_each_tensor(v, [&](const at::Tensor& t) { inputs.push_back(t); })) scalars.add(v);
    rec.scalars = scalars.hex();
    std::string module, source;
    const bool located = !node && parent < 0 && rec.phase == 0;
    if (located) {
      module = module_path();
      source = source_location();
    }

    std::lock_guard lock(mu);
    if (!room_for(inputs.size() * slots_per_tensor(), true)) {
      ++dropped;
      if (node) ts.nodes.push_back({-1, ts.depth});
      return std::make_unique<Ctx>(node ? What::Node : What::Dropped, -1);
    }
    rec.op = name_id(fn.name(), !node);
    if (located && (!module.empty() || !source.empty()))
      rec.location = location_id(std::move(module), std::move(source));
    rec.in_begin = static_cast<uint32_t>(tensors.size());
    rec.in_count = static_cast<uint32_t>(inputs.size());
    for (const at::Tensor& t : inputs) add_tensor(t);
    flush_batch(rec.in_begin);
    const auto index = static_cast<int64_t>(records.size());
    if (!node && index == capture_order) keep_call(fn);
    records.push_back(std::move(rec));
    if (node) ts.nodes.push_back({index, ts.depth});
    auto ctx = std::make_unique<Ctx>(node ? What::Node : What::Op, index);
    if (!node && writes_arguments(fn)) ctx->written = std::move(inputs);
    return ctx;
  }

  void end(const at::RecordFunction& fn, at::ObserverContext* raw) {
    auto* ctx = static_cast<Ctx*>(raw);
    if (ctx == nullptr) return;
    ThreadState& ts = thread_state();
    switch (ctx->what) {
      case What::Wrapper:
        --ts.wrappers;
        ts.last_node = -1;
        return;
      case What::Node:
        if (!ts.nodes.empty()) ts.nodes.pop_back();
        ts.last_node = ctx->record;
        return;
      case What::Nested:
      case What::Dropped:
        --ts.depth;
        return;
      case What::Op:
        --ts.depth;
        break;
    }
    at::RecordFunctionGuard no_recording(false);
    c10::impl::ExcludeDispatchKeyGuard no_autograd(c10::autograd_dispatch_keyset_with_ADInplaceOrView);
    std::vector<at::Tensor> outputs;
    const std::vector<c10::IValue>& results = fn.outputs();
    for (const c10::IValue& v :
         last(c10::ArrayRef<const c10::IValue>(results.data(), results.size()), fn.num_outputs()))
      for_each_tensor(v, [&](const at::Tensor& t) { outputs.push_back(t); });
    std::lock_guard lock(mu);
    RawRecord& rec = records[static_cast<size_t>(ctx->record)];
    if (!room_for(outputs.size() * slots_per_tensor(), false)) {
      rec.dropped = true;
      ++dropped;
      return;
    }
    if (writes_arguments(fn)) {
      // What it read may have changed under the same version: inputs and outputs alike.
      for (const at::Tensor& t : ctx->written) touch(t);
      for (const at::Tensor& t : outputs) touch(t);
    }
    // A CPU output of an op that read device tensors (a non_blocking copy to the host) may still
    // be in flight: wait for the device before reading it.
    const bool from_device = std::any_of(tensors.begin() + rec.in_begin, tensors.begin() + rec.in_begin + rec.in_count,
                                         [](const RawTensor& t) { return t.on_device; });
    if (from_device &&
        std::any_of(outputs.begin(), outputs.end(), [](const at::Tensor& t) { return t.defined() && t.is_cpu(); }))
      synchronize(device);
    rec.out_begin = static_cast<uint32_t>(tensors.size());
    rec.out_count = static_cast<uint32_t>(outputs.size());
    for (const at::Tensor& t : outputs) add_tensor(t);
    flush_batch(rec.out_begin);
    if (ctx->record == capture_order)
      for (const at::Tensor& t : outputs) captured.push_back(t.defined() ? t.detach().to(at::kCPU).clone() : t);
  }
};

namespace {

Tracer::State* g_state = nullptr;  // the live tracer; the observer is registered only while it lives

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  return g_state ? g_state->start(fn) : nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  if (g_state) g_state->end(fn, ctx);
}

}  // namespace

OpLocation current_location() { return {module_path(), source_location()}; }

Tracer::Tracer(const c10::Device& device, uint64_t capacity, std::optional<RowSlice> rows)
    : state_(std::make_unique<State>(device, capacity, rows)) {
  TORCH_CHECK(g_state == nullptr, "only one Tracer may record at a time");
  g_state = state_.get();
  state_->handle = at::addGlobalCallback(at::RecordFunctionCallback(on_start, on_end)
                                             .needsInputs(true)
                                             .needsOutputs(true)
                                             .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
}

Tracer::~Tracer() {
  if (state_ && state_->handle != 0) at::removeCallback(state_->handle);
  if (g_state == state_.get()) g_state = nullptr;
}

void Tracer::capture(uint64_t order) { state_->capture_order = static_cast<int64_t>(order); }

const std::vector<at::Tensor>& Tracer::captured() const { return state_->captured; }

const Tracer::Call& Tracer::captured_call() const { return state_->captured_call; }

Trace Tracer::finish() {
  State& s = *state_;
  at::removeCallback(s.handle);
  s.handle = 0;
  g_state = nullptr;
  at::RecordFunctionGuard no_recording(false);
  // One read of the device slots: this is where the trace waits for the device, all of its
  // streams (a digest queued on a side stream is not covered by .cpu()'s wait on the current one).
  if (s.device_slots.defined()) {
    synchronize(s.device_slots.device());
    const at::Tensor host = s.device_slots.narrow(0, 0, static_cast<int64_t>(s.used)).cpu().contiguous();
    const auto* v = host.const_data_ptr<int64_t>();
    const auto read = [&](int64_t slot) {
      s.cpu_slots[static_cast<size_t>(slot)] = {static_cast<uint64_t>(v[2 * slot]),
                                                static_cast<uint64_t>(v[2 * slot + 1])};
    };
    for (const RawTensor& t : s.tensors) {
      if (t.on_device && t.slot >= 0) read(t.slot);
      if (t.on_device && t.row_slot >= 0) read(t.row_slot);
    }
  }
  Trace trace;
  trace.capacity = s.capacity;
  trace.dropped = s.dropped;
  trace.device = s.device.str();
  // Slots: a GPU trace allocates all of them up front; the CPU vector only touches what it used.
  const uint64_t slot_bytes = (s.device_slots.defined() ? s.capacity : s.used) * sizeof(dk::Lanes);
  trace.memory_bytes = slot_bytes + s.records.capacity() * sizeof(RawRecord) +
                       s.tensors.capacity() * sizeof(RawTensor) + s.shapes.capacity() * sizeof(int64_t);
  const auto convert = [&s](uint32_t begin, uint32_t count) {
    std::vector<TensorRef> out;
    for (uint32_t i = begin; i < begin + count; ++i) {
      const RawTensor& t = s.tensors[i];
      TensorRef ref;
      if (t.slot == kUndefined) {
        out.push_back(std::move(ref));
        continue;
      }
      ref.dtype = dtype_name(t.dtype);
      ref.shape.assign(s.shapes.begin() + t.shape_begin, s.shapes.begin() + t.shape_begin + t.ndim);
      if (t.slot >= 0) ref.digest = dk::finish(s.cpu_slots[static_cast<size_t>(t.slot)], ref.dtype, ref.shape);
      if (t.row_slot >= 0) {
        std::vector<int64_t> row_shape = ref.shape;
        row_shape[0] = 1;
        ref.row_digest = dk::finish(s.cpu_slots[static_cast<size_t>(t.row_slot)], ref.dtype, row_shape);
      }
      out.push_back(std::move(ref));
    }
    return out;
  };
  // Records keep their positions in `order`; dropped ones leave a gap the alignment tolerates.
  for (size_t i = 0; i < s.records.size(); ++i) {
    const RawRecord& r = s.records[i];
    if (r.dropped) continue;
    Record out;
    out.thread = r.thread;
    out.order = i;
    out.op = s.names[r.op];
    out.kind = r.node ? "node" : "op";
    out.phase = kPhases[r.phase];
    out.step = r.step;
    out.seq = r.seq;
    out.parent = r.parent;
    if (r.location >= 0) {
      out.module = s.locations[static_cast<size_t>(r.location)].first;
      out.source = s.locations[static_cast<size_t>(r.location)].second;
    }
    out.scalars = r.scalars;
    out.inputs = convert(r.in_begin, r.in_count);
    out.outputs = convert(r.out_begin, r.out_count);
    trace.records.push_back(std::move(out));
  }
  for (const auto& n : s.names) trace.memory_bytes += n.size();
  for (const auto& [m, src] : s.locations) trace.memory_bytes += m.size() + src.size();
  return trace;
}

}  // namespace ra::trace
