// The tile compute units at T = 16 (the SwiGLU validation's [16 x 16] bf16 tiles): the HLS
// units PcuTileMap<16, 2> / PcuTileAccum<16> and their Verilated RTL twins (rtl/pcu_tile_*_t16.sv,
// library stepsim_rtl_t16, Verilated hierarchically) in lock-step, as lockstep_test.cpp does at
// T = 4: the same input pins, random valid gaps and back-pressure, reset pulses and cfg changes
// between cases, every output pin compared at every cycle, and the outputs checked bit for bit
// against hw/functions. Each test prints its simulated cycles per CPU second (the machine is shared:
// wall time is not the model's speed), and UnitsLockstepT16.HlsOnly* the HLS unit alone on the same
// cases (the RTL's share is the difference).
// STEPSIM_UNIT_CASES_T16 overrides the number of cases per bench (default 60).
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <iostream>

#include "Vpcu_tile_accum_t16.h"
#include "Vpcu_tile_map_t16.h"
#include "testbench/units/benches.h"
#include "testbench/units/rtl/unit_env.h"
#include "testbench/units/tile_benches.h"

namespace stepsim::unit_test {
namespace {

size_t num_cases() { return env_cases(60, "STEPSIM_UNIT_CASES_T16"); }

template <class B>
void run(const std::string& unit, uint64_t seed, size_t n = 0) {
  const std::vector<UnitCase> cases = B::cases(n ? n : num_cases(), seed);
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  BenchRun r = run_bench<B>(cases, seed);
  const double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.result.ok) << unit << " (seed " << seed << "): " << r.result.error;
  ASSERT_EQ(r.result.cases_done, cases.size());
  size_t beats = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const CaseOutputs out = case_outputs(r.out, i);
    ASSERT_EQ(B::check(cases[i], out), "") << unit << " (seed " << seed << ") case " << i;
    for (const auto& o : out) beats += o.size();
  }
  std::cout << unit << ": " << cases.size() << " cases, " << r.result.cycles << " cycles, " << beats
            << " output beats, " << s << " s wall, " << cpu << " s CPU, " << double(r.result.cycles) / cpu
            << " cycles per CPU second\n";
}

TEST(UnitsLockstepT16, PcuTileMap) { run<PcuTileMap16Bench<Vpcu_tile_map_t16>>("PcuTileMap T=16", 1614); }
TEST(UnitsLockstepT16, PcuTileUnary) { run<PcuTileUnary16Bench<Vpcu_tile_map_t16>>("PcuTileUnary T=16", 1617); }
TEST(UnitsLockstepT16, PcuTileAccum) { run<PcuTileAccum16Bench<Vpcu_tile_accum_t16>>("PcuTileAccum T=16", 1615); }
TEST(UnitsLockstepT16, PcuTileMatmulAcc) {
  run<PcuTileMatmulAcc16Bench<Vpcu_tile_accum_t16>>("PcuTileMatmulAcc T=16", 1616);
}
TEST(UnitsLockstepT16, PcuTileScan) { run<PcuTileScan16Bench<Vpcu_tile_accum_t16>>("PcuTileScan T=16", 1620); }
// The accumulator bank (NB = 64): fewer cases, they are longer (up to 64 entries).
TEST(UnitsLockstepT16, PcuTileBank) {
  run<PcuTileBank16Bench<Vpcu_tile_accum_t16>>("PcuTileBank T=16", 1618, num_cases() / 3);
}
TEST(UnitsLockstepT16, PcuTileBankMatmulAcc) {
  run<PcuTileBankMatmul16Bench<Vpcu_tile_accum_t16>>("PcuTileBankMatmulAcc T=16", 1619, num_cases() / 3);
}
TEST(UnitsLockstepT16, HlsOnlyPcuTileMap) { run<PcuTileMap16Bench<NoRtl>>("HLS only PcuTileMap T=16", 1614); }
TEST(UnitsLockstepT16, HlsOnlyPcuTileMatmulAcc) {
  run<PcuTileMatmulAcc16Bench<NoRtl>>("HLS only PcuTileMatmulAcc T=16", 1616);
}

}  // namespace
}  // namespace stepsim::unit_test
