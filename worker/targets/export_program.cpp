// SPDX-License-Identifier: Apache-2.0
#include "worker/targets/export_program.h"

#include "audit/common/errors.h"
#include "worker/runtime/child_support.h"

#include <ATen/ATen.h>
#include <ATen/core/stack.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

namespace ra::targets {
namespace {

using nlohmann::json;

// torch/_export/serde/schema.py's enums, which number differently from c10's.
std::optional<c10::ScalarType> serde_dtype(int64_t code) {
  static const std::unordered_map<int64_t, c10::ScalarType> map = {{1, c10::kByte},
                                                                   {2, c10::kChar},
                                                                   {3, c10::kShort},
                                                                   {4, c10::kInt},
                                                                   {5, c10::kLong},
                                                                   {6, c10::kHalf},
                                                                   {7, c10::kFloat},
                                                                   {8, c10::kDouble},
                                                                   {9, c10::kComplexHalf},
                                                                   {10, c10::kComplexFloat},
                                                                   {11, c10::kComplexDouble},
                                                                   {12, c10::kBool},
                                                                   {13, c10::kBFloat16},
                                                                   {28, c10::kUInt16},
                                                                   {29, c10::kFloat8_e4m3fn},
                                                                   {30, c10::kFloat8_e5m2},
                                                                   {31, c10::kFloat8_e4m3fnuz},
                                                                   {32, c10::kFloat8_e5m2fnuz}};
  const auto it = map.find(code);
  if (it == map.end()) return std::nullopt;
  return it->second;
}

std::optional<c10::Layout> serde_layout(int64_t code) {
  switch (code) {
    case 1:
      return c10::kSparse;
    case 2:
      return c10::kSparseCsr;
    case 3:
      return c10::kSparseCsc;
    case 4:
      return c10::kSparseBsr;
    case 5:
      return c10::kSparseBsc;
    case 6:
      return c10::kMkldnn;
    case 7:
      return c10::kStrided;
    default:
      return std::nullopt;
  }
}

std::optional<c10::MemoryFormat> serde_memory_format(int64_t code) {
  switch (code) {
    case 1:
      return c10::MemoryFormat::Contiguous;
    case 2:
      return c10::MemoryFormat::ChannelsLast;
    case 3:
      return c10::MemoryFormat::ChannelsLast3d;
    case 4:
      return c10::MemoryFormat::Preserve;
    default:
      return std::nullopt;
  }
}

// The one key of a serialized union ({"as_tensor": {...}} -> "as_tensor").
std::string union_key(const json& j) {
  if (!j.is_object() || j.size() != 1) return "";
  return j.begin().key();
}

// "Symbol('s77', positive=True, integer=True)" or "s77" -> "s77"; "" for an expression.
std::string symbol_of(const std::string& expr) {
  std::string s = expr;
  if (s.rfind("Symbol('", 0) == 0) {
    const size_t end = s.find('\'', 8);
    if (end == std::string::npos) return "";
    s = s.substr(8, end - 8);
  }
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return "";
  for (const char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return "";
  return s;
}

// Python's floor division and modulo on ints.
int64_t floordiv(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t pymod(int64_t a, int64_t b) {
  const int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

const std::unordered_map<std::string, int>& sym_arity() {
  static const std::unordered_map<std::string, int> ops = {
      {"_operator.add", 2},    {"_operator.sub", 2},     {"_operator.mul", 2},   {"_operator.floordiv", 2},
      {"_operator.mod", 2},    {"_operator.truediv", 2}, {"_operator.pow", 2},   {"_operator.eq", 2},
      {"_operator.ne", 2},     {"_operator.lt", 2},      {"_operator.le", 2},    {"_operator.gt", 2},
      {"_operator.ge", 2},     {"_operator.and_", 2},    {"_operator.or_", 2},   {"_operator.lshift", 2},
      {"_operator.rshift", 2}, {"_operator.neg", 1},     {"_operator.pos", 1},   {"math.trunc", 1},
      {"torch.sym_not", 1},    {"torch.sym_int", 1},     {"torch.sym_float", 1}, {"torch.sym_sqrt", 1},
      {"torch.sym_max", 2},    {"torch.sym_min", 2},     {"torch.sym_ite", 3},   {"builtins.getattr", -1}};
  return ops;
}

// What the serialized program says a value of `type` is, in the op schema's words.
std::string type_text(const c10::TypePtr& type) { return type->str(); }

// The float64 referee's dtype for `t` (Precision::Float64): a floating dtype below float64 promoted to
// float64, a complex one to complex128, any other as it is.
at::ScalarType referee_dtype(at::ScalarType t) {
  if (at::isFloatingType(t)) return at::kDouble;
  if (at::isComplexType(t)) return at::kComplexDouble;
  return t;
}

// The builder's state: names to slots, the node being read.
struct Builder {
  std::string path;
  bool float64 = false;  // Precision::Float64: floating dtype arguments promoted
  c10::Device device{c10::kCPU};
  std::optional<c10::Device> archive_device;
  std::unordered_map<std::string, int> slots;
  std::vector<int> last_read;  // per slot: the step that last reads it (-1: none)
  size_t slot_count = 0;
  std::string where;  // "node linear_1 (aten.linear.default)"

  [[noreturn]] void fail(const std::string& why) const {
    throw TrialInputError(fmt::format("model '{}': {}: {}", path, where, why));
  }

  int define(const std::string& name) {
    if (name.empty()) fail("a value has no name");
    if (slots.count(name)) fail(fmt::format("defines value '{}' twice", excerpt(name)));
    const int s = static_cast<int>(slot_count++);
    slots.emplace(name, s);
    last_read.push_back(-1);
    return s;
  }

  int read(const std::string& name, int step) {
    const auto it = slots.find(name);
    if (it == slots.end())
      fail(fmt::format("reads value '{}' before it is defined (the graph is out of order or has a cycle)",
                       excerpt(name)));
    last_read[static_cast<size_t>(it->second)] = step;
    return it->second;
  }

  c10::Device device_of(const json& d) const {
    std::string type = d.value("type", std::string("cpu"));
    int index = -1;
    if (d.contains("index") && d["index"].is_number_integer()) index = d["index"].get<int>();
    c10::Device dev(c10::kCPU);
    try {
      dev = index >= 0 ? c10::Device(type + ":" + std::to_string(index)) : c10::Device(type);
    } catch (const std::exception&) {
      fail(fmt::format("names device '{}', which this torch does not know", excerpt(type)));
    }
    // An archive exported on one device and run on another: its device arguments follow the run,
    // as torch.export's move_to_device_pass does.
    if (archive_device && dev.type() == archive_device->type()) return device;
    return dev;
  }

  // A scalar argument (ints, floats, bools, strings, dtypes, devices...): the IValue it is, a
  // slot for named symbolic values.
  ArgRecipe scalar(const std::string& key, const json& v, int step) {
    ArgRecipe r;
    if (key == "as_none") return r;
    if (key == "as_int" || key == "as_float" || key == "as_bool" || key == "as_string") {
      if (key == "as_int" && v.is_number_integer())
        r.constant = v.get<int64_t>();
      else if (key == "as_float" && v.is_number())
        r.constant = v.get<double>();
      else if (key == "as_float" && v.is_string()) {  // inf, -inf, nan
        const std::string s = v.get<std::string>();
        r.constant = s == "Infinity" || s == "inf"     ? std::numeric_limits<double>::infinity()
                     : s == "-Infinity" || s == "-inf" ? -std::numeric_limits<double>::infinity()
                                                       : std::numeric_limits<double>::quiet_NaN();
      } else if (key == "as_bool" && v.is_boolean())
        r.constant = v.get<bool>();
      else if (key == "as_string" && v.is_string())
        r.constant = v.get<std::string>();
      else
        fail(fmt::format("has a malformed {} argument", key));
      return r;
    }
    if (key == "as_sym_int" || key == "as_sym_bool" || key == "as_sym_float") {
      const std::string k = union_key(v);
      if (k == "as_name" && v[k].is_string()) {
        r.kind = ArgRecipe::Kind::Slot;
        r.slot = read(v[k].get<std::string>(), step);
        return r;
      }
      if (k == "as_int" || k == "as_bool" || k == "as_float") return scalar(k, v[k], step);
      fail(fmt::format("has a malformed {} argument", key));
    }
    if (key == "as_scalar_type") {
      const auto t = v.is_number_integer() ? serde_dtype(v.get<int64_t>()) : std::nullopt;
      if (!t) fail(fmt::format("has dtype code {}, which this version does not read", excerpt(v.dump())));
      r.constant = static_cast<int64_t>(float64 ? referee_dtype(*t) : *t);
      return r;
    }
    if (key == "as_layout") {
      const auto l = v.is_number_integer() ? serde_layout(v.get<int64_t>()) : std::nullopt;
      if (!l) fail(fmt::format("has layout code {}, which this version does not read", excerpt(v.dump())));
      r.constant = static_cast<int64_t>(*l);
      return r;
    }
    if (key == "as_memory_format") {
      const auto m = v.is_number_integer() ? serde_memory_format(v.get<int64_t>()) : std::nullopt;
      if (!m) fail(fmt::format("has memory format code {}, which this version does not read", excerpt(v.dump())));
      r.constant = static_cast<int64_t>(*m);
      return r;
    }
    if (key == "as_device") {
      if (!v.is_object()) fail("has a malformed device argument");
      r.constant = device_of(v);
      return r;
    }
    if (key == "as_complex") {
      r.constant = c10::complex<double>(v.at("real").get<double>(), v.at("imag").get<double>());
      return r;
    }
    fail(fmt::format("has an argument of kind {}, which the interpreter does not run", excerpt(key)));
  }

  // One argument of an op, as its schema `type` wants it.
  ArgRecipe argument(const json& arg, const c10::TypePtr& schema_type, const std::string& name, int step) {
    const std::string key = union_key(arg);
    if (key.empty()) fail(fmt::format("argument '{}' is malformed", excerpt(name)));
    const json& v = arg[key];
    c10::TypePtr type = schema_type;
    const bool optional = type->kind() == c10::TypeKind::OptionalType;
    if (optional) type = type->expectRef<c10::OptionalType>().getElementType();
    const auto mismatch = [&]() {
      fail(fmt::format("argument '{}' is {} in the op's schema, but the archive gives {}", excerpt(name),
                       type_text(schema_type), key));
    };
    const auto kind = type->kind();
    if (key == "as_none" || (key == "as_optional_tensor" && union_key(v) == "as_none")) {
      if (!optional && kind != c10::TypeKind::NoneType) mismatch();
      return ArgRecipe{};
    }
    if (kind == c10::TypeKind::TensorType && (key == "as_int" || key == "as_float" || key == "as_bool" ||
                                              key == "as_sym_int" || key == "as_sym_float" || key == "as_sym_bool")) {
      ArgRecipe r = scalar(key, v, step);
      r.slots = {r.kind == ArgRecipe::Kind::Slot ? r.slot : -1};
      r.kind = ArgRecipe::Kind::Wrapped;
      return r;
    }
    if (key == "as_tensor" || key == "as_optional_tensor") {
      if (kind != c10::TypeKind::TensorType) mismatch();
      const json& t = key == "as_tensor" ? v : v.at("as_tensor");
      ArgRecipe r;
      r.kind = ArgRecipe::Kind::Slot;
      r.slot = read(t.at("name").get<std::string>(), step);
      return r;
    }
    if (key == "as_tensors" || key == "as_optional_tensors") {
      if (kind != c10::TypeKind::ListType) mismatch();
      const auto elem = type->expectRef<c10::ListType>().getElementType();
      const bool opt_elem = elem->kind() == c10::TypeKind::OptionalType;
      const auto base = opt_elem ? elem->expectRef<c10::OptionalType>().getElementType() : elem;
      if (base->kind() != c10::TypeKind::TensorType || (key == "as_optional_tensors" && !opt_elem)) mismatch();
      ArgRecipe r;
      r.kind = opt_elem ? ArgRecipe::Kind::OptionalTensorList : ArgRecipe::Kind::TensorList;
      if (!v.is_array()) mismatch();
      for (const auto& e : v) {
        const json& t = key == "as_tensors" ? e : (union_key(e) == "as_tensor" ? e["as_tensor"] : json());
        r.slots.push_back(t.is_object() ? read(t.at("name").get<std::string>(), step) : -1);
        r.constants.emplace_back();
      }
      return r;
    }
    if (key == "as_ints" || key == "as_sym_ints" || key == "as_floats" || key == "as_sym_floats" || key == "as_bools" ||
        key == "as_sym_bools" || key == "as_strings") {
      if (kind != c10::TypeKind::ListType || !v.is_array()) mismatch();
      const auto ek = type->expectRef<c10::ListType>().getElementType()->kind();
      ArgRecipe r;
      const std::string ekey = key == "as_ints"         ? "as_int"
                               : key == "as_floats"     ? "as_float"
                               : key == "as_bools"      ? "as_bool"
                               : key == "as_strings"    ? "as_string"
                               : key == "as_sym_ints"   ? "as_sym_int"
                               : key == "as_sym_floats" ? "as_sym_float"
                                                        : "as_sym_bool";
      if (ek == c10::TypeKind::IntType && (ekey == "as_int" || ekey == "as_sym_int"))
        r.kind = ArgRecipe::Kind::IntList;
      else if (ek == c10::TypeKind::FloatType && (ekey == "as_float" || ekey == "as_sym_float" || ekey == "as_int"))
        r.kind = ArgRecipe::Kind::FloatList;
      else if (ek == c10::TypeKind::BoolType && (ekey == "as_bool" || ekey == "as_sym_bool"))
        r.kind = ArgRecipe::Kind::BoolList;
      else if (ek == c10::TypeKind::StringType && ekey == "as_string") {
        std::vector<std::string> s;
        for (const auto& e : v) s.push_back(e.get<std::string>());
        ArgRecipe c;
        c.constant = c10::List<std::string>(s);
        return c;
      } else
        mismatch();
      for (const auto& e : v) {
        ArgRecipe one = scalar(ekey, e, step);
        r.slots.push_back(one.kind == ArgRecipe::Kind::Slot ? one.slot : -1);
        r.constants.push_back(one.constant);
      }
      return r;
    }
    // A scalar: check the schema takes it, then convert.
    bool ok = false;
    switch (kind) {
      case c10::TypeKind::IntType:
        ok = key == "as_int" || key == "as_sym_int" || key == "as_scalar_type" || key == "as_layout" ||
             key == "as_memory_format";
        break;
      case c10::TypeKind::FloatType:
        ok = key == "as_float" || key == "as_sym_float" || key == "as_int" || key == "as_sym_int";
        break;
      case c10::TypeKind::NumberType:
        ok = key == "as_int" || key == "as_sym_int" || key == "as_float" || key == "as_sym_float" || key == "as_bool" ||
             key == "as_sym_bool" || key == "as_complex";
        break;
      case c10::TypeKind::BoolType:
        ok = key == "as_bool" || key == "as_sym_bool";
        break;
      case c10::TypeKind::StringType:
        ok = key == "as_string";
        break;
      case c10::TypeKind::DeviceObjType:
        ok = key == "as_device";
        break;
      case c10::TypeKind::ComplexType:
        ok = key == "as_complex";
        break;
      default:
        break;
    }
    if (!ok) mismatch();
    ArgRecipe r = scalar(key, v, step);
    if (kind == c10::TypeKind::FloatType) {
      if (r.kind == ArgRecipe::Kind::Slot)
        r.to_double = true;
      else if (r.constant.isInt())
        r.constant = static_cast<double>(r.constant.toInt());
    }
    return r;
  }

  OutputBinding output(const json& out, int step) {
    (void)step;
    const std::string key = union_key(out);
    OutputBinding b;
    if (key == "as_none" || key.empty()) return b;
    const json& v = out[key];
    if (key == "as_tensor") {
      b.kind = OutputBinding::Kind::Single;
      b.slot = define(v.at("name").get<std::string>());
    } else if (key == "as_tensors") {
      b.kind = OutputBinding::Kind::List;
      for (const auto& t : v) b.slots.push_back(define(t.at("name").get<std::string>()));
    } else if (key == "as_optional_tensors") {
      b.kind = OutputBinding::Kind::List;
      for (const auto& t : v)
        b.slots.push_back(union_key(t) == "as_tensor" ? define(t["as_tensor"].at("name").get<std::string>()) : -1);
    } else if (key == "as_sym_int" || key == "as_sym_bool" || key == "as_sym_float") {
      if (union_key(v) != "as_name") return b;  // a constant result
      b.kind = OutputBinding::Kind::Single;
      b.slot = define(v["as_name"].get<std::string>());
    } else if (key == "as_int" || key == "as_float" || key == "as_bool") {
      return b;
    } else {
      fail(fmt::format("has an output of kind {}, which the interpreter does not run", excerpt(key)));
    }
    return b;
  }
};

// The names a pytree node gives its children, from its serialized context, or none (positional):
//   * a dict, an OrderedDict or a transformers ModelOutput: the keys, '["logits", "hidden_states"]';
//   * a dataclass (torch.utils._pytree.register_dataclass): its fields, '[["logits", "aux"], ["none_field"]]';
//   * a defaultdict: {"dict_context": [keys], ...};
//   * a tuple, a list, a namedtuple (its context is its type's name): none.
std::vector<std::string> child_keys(const json& spec, size_t children) {
  json ctx;
  const json& raw = spec.contains("context") ? spec["context"] : json();
  if (raw.is_string()) {
    try {
      ctx = json::parse(raw.get<std::string>());
    } catch (const std::exception&) {
      return {};
    }
  } else {
    ctx = raw;
  }
  if (ctx.is_object() && ctx.contains("dict_context")) ctx = ctx["dict_context"];
  if (!ctx.is_array()) return {};
  const auto is_scalar = [](const json& k) { return k.is_string() || k.is_number_integer() || k.is_boolean(); };
  // A dataclass's [present fields, None fields] (a dict's keys are never lists).
  const json* keys = ctx.size() == 2 && ctx[0].is_array() && ctx[1].is_array() ? &ctx[0] : &ctx;
  if (keys->size() != children || !std::all_of(keys->begin(), keys->end(), is_scalar)) return {};
  std::vector<std::string> out;
  for (const auto& k : *keys) out.push_back(k.is_string() ? k.get<std::string>() : k.dump());
  return out;
}

// The leaves of a pytree spec (torch.utils._pytree's JSON), with the names reports give them:
// dict keys and dataclass fields by name, tuple and list items by position.
void spec_leaves(const json& spec, const std::string& prefix, std::vector<std::string>& names, bool& keyed) {
  // A spec without a type, or whose children are not a list, is a leaf: a damaged archive is named by
  // the checks that follow, never a lookup of a key it lacks.
  const json children = spec.is_object() ? spec.value("children_spec", json::array()) : json();
  if (!spec.is_object() || !spec.contains("type") || spec["type"].is_null() || !children.is_array()) {
    names.push_back(prefix);
    return;
  }
  const std::vector<std::string> keys = child_keys(spec, children.size());
  keyed |= !keys.empty();
  for (size_t i = 0; i < children.size(); ++i) {
    const std::string part = keys.empty() ? std::to_string(i) : keys[i];
    spec_leaves(children[i], prefix.empty() ? part : prefix + "/" + part, names, keyed);
  }
}

// The name of the value an argument of the serialized program refers to ({"as_tensor": {"name": N}},
// a symbolic value {"as_sym_int": {"as_name": N}}, or a spec's bare {"name": N}); "" for a constant.
std::string value_name(const json& arg) {
  if (arg.is_object() && arg.contains("name") && arg["name"].is_string()) return arg["name"].get<std::string>();
  const std::string key = union_key(arg);
  const json& v = key.empty() ? arg : arg[key];
  if (key == "as_tensor" && v.is_object() && v.contains("name") && v["name"].is_string())
    return v["name"].get<std::string>();
  if ((key == "as_sym_int" || key == "as_sym_float" || key == "as_sym_bool") && union_key(v) == "as_name" &&
      v["as_name"].is_string())
    return v["as_name"].get<std::string>();
  return "";
}

// The graph's own outputs (graph.outputs), which the program does not read (it returns what the
// signature names), checked as torch.export.load checks them: one per output spec, in order, each
// the value its spec names, and that value defined. Python raises KeyError on an output that no
// node defines; without this check such an archive ran, and the audit answered for a program that
// Python cannot load.
void check_graph_outputs(Builder& b, const json& graph, const json& output_specs) {
  b.where = "the graph's outputs";
  if (!graph.contains("outputs")) b.fail("are missing (graph.outputs)");
  const json& outs = graph["outputs"];
  if (!outs.is_array() || outs.size() != output_specs.size())
    b.fail(fmt::format("are {}, but the signature has {} output specs",
                       outs.is_array() ? std::to_string(outs.size()) : std::string("not a list"), output_specs.size()));
  for (size_t k = 0; k < outs.size(); ++k) {
    const std::string name = value_name(outs[k]);
    if (!name.empty() && !b.slots.count(name))
      b.fail(fmt::format("output {} is value '{}', which no input or node defines", k + 1, excerpt(name)));
    const json& spec = output_specs[k];
    const std::string key = union_key(spec);
    const std::string want = key.empty() || !spec[key].is_object() ? "" : value_name(spec[key].value("arg", json()));
    if (name != want)
      b.fail(fmt::format("output {} is {}, but the signature's output {} is {}", k + 1,
                         name.empty() ? "a constant" : fmt::format("value '{}'", excerpt(name)), k + 1,
                         want.empty() ? "a constant" : fmt::format("value '{}'", excerpt(want))));
  }
}

}  // namespace

ExportProgram::ExportProgram(const json& model, const std::vector<std::pair<std::string, at::Tensor>>& weights,
                             const std::string& path, const c10::Device& device, Precision precision) try
    : path_(path) {
  Builder b;
  b.path = path;
  b.float64 = precision == Precision::Float64;
  b.device = device;
  const json& gm = model.at("graph_module");
  const json& graph = gm.at("graph");
  const json& signature = gm.at("signature");
  const json& values = graph.value("tensor_values", json::object());

  // Ranges of the dynamic dimensions.
  const json ranges = model.value("range_constraints", json::object());
  for (const auto& [sym, range] : ranges.items()) {
    int64_t lo = 0, hi = std::numeric_limits<int64_t>::max();
    if (range.contains("min_val") && range["min_val"].is_number_integer()) lo = range["min_val"].get<int64_t>();
    if (range.contains("max_val") && range["max_val"].is_number_integer()) hi = range["max_val"].get<int64_t>();
    ranges_[sym] = {lo, hi};
  }

  // Inputs: the signature's specs, in the graph's placeholder order.
  std::unordered_map<std::string, at::Tensor> by_name;
  for (const auto& [n, t] : weights) by_name.emplace(n, t);
  std::unordered_map<const c10::TensorImpl*, at::Tensor> on_device;  // each archive tensor, moved once
  const auto& specs = signature.at("input_specs");
  b.where = "the signature";
  for (const auto& spec : specs) {
    const std::string key = union_key(spec);
    const json& s = spec[key];
    if (key == "user_input") {
      const json& arg = s.at("arg");
      const std::string ak = union_key(arg);
      ProgramInput in;
      if (ak == "as_tensor") {
        in.name = arg["as_tensor"].at("name").get<std::string>();
        if (values.contains(in.name)) {
          const json& meta = values[in.name];
          if (!b.archive_device && meta.contains("device") && meta["device"].is_object()) {
            try {
              b.archive_device = c10::Device(meta["device"].value("type", std::string("cpu")));
            } catch (const std::exception&) {
              b.fail(fmt::format("input '{}' is on a device this torch does not know", excerpt(in.name)));
            }
          }
          for (const auto& d : meta.value("sizes", json::array())) {
            if (d.contains("as_int"))
              in.dims.push_back(std::to_string(d["as_int"].get<int64_t>()));
            else if (d.contains("as_expr"))
              in.dims.push_back(d["as_expr"].value("expr_str", std::string("?")));
            else
              in.dims.push_back("?");
          }
        }
      } else if (ak == "as_sym_int" || ak == "as_int" || ak == "as_float" || ak == "as_bool" || ak == "as_none" ||
                 ak == "as_string") {
        in.tensor = false;
        in.name = ak == "as_sym_int" && union_key(arg[ak]) == "as_name" ? arg[ak]["as_name"].get<std::string>() : "";
      } else {
        b.fail(fmt::format("a user input of kind {}, which the interpreter does not run", excerpt(ak)));
      }
      input_names_.push_back(in.name.empty() ? "?" : in.name);
      if (!in.name.empty()) in.slot = b.define(in.name);
      inputs_.push_back(std::move(in));
      continue;
    }
    if (key == "parameter" || key == "buffer" || key == "tensor_constant") {
      const std::string name = s.at("arg").at("name").get<std::string>();
      const std::string fqn = s.at(key == "parameter" ? "parameter_name"
                                   : key == "buffer"  ? "buffer_name"
                                                      : "tensor_constant_name")
                                  .get<std::string>();
      at::Tensor t;
      std::string stored;
      for (const char* prefix : {"param/", "buffer/", "constant/"}) {
        const auto it = by_name.find(prefix + fqn);
        if (it != by_name.end()) {
          t = it->second;
          stored = it->first;
          break;
        }
      }
      if (!t.defined()) b.fail(fmt::format("its {} '{}' is not in the archive's data", key, excerpt(fqn)));
      bool grad = false;
      if (values.contains(name)) {
        const json& meta = values[name];
        std::vector<int64_t> want;
        bool known = true;
        for (const auto& d : meta.value("sizes", json::array())) {
          if (d.contains("as_int"))
            want.push_back(d["as_int"].get<int64_t>());
          else
            known = false;
        }
        if (known && want != t.sizes().vec())
          b.fail(fmt::format("{} '{}' has shape [{}] in its record, but the graph declares [{}]", key, excerpt(fqn),
                             fmt::join(t.sizes(), ", "), fmt::join(want, ", ")));
        grad = meta.value("requires_grad", false);
      }
      // One archive tensor under two names (tied weights) stays one storage on the device, as in Python.
      auto moved = on_device.find(t.unsafeGetTensorImpl());
      if (moved == on_device.end())
        moved = on_device
                    .emplace(t.unsafeGetTensorImpl(),
                             b.float64 ? t.to(device, referee_dtype(t.scalar_type())) : t.to(device))
                    .first;
      at::Tensor v = moved->second;
      if (grad && at::isFloatingType(v.scalar_type())) v = v.detach().requires_grad_(true);
      const int slot = b.define(name);
      fixed_.emplace_back(slot, v);
      weights_.emplace_back(stored, v);
      if (key == "parameter") {
        params_.emplace_back(fqn, slot);
        if (grad) inference_only_ = false;
      }
      continue;
    }
    if (key == "constant_input") {
      const int slot = b.define(s.at("name").get<std::string>());
      const json& value = s.at("value");
      const std::string vk = union_key(value);
      ArgRecipe c = vk == "as_none" ? ArgRecipe{} : b.scalar(vk, value[vk], -1);
      fixed_.emplace_back(slot, c.constant);
      continue;
    }
    b.fail(fmt::format("an input of kind {} (a custom object or an effect token), which the interpreter does not run",
                       excerpt(key)));
  }
  if (graph.contains("inputs") && graph["inputs"].size() != specs.size())
    b.fail(fmt::format("the graph has {} inputs but its signature {}", graph["inputs"].size(), specs.size()));

  // The nodes.
  const auto& nodes = graph.at("nodes");
  const auto& sym = sym_arity();
  steps_.reserve(nodes.size());
  node_names_.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const json& node = nodes[i];
    const std::string target = node.value("target", std::string());
    const std::string name = node.value("name", std::string());
    node_names_.push_back(name);
    b.where = fmt::format("node {} ({})", excerpt(name.empty() ? std::to_string(i) : name), excerpt(target));
    const int step = static_cast<int>(steps_.size());
    ProgramStep st;
    st.node = i;
    const json& inputs = node.value("inputs", json::array());
    if (sym.count(target)) {
      if (target == "builtins.getattr") b.fail("is an attribute read, which the interpreter does not run");
      st.sym = target;
      for (const auto& in : inputs) {
        const std::string k = union_key(in.at("arg"));
        st.args.push_back(b.scalar(k, in["arg"][k], step));
      }
      if (static_cast<int>(st.args.size()) != sym.at(target))
        b.fail(fmt::format("takes {} arguments, not {}", sym.at(target), st.args.size()));
    } else if (target.rfind("torch.ops.", 0) == 0) {
      const std::string rest = target.substr(10);
      const size_t d1 = rest.find('.');
      const size_t d2 = d1 == std::string::npos ? std::string::npos : rest.find('.', d1 + 1);
      if (d1 == std::string::npos) b.fail("names no op");
      const std::string ns = rest.substr(0, d1);
      const std::string opname = rest.substr(d1 + 1, d2 == std::string::npos ? std::string::npos : d2 - d1 - 1);
      std::string overload = d2 == std::string::npos ? "" : rest.substr(d2 + 1);
      if (overload == "default") overload = "";
      if (ns == "higher_order")
        b.fail(
            fmt::format("is the higher-order op {}, which the interpreter does not run (export the model without "
                        "control flow, or use a TorchScript archive)",
                        excerpt(opname)));
      const auto handle = c10::Dispatcher::singleton().findSchema({ns + "::" + opname, overload});
      if (!handle)
        b.fail(ns == "aten" || ns == "prims"
                   ? std::string("names an op that this torch does not have")
                   : fmt::format("names the op {}::{}, which is not registered: load its library with --load-library",
                                 excerpt(ns), excerpt(opname)));
      st.op = *handle;
      const c10::FunctionSchema& schema = handle->schema();
      std::unordered_map<std::string, const json*> given;
      for (const auto& in : inputs) {
        const std::string an = in.value("name", std::string());
        if (!given.emplace(an, &in.at("arg")).second) b.fail(fmt::format("gives argument '{}' twice", excerpt(an)));
      }
      for (const auto& [an, unused] : given)
        if (!schema.argumentIndexWithName(an))
          b.fail(fmt::format("gives argument '{}', which the op's schema does not have ({})", excerpt(an),
                             excerpt(toString(schema))));
      for (const auto& a : schema.arguments()) {
        const auto it = given.find(a.name());
        if (it != given.end()) {
          st.args.push_back(b.argument(*it->second, a.type(), a.name(), step));
          given.erase(it);
        } else if (a.default_value()) {
          ArgRecipe r;
          r.constant = *a.default_value();
          st.args.push_back(std::move(r));
        } else {
          b.fail(fmt::format("misses argument '{}' of the op's schema ({})", a.name(),
                             excerpt(fmt::format("{}", toString(schema)))));
        }
      }
      if (!given.empty())
        b.fail(fmt::format("gives argument '{}', which the op's schema does not have", excerpt(given.begin()->first)));
      const auto& outs = node.value("outputs", json::array());
      const size_t returns = schema.returns().size();
      if (outs.size() > returns && !(returns == 0 && outs.size() == 1 && union_key(outs[0]) == "as_none"))
        b.fail(fmt::format("has {} outputs, but the op returns {}", outs.size(), returns));
    } else {
      b.fail("is not an op the interpreter runs (not a torch.ops op nor symbolic-int arithmetic)");
    }
    for (const auto& out : node.value("outputs", json::array())) st.outputs.push_back(b.output(out, step));
    if (st.op && st.op->schema().returns().empty()) st.outputs.clear();
    steps_.push_back(std::move(st));
  }

  // Outputs, and the mutations written back.
  b.where = "the signature's outputs";
  const auto& outs = signature.at("output_specs");
  const int end = static_cast<int>(steps_.size());
  std::vector<ProgramOutput> user;
  std::unordered_map<std::string, int> input_index;
  for (size_t k = 0; k < inputs_.size(); ++k) input_index[inputs_[k].name] = static_cast<int>(k);
  for (const auto& spec : outs) {
    const std::string key = union_key(spec);
    const json& s = spec[key];
    if (key == "user_output") {
      ProgramOutput o;
      const json& arg = s.at("arg");
      const std::string ak = union_key(arg);
      if (ak == "as_tensor") {
        o.slot = b.read(arg["as_tensor"].at("name").get<std::string>(), end);
      } else if (ak == "as_sym_int" || ak == "as_sym_float" || ak == "as_sym_bool" || ak == "as_int" ||
                 ak == "as_float" || ak == "as_bool" || ak == "as_none" || ak == "as_string") {
        ArgRecipe r = b.scalar(ak, arg[ak], end);
        o.slot = r.kind == ArgRecipe::Kind::Slot ? r.slot : -1;
        o.constant = r.constant;
      } else {
        b.fail(fmt::format("an output of kind {}, which the interpreter does not run", excerpt(ak)));
      }
      user.push_back(std::move(o));
    } else if (key == "buffer_mutation" || key == "parameter_mutation") {
      const int from = b.read(s.at("arg").at("name").get<std::string>(), end);
      const std::string fqn = s.at(key == "buffer_mutation" ? "buffer_name" : "parameter_name").get<std::string>();
      int to = -1;
      for (const auto& spec_in : specs) {
        const std::string ik = union_key(spec_in);
        if ((ik == "buffer" && spec_in[ik].value("buffer_name", std::string()) == fqn) ||
            (ik == "parameter" && spec_in[ik].value("parameter_name", std::string()) == fqn))
          to = b.slots.at(spec_in[ik].at("arg").at("name").get<std::string>());
      }
      if (to < 0) b.fail(fmt::format("mutates '{}', which is not an input", excerpt(fqn)));
      buffer_writes_.emplace_back(from, to);
    } else if (key == "user_input_mutation") {
      const int from = b.read(s.at("arg").at("name").get<std::string>(), end);
      const auto it = input_index.find(s.at("user_input_name").get<std::string>());
      if (it == input_index.end()) b.fail("mutates a user input that is not in the signature");
      input_writes_.emplace_back(from, static_cast<size_t>(it->second));
    } else if (key == "token") {
      b.fail("an effect token output, which the interpreter does not run");
    } else {
      b.fail(fmt::format("an output of kind {}, which the interpreter does not run", excerpt(key)));
    }
  }

  check_graph_outputs(b, graph, outs);

  // The output tree: its leaves' names.
  std::vector<std::string> leaf_names;
  bool keyed = false;
  single_output_ = false;
  for (const auto& entry : gm.value("module_call_graph", json::array())) {
    if (entry.value("fqn", std::string("?")) != "" || !entry.contains("signature") || entry["signature"].is_null())
      continue;
    try {
      const json out_spec = json::parse(entry["signature"].value("out_spec", std::string()));
      if (out_spec.is_array() && out_spec.size() == 2) spec_leaves(out_spec[1], "", leaf_names, keyed);
    } catch (const std::exception&) {
      leaf_names.clear();
    }
  }
  if (leaf_names.size() == user.size()) {
    single_output_ = user.size() == 1 && leaf_names[0].empty();
    dict_output_ = keyed;
    for (size_t k = 0; k < user.size(); ++k) user[k].name = leaf_names[k];
  } else {
    single_output_ = user.size() == 1;
  }
  outputs_ = std::move(user);

  // Each value is dropped after the step that last reads it (outputs, weights and inputs are kept).
  std::vector<bool> kept(b.slot_count, false);
  for (const auto& [slot, v] : fixed_) kept[static_cast<size_t>(slot)] = true;
  for (const auto& in : inputs_)
    if (in.slot >= 0) kept[static_cast<size_t>(in.slot)] = true;
  for (size_t s = 0; s < b.last_read.size(); ++s)
    if (!kept[s] && b.last_read[s] >= 0 && b.last_read[s] < end)
      steps_[static_cast<size_t>(b.last_read[s])].release.push_back(static_cast<int>(s));
  slot_count_ = b.slot_count;
} catch (const TrialInputError&) {
  throw;
} catch (const std::exception& e) {  // a field missing or of the wrong JSON type
  throw TrialInputError(
      fmt::format("model '{}' is a torch.export archive whose program is malformed: {}", path, excerpt(error_text(e))));
}

CheckedExport open_export_archive(const std::string& path, const c10::Device& device, WeightData data,
                                  Precision precision) {
  CheckedExport c{read_export_archive(path, data), nullptr};
  c.program = std::make_unique<ExportProgram>(c.archive.model, c.archive.weights, path, device, precision);
  return c;
}

std::vector<size_t> ExportProgram::dispatched_nodes() const {
  std::vector<size_t> out;
  for (const auto& st : steps_)
    if (st.op) out.push_back(st.node);
  return out;
}

std::vector<std::pair<std::string, at::Tensor>> ExportProgram::parameters() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& [name, slot] : params_)
    for (const auto& [s, v] : fixed_)
      if (s == slot && v.isTensor()) out.emplace_back(name, v.toTensor());
  return out;
}

void ExportProgram::bind_inputs(const std::vector<c10::IValue>& args, std::vector<c10::IValue>& values) const {
  if (args.size() != inputs_.size())
    throw TrialInputError(fmt::format("the exported program takes {} input{} ({}), but {} {} given", inputs_.size(),
                                      inputs_.size() == 1 ? "" : "s", fmt::join(input_names_, ", "), args.size(),
                                      args.size() == 1 ? "was" : "were"));
  std::map<std::string, int64_t> bound;
  for (size_t k = 0; k < inputs_.size(); ++k) {
    const ProgramInput& in = inputs_[k];
    const c10::IValue& a = args[k];
    if (in.tensor) {
      if (!a.isTensor()) throw TrialInputError(fmt::format("input {} ({}) must be a tensor", k + 1, in.name));
      const at::Tensor& t = a.toTensor();
      if (!in.dims.empty() && static_cast<size_t>(t.dim()) != in.dims.size())
        throw TrialInputError(fmt::format("input {} ({}) has {} dimensions, but the program was exported with {}",
                                          k + 1, in.name, t.dim(), in.dims.size()));
      for (size_t d = 0; d < in.dims.size(); ++d) {
        const int64_t size = t.size(static_cast<int64_t>(d));
        const std::string& want = in.dims[d];
        if (!want.empty() && std::isdigit(static_cast<unsigned char>(want[0]))) {
          if (std::to_string(size) != want)
            throw TrialInputError(fmt::format(
                "input {} ({}) has size {} in dimension {}, but the program was exported with the static size {}",
                k + 1, in.name, size, d, want));
          continue;
        }
        const std::string s = symbol_of(want);
        if (s.empty()) continue;  // an expression of symbols: the ops check it
        // As torch's own input check (_check_input_constraints_for_graph): a lower bound of 2 is
        // the exporter's 0/1 specialisation, not the user's, so sizes 0 and 1 are let through.
        const auto r = ranges_.find(s);
        const int64_t low = r == ranges_.end() || r->second.first <= 2 ? 0 : r->second.first;
        if (r != ranges_.end() && (size < low || size > r->second.second))
          throw TrialInputError(fmt::format(
              "input {} ({}) has size {} in dimension {}, outside the range the program was exported for: {} in "
              "[{}, {}]",
              k + 1, in.name, size, d, s, r->second.first,
              r->second.second == std::numeric_limits<int64_t>::max() ? std::string("inf")
                                                                      : std::to_string(r->second.second)));
        const auto [it, fresh] = bound.emplace(s, size);
        if (!fresh && it->second != size)
          throw TrialInputError(fmt::format(
              "input {} ({}) has size {} in dimension {}, but the program was exported with {} equal to {} there, "
              "as in an earlier dimension",
              k + 1, in.name, size, d, s, it->second));
      }
    }
    if (in.slot >= 0) values[static_cast<size_t>(in.slot)] = a;
  }
}

c10::IValue ExportProgram::sym_op(const ProgramStep& st, std::vector<c10::IValue>& values) const {
  std::vector<c10::IValue> a;
  for (const auto& r : st.args)
    a.push_back(r.kind == ArgRecipe::Kind::Slot ? values[static_cast<size_t>(r.slot)] : r.constant);
  const std::string& op = st.sym;
  const auto num = [](const c10::IValue& v) -> double {
    return v.isInt() ? static_cast<double>(v.toInt()) : v.isBool() ? (v.toBool() ? 1.0 : 0.0) : v.toDouble();
  };
  const auto integral = [](const c10::IValue& v) { return v.isInt() || v.isBool(); };
  const auto int_of = [](const c10::IValue& v) { return v.isBool() ? int64_t{v.toBool()} : v.toInt(); };
  for (const auto& v : a)
    if (!v.isInt() && !v.isDouble() && !v.isBool())
      throw std::runtime_error(fmt::format("{} reads a value that is not a number", op));
  if (a.size() == 1) {
    const auto& x = a[0];
    if (op == "_operator.neg") return integral(x) ? c10::IValue(-int_of(x)) : c10::IValue(-x.toDouble());
    if (op == "_operator.pos") return x;
    if (op == "math.trunc" || op == "torch.sym_int")
      return integral(x) ? c10::IValue(int_of(x)) : c10::IValue(static_cast<int64_t>(std::trunc(x.toDouble())));
    if (op == "torch.sym_not") return c10::IValue(num(x) == 0.0);
    if (op == "torch.sym_float") return c10::IValue(num(x));
    if (op == "torch.sym_sqrt") return c10::IValue(std::sqrt(num(x)));
  }
  if (op == "torch.sym_ite") return num(a[0]) != 0.0 ? a[1] : a[2];
  const auto& x = a[0];
  const auto& y = a[1];
  const bool ints = integral(x) && integral(y);
  if (op == "_operator.eq") return c10::IValue(ints ? int_of(x) == int_of(y) : num(x) == num(y));
  if (op == "_operator.ne") return c10::IValue(ints ? int_of(x) != int_of(y) : num(x) != num(y));
  if (op == "_operator.lt") return c10::IValue(ints ? int_of(x) < int_of(y) : num(x) < num(y));
  if (op == "_operator.le") return c10::IValue(ints ? int_of(x) <= int_of(y) : num(x) <= num(y));
  if (op == "_operator.gt") return c10::IValue(ints ? int_of(x) > int_of(y) : num(x) > num(y));
  if (op == "_operator.ge") return c10::IValue(ints ? int_of(x) >= int_of(y) : num(x) >= num(y));
  if (op == "_operator.truediv") {
    if (num(y) == 0.0) throw std::runtime_error("symbolic division by zero");
    return c10::IValue(num(x) / num(y));
  }
  if (ints) {
    const int64_t i = int_of(x), j = int_of(y);
    int64_t r = 0;
    if (op == "_operator.add") {
      if (__builtin_add_overflow(i, j, &r)) throw std::runtime_error("symbolic int overflow");
      return r;
    }
    if (op == "_operator.sub") {
      if (__builtin_sub_overflow(i, j, &r)) throw std::runtime_error("symbolic int overflow");
      return r;
    }
    if (op == "_operator.mul") {
      if (__builtin_mul_overflow(i, j, &r)) throw std::runtime_error("symbolic int overflow");
      return r;
    }
    if (op == "_operator.floordiv" || op == "_operator.mod") {
      if (j == 0) throw std::runtime_error("symbolic division by zero");
      return op == "_operator.floordiv" ? floordiv(i, j) : pymod(i, j);
    }
    if (op == "_operator.and_") return c10::IValue(i & j);
    if (op == "_operator.or_") return c10::IValue(i | j);
    if (op == "_operator.lshift") return c10::IValue(j < 0 || j > 62 ? int64_t{0} : i << j);
    if (op == "_operator.rshift") return c10::IValue(j < 0 || j > 63 ? int64_t{0} : i >> j);
    if (op == "torch.sym_max") return c10::IValue(std::max(i, j));
    if (op == "torch.sym_min") return c10::IValue(std::min(i, j));
    if (op == "_operator.pow") {
      if (j < 0) return c10::IValue(std::pow(static_cast<double>(i), static_cast<double>(j)));
      int64_t p = 1;
      for (int64_t e = 0; e < j; ++e)
        if (__builtin_mul_overflow(p, i, &p)) throw std::runtime_error("symbolic int overflow");
      return p;
    }
  }
  const double p = num(x), q = num(y);
  if (op == "_operator.add") return p + q;
  if (op == "_operator.sub") return p - q;
  if (op == "_operator.mul") return p * q;
  if (op == "_operator.floordiv") return std::floor(p / q);
  if (op == "_operator.mod") return p - std::floor(p / q) * q;
  if (op == "_operator.pow") return std::pow(p, q);
  if (op == "torch.sym_max") return std::max(p, q);
  if (op == "torch.sym_min") return std::min(p, q);
  throw std::runtime_error(fmt::format("{} does not apply to these operands", op));
}

c10::IValue ExportProgram::run(const std::vector<c10::IValue>& args) {
  std::vector<c10::IValue> values(slot_count_);
  for (const auto& [slot, v] : fixed_) values[static_cast<size_t>(slot)] = v;
  bind_inputs(args, values);
  torch::jit::Stack stack;
  for (const ProgramStep& st : steps_) {
    if (!st.op) {
      const c10::IValue r = sym_op(st, values);
      if (!st.outputs.empty() && st.outputs[0].kind == OutputBinding::Kind::Single)
        values[static_cast<size_t>(st.outputs[0].slot)] = r;
      continue;
    }
    stack.clear();
    stack.reserve(st.args.size());
    for (const ArgRecipe& r : st.args) {
      switch (r.kind) {
        case ArgRecipe::Kind::Constant:
          stack.push_back(r.constant);
          break;
        case ArgRecipe::Kind::Slot: {
          const c10::IValue& v = values[static_cast<size_t>(r.slot)];
          stack.push_back(r.to_double && v.isInt() ? c10::IValue(static_cast<double>(v.toInt())) : v);
          break;
        }
        case ArgRecipe::Kind::TensorList: {
          c10::List<at::Tensor> l;
          l.reserve(r.slots.size());
          for (const int s : r.slots) l.push_back(values[static_cast<size_t>(s)].toTensor());
          stack.emplace_back(std::move(l));
          break;
        }
        case ArgRecipe::Kind::OptionalTensorList: {
          c10::List<std::optional<at::Tensor>> l;
          l.reserve(r.slots.size());
          for (const int s : r.slots)
            l.push_back(s < 0 ? std::optional<at::Tensor>() : values[static_cast<size_t>(s)].toTensor());
          stack.emplace_back(std::move(l));
          break;
        }
        case ArgRecipe::Kind::IntList: {
          c10::List<int64_t> l;
          l.reserve(r.slots.size());
          for (size_t k = 0; k < r.slots.size(); ++k)
            l.push_back(r.slots[k] < 0 ? r.constants[k].toInt() : values[static_cast<size_t>(r.slots[k])].toInt());
          stack.emplace_back(std::move(l));
          break;
        }
        case ArgRecipe::Kind::FloatList: {
          c10::List<double> l;
          for (size_t k = 0; k < r.slots.size(); ++k) {
            const c10::IValue& v = r.slots[k] < 0 ? r.constants[k] : values[static_cast<size_t>(r.slots[k])];
            l.push_back(v.isInt() ? static_cast<double>(v.toInt()) : v.toDouble());
          }
          stack.emplace_back(std::move(l));
          break;
        }
        case ArgRecipe::Kind::Wrapped: {
          const c10::IValue& v = r.slots[0] < 0 ? r.constant : values[static_cast<size_t>(r.slots[0])];
          at::Tensor t = at::scalar_to_tensor(v.toScalar());
          t.unsafeGetTensorImpl()->set_wrapped_number(true);
          stack.emplace_back(std::move(t));
          break;
        }
        case ArgRecipe::Kind::BoolList: {
          c10::List<bool> l;
          for (size_t k = 0; k < r.slots.size(); ++k)
            l.push_back(r.slots[k] < 0 ? r.constants[k].toBool() : values[static_cast<size_t>(r.slots[k])].toBool());
          stack.emplace_back(std::move(l));
          break;
        }
      }
    }
    st.op->callBoxed(stack);
    for (size_t k = 0; k < st.outputs.size() && k < stack.size(); ++k) {
      const OutputBinding& o = st.outputs[k];
      if (o.kind == OutputBinding::Kind::Single) {
        values[static_cast<size_t>(o.slot)] = std::move(stack[k]);
      } else if (o.kind == OutputBinding::Kind::List) {
        const auto list = stack[k].toListRef();
        for (size_t e = 0; e < o.slots.size() && e < list.size(); ++e)
          if (o.slots[e] >= 0) values[static_cast<size_t>(o.slots[e])] = list[e];
      }
    }
    for (const int s : st.release) values[static_cast<size_t>(s)] = c10::IValue();
  }
  {
    at::NoGradGuard no_grad;
    for (const auto& [from, to] : buffer_writes_) {
      at::Tensor dst = values[static_cast<size_t>(to)].toTensor();
      const at::Tensor& src = values[static_cast<size_t>(from)].toTensor();
      if (!dst.is_same(src)) dst.copy_(src);
    }
    for (const auto& [from, index] : input_writes_) {
      at::Tensor dst = args[index].toTensor();
      const at::Tensor& src = values[static_cast<size_t>(from)].toTensor();
      if (!dst.is_same(src)) dst.copy_(src);
    }
  }
  const auto value_of = [&](const ProgramOutput& o) {
    return o.slot < 0 ? o.constant : values[static_cast<size_t>(o.slot)];
  };
  if (single_output_) return value_of(outputs_[0]);
  if (dict_output_) {
    c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
    for (const auto& o : outputs_) d.insert(o.name, value_of(o));
    return d;
  }
  std::vector<c10::IValue> elems;
  for (const auto& o : outputs_) elems.push_back(value_of(o));
  return c10::ivalue::Tuple::create(std::move(elems));
}

// Token ids: an integer user input that reaches an embedding's `indices` through views only
// (GPT-2 views input_ids before its embedding, Llama passes it as is) takes that embedding's rows
// from the weight's declared size (the smallest, if it reaches several). A position embedding
// indexed by an arange is not the input's, so it does not count.
std::vector<InputHint> input_hints(const json& model) {
  std::vector<InputHint> hints;
  try {
    const json& graph = model.at("graph_module").at("graph");
    const json& values = graph.value("tensor_values", json::object());
    std::unordered_map<std::string, size_t> from;  // value -> the user input it views
    for (const auto& spec : model.at("graph_module").at("signature").at("input_specs")) {
      if (union_key(spec) != "user_input") continue;
      const json& arg = spec["user_input"].at("arg");
      InputHint h;
      if (union_key(arg) == "as_tensor") {
        h.name = arg["as_tensor"].at("name").get<std::string>();
        if (values.contains(h.name) && values[h.name].contains("dtype") && values[h.name]["dtype"].is_number_integer())
          h.dtype = serde_dtype(values[h.name]["dtype"].get<int64_t>());
        if (h.dtype && c10::isIntegralType(*h.dtype, false)) from.emplace(h.name, hints.size());
      }
      hints.push_back(std::move(h));
    }
    static const std::unordered_set<std::string> views = {
        "torch.ops.aten.view.default",       "torch.ops.aten.reshape.default", "torch.ops.aten._unsafe_view.default",
        "torch.ops.aten.unsqueeze.default",  "torch.ops.aten.squeeze.dim",     "torch.ops.aten.squeeze.dims",
        "torch.ops.aten.flatten.using_ints", "torch.ops.aten.clone.default",   "torch.ops.aten.contiguous.default",
        "torch.ops.aten.alias.default",      "torch.ops.aten.expand.default",  "torch.ops.aten.view_copy.default",
        "torch.ops.aten.slice.Tensor",       "torch.ops.aten.select.int"};
    static const json none = json::array();
    const auto tensor_arg = [](const json& node, const char* name) -> std::string {
      const json& inputs = node.contains("inputs") ? node["inputs"] : none;
      if (!inputs.is_array()) return "";
      for (const auto& in : inputs)
        if (in.value("name", std::string()) == name && union_key(in.value("arg", json())) == "as_tensor")
          return in["arg"]["as_tensor"].value("name", std::string());
      return "";
    };
    for (const auto& node : graph.contains("nodes") ? graph["nodes"] : none) {
      const std::string target = node.value("target", std::string());
      if (views.count(target)) {
        const auto it = from.find(tensor_arg(node, "self"));
        const json& outs = node.contains("outputs") ? node["outputs"] : none;
        if (it != from.end() && outs.is_array() && outs.size() == 1 && union_key(outs[0]) == "as_tensor") {
          const size_t input = it->second;
          from.emplace(outs[0]["as_tensor"].value("name", std::string()), input);
        }
        continue;
      }
      if (target != "torch.ops.aten.embedding.default") continue;
      const auto it = from.find(tensor_arg(node, "indices"));
      const std::string weight = tensor_arg(node, "weight");
      if (it == from.end() || !values.contains(weight)) continue;
      const auto& sizes = values[weight].value("sizes", json::array());
      if (sizes.empty() || !sizes[0].contains("as_int") || !sizes[0]["as_int"].is_number_integer()) continue;
      const int64_t rows = sizes[0]["as_int"].get<int64_t>();
      int64_t& vocab = hints[it->second].vocab;
      if (rows > 0 && (vocab == 0 || rows < vocab)) vocab = rows;
    }
  } catch (const std::exception&) {
    // A malformed graph is the program's to refuse, in its own words: no hints.
  }
  return hints;
}

}  // namespace ra::targets
