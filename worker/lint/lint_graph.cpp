// SPDX-License-Identifier: Apache-2.0
// `lint`: a static scan of a TorchScript model against the knowledge base.
//
// The problem. Before spending GPU time on `run`, a user wants to know which ops of a model are
// known to be nondeterministic on the target device, where they sit (module path and source line)
// and what `use_deterministic_algorithms` will do about each: make it deterministic, or raise.
// Everything needed is in the TorchScript archive: the graphs of the methods, the module tree and
// the source ranges that map each node back to the code it was compiled from.
//
// The approach. The archive is loaded on the CPU (map location CPU: CUDA is never initialised, so
// `--device cuda` works on a machine without a GPU; the device only selects which entries apply).
// Every method of the top module is walked node by node, through the sub-blocks of `prim::If` and
// `prim::Loop` and the subgraphs of `prim::fork`. Calls are followed rather than inlined:
// `prim::CallMethod` continues in the called method's graph, `prim::CallFunction` in the called
// function's. Following calls ourselves, instead of running torch::jit::Inline and reading the
// inlined call stack, keeps the whole module path: the walker knows which live object each
// module-typed value holds, because it resolves every `prim::GetAttr` chain from `self` through
// the loaded module tree, so a ModuleList element reached as `self.layers` then `0` is "layers.0"
// (the inlined call stack records only the last attribute name, "0").
//
// Each graph is walked as a copy specialised for its call: arguments that are constants of
// immutable types at the call site (bool, int, float, str, None) replace the parameters, and
// constant propagation over immutable types folds what they decide. A call such as
// F.interpolate(x, mode="bilinear") then keeps only the bilinear branch of interpolate, instead
// of reporting every mode's kernel. No tensor is computed.
//
// A node whose kind is one of an entry's ops is a candidate; the entry's `args` conditions are
// checked against the node's schema: a constant argument that contradicts the condition (or an
// overload without the argument) drops the candidate, a non-constant one keeps it with
// "[depends on <arg>]" added to the condition. The source line is the op's own line (the
// innermost frame; for a loaded archive, the original range that generated the serialized code);
// calls through free functions that lead to it are listed, outermost first, as "called from".
// Identical findings (module path, line, op, entry, file, call sites) reached from several
// methods are merged and the methods listed. Findings are kept in a map ordered by that key, so
// the output is sorted by module path, line, op, entry id, then file and call sites, and does not
// depend on hash order or addresses.
//
// The limits. The scan is static: a condition on runtime values (tensor dtypes, shapes, whether
// an input requires grad, which branch runs on data) cannot be decided, so every op that may run
// is reported, including ops in branches that never execute. Entries whose direction is
// "backward" are reported at their forward op, because any op in a graph may be differentiated;
// the finding says which direction the entry concerns. Ops whose result is unused may be removed
// by the dead-code elimination that follows constant propagation (the graph executor removes them
// too). A call whose target cannot be resolved is listed as a note. The archive keeps no original
// line for some calls to free functions (they show as "unknown line"). Custom ops need their
// library (`--load-library`), else the archive does not load.
#include "worker/lint/lint_graph.h"

#include "audit/common/errors.h"
#include "audit/common/files.h"
#include "audit/common/paths.h"
#include "worker/lint/gemm_rows.h"
#include "worker/runtime/export_graph.h"

#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/script.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include <dlfcn.h>

