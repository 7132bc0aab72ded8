// SPDX-License-Identifier: Apache-2.0
// The device as the user names it (audit/common/device.h): parsed once, its text given back as is.
#include "audit/common/device.h"
#include "audit/common/errors.h"

#include <doctest/doctest.h>

TEST_CASE("Device::parse: cpu, cuda and cuda:N, and a usage error for anything else") {
  CHECK(ra::Device::parse("cpu") == ra::Device{});
  CHECK(ra::Device::parse("cuda") == ra::Device{ra::Device::Kind::Cuda, -1});
  CHECK(ra::Device::parse("cuda:3") == ra::Device{ra::Device::Kind::Cuda, 3});
  for (const char* text : {"", "gpu", "CUDA", "cuda:", "cuda:x", "cuda:-1", "cuda:12345", "cpu:0", " cpu"})
    CHECK_THROWS_AS(ra::Device::parse(text), ra::UsageError);
  CHECK_THROWS_WITH(ra::Device::parse("gpu"), "unknown device 'gpu' (use cpu, cuda or cuda:N)");
}

TEST_CASE("Device::to_string: the text it was parsed from; type: cpu or cuda") {
  for (const char* text : {"cpu", "cuda", "cuda:0", "cuda:7"}) CHECK(ra::Device::parse(text).to_string() == text);
  CHECK(ra::Device::parse("cuda:1").type() == "cuda");
  CHECK(ra::Device::parse("cpu").type() == "cpu");
  CHECK_FALSE(ra::Device{}.is_cuda());
}

TEST_CASE("Device::of: a spec's or a report's text, where anything not CUDA is the CPU") {
  CHECK(ra::Device::of("cuda:2") == ra::Device{ra::Device::Kind::Cuda, 2});
  CHECK(ra::Device::of("cuda").is_cuda());
  CHECK_FALSE(ra::Device::of("").is_cuda());
  CHECK_FALSE(ra::Device::of("cpu").is_cuda());
}
