// SPDX-License-Identifier: Apache-2.0
#include "audit/tensor_io/python_pickle.h"

#include "audit/runtime/child_support.h"
#include "audit/common/errors.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <caffe2/serialize/inline_container.h>

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <sstream>
#include <vector>

namespace ra {
namespace {

// A value on the pickle machine's stack: an IValue, or one of the things that only exist while
// unpickling (a global named by the file, a storage, a tuple that may hold either, or the result of
// calling a global this reader does not know, which is an error only where it is used, so that the
// error names the outermost class: datetime.date, not the _codecs.encode of its argument).
struct Obj {
  enum class Kind { Value, Global, Storage, Tuple, Opaque };
  Kind kind = Kind::Value;
  c10::IValue value;
  std::string global;             // "module.name"
  at::Tensor storage;             // Storage: a 1-d tensor owning the storage's bytes
  std::vector<Obj> items;         // Tuple
};

Obj value(c10::IValue v) { return Obj{Obj::Kind::Value, std::move(v), {}, {}, {}}; }

// The storage types torch.save names in persistent ids, by dtype.
at::ScalarType storage_dtype(const std::string& global, const std::string& where) {
  static const std::map<std::string, at::ScalarType> types = {
      {"torch.FloatStorage", at::kFloat},     {"torch.DoubleStorage", at::kDouble},
      {"torch.HalfStorage", at::kHalf},       {"torch.BFloat16Storage", at::kBFloat16},
      {"torch.LongStorage", at::kLong},       {"torch.IntStorage", at::kInt},
      {"torch.ShortStorage", at::kShort},     {"torch.CharStorage", at::kChar},
      {"torch.ByteStorage", at::kByte},       {"torch.BoolStorage", at::kBool},
      {"torch.ComplexFloatStorage", at::kComplexFloat}, {"torch.ComplexDoubleStorage", at::kComplexDouble}};
  const auto it = types.find(global);
  if (it == types.end()) throw InputError(fmt::format("{} holds a storage of type {}, which repro-audit cannot read", where, global));
  return it->second;
}

class Machine {
 public:
  Machine(std::string where, caffe2::serialize::PyTorchStreamReader& archive, const char* data, size_t size)
      : where_(std::move(where)), archive_(archive), p_(data), end_(data + size) {}

  c10::IValue run() {
    for (;;) {
      const auto op = static_cast<uint8_t>(byte());
      if (op == '.') break;
      step(op);
    }
    if (stack_.size() != 1) bad("the pickle does not end with exactly one value");
    return to_ivalue(stack_.back());
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    throw InputError(fmt::format("{} is not a readable torch.save file: {}", where_, what));
  }

  char byte() {
    if (p_ >= end_) bad("the pickle is truncated");
    return *p_++;
  }
  std::string bytes(uint64_t n) {
    if (static_cast<uint64_t>(end_ - p_) < n) bad("the pickle is truncated");
    std::string s(p_, p_ + n);
    p_ += n;
    return s;
  }
  uint64_t uint_le(int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(byte())) << (8 * i);
    return v;
  }
  std::string line() {
    std::string s;
    for (char c = byte(); c != '\n'; c = byte()) s += c;
    return s;
  }

  Obj pop() {
    if (stack_.size() <= floor()) bad("stack underflow");
    Obj o = std::move(stack_.back());
    stack_.pop_back();
    return o;
  }
  Obj& top() {
    if (stack_.size() <= floor()) bad("stack underflow");
    return stack_.back();
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  std::vector<Obj> pop_mark() {
    if (marks_.empty()) bad("no mark on the stack");
    const size_t at = marks_.back();
    marks_.pop_back();
    std::vector<Obj> items(std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(at)),
                           std::make_move_iterator(stack_.end()));
    stack_.resize(at);
    return items;
  }

