// SPDX-License-Identifier: Apache-2.0
// batch_classes (audit/probes/batch_classes.h): the batch sizes of a batch-invariance probe grouped
// by the digest of their recorded anchor row.
#include "audit/probes/batch_classes.h"

#include <doctest/doctest.h>

#include <string>

namespace {

ra::report::TensorDigest row(const std::string& name, char digest, std::vector<int64_t> shape = {1, 48}) {
  return {name, "float32", std::move(shape), std::string(32, digest)};
}

}  // namespace

TEST_CASE("batch_classes: sizes with the same row digest form a class, classes ordered by their smallest size") {
  // Recorded out of order, with tensors of other names beside them.
  const std::vector<ra::report::TensorDigest> tensors = {row("row@M=4", 'b'), row("output", 'a'),
                                                         row("row@M=1", 'a'), row("row@M=257", 'b'),
                                                         row("row@M=2", 'a'), row("row@M=3", 'c')};
  const auto classes = ra::batch_classes(tensors);
  CHECK(classes == std::vector<std::vector<int64_t>>{{1, 2}, {3}, {4, 257}});
}

TEST_CASE("batch_classes: one class is invariant; no row tensors give no classes") {
  CHECK(ra::batch_classes({row("row@M=1", 'a'), row("row@M=9", 'a')}) == std::vector<std::vector<int64_t>>{{1, 9}});
  CHECK(ra::batch_classes({row("output", 'a'), row("row@M=", 'a'), row("row@M=3x", 'a')}).empty());
}

TEST_CASE("batch_classes: the same digest under another dtype or shape is another class") {
  auto wide = row("row@M=2", 'a', {1, 96});
  auto half = row("row@M=3", 'a');
  half.dtype = "float16";
  CHECK(ra::batch_classes({row("row@M=1", 'a'), wide, half}).size() == 3);
}
