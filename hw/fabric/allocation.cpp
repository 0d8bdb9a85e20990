#include "hw/fabric/allocation.h"

#include <algorithm>
#include <stdexcept>

namespace stepsim {

namespace {

std::string bytes_text(uint64_t b) {
  if (b >= (1u << 20) && b % (1u << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b >= (1u << 10) && b % (1u << 10) == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

// "node 'a' 8 units, node 'b' 4 units, ..." for the largest users of a resource.
std::string largest_users(const std::vector<NodeAllocation>& nodes, uint64_t NodeAllocation::*m) {
  std::vector<const NodeAllocation*> v;
  for (const NodeAllocation& n : nodes)
    if (n.*m) v.push_back(&n);
  std::stable_sort(v.begin(), v.end(), [m](const NodeAllocation* a, const NodeAllocation* b) { return a->*m > b->*m; });
  const size_t shown = std::min<size_t>(v.size(), 5);
  std::string s;
  for (size_t i = 0; i < shown; ++i)
    s += (i ? ", " : "") + ("node '" + v[i]->name + "' (" + v[i]->op + ") " + std::to_string(v[i]->*m) +
                            (v[i]->*m == 1 ? " unit" : " units"));
  if (v.size() > shown) s += ", ... (" + std::to_string(v.size()) + " nodes use them)";
  return s;
}

}  // namespace

uint64_t memory_units_for(uint64_t bytes, const HardwareParams& hw) {
  return (bytes + hw.pmu_capacity - 1) / hw.pmu_capacity;
}

uint64_t compute_units_for(uint64_t compute_bw, const HardwareParams& hw) {
  return (compute_bw + hw.pcu_flops - 1) / hw.pcu_flops;
}

uint64_t static_memory_units(const OpInfo& info) { return info.holds_memory_unit ? 1 : 0; }

FabricAllocation allocate_fabric(const std::vector<AllocationRequest>& nodes, const HardwareParams& hw) {
  FabricAllocation a;
  for (const AllocationRequest& r : nodes) {
    NodeAllocation n;
    n.name = r.name;
    n.op = r.info->name;
    if (r.info->uses_compute) n.compute_units = compute_units_for(r.compute_bw, hw);
    n.memory_units = static_memory_units(*r.info);
    a.compute_units += n.compute_units;
    a.memory_units += n.memory_units;
    a.nodes.push_back(n);
  }
  if (a.compute_units > hw.num_pcus)
    throw std::invalid_argument(
        "graph needs " + std::to_string(a.compute_units) + " compute units (PCU, " + std::to_string(hw.pcu_flops) +
        " FLOPs/cycle each) but the fabric has " + std::to_string(hw.num_pcus) +
        " (num_pcus); largest users: " + largest_users(a.nodes, &NodeAllocation::compute_units) +
        ". Lower the nodes' compute_bw or raise num_pcus / pcu_flops (--set)");
  if (a.memory_units > hw.num_pmus)
    throw std::invalid_argument(
        "graph needs " + std::to_string(a.memory_units) + " memory units (PMU, " + bytes_text(hw.pmu_capacity) +
        " each; one per Bufferize and per off-chip load/store staging buffer) but the fabric has " +
        std::to_string(hw.num_pmus) + " (num_pmus); users: " + largest_users(a.nodes, &NodeAllocation::memory_units) +
        ". Raise num_pmus (--set)");
  a.buffer_pmu_limit = 1 + (hw.num_pmus - a.memory_units);
  return a;
}

}  // namespace stepsim
