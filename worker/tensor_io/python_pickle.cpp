// SPDX-License-Identifier: Apache-2.0
#include "worker/tensor_io/python_pickle.h"

#include "audit/common/errors.h"
#include "audit/common/zip_check.h"
#include "worker/runtime/child_support.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>
#include <caffe2/serialize/file_adapter.h>
#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

namespace ra {
namespace {

// Bytes in memory as a zip archive; a read past the end comes back short (LibTorch's own
// MemoryReadAdapter copies whatever it is asked for).
class BytesAdapter final : public caffe2::serialize::ReadAdapterInterface {
 public:
  explicit BytesAdapter(const std::string& bytes) : bytes_(bytes) {}
  size_t size() const override { return bytes_.size(); }
  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    if (pos >= bytes_.size()) return 0;
    n = static_cast<size_t>(std::min<uint64_t>(n, bytes_.size() - pos));
    if (n > 0) std::memcpy(buf, bytes_.data() + pos, n);  // miniz asks for 0 bytes into nullptr
    return n;
  }

 private:
  const std::string& bytes_;
};

// A file already open, read with pread: the caller decided how it was opened (without following a
// symlink, for kept tensors), so nothing here opens it by name again.
class FdAdapter final : public caffe2::serialize::ReadAdapterInterface {
 public:
  FdAdapter(int fd, uint64_t size) : fd_(fd), size_(size) {}
  size_t size() const override { return size_; }
  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    if (pos >= size_) return 0;
    n = static_cast<size_t>(std::min<uint64_t>(n, size_ - pos));
    size_t got = 0;
    while (got < n) {
      const ssize_t r = ::pread(fd_, static_cast<char*>(buf) + got, n - got, static_cast<off_t>(pos + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;  // a file cut meanwhile reads short, which the archive reader reports
      got += static_cast<size_t>(r);
    }
    return got;
  }

 private:
  int fd_;
  uint64_t size_;
};

// A value on the pickle machine's stack: an IValue leaf (None, bool, int, float, str, tensor), a
// container in the arena, or one of the things that only exist while unpickling: a global named by
// the file, a storage, the result of calling a global this reader does not know (an error only
// where it is used, so that the error names the outermost class: datetime.date, not the
// _codecs.encode of its argument), or a tensor record that failed its checks (an error naming the
// key path where it is used, and an error anyway, as torch.load fails on it).
struct Obj {
  enum class Kind { Value, Node, Global, Storage, Opaque, Invalid };
  Kind kind = Kind::Value;
  c10::IValue value;   // Value: the value; Global, Opaque: "module.name"; Invalid: the error
  at::Tensor storage;  // Storage: a 1-d tensor owning the storage's bytes
  size_t node = 0;     // Node: index into the arena
};

Obj leaf(c10::IValue v) { return Obj{Obj::Kind::Value, std::move(v), {}, 0}; }
Obj named(Obj::Kind kind, std::string name) { return Obj{kind, c10::IValue(std::move(name)), {}, 0}; }

// A container the pickle builds. Dict items alternate key, value.
struct Node {
  enum class Kind { List, Dict, Tuple };
  Kind kind;
  std::vector<Obj> items;
};

// The storage types torch.save names in persistent ids, by dtype.
// A storage type as torch.save ("torch.FloatStorage") and LibTorch's pickle_save (which the trial
// recorder writes dumps with: "torch." + the dtype's name + "Storage", "torch.Float8_e4m3fnStorage"
// too) name it. Quantized and bit types are not read.
std::optional<at::ScalarType> storage_dtype(const std::string& global) {
  static const std::map<std::string, at::ScalarType> types = [] {
    std::map<std::string, at::ScalarType> m;
    for (int i = 0; i < static_cast<int>(at::ScalarType::NumOptions); ++i) {
      const auto type = static_cast<at::ScalarType>(i);
      if (type == at::ScalarType::Undefined || c10::isQIntType(type) || c10::isBitsType(type)) continue;
      m.emplace(fmt::format("torch.{}Storage", c10::toString(type)), type);
    }
    return m;
  }();
  const auto it = types.find(global);
  if (it == types.end()) return std::nullopt;
  return it->second;
}

// A key path for errors: "layer1/0/weight", built only when an error needs it.
struct Step {
  const Step* up;
  std::string part;
};

std::string path_of(const Step* s) {
  std::vector<const std::string*> parts;
  for (; s != nullptr; s = s->up) parts.push_back(&s->part);
  std::reverse(parts.begin(), parts.end());
  constexpr size_t kShown = 6;  // parts shown at each end of a long path
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts.size() > 2 * kShown && i == kShown) {
      out += fmt::format("/...{} more.../", parts.size() - 2 * kShown);
      i = parts.size() - kShown;
    } else if (i > 0) {
      out += '/';
    }
    const std::string& p = *parts[i];
    out += p.size() > 80 ? p.substr(0, 77) + "..." : p;
  }
  return out;
}

