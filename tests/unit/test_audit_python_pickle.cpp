// SPDX-License-Identifier: Apache-2.0
// The reader of Python torch.save pickles: hand-written pickles in real zip archives, for what
// tests/data's Python-made files cannot show (every malformed case is one InputError).
#include "audit/common/errors.h"
#include "worker/tensor_io/python_pickle.h"

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <doctest/doctest.h>

#include <cstring>
#include <string>

namespace {

// A torch.save-style archive: data.pkl plus the given storage records.
std::string archive(const std::string& pickle, const std::vector<std::pair<std::string, std::string>>& records = {}) {
  std::string out;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* p, size_t n) {
    out.append(static_cast<const char*>(p), n);
    return n;
  });
  writer.writeRecord("data.pkl", pickle.data(), pickle.size());
  writer.writeRecord("byteorder", "little", 6);
  for (const auto& [name, bytes] : records) writer.writeRecord(name, bytes.data(), bytes.size());
  writer.writeEndOfFile();
  return out;
}

std::string error_of(const std::string& bytes) {
  try {
    ra::load_python_pickle("f.pt", bytes);
  } catch (const ra::InputError& e) {
    return e.what();
  }
  return "";
}

std::string floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

// Pickle building blocks (no escapes to get wrong): protocol 2 header, BINUNICODE, GLOBAL, BININT1.
const std::string kProto = std::string("\x80\x02", 2);
std::string str(const std::string& s) {
  const uint32_t n = static_cast<uint32_t>(s.size());
  return "X" + std::string(reinterpret_cast<const char*>(&n), 4) + s;
}
std::string global(const std::string& module, const std::string& name) { return "c" + module + "\n" + name + "\n"; }
std::string int1(int v) { return "K" + std::string(1, static_cast<char>(v)); }
const std::string kTuple1 = "\x85", kNewFalse = "\x89";

// {'t': _rebuild_tensor_v2(storage('0', numel 4), offset, (2,), (stride,), False, OrderedDict())}
std::string tensor_pickle(int offset, int stride) {
  return kProto + "}" + str("t") + global("torch._utils", "_rebuild_tensor_v2") + "((" + str("storage") +
         global("torch", "FloatStorage") + str("0") + str("cpu") + int1(4) + "tQ" + int1(offset) + int1(2) + kTuple1 +
         int1(stride) + kTuple1 + kNewFalse + global("collections", "OrderedDict") + ")RtRs.";
}

}  // namespace

TEST_CASE("load_python_pickle: an OrderedDict of a strided view, with its attribute state") {
  // OrderedDict([('a', OrderedDict()), ('b', 7)]) with the state {'_metadata': {}}, memo reuse included.
  const std::string p = kProto + global("collections", "OrderedDict") + std::string("q\0", 2) + ")R(" + str("a") +
                        std::string("h\0", 2) + ")R" + str("b") + int1(7) + "u}" + str("_metadata") + "}sb.";
  const c10::IValue v = ra::load_python_pickle("f.pt", archive(p));
  REQUIRE(v.isGenericDict());
  const auto d = v.toGenericDict();
  CHECK(d.size() == 2);
  CHECK(d.at("a").isGenericDict());
  CHECK(d.at("b").toInt() == 7);

  const c10::IValue t =
      ra::load_python_pickle("f.pt", archive(tensor_pickle(1, 2), {{"data/0", floats({1, 2, 3, 4})}}));
  const at::Tensor x = t.toGenericDict().at("t").toTensor();
  CHECK(x.sizes() == at::IntArrayRef{2});
  CHECK(x[0].item<float>() == 2);  // offset 1, stride 2: elements 1 and 3
  CHECK(x[1].item<float>() == 4);
}

