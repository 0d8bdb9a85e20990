// Every HLS unit (hw/units) and its Verilated RTL twin (rtl/) in lock-step: the same input
// pins, random valid gaps on the inputs, random back-pressure on the outputs, reset pulses and
// cfg changes between cases; every output pin (valid, payload, ready) must be identical at
// every clock cycle. The output streams must also equal the approximate operator's
// (sim/engine/eval.h), except the documented Partition difference (docs/units.md).
// STEPSIM_UNIT_CASES overrides the number of cases per unit (default 2000; the longer run in
// scripts/units_long.sh uses more).
#include <gtest/gtest.h>

#include <iostream>

#include "Vpcu_accum.h"
#include "Vpcu_ew.h"
#include "Vpcu_reduce.h"
#include "Vpcu_tile_accum.h"
#include "Vpcu_tile_map.h"
#include "Vrouter_broadcast.h"
#include "Vrouter_eager_merge.h"
#include "Vrouter_partition.h"
#include "Vrouter_partition8.h"
#include "Vrouter_reassemble.h"
#include "Vrouter_reassemble8.h"
#include "Vshape_expand.h"
#include "Vshape_flatten.h"
#include "Vshape_promote.h"
#include "Vshape_repeat.h"
#include "Vshape_reshape.h"
#include "Vshape_zip.h"
#include "testbench/units/benches.h"
#include "testbench/units/rtl/unit_env.h"
#include "testbench/units/tile_benches.h"

namespace stepsim::unit_test {
namespace {

size_t num_cases() { return env_cases(2000); }

template <template <class> class Bench, class Rtl>
void lockstep(const std::string& unit, uint64_t salt) {
  const uint64_t seed = env_seed(salt);
  const std::vector<UnitCase> cases = Bench<Rtl>::cases(num_cases(), seed);
  BenchRun r = run_bench<Bench<Rtl>>(cases, seed);
  ASSERT_TRUE(r.result.ok) << unit << " (seed " << seed << "): " << r.result.error;
  ASSERT_EQ(r.result.cases_done, cases.size());
  size_t beats = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const CaseOutputs out = case_outputs(r.out, i);
    ASSERT_EQ(Bench<Rtl>::check(cases[i], out), "") << unit << " (seed " << seed << ") case " << i;
    for (const auto& o : out) beats += o.size();
  }
  std::cout << unit << ": " << cases.size() << " cases, " << r.result.cycles << " cycles in lock-step, " << beats
            << " output beats\n";
}

TEST(UnitsLockstep, Flatten) { lockstep<FlattenBench, Vshape_flatten>("Flatten", 1); }
TEST(UnitsLockstep, Promote) { lockstep<PromoteBench, Vshape_promote>("Promote", 2); }
TEST(UnitsLockstep, Repeat) { lockstep<RepeatBench, Vshape_repeat>("Repeat", 3); }
TEST(UnitsLockstep, Expand) { lockstep<ExpandBench, Vshape_expand>("Expand", 4); }
TEST(UnitsLockstep, Broadcast) { lockstep<BroadcastBench, Vrouter_broadcast>("Broadcast", 5); }
TEST(UnitsLockstep, Partition) { lockstep<PartitionBench, Vrouter_partition>("Partition", 6); }
TEST(UnitsLockstep, PcuEw) { lockstep<PcuEwBench, Vpcu_ew>("PcuEw", 7); }
TEST(UnitsLockstep, Reshape) { lockstep<ReshapeBench, Vshape_reshape>("Reshape", 8); }
TEST(UnitsLockstep, Zip) { lockstep<ZipBench, Vshape_zip>("Zip", 9); }
TEST(UnitsLockstep, Reassemble) { lockstep<ReassembleBench, Vrouter_reassemble>("Reassemble", 10); }
// The routers Verilated again with N = 8 (rtl/CMakeLists.txt) for the 8-expert MoE.
TEST(UnitsLockstep, Partition8) { lockstep<Partition8Bench, Vrouter_partition8>("Partition8", 31); }
TEST(UnitsLockstep, Reassemble8) { lockstep<Reassemble8Bench, Vrouter_reassemble8>("Reassemble8", 32); }
TEST(UnitsLockstep, EagerMerge) { lockstep<EagerMergeBench, Vrouter_eager_merge>("EagerMerge", 11); }
TEST(UnitsLockstep, PcuAccum) { lockstep<PcuAccumBench, Vpcu_accum>("PcuAccum", 12); }
TEST(UnitsLockstep, PcuReduce) { lockstep<PcuReduceBench, Vpcu_reduce>("PcuReduce", 13); }
TEST(UnitsLockstep, PcuTileMap) { lockstep<PcuTileMapBench, Vpcu_tile_map>("PcuTileMap", 14); }
TEST(UnitsLockstep, PcuTileUnary) { lockstep<PcuTileUnaryBench, Vpcu_tile_map>("PcuTileUnary", 17); }
TEST(UnitsLockstep, PcuTileAccum) { lockstep<PcuTileAccumBench, Vpcu_tile_accum>("PcuTileAccum", 15); }
TEST(UnitsLockstep, PcuTileMatmulAcc) { lockstep<PcuTileMatmulAccBench, Vpcu_tile_accum>("PcuTileMatmulAcc", 16); }
// Scan (cfg_scan_i) on the vector and tile Accum units.
TEST(UnitsLockstep, PcuScan) { lockstep<PcuScanBench, Vpcu_accum>("PcuScan", 33); }
TEST(UnitsLockstep, PcuTileScan) { lockstep<PcuTileScanBench, Vpcu_tile_accum>("PcuTileScan", 34); }
TEST(UnitsLockstep, PcuTileScanMatmul) { lockstep<PcuTileScanMatmulBench, Vpcu_tile_accum>("PcuTileScanMatmul", 35); }
// The accumulator bank (q = 1..2, NB = 16): each result also equals a rank-2 Accum over the
// reordered stream (check_pcu_tile_bank).
TEST(UnitsLockstep, PcuTileBank) { lockstep<PcuTileBankBench, Vpcu_tile_accum>("PcuTileBank", 18); }
TEST(UnitsLockstep, PcuTileBankMatmulAcc) {
  lockstep<PcuTileBankMatmulBench, Vpcu_tile_accum>("PcuTileBankMatmulAcc", 19);
}
// Bank streams with faults (a stop changed, or a bare stop): err_o and every pin in lock-step.
TEST(UnitsLockstep, PcuTileBankFaults) {
  for (bool two : {false, true}) {
    const uint64_t seed = env_seed(20 + two);
    const std::vector<UnitCase> cases = pcu_tile_bank_fault_cases<kT>(num_cases() / 4, seed, two, 16);
    if (two) {
      BenchRun r = run_bench<PcuTileBankMatmulBench<Vpcu_tile_accum>>(cases, seed);
      ASSERT_TRUE(r.result.ok) << "seed " << seed << ": " << r.result.error;
      ASSERT_EQ(r.result.cases_done, cases.size());
      std::cout << "PcuTileBankFaults matmul_acc: " << cases.size() << " cases, " << r.result.cycles << " cycles\n";
    } else {
      BenchRun r = run_bench<PcuTileBankBench<Vpcu_tile_accum>>(cases, seed);
      ASSERT_TRUE(r.result.ok) << "seed " << seed << ": " << r.result.error;
      ASSERT_EQ(r.result.cases_done, cases.size());
      std::cout << "PcuTileBankFaults add/max: " << cases.size() << " cases, " << r.result.cycles << " cycles\n";
    }
  }
}

}  // namespace
}  // namespace stepsim::unit_test