class Machine {
 public:
  Machine(std::string where, caffe2::serialize::PyTorchStreamReader& archive, uint64_t file_size, const char* data,
          size_t size, uint64_t storage_budget)
      : where_(std::move(where)),
        archive_(archive),
        file_size_(file_size),
        storage_budget_(storage_budget),
        storage_left_(storage_budget),
        p_(data),
        end_(data + size) {}

  c10::IValue run() {
    for (;;) {
      const auto op = static_cast<uint8_t>(byte());
      if (op == '.') break;
      step(op);
    }
    if (stack_.size() != 1 || !marks_.empty()) bad("the pickle does not end with exactly one value");
    c10::IValue out = convert(stack_.back(), nullptr, 0);
    // torch.load fails on a bad tensor record even where the value is not kept.
    if (!invalid_.empty()) bad(invalid_);
    return out;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    throw InputError(fmt::format("{} is not a readable torch.save file: {}", where_, what));
  }

  // ---- reading the pickle ------------------------------------------------------------------

  char byte() {
    if (p_ >= end_) bad("the pickle is truncated");
    return *p_++;
  }
  std::string bytes(uint64_t n) {
    if (static_cast<uint64_t>(end_ - p_) < n)
      bad(fmt::format("a string claims {} bytes, more than the pickle holds", n));
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
    const char* nl = static_cast<const char*>(std::memchr(p_, '\n', static_cast<size_t>(end_ - p_)));
    if (nl == nullptr) bad("the pickle is truncated");
    std::string s(p_, nl);
    p_ = nl + 1;
    return s;
  }

  // ---- the stack, the marks and the memo -----------------------------------------------------