  c10::IValue to_ivalue(const Obj& o) const {
    switch (o.kind) {
      case Obj::Kind::Value: return o.value;
      case Obj::Kind::Tuple: {
        std::vector<c10::IValue> elems;
        for (const auto& item : o.items) elems.push_back(to_ivalue(item));
        return c10::ivalue::Tuple::create(std::move(elems));
      }
      case Obj::Kind::Global:
      case Obj::Kind::Opaque: throw InputError(fmt::format("{} holds a {}, which repro-audit cannot read", where_, o.global));
      case Obj::Kind::Storage: break;
    }
    throw InputError(fmt::format("{} holds a bare storage, not a tensor", where_));
  }
  int64_t to_int(const Obj& o, const char* what) const {
    if (o.kind != Obj::Kind::Value || !o.value.isInt()) bad_arg(what);
    return o.value.toInt();
  }
  std::vector<int64_t> to_ints(const Obj& o, const char* what) const {
    if (o.kind != Obj::Kind::Tuple) bad_arg(what);
    std::vector<int64_t> v;
    for (const auto& item : o.items) v.push_back(to_int(item, what));
    return v;
  }
  [[noreturn]] void bad_arg(const char* what) const { bad(fmt::format("a tensor's {} is malformed", what)); }

  void memo_put(uint64_t id) { memo_[id] = top(); }
  void memo_get(uint64_t id) {
    const auto it = memo_.find(id);
    if (it == memo_.end()) bad(fmt::format("memo entry {} is used before it is set", id));
    stack_.push_back(it->second);
  }

  void set_items(c10::IValue& dict, std::vector<Obj>& items) {
    if (!dict.isGenericDict()) bad("items are set on something that is not a dict");
    if (items.size() % 2 != 0) bad("a dict has a key without a value");
    auto d = dict.toGenericDict();
    for (size_t i = 0; i < items.size(); i += 2) d.insert_or_assign(to_ivalue(items[i]), to_ivalue(items[i + 1]));
  }
  void append(c10::IValue& list, std::vector<Obj>& items) {
    if (!list.isList()) bad("items are appended to something that is not a list");
    auto l = list.toList();
    for (auto& item : items) l.push_back(to_ivalue(item));
  }

  // The storage a persistent id names: ('storage', torch.<Type>Storage, key, location, numel).
  Obj persistent(const Obj& pid) {
    if (pid.kind != Obj::Kind::Tuple || pid.items.size() != 5 || pid.items[0].kind != Obj::Kind::Value ||
        !pid.items[0].value.isString() || pid.items[0].value.toStringRef() != "storage" ||
        pid.items[1].kind != Obj::Kind::Global || pid.items[2].kind != Obj::Kind::Value || !pid.items[2].value.isString())
      bad("a persistent id is not a storage");
    const std::string key = pid.items[2].value.toStringRef();
    if (const auto it = storages_.find(key); it != storages_.end()) return it->second;
    const at::ScalarType dtype = storage_dtype(pid.items[1].global, where_);
    const int64_t numel = to_int(pid.items[4], "storage size");
    if (numel < 0) bad_arg("storage size");
    Obj s{Obj::Kind::Storage, {}, {}, at::empty({numel}, at::TensorOptions().dtype(dtype)), {}};
    const size_t nbytes = static_cast<size_t>(numel) * s.storage.element_size();
    const std::string record = "data/" + key;
    if (!archive_.hasRecord(record)) bad(fmt::format("storage record {} is missing", record));
    auto [data, size] = archive_.getRecord(record);
    if (size != nbytes) bad(fmt::format("storage record {} holds {} bytes, not {}", record, size, nbytes));
    if (nbytes > 0) std::memcpy(s.storage.data_ptr(), data.get(), nbytes);
    storages_.emplace(key, s);
    return s;
  }

  // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks, [metadata]).
  c10::IValue rebuild_tensor(const std::vector<Obj>& args) {
    if (args.size() < 4 || args[0].kind != Obj::Kind::Storage) bad("a tensor is not rebuilt from a storage");
    const at::Tensor& storage = args[0].storage;
    const int64_t offset = to_int(args[1], "offset");
    const std::vector<int64_t> size = to_ints(args[2], "size"), stride = to_ints(args[3], "stride");
    if (size.size() != stride.size() || offset < 0) bad_arg("size or stride");
    int64_t last = offset;  // the highest element index the view reaches
    for (size_t i = 0; i < size.size(); ++i) {
      if (size[i] < 0 || stride[i] < 0) bad_arg("size or stride");
      if (size[i] == 0) last = -1;
      if (last >= 0) last += (size[i] - 1) * stride[i];
    }
    if (last >= storage.numel()) bad("a tensor reaches past the end of its storage");
    return at::empty({0}, storage.options()).set_(storage.storage(), offset, size, stride);
  }