TEST_CASE("load_python_pickle: every malformed file is one InputError") {
  const std::string store = floats({1, 2, 3, 4});
  CHECK(error_of(archive(tensor_pickle(3, 2), {{"data/0", store}})) ==
        "file 'f.pt' is not a readable torch.save file: a tensor record is invalid: it reaches element 5 of a storage "
        "of 4 "
        "elements (at 't')");
  CHECK(error_of(archive(tensor_pickle(0, 1))) ==
        "file 'f.pt' is not a readable torch.save file: storage record data/0 is missing");
  CHECK(error_of(archive(tensor_pickle(0, 1), {{"data/0", "abc"}})) ==
        "file 'f.pt' is not a readable torch.save file: storage record data/0 holds 3 bytes, not the 16 its 4 elements "
        "need");
  const std::string bad = "file 'f.pt' is not a readable torch.save file: ";
  CHECK(error_of(archive(kProto + "}" + str("t").substr(0, 3))) == bad + "the pickle is truncated");
  CHECK(error_of(archive(kProto + "h" + std::string(1, 5) + ".")) == bad + "memo entry 5 is used before it is set");
  CHECK(error_of(archive(kProto + "}\xff.")) == bad + "unsupported pickle opcode 0xff");
  CHECK(error_of(archive(kProto + "}}.")) == bad + "the pickle does not end with exactly one value");
  CHECK(error_of(archive(kProto + "}u.")) == bad + "no mark on the stack");
  CHECK(error_of(archive(kProto + "]" + str("k") + int1(1) + "s.")) ==
        bad + "items are set on something that is not a dict");
  // Globals are matched by name, never called: os.system is named in the error, not run.
  const std::string call = global("os", "system") + str("touch /tmp/pwned") + kTuple1 + "R";
  CHECK(error_of(archive(kProto + call + ".")) == "file 'f.pt' holds a os.system, which repro-audit cannot read");
  CHECK(error_of(archive(kProto + "}" + str("k") + call + "s.")) ==
        "file 'f.pt' holds a os.system at 'k', which repro-audit cannot read");
  CHECK(error_of("not a zip") == "file 'f.pt' is not a torch.save file: it is not a zip archive");
  CHECK(
      error_of(kProto + "]q\0.") ==
      "file 'f.pt' is in torch.save's legacy format; load it in Python and save it again with torch.save (PyTorch 1.6 "
      "or later)");
  CHECK(error_of("") == "file 'f.pt' is empty, not a torch.save file");
}

