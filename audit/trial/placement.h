// SPDX-License-Identifier: Apache-2.0
// Children on GPUs: `--devices cuda:0,cuda:2`, or `--device cuda` with --jobs above 1 (the first
// --jobs GPUs), or one GPU shared. Each slot is a GPU; a child on slot s sees only that GPU
// (CUDA_VISIBLE_DEVICES, mapped through the parent's own list when it has one) and runs on its
// cuda:0; at most `per_slot` children hold a slot at a time (run_children's SlotFn), and every
// repeat of a cell runs on the cell's slot. The parent never touches CUDA: the number of GPUs
// comes from the preflight's fingerprint.
//
// --jobs J is the number of children at once wherever they run (issue 31): spread over G GPUs,
// each GPU takes up to ceil(J / G) of them; on one GPU (one present, or --device cuda:N), all J
// share it. Sharing a GPU changes no digest (a child's kernels and their order are its own), but
// the children's timings include each other's work: the report says how many shared each GPU
// (contention_note), so that its cost ratios are read with that in mind. One child per GPU
// (J <= G) is unchanged.
#pragma once

#include "audit/common/device.h"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace ra {

struct DevicePlacement {
  std::vector<std::string> visible;  // per slot: the child's CUDA_VISIBLE_DEVICES ("": left as it is)
  int per_slot = 1;                  // children at once per GPU
  std::vector<std::string> names;    // per slot: the GPU as the parent names it ("cuda:2")
  size_t slots() const { return visible.size(); }
  // The slot a cell keeps: cells in plan order, round robin over the GPUs.
  size_t slot_of(size_t cell) const { return cell % visible.size(); }
};

// "cuda:0,cuda:2" -> {0, 2}. Throws UsageError for anything but distinct cuda:N.
std::vector<int> parse_devices(const std::string& text);

// The placement for a session, or nullopt when children are not placed on GPUs:
//   * `requested` (--devices) non-empty: those GPUs, each below `available`;
//   * else `device` "cuda" and `jobs` above 1 with more than one GPU available: the first
//     min(jobs, available);
//   * else `device` "cuda" (one GPU available) or "cuda:N", and `jobs` above 1: that one GPU,
//     shared by the `jobs` children; CUDA_VISIBLE_DEVICES is left as it is ("cuda:N" keeps N);
//   * else none (a CPU audit, or one job).
// per_slot is ceil(jobs / GPUs). `parent_visible` is the parent's CUDA_VISIBLE_DEVICES (nullopt when
// unset): the children's lists are its entries. Throws UsageError for a GPU that does not exist,
// or --devices with a CPU device.
std::optional<DevicePlacement> place_devices(const std::vector<int>& requested, const Device& device, int jobs,
                                             int available, const std::optional<std::string>& parent_visible);

// "4 children at once shared cuda:0" (or "... each of cuda:0, cuda:1") where the placement puts
// more than one child on a GPU at a time, "" otherwise: for the report. `jobs` caps the children.
std::string contention_note(const DevicePlacement& placement, int jobs);

}  // namespace ra
