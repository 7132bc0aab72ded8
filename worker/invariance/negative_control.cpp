// SPDX-License-Identifier: Apache-2.0
#include "worker/invariance/negative_control.h"

#include "worker/digest/digest.h"
#include "worker/digest/tensor_stats.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <fmt/format.h>

namespace ra::invariance {
namespace {

// torch.mm's row 0 alone and inside a batch of 64 on this device: what its library does here.
std::string mm_evidence(const c10::Device& device) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(0x30);
  const at::Tensor a = at::randn({64, 256}, gen).to(device), b = at::randn({256, 256}, gen).to(device);
  const at::Tensor batched = at::mm(a, b).select(0, 0), alone = at::mm(a.narrow(0, 0, 1), b).select(0, 0);
  if (digest(batched) == digest(alone))
    return fmt::format("torch.mm gives row 0 the same bits alone and in a batch of 64 on {}", device.str());
  const report::DivergenceStats s = tensor_difference(alone, batched);
  return fmt::format("torch.mm gives row 0 other bits in a batch of 64 than alone on {} (max abs {:.3g})", device.str(),
                     s.max_abs_diff);
}

}  // namespace

report::NegativeControl negative_control(const at::Tensor& reference, const std::string& digest_of_reference,
                                         const std::string& output, const c10::Device& device) {
  at::Tensor copy = reference.clone().contiguous();
  copy.view(bits_type(copy.element_size())).flatten().narrow(0, 0, 1).bitwise_xor_(1);
  const std::string d = digest(copy);
  const report::DivergenceStats s = tensor_difference(reference, copy);
  report::NegativeControl c;
  c.detected = d != digest_of_reference && s.differing == 1;
  c.evidence = fmt::format(
      "{}: a copy of anchor 0's {} slice with its lowest bit flipped on {} {} ({} element differs); {}",
      c.detected ? "passed" : "FAILED", output, device.str(),
      d != digest_of_reference ? "gets another digest" : "gets the same digest", s.differing, mm_evidence(device));
  return c;
}

}  // namespace ra::invariance
