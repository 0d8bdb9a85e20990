// The lanes a tile function names (hw/functions/unit_lanes.h) against the units' encodings
// (hw/bridge/unit_ops.h): every function that says a unit computes it has a code on that unit, so
// the Pcu and Retile bridges can configure it; the bit-exactness of each pairing is tested by the
// co-simulations of cosim_test.cpp and the unit tests of testbench/units.
#include <gtest/gtest.h>

#include "hw/bridge/unit_ops.h"
#include "hw/functions/functions.h"
#include "hw/units/protocol.h"

namespace stepsim::bridge {
namespace {

TEST(Lanes, EveryMapFunctionWithLanesHasItsUnitsCodes) {
  int with_lanes = 0;
  for (const std::string& n : map_function_names()) {
    const UnitLanes l = map_function(n).lanes;
    if (!l.any()) continue;
    ++with_lanes;
    EXPECT_TRUE(pcu_computes(l, false)) << n;
    EXPECT_NE(l.vector, VectorLanes::kAccum) << n << ": a Map function on the Accum vector unit";
  }
  EXPECT_EQ(with_lanes, 9);  // add mul matmul matmul_t silu exp sigmoid row_sum row_max
}

TEST(Lanes, EveryAccumFunctionWithLanesHasItsUnitsCodes) {
  int with_lanes = 0;
  for (const std::string& n : accum_function_names()) {
    const UnitLanes l = accum_function(n).lanes;
    if (!l.any()) continue;
    ++with_lanes;
    if (l.op == UnitOp::kRetileRows) {  // pcu_retile, through the Retile bridge
      EXPECT_TRUE(l.tile && l.vector == VectorLanes::kNone) << n;
      continue;
    }
    EXPECT_TRUE(pcu_computes(l, true)) << n;
  }
  EXPECT_EQ(with_lanes, 5);  // add max matmul_acc matmul_t_acc retile_row
}

TEST(Lanes, TheCodesAreTheUnitsOwn) {
  // pcu_tile_map's and pcu_tile_accum's cfg_op_i values (hw/units/protocol.h).
  EXPECT_EQ(tile_map_op_code(map_function("matmul").lanes.op), units::kTileMatmul);
  EXPECT_EQ(tile_map_op_code(map_function("matmul_t").lanes.op), units::kTileMatmulT);
  EXPECT_EQ(tile_map_op_code(map_function("silu").lanes.op), units::kTileSilu);
  EXPECT_EQ(tile_accum_op_code(accum_function("matmul_t_acc").lanes.op), units::kTileAccMatmulT);
  EXPECT_EQ(tile_accum_op_code(accum_function("max").lanes.op), units::kTileAccMax);
  // The vector units take one bit: pcu_ew 1 = add, pcu_reduce 1 = row_max, pcu_accum 1 = max.
  EXPECT_EQ(vector_op_code(VectorLanes::kEw, map_function("add").lanes.op), true);
  EXPECT_EQ(vector_op_code(VectorLanes::kEw, map_function("mul").lanes.op), false);
  EXPECT_EQ(vector_op_code(VectorLanes::kReduce, map_function("row_max").lanes.op), true);
  EXPECT_EQ(vector_op_code(VectorLanes::kAccum, accum_function("add").lanes.op), false);
  // No code for an op the unit does not have.
  EXPECT_FALSE(tile_map_op_code(UnitOp::kMax).has_value());
  EXPECT_FALSE(vector_op_code(VectorLanes::kEw, UnitOp::kRowSum).has_value());
  EXPECT_FALSE(pcu_computes(UnitLanes{UnitOp::kMax, VectorLanes::kEw, false}, false));
}

TEST(Lanes, TheRefusalListsFollowTheLanes) {
  EXPECT_EQ(functions_on_units(FunctionFamily::kFlatMap),
            "retile_streamify_row on [r x 4] or [r x 16] bf16 tiles (r <= the side)");
  EXPECT_EQ(lane_units(map_function("add").lanes, FunctionFamily::kMap), "pcu_ew or pcu_tile_map");
  EXPECT_EQ(lane_units(accum_function("retile_row").lanes, FunctionFamily::kAccum), "pcu_retile");
  EXPECT_EQ(lane_tiles(map_function("row_sum").lanes), "[1 x 8] bf16 tiles");
}

}  // namespace
}  // namespace stepsim::bridge
