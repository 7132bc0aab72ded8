// SPDX-License-Identifier: Apache-2.0
// Both files are loaded whole on the CPU (torch.save files hold CPU or device tensors; pickle_load
// maps everything to the CPU here) before anything is compared, so that bad input in either file
// is reported before a line of output. Equality is decided by the digest (audit/digest/digest.h), which
// sees every bit (-0.0, NaN payloads) and ignores strides; statistics, the costly part, are
// computed only for entries whose digests differ with the same dtype and shape.
#include "audit/tensor_io/diff.h"

#include "audit/digest/digest.h"
#include "audit/common/paths.h"
#include "audit/tensor_io/tensor_file.h"
#include "audit/digest/tensor_stats.h"

#include <map>

namespace ra {
namespace {

using report::DiffEntry;
using report::DiffStatus;

std::map<std::string, at::Tensor> by_name(const std::string& path) {
  std::map<std::string, at::Tensor> out;
  for (auto& [name, t] : load_tensor_file(path)) out.emplace(name.empty() ? kBareTensorName : name, t);
  return out;
}

std::vector<int64_t> shape_of(const at::Tensor& t) { return t.sizes().vec(); }

DiffEntry compare(const std::string& name, const at::Tensor& a, const at::Tensor& b) {
  DiffEntry e;
  e.name = name;
  e.dtype = dtype_name(a.scalar_type());
  e.shape = shape_of(a);
  e.digest_a = digest(a);
  e.digest_b = digest(b);
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) {
    e.status = a.scalar_type() != b.scalar_type() ? DiffStatus::DtypeDiffers : DiffStatus::ShapeDiffers;
    e.dtype_b = dtype_name(b.scalar_type());
    e.shape_b = shape_of(b);
  } else if (e.digest_a != e.digest_b) {
    e.status = DiffStatus::Differs;
    e.stats = tensor_difference(a, b);
  }
  return e;
}

DiffEntry only(const std::string& name, const at::Tensor& t, DiffStatus status) {
  DiffEntry e;
  e.name = name;
  e.status = status;
  e.dtype = dtype_name(t.scalar_type());
  e.shape = shape_of(t);
  (status == DiffStatus::OnlyA ? e.digest_a : e.digest_b) = digest(t);
  return e;
}

}  // namespace

report::DiffReport diff_tensor_files(const std::string& a, const std::string& b) {
  const auto ta = by_name(a);
  const auto tb = by_name(b);
  report::DiffReport r;
  r.tool_version = tool_version();
  r.a = a;
  r.b = b;
  auto ia = ta.begin();
  auto ib = tb.begin();
  while (ia != ta.end() || ib != tb.end()) {
    if (ib == tb.end() || (ia != ta.end() && ia->first < ib->first)) {
      r.entries.push_back(only(ia->first, ia->second, DiffStatus::OnlyA));
      ++ia;
    } else if (ia == ta.end() || ib->first < ia->first) {
      r.entries.push_back(only(ib->first, ib->second, DiffStatus::OnlyB));
      ++ib;
    } else {
      r.entries.push_back(compare(ia->first, ia->second, ib->second));
      ++ia;
      ++ib;
    }
  }
  r.exit_code = 0;
  for (const auto& e : r.entries)
    if (e.status != DiffStatus::Identical) r.exit_code = 1;
  return r;
}

}  // namespace ra