TEST_CASE("load_python_pickle: a budget refuses storages and a pickle beyond it, before reading them") {
  const std::string file = archive(tensor_pickle(0, 1), {{"data/0", floats({1, 2, 3, 4})}});
  const auto error = [&](ra::PickleBudget budget) {
    try {
      (void)ra::load_python_pickle("f.pt", file, budget);
    } catch (const ra::InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error({16, 1024}).empty());  // a storage of 4 floats, as declared
  CHECK(error({12, 1024}) ==
        "file 'f.pt' is not a readable torch.save file: storage data/0 claims 16 bytes, more than the 12 bytes its "
        "tensors are declared to hold in all");
  const std::string pickle = error({16, 8});
  CHECK(pickle.find("file 'f.pt' is not a readable torch.save file: record data.pkl claims ") == 0);
  CHECK(pickle.find(" bytes, more than the 8 it is declared to need") != std::string::npos);
}

// Storage (index 0, numel 4) viewed with the given offset, sizes and strides, under key 't'.
std::string view_pickle(const std::string& offset, const std::string& sizes, const std::string& strides) {
  return kProto + "}" + str("t") + global("torch._utils", "_rebuild_tensor_v2") + "((" + str("storage") +
         global("torch", "FloatStorage") + str("0") + str("cpu") + int1(4) + "tQ" + offset + "(" + sizes + "t(" +
         strides + "t" + kNewFalse + global("collections", "OrderedDict") + ")RtRs.";
}
std::string long1(int64_t v) { return std::string("\x8a\x08", 2) + std::string(reinterpret_cast<const char*>(&v), 8); }

TEST_CASE("load_python_pickle: tensor records are checked against their storage before use") {
  const std::string store = floats({1, 2, 3, 4});
  const std::string bad = "file 'f.pt' is not a readable torch.save file: a tensor record is invalid: ";
  auto error = [&](const std::string& pickle) { return error_of(archive(pickle, {{"data/0", store}})); };
  CHECK(error(view_pickle(int1(10), int1(1), int1(1))) ==
        bad + "it reaches element 10 of a storage of 4 elements (at 't')");
  CHECK(error(view_pickle(long1(-1), int1(1), int1(1))) ==
        bad + "its storage offset is negative or not an integer (at 't')");
  CHECK(error(view_pickle(long1(int64_t{1} << 62), int1(1), int1(1))) ==
        bad + "it reaches element 4611686018427387904 of a storage of 4 elements (at 't')");
  CHECK(error(view_pickle(int1(3), int1(4), long1(-1))) ==
        bad + "it has a negative size or stride (4 and -1) (at 't')");
  CHECK(error(view_pickle(int1(0), long1(int64_t{1} << 40) + long1(int64_t{1} << 40), int1(0) + int1(0))) ==
        bad + "its element count overflows 64 bits (at 't')");
  CHECK(error(view_pickle(int1(0), int1(2), int1(1) + int1(1))) == bad + "it has 1 sizes but 2 strides (at 't')");
  // An expanded view is read as torch.load reads it, up to kMaxViewExcess elements beyond its storage.
  const at::Tensor x =
      ra::load_python_pickle(
          "f.pt", archive(view_pickle(int1(2), long1(1000) + long1(1000), int1(0) + int1(0)), {{"data/0", store}}))
          .toGenericDict()
          .at("t")
          .toTensor();
  CHECK(x.sizes() == at::IntArrayRef{1000, 1000});
  CHECK(x.storage().nbytes() == 16);
  CHECK(x[999][999].item<float>() == 3);
  CHECK(error(view_pickle(int1(0), long1(int64_t{1} << 31), int1(0))) ==
        bad +
            "it views 2147483648 elements of a storage of 4; repro-audit reads views of at most 1073741824 elements "
            "beyond their storage (at 't')");
  // A zero-element view may name any offset, as in torch.load.
  CHECK(error(view_pickle(long1(int64_t{1} << 62), int1(0), int1(1))).empty());
}

TEST_CASE("load_python_pickle: nesting, cycles and sharing") {
  const std::string bad = "file 'f.pt' is not a readable torch.save file: ";
  // 2000 nested lists: refused at kMaxDepth, without recursing 2000 deep.
  const std::string deep = kProto + std::string(2000, ']') + std::string(1999, 'a') + ".";
  CHECK(error_of(archive(deep)).find(bad + "containers nest deeper than 1000 levels (at '0/0/0/0/0/0/...") == 0);
  // 999 levels are read.
  const std::string ok = kProto + std::string(999, ']') + std::string(998, 'a') + ".";
  CHECK(error_of(archive(ok)).empty());
  // A list that holds itself.
  CHECK(error_of(archive(kProto + std::string("]q\0h\0a.", 7))) == bad + "a container holds itself (at '0')");
  // A shared list stays shared, as in Python.
  const c10::IValue v = ra::load_python_pickle("f.pt", archive(kProto + std::string("]q\0h\0\x86.", 7)));
  const auto& pair = v.toTupleRef().elements();
  CHECK(pair[0].is(pair[1]));
}

TEST_CASE("load_python_pickle: what LibTorch's pickle_save writes") {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
  dict.insert("w", at::arange(6, at::kFloat).view({2, 3}));
  dict.insert("v", at::arange(12, at::kDouble).view({3, 4}).t());  // a strided view
  c10::List<int64_t> ints({1, 2, 3});
  const c10::IValue value = c10::ivalue::Tuple::create({dict, ints, c10::IValue(2.5), c10::IValue("s")});
  const std::vector<char> bytes = torch::jit::pickle_save(value);
  const c10::IValue v = ra::load_python_pickle("f.pt", std::string(bytes.begin(), bytes.end()));
  const auto& elems = v.toTupleRef().elements();
  const auto d = elems[0].toGenericDict();
  CHECK(at::equal(d.at("w").toTensor(), at::arange(6, at::kFloat).view({2, 3})));
  CHECK(at::equal(d.at("v").toTensor(), at::arange(12, at::kDouble).view({3, 4}).t()));
  CHECK(elems[1].toListRef().size() == 3);
  CHECK(elems[2].toDouble() == 2.5);
  CHECK(elems[3].toStringRef() == "s");
}