  void made_one() {
    if (++objects_ > kMaxPickleObjects)
      bad(fmt::format("the pickle makes more than {} objects, more than repro-audit reads", kMaxPickleObjects));
  }
  void push(Obj o) {
    made_one();
    stack_.push_back(std::move(o));
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
  void memo_put(uint64_t id) {
    const Obj& o = top();
    if (memo_.insert_or_assign(id, o).second) made_one();
  }
  void memo_get(uint64_t id) {
    const auto it = memo_.find(id);
    if (it == memo_.end()) bad(fmt::format("memo entry {} is used before it is set", id));
    push(it->second);
  }

  // ---- containers ----------------------------------------------------------------------------

  Obj make_node(Node::Kind kind, std::vector<Obj> items = {}) {
    nodes_.push_back(Node{kind, std::move(items)});
    return Obj{Obj::Kind::Node, {}, {}, nodes_.size() - 1};
  }
  Node* node_of(const Obj& o, Node::Kind kind) {
    if (o.kind != Obj::Kind::Node || nodes_[o.node].kind != kind) return nullptr;
    return &nodes_[o.node];
  }
  void add_items(Node::Kind kind, std::vector<Obj>& items) {
    Node* n = node_of(top(), kind);
    if (n == nullptr)
      bad(kind == Node::Kind::Dict ? "items are set on something that is not a dict"
                                   : "items are appended to something that is not a list");
    if (kind == Node::Kind::Dict && items.size() % 2 != 0) bad("a dict has a key without a value");
    for (auto& item : items) n->items.push_back(std::move(item));
  }

  // ---- globals and their calls ----------------------------------------------------------------

  const std::vector<Obj>& tuple_items(const Obj& o) {
    static const std::vector<Obj> none;
    const Node* n = node_of(o, Node::Kind::Tuple);
    return n == nullptr ? none : n->items;
  }
  static bool is_string(const Obj& o) { return o.kind == Obj::Kind::Value && o.value.isString(); }
  static std::optional<int64_t> int_of(const Obj& o) {
    if (o.kind != Obj::Kind::Value || !o.value.isInt()) return std::nullopt;
    return o.value.toInt();
  }

  // The storage a persistent id names: ('storage', torch.<Type>Storage, key, location, numel).
  Obj persistent(const Obj& pid) {
    const std::vector<Obj>& f = tuple_items(pid);
    if (f.size() != 5 || !is_string(f[0]) || f[0].value.toStringRef() != "storage" || f[1].kind != Obj::Kind::Global ||
        !is_string(f[2]))
      bad("a persistent id is not a storage");
    const std::string key = f[2].value.toStringRef();
    if (const auto it = storages_.find(key); it != storages_.end()) return it->second;
    const std::string record = "data/" + key;
    const std::string& type = f[1].value.toStringRef();
    const auto dtype = storage_dtype(type);
    if (!dtype)
      throw InputError(fmt::format("{} holds a storage of type {}, which repro-audit cannot read", where_, type));
    const auto numel = int_of(f[4]);
    const uint64_t elem = c10::elementSize(*dtype);
    if (!numel || *numel < 0) bad(fmt::format("storage {} has no valid element count", record));
    if (static_cast<uint64_t>(*numel) > file_size_ / elem)
      bad(fmt::format("storage {} claims {} elements of {} bytes, more than the file's {} bytes", record, *numel, elem,
                      file_size_));
    const size_t nbytes = static_cast<size_t>(*numel) * elem;
    if (!archive_.hasRecord(record)) bad(fmt::format("storage record {} is missing", record));
    const size_t size = archive_.getRecordSize(record);
    if (size != nbytes)
      bad(fmt::format("storage record {} holds {} bytes, not the {} its {} elements need", record, size, nbytes,
                      *numel));
    if (nbytes > storage_left_)
      bad(fmt::format("storage {} claims {} bytes, more than the {} bytes its tensors are declared to hold in all",
                      record, nbytes, storage_budget_));
    storage_left_ -= nbytes;
    Obj s{Obj::Kind::Storage, {}, at::empty({*numel}, at::TensorOptions().dtype(*dtype)), 0};
    if (nbytes > 0) archive_.getRecord(record, s.storage.data_ptr(), nbytes);
    storages_.emplace(key, s);
    return s;
  }

  // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks, [metadata]),
  // checked as torch.load's set_() checks it, plus the view budget. A record that fails is kept
  // as Invalid, so that the error can name where the tensor sits in the file.
  Obj rebuild_tensor(const std::vector<Obj>& args) {
    if (args.size() < 4 || args[0].kind != Obj::Kind::Storage) bad("a tensor is not rebuilt from a storage");
    const at::Tensor& storage = args[0].storage;
    const auto offset = int_of(args[1]);
    std::vector<int64_t> size, stride;
    for (const auto& [from, to] : {std::pair{&args[2], &size}, std::pair{&args[3], &stride}}) {
      if (node_of(*from, Node::Kind::Tuple) == nullptr) return invalid("its size or stride is not a tuple of integers");
      for (const Obj& item : tuple_items(*from)) {
        const auto v = int_of(item);
        if (!v) return invalid("its size or stride is not a tuple of integers");
        to->push_back(*v);
      }
    }
    if (!offset || *offset < 0) return invalid("its storage offset is negative or not an integer");
    if (size.size() != stride.size())
      return invalid(fmt::format("it has {} sizes but {} strides", size.size(), stride.size()));
    int64_t numel = 1;
    __int128 last = *offset;  // the highest element index the view reaches
    for (size_t i = 0; i < size.size(); ++i) {
      if (size[i] < 0 || stride[i] < 0)
        return invalid(fmt::format("it has a negative size or stride ({} and {})", size[i], stride[i]));
      if (__builtin_mul_overflow(numel, size[i], &numel)) return invalid("its element count overflows 64 bits");
      last += static_cast<__int128>(size[i] == 0 ? 0 : size[i] - 1) * stride[i];
    }
    if (numel > 0 && last >= storage.numel())
      return invalid(
          fmt::format("it reaches element {} of a storage of {} elements",
                      last > INT64_MAX ? std::string("2^63 or beyond") : std::to_string(static_cast<int64_t>(last)),
                      storage.numel()));
    if (numel - storage.numel() > kMaxViewExcess)
      return invalid(
          fmt::format("it views {} elements of a storage of {}; repro-audit reads views of at most {} elements "
                      "beyond their storage",
                      numel, storage.numel(), kMaxViewExcess));
    return leaf(at::empty({0}, storage.options()).set_(storage.storage(), *offset, size, stride));
  }
  Obj invalid(const std::string& what) {
    const std::string text = fmt::format("a tensor record is invalid: {}", what);
    if (invalid_.empty()) invalid_ = text;
    return named(Obj::Kind::Invalid, text);
  }

  Obj call(const Obj& callable, const Obj& args) {
    if (callable.kind != Obj::Kind::Global) bad("a call of something that is not a global");
    const std::string& g = callable.value.toStringRef();
    if (g == "collections.OrderedDict" || g == "builtins.dict") return make_node(Node::Kind::Dict);
    if (node_of(args, Node::Kind::Tuple) == nullptr) bad(fmt::format("{} is called without an argument tuple", g));
    const std::vector<Obj>& a = tuple_items(args);
    if (g == "torch._utils._rebuild_tensor_v2" || g == "torch._utils._rebuild_tensor") return rebuild_tensor(a);
    if (g == "torch._utils._rebuild_parameter" || g == "torch._utils._rebuild_parameter_with_state") {
      if (a.empty() || !(a[0].kind == Obj::Kind::Invalid || (a[0].kind == Obj::Kind::Value && a[0].value.isTensor())))
        bad("a parameter is not rebuilt from a tensor");
      return a[0];
    }
    // What LibTorch's pickle_save writes around typed lists and containers: the value itself.
    if (g == "torch.jit._pickle.build_intlist" || g == "torch.jit._pickle.build_doublelist" ||
        g == "torch.jit._pickle.build_boollist" || g == "torch.jit._pickle.build_tensorlist" ||
        g == "torch.jit._pickle.restore_type_tag") {
      if (a.empty()) bad(fmt::format("{} is called without a value", g));
      return a[0];
    }
    return named(Obj::Kind::Opaque, g);
  }

  // ---- the opcodes ------------------------------------------------------------------------------

  // One opcode: a constant pushed, a container built or filled, or one that works the machine
  // (framing, marks, the memo, globals, calls, persistent ids).
  void step(uint8_t op) {
    if (push_constant(op) || build_container(op)) return;
    switch (op) {
      case 0x80:
        byte();
        break;  // PROTO
      case 0x95:
        uint_le(8);
        break;   // FRAME: only a hint of the next frame's length
      case '(':  // MARK
        made_one();
        marks_.push_back(stack_.size());
        break;
      case '0':
        pop();
        break;  // POP
      case '1':
        pop_mark();
        break;  // POP_MARK
      case '2':
        push(Obj(top()));
        break;  // DUP
      case 'q':
        memo_put(uint_le(1));
        break;  // BINPUT
      case 'r':
        memo_put(uint_le(4));
        break;  // LONG_BINPUT
      case 0x94:
        memo_put(memo_.size());
        break;  // MEMOIZE
      case 'h':
        memo_get(uint_le(1));
        break;  // BINGET
      case 'j':
        memo_get(uint_le(4));
        break;  // LONG_BINGET
      case 'R':
      case 0x81: {  // REDUCE, NEWOBJ
        const Obj args = pop();
        const Obj callable = pop();
        push(call(callable, args));
        break;
      }
      case 'c': {  // GLOBAL
        std::string module = line();
        push(named(Obj::Kind::Global, module + "." + line()));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        const Obj name = pop(), module = pop();
        if (!is_string(module) || !is_string(name)) bad("a global is not named by strings");
        push(named(Obj::Kind::Global, module.value.toStringRef() + "." + name.value.toStringRef()));
        break;
      }
      case 'b': {  // BUILD: an OrderedDict's or a tensor's attributes
        pop();
        const Obj& target = top();
        if (target.kind == Obj::Kind::Opaque || target.kind == Obj::Kind::Invalid) break;  // an error where used
        if (node_of(target, Node::Kind::Dict) == nullptr &&
            !(target.kind == Obj::Kind::Value && target.value.isTensor()))
          bad("attributes are set on something that is neither a dict nor a tensor");
        break;
      }
      case 'Q':
        push(persistent(pop()));
        break;  // BINPERSID
      default:
        bad(fmt::format("unsupported pickle opcode 0x{:02x}", op));
    }
  }

  // An opcode that pushes a constant (None, a bool, an int, a float, a string or bytes): pushes it.
  // False for any other opcode.
  bool push_constant(uint8_t op) {
    switch (op) {
      case 'N':
        push(leaf(c10::IValue()));
        break;
      case 0x88:
        push(leaf(true));
        break;
      case 0x89:
        push(leaf(false));
        break;
      case 'J':
        push(leaf(static_cast<int64_t>(static_cast<int32_t>(uint_le(4)))));
        break;
      case 'K':
        push(leaf(static_cast<int64_t>(uint_le(1))));
        break;
      case 'M':
        push(leaf(static_cast<int64_t>(uint_le(2))));
        break;
      case 0x8a: {  // LONG1
        const int n = static_cast<uint8_t>(byte());
        if (n > 8) bad("an integer does not fit in 64 bits");
        uint64_t v = n == 0 ? 0 : uint_le(n);
        if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);  // sign-extend
        push(leaf(static_cast<int64_t>(v)));
        break;
      }
      case 'G': {  // BINFLOAT, big-endian
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = bits << 8 | static_cast<uint8_t>(byte());
        double d;
        std::memcpy(&d, &bits, sizeof d);
        push(leaf(d));
        break;
      }
      case 'X':
        push(leaf(bytes(uint_le(4))));
        break;  // BINUNICODE
      case 0x8c:
        push(leaf(bytes(uint_le(1))));
        break;  // SHORT_BINUNICODE
      case 0x8d:
        push(leaf(bytes(uint_le(8))));
        break;  // BINUNICODE8
      case 'B':
        push(leaf(bytes(uint_le(4))));
        break;  // BINBYTES
      case 'C':
        push(leaf(bytes(uint_le(1))));
        break;  // SHORT_BINBYTES
      case 0x8e:
        push(leaf(bytes(uint_le(8))));
        break;  // BINBYTES8
      default:
        return false;
    }
    return true;
  }