  Obj call(const Obj& callable, Obj args) {
    if (callable.kind != Obj::Kind::Global) bad("a call of something that is not a global");
    const std::string& g = callable.global;
    if (g == "collections.OrderedDict" || g == "builtins.dict")
      return value(c10::impl::GenericDict(c10::AnyType::get(), c10::AnyType::get()));
    if (args.kind != Obj::Kind::Tuple) bad(fmt::format("{} is called without an argument tuple", g));
    if (g == "torch._utils._rebuild_tensor_v2" || g == "torch._utils._rebuild_tensor") return value(rebuild_tensor(args.items));
    if (g == "torch._utils._rebuild_parameter" || g == "torch._utils._rebuild_parameter_with_state") {
      if (args.items.empty() || args.items[0].kind != Obj::Kind::Value || !args.items[0].value.isTensor())
        bad("a parameter is not rebuilt from a tensor");
      return args.items[0];
    }
    return Obj{Obj::Kind::Opaque, {}, g, {}, {}};
  }

  void step(uint8_t op) {
    switch (op) {
      case 0x80: byte(); break;                      // PROTO
      case 0x95: uint_le(8); break;                  // FRAME
      case '(': marks_.push_back(stack_.size()); break;  // MARK
      case '0': pop(); break;                        // POP
      case '1': pop_mark(); break;                   // POP_MARK
      case '2': stack_.push_back(top()); break;      // DUP
      case 'N': stack_.push_back(value(c10::IValue())); break;
      case 0x88: stack_.push_back(value(true)); break;
      case 0x89: stack_.push_back(value(false)); break;
      case 'J': stack_.push_back(value(static_cast<int64_t>(static_cast<int32_t>(uint_le(4))))); break;
      case 'K': stack_.push_back(value(static_cast<int64_t>(uint_le(1)))); break;
      case 'M': stack_.push_back(value(static_cast<int64_t>(uint_le(2)))); break;
      case 0x8a: {                                   // LONG1
        const int n = static_cast<uint8_t>(byte());
        if (n > 8) bad("an integer does not fit in 64 bits");
        uint64_t v = n == 0 ? 0 : uint_le(n);
        if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);  // sign-extend
        stack_.push_back(value(static_cast<int64_t>(v)));
        break;
      }
      case 'G': {                                    // BINFLOAT, big-endian
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = bits << 8 | static_cast<uint8_t>(byte());
        double d;
        std::memcpy(&d, &bits, sizeof d);
        stack_.push_back(value(d));
        break;
      }
      case 'X': stack_.push_back(value(bytes(uint_le(4)))); break;     // BINUNICODE
      case 0x8c: stack_.push_back(value(bytes(uint_le(1)))); break;    // SHORT_BINUNICODE
      case 0x8d: stack_.push_back(value(bytes(uint_le(8)))); break;    // BINUNICODE8
      case 'B': stack_.push_back(value(bytes(uint_le(4)))); break;     // BINBYTES
      case 'C': stack_.push_back(value(bytes(uint_le(1)))); break;     // SHORT_BINBYTES
      case ')': stack_.push_back(Obj{Obj::Kind::Tuple, {}, {}, {}, {}}); break;
      case 't': stack_.push_back(Obj{Obj::Kind::Tuple, {}, {}, {}, pop_mark()}); break;
      case 0x85: case 0x86: case 0x87: {             // TUPLE1..3
        std::vector<Obj> items(op - 0x84);
        for (size_t i = items.size(); i-- > 0;) items[i] = pop();
        stack_.push_back(Obj{Obj::Kind::Tuple, {}, {}, {}, std::move(items)});
        break;
      }
      case ']': stack_.push_back(value(c10::impl::GenericList(c10::AnyType::get()))); break;
      case 'l': {
        auto items = pop_mark();
        stack_.push_back(value(c10::impl::GenericList(c10::AnyType::get())));
        append(stack_.back().value, items);
        break;
      }
      case 'a': {
        std::vector<Obj> items;
        items.push_back(pop());
        append(top().value, items);
        break;
      }
      case 'e': {
        auto items = pop_mark();
        append(top().value, items);
        break;
      }
      case '}': stack_.push_back(value(c10::impl::GenericDict(c10::AnyType::get(), c10::AnyType::get()))); break;
      case 'd': {
        auto items = pop_mark();
        stack_.push_back(value(c10::impl::GenericDict(c10::AnyType::get(), c10::AnyType::get())));
        set_items(stack_.back().value, items);
        break;
      }
      case 's': {
        std::vector<Obj> items(2);
        items[1] = pop();
        items[0] = pop();
        set_items(top().value, items);
        break;
      }
      case 'u': {
        auto items = pop_mark();
        set_items(top().value, items);
        break;
      }
      case 'c': {                                    // GLOBAL
        std::string module = line();
        stack_.push_back(Obj{Obj::Kind::Global, {}, module + "." + line(), {}, {}});
        break;
      }
      case 0x93: {                                   // STACK_GLOBAL
        const Obj name = pop(), module = pop();
        if (!module.value.isString() || !name.value.isString()) bad("a global is not named by strings");
        stack_.push_back(Obj{Obj::Kind::Global, {}, module.value.toStringRef() + "." + name.value.toStringRef(), {}, {}});
        break;
      }
      case 'q': memo_put(uint_le(1)); break;         // BINPUT
      case 'r': memo_put(uint_le(4)); break;         // LONG_BINPUT
      case 0x94: memo_put(memo_.size()); break;      // MEMOIZE
      case 'h': memo_get(uint_le(1)); break;         // BINGET
      case 'j': memo_get(uint_le(4)); break;         // LONG_BINGET
      case 'R': case 0x81: {                         // REDUCE, NEWOBJ
        Obj args = pop();
        Obj callable = pop();
        stack_.push_back(call(callable, std::move(args)));
        break;
      }
      case 'b': {                                    // BUILD: an OrderedDict's or a tensor's attributes
        pop();
        const Obj& target = top();
        if (target.kind == Obj::Kind::Opaque) break;  // an error where it is used
        if (target.kind != Obj::Kind::Value || !(target.value.isGenericDict() || target.value.isTensor()))
          bad("attributes are set on something that is neither a dict nor a tensor");
        break;
      }
      case 'Q': stack_.push_back(persistent(pop())); break;  // BINPERSID
      default: bad(fmt::format("unsupported pickle opcode 0x{:02x}", op));
    }
  }

  std::string where_;
  caffe2::serialize::PyTorchStreamReader& archive_;
  const char* p_;
  const char* end_;
  std::vector<Obj> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, Obj> memo_;
  std::map<std::string, Obj> storages_;
};

}  // namespace

c10::IValue load_python_pickle(const std::string& path, const std::string& bytes) {
  const std::string where = fmt::format("file '{}'", path);
  std::istringstream in(bytes);
  try {
    caffe2::serialize::PyTorchStreamReader archive(&in);
    if (archive.hasRecord("byteorder")) {
      auto [order, size] = archive.getRecord("byteorder");
      if (std::string(static_cast<const char*>(order.get()), size) != "little")
        throw InputError(fmt::format("{} was written on a big-endian machine, which repro-audit cannot read", where));
    }
    if (!archive.hasRecord("data.pkl")) throw InputError(fmt::format("{} is not a torch.save file: it has no data.pkl", where));
    auto [pickle, size] = archive.getRecord("data.pkl");
    return Machine(where, archive, static_cast<const char*>(pickle.get()), size).run();
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(fmt::format("{} is not a torch.save file: {}", where, error_text(e)));
  }
}

}  // namespace ra
