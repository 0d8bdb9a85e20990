#include "hw/bridge/unit_ops.h"

#include <algorithm>
#include <vector>

namespace stepsim::bridge {

std::string lane_units(const UnitLanes& lanes, FunctionFamily family) {
  std::string s;
  switch (lanes.vector) {
    case VectorLanes::kEw: s = "pcu_ew"; break;
    case VectorLanes::kReduce: s = "pcu_reduce"; break;
    case VectorLanes::kAccum: s = "pcu_accum"; break;
    case VectorLanes::kNone: break;
  }
  if (lanes.tile) {
    const char* tile = lanes.op == UnitOp::kRetileRows       ? "pcu_retile"
                       : family == FunctionFamily::kAccum ? "pcu_tile_accum"
                                                          : "pcu_tile_map";
    s += (s.empty() ? "" : " or ") + std::string(tile);
  }
  return s.empty() ? "none" : s;
}

std::string lane_tiles(const UnitLanes& lanes) {
  std::string s;
  if (lanes.vector != VectorLanes::kNone) s = "[1 x " + std::to_string(kL) + "]";
  if (lanes.tile)
    s += (s.empty() ? "" : " or ") + std::string("[r x ") + std::to_string(kT) + "] or [r x " + std::to_string(kT16) +
         "]";
  if (s.empty()) return "no";
  return s + " bf16 tiles" + (lanes.tile ? " (r <= the side)" : "");
}

UnitLanes function_lanes(FunctionFamily family, const std::string& fn) {
  switch (family) {
    case FunctionFamily::kMap: return map_function(fn).lanes;
    case FunctionFamily::kAccum: return accum_function(fn).lanes;
    case FunctionFamily::kFlatMap: return flatmap_function(fn).lanes;
    case FunctionFamily::kNone: break;
  }
  return {};
}

bool pcu_computes(const UnitLanes& lanes, bool accum) {
  if (!lanes.any()) return false;
  const VectorLanes v = lanes.vector;
  const bool vector_ok = v == VectorLanes::kNone ||
                         ((accum ? v == VectorLanes::kAccum : v != VectorLanes::kAccum) && vector_op_code(v, lanes.op));
  const bool tile_ok = !lanes.tile || (accum ? tile_accum_op_code(lanes.op) : tile_map_op_code(lanes.op));
  return vector_ok && tile_ok;
}

std::string functions_on_units(FunctionFamily family, const std::function<bool(const UnitLanes&)>& runs) {
  std::vector<std::string> names = family == FunctionFamily::kMap     ? map_function_names()
                                   : family == FunctionFamily::kAccum ? accum_function_names()
                                                                      : flatmap_function_names();
  // Grouped by the tiles they take, in the order the groups first appear.
  std::vector<std::pair<std::string, std::string>> groups;  // tiles, names
  for (const std::string& n : names) {
    const UnitLanes lanes = function_lanes(family, n);
    if (!lanes.any() || !runs(lanes)) continue;
    const std::string tiles = lane_tiles(lanes);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == tiles; });
    if (it == groups.end()) it = groups.insert(groups.end(), {tiles, ""});
    it->second += (it->second.empty() ? "" : ", ") + n;
  }
  std::string s;
  for (const auto& [tiles, fns] : groups) s += (s.empty() ? "" : "; ") + fns + " on " + tiles;
  return s.empty() ? "none" : s;
}

}  // namespace stepsim::bridge