  // An opcode that makes a tuple, a list or a dict, or adds items to one: does it. False for any
  // other opcode.
  bool build_container(uint8_t op) {
    switch (op) {
      case ')':
        push(make_node(Node::Kind::Tuple));
        break;
      case 't': {
        auto items = pop_mark();
        push(make_node(Node::Kind::Tuple, std::move(items)));
        break;
      }
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        std::vector<Obj> items(op - 0x84);
        for (size_t i = items.size(); i-- > 0;) items[i] = pop();
        push(make_node(Node::Kind::Tuple, std::move(items)));
        break;
      }
      case ']':
        push(make_node(Node::Kind::List));
        break;
      case 'l': {
        auto items = pop_mark();
        push(make_node(Node::Kind::List, std::move(items)));
        break;
      }
      case 'a': {
        std::vector<Obj> items;
        items.push_back(pop());
        add_items(Node::Kind::List, items);
        break;
      }
      case 'e': {
        auto items = pop_mark();
        add_items(Node::Kind::List, items);
        break;
      }
      case '}':
        push(make_node(Node::Kind::Dict));
        break;
      case 'd': {
        auto items = pop_mark();
        if (items.size() % 2 != 0) bad("a dict has a key without a value");
        push(make_node(Node::Kind::Dict, std::move(items)));
        break;
      }
      case 's': {
        std::vector<Obj> items(2);
        items[1] = pop();
        items[0] = pop();
        add_items(Node::Kind::Dict, items);
        break;
      }
      case 'u': {
        auto items = pop_mark();
        add_items(Node::Kind::Dict, items);
        break;
      }
      default:
        return false;
    }
    return true;
  }

  // ---- the checked tree -------------------------------------------------------------------------

  // The IValue of `o`, reached by `path`. Containers are converted once (a container the file
  // shares stays shared, as in Python); nesting deeper than kMaxDepth, and a container that holds
  // itself, are refused before the recursion could run away.
  c10::IValue convert(const Obj& o, const Step* path, int depth) {
    switch (o.kind) {
      case Obj::Kind::Value:
        return o.value;
      case Obj::Kind::Invalid:
        bad(at_path(o.value.toStringRef(), path));
      case Obj::Kind::Global:
      case Obj::Kind::Opaque:
        throw InputError(fmt::format("{} holds a {}{}, which repro-audit cannot read", where_, o.value.toStringRef(),
                                     path == nullptr ? "" : fmt::format(" at '{}'", path_of(path))));
      case Obj::Kind::Storage:
        bad(at_path("it holds a bare storage, not a tensor", path));
      case Obj::Kind::Node:
        break;
    }
    if (depth >= kMaxDepth) bad(at_path(fmt::format("containers nest deeper than {} levels", kMaxDepth), path));
    enum State : uint8_t { Fresh, Open, Done };
    if (state_.size() < nodes_.size()) state_.resize(nodes_.size(), Fresh);
    if (state_[o.node] == Done) return converted_.at(o.node);
    if (state_[o.node] == Open) bad(at_path("a container holds itself", path));
    state_[o.node] = Open;
    const Node& n = nodes_[o.node];
    c10::IValue out;
    if (n.kind == Node::Kind::Dict) {
      auto d = c10::impl::GenericDict(c10::AnyType::get(), c10::AnyType::get());
      for (size_t i = 0; i + 1 < n.items.size(); i += 2) {
        const Step key_step{path, "<key>"};
        c10::IValue key = convert(n.items[i], &key_step, depth + 1);
        if (key.isList() || key.isGenericDict()) bad(at_path("a dict key is a list or a dict", path));
        const Step step{path, key.isString() ? key.toStringRef() : fmt::format("{}", key.tagKind())};
        d.insert_or_assign(std::move(key), convert(n.items[i + 1], &step, depth + 1));
      }
      out = std::move(d);
    } else {
      std::vector<c10::IValue> elems;
      elems.reserve(n.items.size());
      for (size_t i = 0; i < n.items.size(); ++i) {
        const Step step{path, std::to_string(i)};
        elems.push_back(convert(n.items[i], &step, depth + 1));
      }
      if (n.kind == Node::Kind::Tuple) {
        out = c10::ivalue::Tuple::create(std::move(elems));
      } else {
        auto l = c10::impl::GenericList(c10::AnyType::get());
        for (auto& e : elems) l.push_back(std::move(e));
        out = std::move(l);
      }
    }
    state_[o.node] = Done;
    converted_.emplace(o.node, out);
    return out;
  }
  std::string at_path(const std::string& what, const Step* path) const {
    return path == nullptr ? what : fmt::format("{} (at '{}')", what, path_of(path));
  }

  std::string where_;
  caffe2::serialize::PyTorchStreamReader& archive_;
  uint64_t file_size_;
  uint64_t storage_budget_;  // PickleBudget::storage_bytes
  uint64_t storage_left_;
  const char* p_;
  const char* end_;
  int64_t objects_ = 0;
  std::vector<Obj> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Obj> memo_;
  std::map<std::string, Obj> storages_;
  std::vector<Node> nodes_;
  std::string invalid_;  // the first tensor record that failed its checks
  std::vector<uint8_t> state_;
  std::unordered_map<size_t, c10::IValue> converted_;
};

