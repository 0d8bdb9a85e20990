// Each compute unit's encoding of a tile function's operation (hw/functions/unit_lanes.h): the
// value the Pcu bridge drives on the unit's cfg_op_i. One table per unit, beside the units'
// constants (hw/units/protocol.h); a function whose lanes name an op a unit has no code for is a
// defect of the function's definition, caught by testbench/bridges (every function with lanes
// maps here).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "hw/functions/functions.h"
#include "hw/functions/unit_lanes.h"
#include "hw/ops/op_kind.h"
#include "hw/units/protocol.h"

namespace stepsim::bridge {

constexpr int kL = 8;     // compute lanes of the vector units ([1 x kL] tiles)
constexpr int kT = 4;     // tile side of the tile units ([kT x kT] tiles)
constexpr int kTS = 2;    // pipeline stages of the tile Map unit
constexpr int kT16 = 16;  // the second tile side ([16 x 16] tiles, the SwiGLU validation), NS = kTS

// pcu_ew (0 = mul, 1 = add), pcu_reduce (0 = row_sum, 1 = row_max), pcu_accum (0 = add, 1 = max).
inline std::optional<bool> vector_op_code(VectorLanes lanes, UnitOp op) {
  switch (lanes) {
    case VectorLanes::kEw:
      if (op == UnitOp::kMul || op == UnitOp::kAdd) return op == UnitOp::kAdd;
      break;
    case VectorLanes::kReduce:
      if (op == UnitOp::kRowSum || op == UnitOp::kRowMax) return op == UnitOp::kRowMax;
      break;
    case VectorLanes::kAccum:
      if (op == UnitOp::kAdd || op == UnitOp::kMax) return op == UnitOp::kMax;
      break;
    case VectorLanes::kNone:
      break;
  }
  return std::nullopt;
}

// pcu_tile_map's cfg_op_i.
inline std::optional<int> tile_map_op_code(UnitOp op) {
  switch (op) {
    case UnitOp::kMatmul: return units::kTileMatmul;
    case UnitOp::kMatmulT: return units::kTileMatmulT;
    case UnitOp::kMul: return units::kTileMul;
    case UnitOp::kAdd: return units::kTileAdd;
    case UnitOp::kSilu: return units::kTileSilu;
    case UnitOp::kExp: return units::kTileExp;
    case UnitOp::kSigmoid: return units::kTileSigmoid;
    default: return std::nullopt;
  }
}

// pcu_tile_accum's cfg_op_i (Accum and Scan).
inline std::optional<int> tile_accum_op_code(UnitOp op) {
  switch (op) {
    case UnitOp::kAdd: return units::kTileAccAdd;
    case UnitOp::kMax: return units::kTileAccMax;
    case UnitOp::kMatmul: return units::kTileAccMatmul;
    case UnitOp::kMatmulT: return units::kTileAccMatmulT;
    default: return std::nullopt;
  }
}

// The lanes and operand count of a Map function (`accum` false) or an Accum/Scan function.
// Throws std::invalid_argument for an unknown function (functions.h).
struct ComputeFunction {
  UnitLanes lanes;
  int arity;
};
inline ComputeFunction compute_function(const std::string& fn, bool accum) {
  if (accum) return {accum_function(fn).lanes, accum_function(fn).arity};
  return {map_function(fn).lanes, map_function(fn).arity};
}

// The units behind the lanes ("pcu_ew or pcu_tile_map") and the tiles they take, for messages and
// the docs.
std::string lane_units(const UnitLanes& lanes, FunctionFamily family);
std::string lane_tiles(const UnitLanes& lanes);
// The lanes of function `fn` of the family (throws std::invalid_argument for an unknown one).
UnitLanes function_lanes(FunctionFamily family, const std::string& fn);
// Whether the Pcu bridge's units compute a function with these lanes: Map (`accum` false) on
// pcu_ew, pcu_reduce or pcu_tile_map, Accum and Scan on pcu_accum or pcu_tile_accum.
bool pcu_computes(const UnitLanes& lanes, bool accum);
// The functions of the family that units compute (those `runs` accepts, by default every one with
// lanes) with their tiles: the "units: ..." part of a refusal ("add, mul on [1 x 8] or [r x 4] or
// [r x 16] bf16 tiles (r <= the side); ...").
std::string functions_on_units(FunctionFamily family,
                               const std::function<bool(const UnitLanes&)>& runs = &UnitLanes::any);

}  // namespace stepsim::bridge
