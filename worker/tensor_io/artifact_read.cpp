// SPDX-License-Identifier: Apache-2.0
#include "worker/tensor_io/artifact_read.h"

#include "audit/common/errors.h"
#include "worker/digest/digest.h"
#include "worker/tensor_io/safetensors.h"
#include "worker/tensor_io/tensor_file.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

namespace ra {
namespace {

// Bounds on the answer, a file in TMPDIR that exec turns into one result entry per tensor of every
// version: a file holding more than kMaxArtifactFileEntries entries, and the files past
// kMaxArtifactAnswerEntries entries in all, are compared by bytes, with a note that says why.
constexpr size_t kMaxArtifactFileEntries = size_t{1} << 16;
constexpr size_t kMaxArtifactAnswerEntries = size_t{1} << 17;

std::string kind_of_file(const std::string& path) {
  if (looks_like_safetensors(path)) return "safetensors";
  switch (archive_kind(path)) {
    case ArchiveKind::TorchSave:
      return "torch.save";
    case ArchiveKind::TorchScript:
      return "torchscript";
    case ArchiveKind::Export:
      return "export";
    case ArchiveKind::Aoti:
      return "aoti";
    case ArchiveKind::Other:
      return "";
  }
  return "";
}

std::string entry_name(const std::string& file, const std::string& leaf) {
  return leaf.empty() || leaf == kBareTensorName ? file : file + ":" + leaf;
}

// A plain value's digest: that of its type and exact text, as bytes.
std::string value_digest(const c10::IValue& v) {
  std::string text = value_type(v) + ":" + value_text(v);
  const at::Tensor bytes = at::from_blob(text.data(), {static_cast<int64_t>(text.size())}, at::kByte);
  return digest(bytes);
}

ArtifactContents read_one(const ArtifactRead& r) {
  ArtifactContents c;
  c.kind = kind_of_file(r.path);
  if (c.kind != "torch.save" && c.kind != "safetensors" && c.kind != "torchscript") {
    c.note = c.kind.empty()
                 ? "it starts like a torch.save archive, but PyTorch cannot read it as one: compared by bytes"
                 : fmt::format("a {} archive, compared by bytes", c.kind == "export" ? "torch.export" : "AOTInductor");
    c.kind = "bytes";
    return c;
  }
  try {
    for (const auto& [leaf, v] : file_leaves(r.path)) {
      if (v.isTensor()) {
        const at::Tensor& t = v.toTensor();
        c.entries.push_back({entry_name(r.name, leaf), dtype_name(t.scalar_type()), t.sizes().vec(), digest(t)});
      } else {
        c.entries.push_back({entry_name(r.name, leaf), value_type(v), {}, value_digest(v)});
      }
    }
  } catch (const std::exception& e) {
    c.note =
        fmt::format("read as a {} file it failed ({}), so it is compared by bytes", c.kind, excerpt(e.what(), 400));
    c.kind = "bytes";
    c.entries.clear();
  }
  if (c.entries.size() > kMaxArtifactFileEntries) {
    c.note = fmt::format("it holds {} entries, more than the {} compared one by one, so it is compared by bytes",
                         c.entries.size(), kMaxArtifactFileEntries);
    c.kind = "bytes";
    c.entries.clear();
  }
  return c;
}

report::DivergenceStats stats_of(const report::DiffEntry& e) {
  using report::DiffStatus;
  report::DivergenceStats s;
  const auto shape = [](const std::vector<int64_t>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? "x" : "") + std::to_string(v[i]);
    return v.empty() ? std::string("scalar") : out;
  };
  switch (e.status) {
    case DiffStatus::Identical:
      s.note = "identical in these two files";
      break;
    case DiffStatus::Differs:
      if (e.stats) return *e.stats;
      s.numel = 1;
      s.differing = 1;
      s.first_index = 0;
      s.note = fmt::format("value {} vs {}", e.value_a, e.value_b);
      break;
    case DiffStatus::DtypeDiffers:
      s.note = fmt::format("type differs: {} vs {}", e.dtype, e.dtype_b);
      break;
    case DiffStatus::ShapeDiffers:
      s.note = fmt::format("shape differs: {} vs {}", shape(e.shape), shape(e.shape_b));
      break;
    case DiffStatus::OnlyA:
      s.note = "only in the reference run's file";
      break;
    case DiffStatus::OnlyB:
      s.note = "only in the other run's file";
      break;
  }
  return s;
}

std::map<std::string, report::DivergenceStats> compare_one(const ArtifactCompare& c,
                                                           const std::optional<report::Tolerance>& tolerance) {
  std::map<std::string, report::DivergenceStats> out;
  try {
    const auto a = file_leaves(c.path_a);
    const auto b = file_leaves(c.path_b);
    for (const auto& full : c.entries) {
      std::string leaf =
          full == c.name ? std::string(kBareTensorName) : full.substr(std::min(full.size(), c.name.size() + 1));
      const auto ia = a.find(leaf), ib = b.find(leaf);
      if (ia == a.end() && ib == b.end()) {
        out[full].note = "in neither file";
      } else if (ib == b.end()) {
        out[full].note = "only in the reference run's file";
      } else if (ia == a.end()) {
        out[full].note = "only in the other run's file";
      } else {
        out[full] = stats_of(compare_leaves(leaf, ia->second, ib->second, tolerance));
      }
    }
  } catch (const std::exception& e) {
    for (const auto& full : c.entries) out[full].note = fmt::format("statistics unavailable: {}", e.what());
  }
  return out;
}

}  // namespace

ArtifactAnswer answer_artifacts(const ArtifactRequest& request) {
  ArtifactAnswer a;
  size_t entries = 0;
  for (const auto& r : request.reads) {
    ArtifactContents c = read_one(r);
    if (entries + c.entries.size() > kMaxArtifactAnswerEntries) {
      c.note = fmt::format(
          "the files read before it hold {} entries, and it would pass the {} compared one by one, so it "
          "is compared by bytes",
          entries, kMaxArtifactAnswerEntries);
      c.kind = "bytes";
      c.entries.clear();
    }
    entries += c.entries.size();
    a.reads.push_back(std::move(c));
  }
  for (const auto& c : request.compares) a.compares.push_back(compare_one(c, request.tolerance));
  return a;
}

}  // namespace ra