namespace ra {
namespace {

using report::SourceLocation;
using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

// Calls deeper than this are not followed (TorchScript has no recursion; this only bounds a bug).
constexpr int kMaxCallDepth = 200;

// A value known to hold a live object of the loaded model (a module or a TorchScript class
// instance), with the module path of the nearest enclosing module.
struct ObjectRef {
  c10::intrusive_ptr<c10::ivalue::Object> object;
  std::string path;
};
using ObjectMap = std::unordered_map<const Value*, ObjectRef>;

// What a call passes, per input of the callee's graph: the objects it is known to pass, and the
// arguments that are constants of immutable types (bool, int, float, str, None, tuples of them).
struct Args {
  std::vector<std::optional<ObjectRef>> objects;
  std::vector<std::optional<c10::IValue>> constants;
};

// The function body being walked.
struct Frame {
  std::string module_path;
  std::string function;                     // display name of the method or function
  std::vector<SourceLocation> called_from;  // calls to functions since the module's method
  int depth = 0;
  std::vector<SourceLocation> chain;  // every call site from the top module's method, outermost first
};

// True when `file` is one of the installed torch package's own files (".../site-packages/torch/
// nn/modules/conv.py"), whose lines are not the user's.
bool in_torch(const std::string& file) {
  for (const char* dir : {"/site-packages/torch/", "/dist-packages/torch/"})
    if (file.find(dir) != std::string::npos) return true;
  return false;
}

std::string first_line(const std::string& text) {
  size_t begin = 0;
  while (begin < text.size()) {
    const size_t end = std::min(text.find('\n', begin), text.size());
    std::string line = text.substr(begin, end - begin);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    if (line.find_first_not_of(' ') != std::string::npos) return line.substr(line.find_first_not_of(' '));
    begin = end + 1;
  }
  return "unknown error";
}

// Custom-op libraries stay loaded for the life of the process, as in a trial child.
void open_libraries(const std::vector<std::string>& paths) {
  for (const auto& path : paths) {
    check_readable(path, "library");
    if (::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      const char* why = ::dlerror();
      throw InputError(fmt::format("library '{}' cannot be loaded: {}", path, first_line(why ? why : "")));
    }
  }
}

torch::jit::Module load_model(const std::string& path) {
  check_readable(path, "model");
  const auto unloadable = [&](const std::string& why) {
    return InputError(fmt::format("model '{}' is not a loadable TorchScript archive: {}", path, first_line(why)));
  };
  try {
    return torch::jit::load(path, c10::Device(c10::kCPU));
  } catch (const c10::Error& e) {
    throw unloadable(e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw unloadable(e.what());
  }
}

SourceLocation location_of(const Node* n, const std::string& function) {
  torch::jit::SourceRange range = n->sourceRange();
  // A loaded archive's graphs are compiled from the serialized code; its debug records map each
  // range back to the original source.
  if (auto original = range.findSourceRangeThatGenerated()) range = *original;
  SourceLocation loc{"", 0, function};
  const auto source = range.source();
  if (!source) return loc;
  const size_t index = source->lineno_for_offset(range.start());
  const std::optional<std::string>& file = source->filename();
  // With a file name, the source knows the line its text starts at; without one, the text is
  // the whole source and lines count from 1.
  loc.line = static_cast<int>(file ? source->lineno_to_source_lineno(index) : index + 1);
  // Code defined from a string (Module::define in C++) carries the placeholder "<string>".
  if (file && *file != "<string>") loc.file = *file;
  return loc;
}

std::string function_name(const torch::jit::Function& fn, bool is_method) {
  if (is_method) return fn.name();
  std::string q = fn.qualname().qualifiedName();
  // "__torch__.torch.nn.functional.___torch_mangle_1.interpolate" -> "torch.nn.functional.interpolate"
  std::string out;
  size_t begin = 0;
  while (begin <= q.size()) {
    const size_t end = std::min(q.find('.', begin), q.size());
    const std::string part = q.substr(begin, end - begin);
    if (!(begin == 0 && part == "__torch__") && part.rfind("___torch_mangle_", 0) != 0)
      out += (out.empty() ? "" : ".") + part;
    begin = end + 1;
  }
  return out;
}

// The value of `v` when the graph fixes it: a constant, a list built from constant ints
// (`[1, 1]`), or `_list_with_default(LIST, defaults)` of such a list without None (what
// F.adaptive_avg_pool2d does with its output size).
std::optional<c10::IValue> constant_of(const torch::jit::Value* v) {
  if (auto c = torch::jit::toIValue(v)) return c;
  const Node* n = v->node();
  if (n->kind() == c10::prim::ListConstruct) {
    std::vector<int64_t> ints;
    for (const torch::jit::Value* in : n->inputs()) {
      const auto c = torch::jit::toIValue(in);
      if (!c || !c->isInt()) return std::nullopt;
      ints.push_back(c->toInt());
    }
    return c10::IValue(ints);
  }
  if (n->kind() == c10::Symbol::fromQualString("aten::list_with_default") && n->inputs().size() == 2) {
    const auto list = constant_of(n->input(0));
    if (list && list->isIntList()) return list;
  }
  return std::nullopt;
}

enum class ArgState { Holds, Contradicted, Undecided };

bool matches(const c10::IValue& v, const nlohmann::json& expected) {
  const bool int_list =
      expected.is_array() && !expected.empty() &&
      std::all_of(expected.begin(), expected.end(), [](const nlohmann::json& e) { return e.is_number_integer(); });
  if (int_list && v.isIntList()) return v.toIntVector() == expected.get<std::vector<int64_t>>();
  if (expected.is_array())
    return std::any_of(expected.begin(), expected.end(), [&](const nlohmann::json& e) { return matches(v, e); });
  if (expected.is_boolean()) return v.isBool() && v.toBool() == expected.get<bool>();
  if (expected.is_number_integer()) return v.isInt() && v.toInt() == expected.get<int64_t>();
  if (expected.is_string()) return v.isString() && v.toStringRef() == expected.get<std::string>();
  return false;
}

ArgState check_arg(const Node* n, const std::string& name, const std::string& expected_json) {
  const c10::FunctionSchema* schema = n->maybeSchema();
  if (schema == nullptr) return ArgState::Undecided;
  const auto index = schema->argumentIndexWithName(name);
  if (!index) return ArgState::Holds;  // the condition is about another op of the entry (aten::pad's mode)
  if (*index < 0 || static_cast<size_t>(*index) >= n->inputs().size()) return ArgState::Undecided;
  const auto value = constant_of(n->input(*index));
  if (!value) return ArgState::Undecided;
  return matches(*value, nlohmann::json::parse(expected_json)) ? ArgState::Holds : ArgState::Contradicted;
}

// True when the graph shows that `v` holds no value twice: an index made by arange or randperm
// (through to, contiguous, clone or detach), a constant tensor or a module attribute (a buffer, as
// saved) whose values are distinct, or a list of one such index (index_put's `indices`). Integer
// tensors only: a bool mask selects each element at most once, but says nothing of a gradient's
// order.
bool statically_unique(const Value* v, const ObjectMap& objects, int depth = 0) {
  const Node* n = v->node();
  const std::string kind = n->kind().toQualString();
  if (depth > 8) return false;
  if (kind == "aten::arange" || kind == "aten::randperm") return true;
  if (kind == "aten::to" || kind == "aten::contiguous" || kind == "aten::clone" || kind == "aten::detach")
    return statically_unique(n->input(0), objects, depth + 1);
  if (n->kind() == c10::prim::ListConstruct)
    return n->inputs().size() == 1 && statically_unique(n->input(0), objects, depth + 1);
  c10::IValue value;
  if (auto c = torch::jit::toIValue(v)) {
    value = *c;
  } else if (n->kind() == c10::prim::GetAttr) {
    const auto parent = objects.find(n->input(0));
    if (parent == objects.end()) return false;
    value = parent->second.object->getAttr(n->s(c10::attr::name));
  }
  if (!value.isTensor()) return false;
  const at::Tensor& t = value.toTensor();
  if (!t.defined() || !c10::isIntegralType(t.scalar_type(), /*includeBool=*/false) || t.is_sparse()) return false;
  if (t.numel() < 2) return true;
  try {
    const at::Tensor sorted = std::get<0>(t.flatten().to(at::kCPU).sort());
    return !at::eq(sorted.slice(0, 1), sorted.slice(0, 0, -1)).any().item<bool>();
  } catch (const std::exception&) {
    return false;  // a tensor that cannot be read here (a meta or quantized one): not known unique
  }
}

// The value the op passes for its schema argument `name`, or nullptr when it has no such argument.
const Value* arg_input(const Node* n, const std::string& name) {
  const c10::FunctionSchema* schema = n->maybeSchema();
  if (schema == nullptr) return nullptr;
  const auto index = schema->argumentIndexWithName(name);
  return index && *index >= 0 && static_cast<size_t>(*index) < n->inputs().size() ? n->input(*index) : nullptr;
}

// An `unless` condition {"index": "unique"}: the op's argument of that name is statically unique.
bool unique_arg(const Node* n, const std::string& name, const ObjectMap& objects) {
  const Value* v = arg_input(n, name);
  return v != nullptr && statically_unique(v, objects);
}

// True when the op's schema has the argument and it is a constant in the graph.
bool has_arg(const Node* n, const std::string& name) {
  const Value* v = arg_input(n, name);
  return v != nullptr && constant_of(v).has_value();
}

std::string join_path(const std::string& parent, const std::string& name) {
  return parent.empty() ? name : parent + "." + name;
}

using CallSites = std::vector<std::tuple<std::string, int, std::string>>;

CallSites call_sites(const std::vector<SourceLocation>& locs) {
  CallSites out;
  for (const auto& l : locs) out.emplace_back(l.file, l.line, l.function);
  return out;
}

// A copy of `graph` in which the inputs given as constants are replaced by them, then constant
// propagation over immutable types (no tensor is computed): branches on a constant argument, such
// as `mode == "bilinear"` inside F.interpolate, keep only the branch that runs.
std::shared_ptr<torch::jit::Graph> specialise(torch::jit::Graph& graph,
                                              const std::vector<std::optional<c10::IValue>>& constants) {
  std::shared_ptr<torch::jit::Graph> copy = graph.copy();
  {
    const torch::jit::WithInsertPoint guard(copy->block()->param_node()->next());
    for (size_t i = 0; i < constants.size() && i < copy->inputs().size(); ++i) {
      if (!constants[i]) continue;
      if (const auto value = torch::jit::tryInsertConstant(*copy, *constants[i]))
        copy->inputs()[i]->replaceAllUsesWith(*value);
    }
  }
  try {
    torch::jit::ConstantPropagationImmutableTypes(copy);
  } catch (const std::exception&) {
    return graph.copy();  // a pass that gives up leaves the graph as compiled: report more, not less
  }
  return copy;
}

// Sort order and identity of a finding: module path, line, op, entry id, then file and call sites.
using FindingKey = std::tuple<std::string, int, std::string, std::string, std::string, CallSites>;

class Scanner {
 public:
  using ArgCheck = std::function<ArgState(const std::string&, const std::string&)>;
  using Exclusion = std::function<bool(const std::string&, const std::string&)>;

  Scanner(const KnowledgeBase& kb, const Device& device, bool backward) : device_(device) {
    for (const auto& e : kb.entries)
      if (KnowledgeBase::applies_to(e, device) && (backward || e.direction != "backward"))
        for (const auto& op : e.ops) by_op_.emplace(op, &e);
  }

  void scan_method(const torch::jit::Method& method, const c10::intrusive_ptr<c10::ivalue::Object>& self) {
    entry_method_ = method.name();
    walk_function(method.function(), Args{{ObjectRef{self, ""}}, {}}, Frame{"", method.name(), {}, 0, {}});
  }

  // One node of a torch.export graph (lint_export): its op, a checker of its arguments against
  // an entry's condition, its innermost source line and module path, and its stack (outermost first).
  void match_node(const std::string& op, const ArgCheck& check, const SourceLocation& loc,
                  const std::string& module_path, std::vector<SourceLocation> chain,
                  const std::optional<lint::GemmRows>& rows, const std::map<std::string, lint::SymbolInfo>& symbols) {
    entry_method_ = "forward";
    rows_ = rows;
    symbols_ = &symbols;
    // `unless` conditions about uniqueness need the index's values, which a static scan lacks.
    const auto excluded_by = [&](const std::string& name, const std::string& expected) {
      return expected != "\"unique\"" && check(name, expected) == ArgState::Holds;
    };
    match_entries(op, check, excluded_by, loc, Frame{module_path, "forward", {}, 0, std::move(chain)});
    rows_.reset();
    symbols_ = nullptr;
  }

  void note_text(const std::string& text) { note(text); }

  std::vector<LintFinding> findings() const {
    std::vector<LintFinding> out;
    for (const auto& [key, found] : findings_) {
      LintFinding f = found.finding;
      f.entry_methods.assign(found.entry_methods.begin(), found.entry_methods.end());
      if (!f.depends_on.empty()) f.condition += fmt::format(" [depends on {}]", fmt::join(f.depends_on, ", "));
      f.rows.assign(found.rows.begin(), found.rows.end());
      out.push_back(std::move(f));
    }
    return out;
  }

  const std::vector<std::string>& notes() const { return notes_; }

 private:
  struct Found {
    LintFinding finding;
    std::set<std::string> entry_methods;
    std::set<std::string> rows;  // batch-invariance: each node's M and its rank
    lint::Risk risk = lint::Risk::None;
  };

  // A batch-invariance entry's node: its M ranked against the entry's measured batch classes on
  // this device type (gemm_rows.h); the finding keeps the worst rank of its nodes.
  void rank_rows(const KnowledgeEntry& e, Found& found) {
    if (e.concern != "batch-invariance") return;
    lint::BatchClasses classes;
    for (const auto& m : e.measured)
      if (m.device_type == device_.type() && classes.empty()) classes = lint::parse_batch_classes(m.note);
    static const std::map<std::string, lint::SymbolInfo> none;
    const lint::RowsAssessment a = lint::assess_rows(rows_, symbols_ ? *symbols_ : none, classes);
    const auto name = [](lint::Risk r) {
      return r == lint::Risk::High      ? "high"
             : r == lint::Risk::Unknown ? "unknown"
             : r == lint::Risk::Low     ? "low"
                                        : "none";
    };
    found.rows.insert(fmt::format("{} risk: {}", name(a.risk), a.sentence));
    const auto order = [](lint::Risk r) {
      return r == lint::Risk::High ? 3 : r == lint::Risk::Unknown ? 2 : r == lint::Risk::Low ? 1 : 0;
    };
    if (order(a.risk) > order(found.risk)) found.risk = a.risk;
    found.finding.risk = name(found.risk);
  }

  void note(const std::string& text) {
    if (note_set_.insert(text).second) notes_.push_back(text);
  }

  void walk_function(torch::jit::Function& fn, const Args& args, const Frame& frame) {
    if (frame.depth > kMaxCallDepth) {
      note(fmt::format("calls nested deeper than {} levels in '{}' were not followed", kMaxCallDepth, frame.function));
      return;
    }
    torch::jit::GraphFunction* graph_fn = torch::jit::tryToGraphFunction(fn);
    if (graph_fn == nullptr) {
      note(fmt::format("'{}' has no TorchScript graph and was not scanned", frame.function));
      return;
    }
    std::shared_ptr<torch::jit::Graph> graph = specialise(*graph_fn->graph(), args.constants);
    ObjectMap objects;
    for (size_t i = 0; i < args.objects.size() && i < graph->inputs().size(); ++i)
      if (args.objects[i]) objects.emplace(graph->inputs()[i], *args.objects[i]);
    walk_block(graph->block(), objects, frame);
  }

  void walk_block(Block* block, ObjectMap& objects, const Frame& frame) {
    for (Node* n : block->nodes()) {
      const c10::Symbol kind = n->kind();
      if (kind == c10::prim::GetAttr) {
        resolve_attribute(n, objects);
      } else if (kind == c10::prim::CallMethod) {
        call_method(n, objects, frame);
      } else if (kind == c10::prim::CallFunction) {
        call_function(n, objects, frame);
      } else {
        match(n, objects, frame);
      }
      for (Block* sub : n->blocks()) walk_block(sub, objects, frame);
      // prim::fork and friends carry their body as a subgraph whose inputs are the node's inputs.
      if (n->hasAttribute(c10::attr::Subgraph) && n->kindOf(c10::attr::Subgraph) == torch::jit::AttributeKind::g) {
        const auto sub = n->g(c10::attr::Subgraph);
        for (size_t i = 0; i < sub->inputs().size() && i < n->inputs().size(); ++i)
          if (const auto it = objects.find(n->input(i)); it != objects.end())
            objects.emplace(sub->inputs()[i], it->second);
        walk_block(sub->block(), objects, frame);
      }
    }
  }

  static void resolve_attribute(const Node* n, ObjectMap& objects) {
    const auto parent = objects.find(n->input(0));
    if (parent == objects.end()) return;
    const std::string name = n->s(c10::attr::name);
    const c10::IValue value = parent->second.object->getAttr(name);
    if (!value.isObject()) return;
    auto object = value.toObject();
    const bool is_module = object->type()->is_module();
    const std::string path = is_module ? join_path(parent->second.path, name) : parent->second.path;
    objects.emplace(n->output(), ObjectRef{object, path});
  }

  static Args args_of(const Node* n, size_t first, const ObjectMap& objects) {
    Args args;
    for (size_t i = first; i < n->inputs().size(); ++i) {
      const auto it = objects.find(n->input(i));
      args.objects.push_back(it == objects.end() ? std::nullopt : std::optional<ObjectRef>(it->second));
      std::optional<c10::IValue> constant = constant_of(n->input(i));
      if (constant && (constant->isTensor() || constant->isObject())) constant.reset();
      args.constants.push_back(std::move(constant));
    }
    return args;
  }

  void call_method(const Node* n, const ObjectMap& objects, const Frame& frame) {
    const std::string name = n->s(c10::attr::name);
    const SourceLocation site = location_of(n, frame.function);
    Frame callee{frame.module_path, name, frame.called_from, frame.depth + 1, frame.chain};
    callee.chain.push_back(site);
    c10::ClassTypePtr type;
    if (const auto it = objects.find(n->input(0)); it != objects.end()) {
      type = it->second.object->type();
      if (type->is_module()) {
        // A method of the same module continues the caller's chain; another module starts afresh.
        if (it->second.path != frame.module_path) callee.called_from.clear();
        callee.module_path = it->second.path;
      } else {
        callee.called_from.push_back(site);
      }
    } else {
      type = n->input(0)->type()->cast<c10::ClassType>();
      if (type == nullptr) {
        note(fmt::format("the call to '{}' on {} at {} could not be followed", name, n->input(0)->type()->repr_str(),
                         report::display_location(site)));
        return;
      }
      if (type->is_module())
        note(
            fmt::format("the module of the call to '{}' at {} could not be resolved; what it calls is reported under "
                        "'{}'",
                        name, report::display_location(site), report::display_module_path(frame.module_path)));
      callee.called_from.push_back(site);
    }
    torch::jit::Function* fn = type->findMethod(name);
    if (fn == nullptr) {
      note(fmt::format("method '{}' of {} called at {} was not found", name, type->repr_str(),
                       report::display_location(site)));
      return;
    }
    callee.function = function_name(*fn, true);
    walk_function(*fn, args_of(n, 0, objects), callee);
  }

  void call_function(const Node* n, const ObjectMap& objects, const Frame& frame) {
    const SourceLocation site = location_of(n, frame.function);
    const auto type = n->input(0)->type()->cast<c10::FunctionType>();
    if (type == nullptr) {
      note(fmt::format("the function called at {} could not be resolved", report::display_location(site)));
      return;
    }
    torch::jit::Function* fn = type->function();
    Frame callee{frame.module_path, function_name(*fn, false), frame.called_from, frame.depth + 1, frame.chain};
    callee.called_from.push_back(site);
    callee.chain.push_back(site);
    walk_function(*fn, args_of(n, 1, objects), callee);
  }

  void match(const Node* n, const ObjectMap& objects, const Frame& frame) {
    // Known deterministic under a constant argument (an output size of 1), or with an index that
    // holds no value twice: no finding.
    const auto excluded_by = [&](const std::string& name, const std::string& expected) {
      return expected == "\"unique\"" ? unique_arg(n, name, objects)
                                      : check_arg(n, name, expected) == ArgState::Holds && has_arg(n, name);
    };
    match_entries(
        n->kind().toQualString(),
        [&](const std::string& name, const std::string& expected) { return check_arg(n, name, expected); }, excluded_by,
        location_of(n, frame.function), frame);
  }

  // Every entry for `op` whose `args` conditions `check` does not contradict and whose `unless`
  // conditions `excluded_by` does not confirm becomes a finding at `loc`.
  void match_entries(const std::string& op, const ArgCheck& check, const Exclusion& excluded_by,
                     const SourceLocation& loc, const Frame& frame) {
    const auto [begin, end] = by_op_.equal_range(op);
    for (auto it = begin; it != end; ++it) {
      const KnowledgeEntry& e = *it->second;
      std::vector<std::string> depends_on;
      bool excluded = false;
      for (const auto& [name, expected] : e.args) {
        const ArgState state = check(name, expected);
        excluded |= state == ArgState::Contradicted;
        if (state == ArgState::Undecided) depends_on.push_back(name);
      }
      for (const auto& [name, expected] : e.unless) excluded |= excluded_by(name, expected);
      if (excluded) continue;
      add(e, op, loc, frame, std::move(depends_on));
    }
  }

  void add(const KnowledgeEntry& e, const std::string& op, const SourceLocation& loc, const Frame& frame,
           std::vector<std::string> depends_on) {
    const FindingKey key{frame.module_path, loc.line, op, e.id, loc.file, call_sites(frame.called_from)};
    auto [it, inserted] = findings_.try_emplace(key);
    Found& found = it->second;
    found.entry_methods.insert(entry_method_);
    rank_rows(e, found);
    if (!inserted) {
      // The same line reached again: it is decided when any occurrence decided it.
      if (depends_on.empty()) found.finding.depends_on.clear();
      return;
    }
    LintFinding& f = found.finding;
    f.entry = e.id;
    f.title = e.title;
    f.op = op;
    f.direction = e.direction;
    f.device = e.device;
    f.severity = e.severity;
    f.module_path = frame.module_path;
    f.source = loc;
    f.called_from = frame.called_from;
    // The user's own line: the innermost frame outside the installed torch, when the op's own
    // line is inside it (torch/nn/modules/linear.py); where the model called into torch.
    if (in_torch(loc.file))
      for (auto it = frame.chain.rbegin(); it != frame.chain.rend(); ++it)
        if (!it->file.empty() && !in_torch(it->file)) {
          f.user_frame = *it;
          break;
        }
    f.condition = e.condition;
    f.depends_on = std::move(depends_on);
    f.documented = to_string(e.documented);
    f.deterministic = to_string(KnowledgeBase::behaviour_under(e, "deterministic"));
    // Measured on a real machine of this device type: the measurement wins, the documentation is shown.
    if (const Measurement* m = e.measured_on(device_); m != nullptr) {
      const std::string measured = to_string(*measured_under_det(*m));
      if (measured != f.deterministic) {
        f.deterministic_documented = f.deterministic;
        f.deterministic = measured;
      }
    }
    for (const auto& m : e.measured)
      if (m.device_type == device_.type()) f.measured.push_back(fmt::format("{} ({})", describe(m), m.evidence));
    f.alert = e.alert;
    f.advice = e.advice;
  }

  std::multimap<std::string, const KnowledgeEntry*> by_op_;
  std::map<FindingKey, Found> findings_;
  std::vector<std::string> notes_;
  std::set<std::string> note_set_;
  std::string entry_method_;
  Device device_;
  std::optional<lint::GemmRows> rows_;  // the node being matched (torch.export graphs only)
  const std::map<std::string, lint::SymbolInfo>* symbols_ = nullptr;
};

// A serialized argument of a torch.export node as a constant, when it is one (int, float, bool,
// string, None, int list); nullopt for tensors and symbolic values.
std::optional<c10::IValue> export_constant(const nlohmann::json& arg) {
  if (!arg.is_object() || arg.empty()) return std::nullopt;
  const auto& [kind, v] = *arg.items().begin();
  if (kind == "as_int" && v.is_number_integer()) return c10::IValue(v.get<int64_t>());
  if (kind == "as_float" && v.is_number()) return c10::IValue(v.get<double>());
  if (kind == "as_bool" && v.is_boolean()) return c10::IValue(v.get<bool>());
  if (kind == "as_string" && v.is_string()) return c10::IValue(v.get<std::string>());
  if (kind == "as_none") return c10::IValue();
  if (kind == "as_ints" && v.is_array()) {
    std::vector<int64_t> ints;
    for (const auto& i : v) {
      if (!i.is_number_integer()) return std::nullopt;
      ints.push_back(i.get<int64_t>());
    }
    return c10::IValue(ints);
  }
  return std::nullopt;
}

// "File \"model.py\", line 26, in forward\n    code\n  File ..." -> the frames, outermost first.
std::vector<SourceLocation> parse_stack_trace(const std::string& text) {
  std::vector<SourceLocation> out;
  size_t at = 0;
  while ((at = text.find("File \"", at)) != std::string::npos) {
    const size_t name_end = text.find('"', at + 6);
    if (name_end == std::string::npos) break;
    SourceLocation loc;
    loc.file = text.substr(at + 6, name_end - at - 6);
    const size_t line_at = text.find(", line ", name_end);
    const size_t eol = text.find('\n', name_end);
    if (line_at != std::string::npos && line_at < eol) loc.line = std::atoi(text.c_str() + line_at + 7);
    const size_t in_at = text.find(", in ", name_end);
    if (in_at != std::string::npos && in_at < eol)
      loc.function = text.substr(in_at + 5, (eol == std::string::npos ? text.size() : eol) - in_at - 5);
    out.push_back(loc);
    at = name_end;
  }
  return out;
}

// "export" or "aoti" for the two .pt2 kinds (by the records torch.export.save and AOTInductor
// write), "" for anything else (a TorchScript archive included). The same rule as the targets'
// archive_kind, which this folder cannot include.
std::string pt2_kind(const std::string& path) {
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    const auto records = reader.getAllRecords();
    const auto any_under = [&](const std::string& prefix) {
      return std::any_of(records.begin(), records.end(), [&](const std::string& r) { return r.rfind(prefix, 0) == 0; });
    };
    const bool has_json = std::find(records.begin(), records.end(), "models/model.json") != records.end();
    if (std::find(records.begin(), records.end(), "constants.pkl") != records.end() || any_under("code/")) return "";
    if (any_under("data/aotinductor/")) return "aoti";
    return has_json ? "export" : "";
  } catch (const std::exception&) {
    return "";
  }
}

// The symbols of the user inputs' dimensions ("s77" -> x.size(0)), with the least value each takes
// at run time: the recorded lower bound, except the exporter's 2 (its 0/1 specialisation), which
// torch's input check lets 0 and 1 pass (worker/targets/export_program.cpp does the same).
std::map<std::string, lint::SymbolInfo> input_symbols(const nlohmann::json& model,
                                                      const nlohmann::json& tensor_values) {
  std::map<std::string, lint::SymbolInfo> out;
  const nlohmann::json* specs = nullptr;
  if (model["graph_module"].contains("signature") && model["graph_module"]["signature"].is_object() &&
      model["graph_module"]["signature"].contains("input_specs") &&
      model["graph_module"]["signature"]["input_specs"].is_array())
    specs = &model["graph_module"]["signature"]["input_specs"];
  if (specs == nullptr || !tensor_values.is_object()) return out;
  const nlohmann::json ranges = model.contains("range_constraints") && model["range_constraints"].is_object()
                                    ? model["range_constraints"]
                                    : nlohmann::json::object();
  for (const auto& spec : *specs) {
    const nlohmann::json* arg = nullptr;
    if (spec.is_object() && spec.contains("user_input") && spec["user_input"].is_object())
      arg = spec["user_input"].contains("arg") ? &spec["user_input"]["arg"] : nullptr;
    if (arg == nullptr || !arg->is_object() || !arg->contains("as_tensor") || !(*arg)["as_tensor"].is_object() ||
        !(*arg)["as_tensor"].contains("name") || !(*arg)["as_tensor"]["name"].is_string())
      continue;
    const std::string name = (*arg)["as_tensor"]["name"].get<std::string>();
    const auto t = tensor_values.find(name);
    if (t == tensor_values.end() || !t->is_object() || !t->contains("sizes") || !(*t)["sizes"].is_array()) continue;
    for (size_t d = 0; d < (*t)["sizes"].size(); ++d) {
      const auto p = lint::size_product((*t)["sizes"][d]);
      if (!p || p->factor != 1 || p->symbols.size() != 1 || out.count(p->symbols.front())) continue;
      int64_t least = 1;
      const auto r = ranges.find(p->symbols.front());
      if (r != ranges.end() && r->is_object() && r->contains("min_val") && (*r)["min_val"].is_number_integer() &&
          (*r)["min_val"].get<int64_t>() > 2)
        least = (*r)["min_val"].get<int64_t>();
      out[p->symbols.front()] = {fmt::format("{}.size({})", name, d), least};
    }
  }
  return out;
}

// lint of a torch.export archive: the graph in its models/model.json (`model`, as the one check of
// the archive read and checked it: every node is one the interpreter runs), node by node.
LintResult lint_export(const nlohmann::json& model, const Device& device, const KnowledgeBase& kb,
                       const std::string& mode) {
  LintResult r;
  Scanner scanner(kb, device, mode == "train");
  r.methods = {"forward"};
  const nlohmann::json& graph = model.at("graph_module").at("graph");
  const nlohmann::json tensor_values = graph.contains("tensor_values") ? graph["tensor_values"] : nlohmann::json();
  const std::map<std::string, lint::SymbolInfo> symbols = input_symbols(model, tensor_values);
  for (const auto& node : graph.at("nodes")) {
    if (!node.is_object() || !node.contains("target") || !node["target"].is_string()) continue;
    std::string target = node["target"].get<std::string>();
    // "torch.ops.aten.index_add.default" -> "aten::index_add", overload "default" -> "".
    if (target.rfind("torch.ops.", 0) != 0) {
      scanner.note_text(fmt::format("node '{}' calls {}, which is not an ATen op, and was not scanned",
                                    node.value("name", std::string("?")), target));
      continue;
    }
    target = target.substr(10);
    const size_t dot1 = target.find('.');
    const size_t dot2 = dot1 == std::string::npos ? std::string::npos : target.find('.', dot1 + 1);
    if (dot1 == std::string::npos) continue;
    const std::string ns = target.substr(0, dot1);
    const std::string name = target.substr(dot1 + 1, dot2 == std::string::npos ? std::string::npos : dot2 - dot1 - 1);
    const std::string overload = dot2 == std::string::npos ? "" : target.substr(dot2 + 1);
    const std::string op = ns + "::" + name;
    std::map<std::string, nlohmann::json> args;
    if (node.contains("inputs") && node["inputs"].is_array())
      for (const auto& in : node["inputs"])
        if (in.is_object() && in.contains("name") && in["name"].is_string() && in.contains("arg"))
          args[in["name"].get<std::string>()] = in["arg"];
    const auto schema = c10::Dispatcher::singleton().findSchema({op, overload == "default" ? "" : overload});
    const auto check = [&](const std::string& arg, const std::string& expected_json) {
      const auto it = args.find(arg);
      std::optional<c10::IValue> value;
      if (it != args.end()) {
        value = export_constant(it->second);
      } else if (schema) {
        const auto& s = schema->schema();
        const auto index = s.argumentIndexWithName(arg);
        if (!index) return ArgState::Holds;  // the condition is about another op of the entry
        value = s.arguments()[static_cast<size_t>(*index)].default_value();
      }
      if (!value) return ArgState::Undecided;
      return matches(*value, nlohmann::json::parse(expected_json)) ? ArgState::Holds : ArgState::Contradicted;
    };
    const nlohmann::json meta =
        node.contains("metadata") && node["metadata"].is_object() ? node["metadata"] : nlohmann::json::object();
    const std::vector<SourceLocation> chain = parse_stack_trace(meta.value("stack_trace", std::string()));
    const SourceLocation loc = chain.empty() ? SourceLocation{"", 0, "forward"} : chain.back();
    scanner.match_node(op, check, loc, module_path_of(meta.value("nn_module_stack", std::string())), chain,
                       lint::gemm_rows(op, args, tensor_values), symbols);
  }
  r.findings = scanner.findings();
  r.notes = scanner.notes();
  return r;
}

}  // namespace

LintResult lint_model(const std::string& model, const Device& device, const KnowledgeBase& kb,
                      const ExportCheck& check_export, const std::vector<std::string>& libraries,
                      const std::string& mode, bool strict, BatchVariant batch) {
  LintResult r;
  r.mode = mode;
  r.strict = strict;
  r.tool_version = tool_version();
  r.model = model;
  r.device_type = device.type();
  r.knowledge_torch = kb.torch_version;
  r.knowledge_entries = static_cast<int>(kb.entries.size());
  for (const auto& e : kb.entries) r.applicable_entries += KnowledgeBase::applies_to(e, device);

  open_libraries(libraries);
  check_readable(model, "model");
  const std::string kind = pt2_kind(model);
  if (kind == "aoti")
    throw InputError(
        fmt::format("model '{}' is an AOTInductor package: its compiled kernels cannot be linted; lint the "
                    "torch.export archive it was compiled from (torch.export.save(ep, \"model.pt2\"))",
                    model));
  if (kind == "export") {
    const LintResult graph = lint_export(check_export(model), device, kb, mode);
    r.methods = graph.methods;
    r.findings = graph.findings;
    r.notes = graph.notes;
  } else {
    torch::jit::Module module = load_model(model);
    Scanner scanner(kb, device, mode == "train");
    for (const auto& method : module.get_methods()) {
      r.methods.push_back(method.name());
      scanner.scan_method(method, module._ivalue());
    }
    r.findings = scanner.findings();
    r.notes = scanner.notes();
  }
  // Batch variance is a concern of its own: a note unless the user asks for it, and then a
  // warning, never an error: the graph can rank the risk (gemm_rows.h) but not prove it, and
  // `repro-audit invariance` measures it. M fixed by the exported shapes stays a note.
  for (auto& f : r.findings)
    if (const KnowledgeEntry* e = kb.find(f.entry); e && e->concern == "batch-invariance") {
      f.severity = batch == BatchVariant::Error && f.risk != "none" ? "warning" : "note";
      if (f.severity == "warning")
        f.advice +=
            fmt::format(" A graph cannot prove it either way: measure it with `repro-audit invariance {}`.", model);
    }
  if (mode != "train") {
    int backward = 0;
    for (const auto& e : kb.entries) backward += KnowledgeBase::applies_to(e, device) && e.direction == "backward";
    if (backward > 0)
      r.notes.push_back(fmt::format("{} about the backward pass {} not checked: lint --mode train checks {}",
                                    backward == 1 ? "1 entry" : fmt::format("{} entries", backward),
                                    backward == 1 ? "was" : "were", backward == 1 ? "it" : "them"));
  }
  r.exit_code = report::lint_exit_code(r);
  return r;
}

}  // namespace ra