c10::IValue load(const std::string& path, std::shared_ptr<caffe2::serialize::ReadAdapterInterface> in,
                 const PickleBudget& budget) {
  const std::string where = fmt::format("file '{}'", path);
  const uint64_t file_size = in->size();
  char magic[4] = {};
  if (file_size == 0) throw InputError(fmt::format("{} is empty, not a torch.save file", where));
  if (in->read(0, magic, sizeof magic) != sizeof magic || std::memcmp(magic, "PK\x03\x04", 4) != 0) {
    if (static_cast<uint8_t>(magic[0]) == 0x80)  // a pickle: the format torch.save wrote before PyTorch 1.6
      throw InputError(
          fmt::format("{} is in torch.save's legacy format; load it in Python and save it again with "
                      "torch.save (PyTorch 1.6 or later)",
                      where));
    throw InputError(fmt::format("{} is not a torch.save file: it is not a zip archive", where));
  }
  // The zip's directory first: LibTorch's reader inflates the `version` record as it opens the
  // archive, to whatever size the entry declares (audit/common/zip_check.h).
  const caffe2::serialize::ReadAdapterInterface& adapter = *in;
  (void)stored_zip_entries(
      [&adapter](uint64_t at, char* buf, size_t n) { return adapter.read(at, buf, n, "zip directory"); }, file_size,
      where);
  try {
    caffe2::serialize::PyTorchStreamReader archive(std::move(in));
    // A zip entry says how big it is; a hostile one may claim far more than the file could hold
    // even compressed, so nothing is read that the file's own size cannot back.
    auto record = [&](const std::string& name, uint64_t at_most) {
      const size_t size = archive.getRecordSize(name);
      if (size > std::min(at_most, file_size))
        throw InputError(fmt::format("{} is not a readable torch.save file: record {} claims {} bytes, more than {}",
                                     where, name, size,
                                     at_most < file_size ? fmt::format("the {} it is declared to need", at_most)
                                                         : fmt::format("the file's {}", file_size)));
      return archive.getRecord(name);
    };
    if (archive.hasRecord("byteorder")) {
      auto [order, size] = record("byteorder", 16);
      if (std::string(static_cast<const char*>(order.get()), size) != "little")
        throw InputError(fmt::format("{} was written on a big-endian machine, which repro-audit cannot read", where));
    }
    if (!archive.hasRecord("data.pkl"))
      throw InputError(fmt::format("{} is not a torch.save file: it has no data.pkl", where));
    auto [pickle, size] = record("data.pkl", budget.pickle_bytes);
    return Machine(where, archive, file_size, static_cast<const char*>(pickle.get()), size, budget.storage_bytes).run();
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(fmt::format("{} is not a torch.save file: {}", where, error_text(e)));
  }
}

}  // namespace

c10::IValue load_python_pickle(const std::string& path, const std::string& bytes, const PickleBudget& budget) {
  return load(path, std::make_shared<BytesAdapter>(bytes), budget);
}

c10::IValue load_python_pickle_file(const std::string& path, const PickleBudget& budget) {
  std::shared_ptr<caffe2::serialize::ReadAdapterInterface> in;
  try {
    in = std::make_shared<caffe2::serialize::FileAdapter>(path);
  } catch (const std::exception& e) {
    throw InputError(fmt::format("file '{}' cannot be read: {}", path, error_text(e)));
  }
  return load(path, std::move(in), budget);
}

c10::IValue load_python_pickle_fd(const std::string& path, int fd, const PickleBudget& budget) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw InputError(fmt::format("file '{}' cannot be read: {}", path, std::strerror(errno)));
  return load(path, std::make_shared<FdAdapter>(fd, static_cast<uint64_t>(st.st_size)), budget);
}

}  // namespace ra
