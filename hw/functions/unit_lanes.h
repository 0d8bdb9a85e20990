// Which compute-unit lanes implement a tile function bit for bit (the units of hw/units and
// rtl/). Part of the function's one definition (functions.h): the Pcu and Retile bridges read it
// to choose and configure their units, and `stepsim ops` and the co-simulation's messages list it.
// The operation is the function's own; each unit's encoding of it (its cfg_op_i code) is the
// unit's business and lives beside the units, in hw/bridge/unit_ops.h.
#pragma once

#include <cstdint>

namespace stepsim {

enum class UnitOp : uint8_t {
  kNone,  // no unit computes the function: it runs in the approximate model only
  kAdd,
  kMul,
  kMax,
  kMatmul,   // Map matmul, Accum matmul_acc
  kMatmulT,  // Map matmul_t, Accum matmul_t_acc (B stored [N x K])
  kSilu,
  kExp,
  kSigmoid,
  kRowSum,
  kRowMax,
  kRetileRows,  // Accum retile_row and FlatMap retile_streamify_row on pcu_retile
};

// The lanes for [1 x L] bf16 tiles; each higher-order mode has its own vector unit.
enum class VectorLanes : uint8_t {
  kNone,
  kEw,      // pcu_ew: two operands, element-wise
  kReduce,  // pcu_reduce: one operand, one sum or max per row
  kAccum,   // pcu_accum: Accum and Scan, element-wise
};

struct UnitLanes {
  UnitOp op = UnitOp::kNone;
  VectorLanes vector = VectorLanes::kNone;
  // The tile lanes for [r x T] bf16 tiles, r <= T, T = 4 or 16: pcu_tile_map (Map),
  // pcu_tile_accum (Accum, Scan), pcu_retile (kRetileRows).
  bool tile = false;
  bool any() const { return op != UnitOp::kNone; }
};

}  // namespace stepsim
