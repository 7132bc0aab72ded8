// SPDX-License-Identifier: Apache-2.0
// One GPU per child on a multi-GPU machine: `--devices cuda:0,cuda:2`, or `--device cuda` with
// --jobs above 1 (the first --jobs GPUs). Each slot is a GPU; a child on slot s sees only that GPU
// (CUDA_VISIBLE_DEVICES, mapped through the parent's own list when it has one) and runs on its
// cuda:0; at most one child holds a slot at a time (run_children's SlotFn), and every repeat of a
// cell runs on the cell's slot. The parent never touches CUDA: the number of GPUs comes from the
// preflight's fingerprint.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace ra {

struct DevicePlacement {
  std::vector<std::string> visible;  // per slot: the child's CUDA_VISIBLE_DEVICES
  std::vector<std::string> names;    // per slot: the GPU as the parent names it ("cuda:2")
  size_t slots() const { return visible.size(); }
  // The slot a cell keeps: cells in plan order, round robin over the GPUs.
  size_t slot_of(size_t cell) const { return cell % visible.size(); }
};

// "cuda:0,cuda:2" -> {0, 2}. Throws UsageError for anything but distinct cuda:N.
std::vector<int> parse_devices(const std::string& text);

// The placement for a session, or nullopt when children are not spread over GPUs:
//   * `requested` (--devices) non-empty: those GPUs, each below `available`;
//   * else `device` "cuda" and `jobs` above 1 with more than one GPU available: the first
//     min(jobs, available);
//   * else none (a CPU audit, one job, one GPU, or --device cuda:N).
// `parent_visible` is the parent's CUDA_VISIBLE_DEVICES (nullopt when unset): the children's
// lists are its entries. Throws UsageError for a GPU that does not exist, or --devices with a
// CPU device.
std::optional<DevicePlacement> place_devices(const std::vector<int>& requested, const std::string& device, int jobs,
                                             int available, const std::optional<std::string>& parent_visible);

}  // namespace ra
