// Fabric allocation: maps the elaborated graph onto compute units (PCUs) and memory units
// (PMUs) and checks it against the preset's num_pcus / num_pmus before anything runs.
//
//  * Compute: a higher-order node (OpInfo::uses_compute) with compute_bw FLOPs/cycle gets
//    ceil(compute_bw / pcu_flops) compute units.
//  * Memory: on-chip storage takes ceil(bytes / pmu_capacity) memory units. Statically, before the
//    run, only what is known is allocated: one unit per Bufferize (its buffer size depends on the
//    data: dynamic shapes) and one per off-chip load/store (its double-buffered staging tiles).
//    The units nobody holds statically form a pool a buffer may grow into; at run time a
//    Bufferize buffer larger than its own unit plus that pool is an error naming the node, the
//    buffer shape and bytes, and the capacity (hw/ops/onchip.cpp). After the run a node is
//    reported with max(static units, ceil(measured peak bytes / pmu_capacity)).
// Keeping the static pass this simple (no per-buffer size bounds, no time sharing of units) is
// deliberate: the sizes that matter are only known at run time, and the measured peaks next to
// the paper's formulas (hw/fabric/onchip_requirement.h) are where they are reported.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw/ops/op.h"
#include "hw/presets/hardware.h"

namespace stepsim {

struct AllocationRequest {
  std::string name;
  const OpInfo* info = nullptr;
  uint64_t compute_bw = 0;  // FLOPs/cycle allocated to the node (higher-order nodes)
};

struct NodeAllocation {
  std::string name, op;
  uint64_t compute_units = 0;
  uint64_t memory_units = 0;  // static
};

struct FabricAllocation {
  std::vector<NodeAllocation> nodes;  // same order as the requests
  uint64_t compute_units = 0;         // totals
  uint64_t memory_units = 0;
  // Memory units one Bufferize buffer may occupy at run time: its own plus the unallocated pool.
  uint64_t buffer_pmu_limit = 0;
};

// ceil(bytes / pmu_capacity), and ceil(compute_bw / pcu_flops).
uint64_t memory_units_for(uint64_t bytes, const HardwareParams& hw);
uint64_t compute_units_for(uint64_t compute_bw, const HardwareParams& hw);
// Memory units a node of this operator holds statically (Bufferize, off-chip load/store: 1).
uint64_t static_memory_units(const OpInfo& info);

// Throws std::invalid_argument when the graph needs more compute or memory units than the fabric
// has, naming the totals, the unit sizes and the largest users.
FabricAllocation allocate_fabric(const std::vector<AllocationRequest>& nodes, const HardwareParams& hw);

}  // namespace stepsim
