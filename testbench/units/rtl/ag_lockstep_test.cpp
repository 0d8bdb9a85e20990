// The address generator (hw/units/ag_offchip.h) and its Verilated RTL twin
// (rtl/ag_offchip.sv) in lock-step: the same input pins (cfg, tile input, memory responses),
// random valid gaps and back-pressure on the tile ports, a testbench memory with random
// latency and request stalls; every output pin (tile port, request port, rsp_ready_o, err_o)
// identical at every cycle, and every case against the reference (ag_bench.h); the static view
// at T rows (as before the tile header) and the tiles of r <= T rows with ref streams.
// STEPSIM_UNIT_CASES / STEPSIM_UNIT_SEED as in lockstep_test.cpp.
#include <gtest/gtest.h>

#include <iostream>

#include "Vag_offchip.h"
#include "testbench/units/ag_run.h"
#include "testbench/units/rtl/unit_env.h"

namespace stepsim::unit_test {
namespace {

TEST(UnitsLockstep, AgOffchip) {
  const size_t n = env_cases(2000);
  const uint64_t seed = env_seed(15);
  const std::vector<UnitCase> cases = ag_cases(n, seed, 4);
  AgRun r = run_ag<4, Vag_offchip>(cases, seed);
  ASSERT_TRUE(r.run.result.ok) << "AgOffchip (seed " << seed << "): " << r.run.result.error;
  ASSERT_EQ(r.run.result.cases_done, cases.size());
  EXPECT_EQ(r.error, "") << "seed " << seed;
  std::cout << "AgOffchip: " << cases.size() << " cases (" << r.loads << " loads, " << r.stores << " stores, " << r.errs
            << " with err_o), " << r.tiles << " tiles, " << r.requests << " memory requests, " << r.run.result.cycles
            << " cycles in lock-step\n";
}

// The new features in lock-step: tiles of r <= T rows (the tile header, burst geometries of
// 2 T r bytes, store tiles with a wrong header) and loads with a ref stream (one pass per ref
// element, stops raised, bare beats, streams of ref streams without reset); every output pin
// identical at every cycle, every case and every request bundle against the reference.
TEST(UnitsLockstep, AgOffchipRowsRef) {
  const size_t n = env_cases(2000);
  const uint64_t seed = env_seed(17);
  const std::vector<UnitCase> cases = ag_cases(n, seed, 4, 0, AgGen{true, true});
  AgRun r = run_ag<4, Vag_offchip>(cases, seed, false, 1, true);
  ASSERT_TRUE(r.run.result.ok) << "AgOffchip rows/ref (seed " << seed << "): " << r.run.result.error;
  ASSERT_EQ(r.run.result.cases_done, cases.size());
  EXPECT_EQ(r.error, "") << "seed " << seed;
  EXPECT_GT(r.passes, n / 4);
  EXPECT_GT(r.row_cases, n / 2);
  std::cout << "AgOffchip rows/ref: " << cases.size() << " cases (" << r.row_cases << " with r < T; " << r.loads
            << " loads, " << r.ref_loads << " with a ref stream: " << r.passes << " passes, " << r.bare
            << " bare beats; " << r.stores << " stores, " << r.errs << " with err_o), " << r.tiles << " tiles, "
            << r.bundles << " bundles, " << r.run.result.cycles << " cycles in lock-step\n";
}

// Random access in lock-step (a quarter of the cases, besides rows and ref streams):
// RandomOffChipLoad / RandomOffChipStore on tile indices (the divider, the pass queue, the
// acknowledgements, too few / too many tiles, indices outside the tensor: err_o).
TEST(UnitsLockstep, AgOffchipRandom) {
  const size_t n = env_cases(2000);
  const uint64_t seed = env_seed(19);
  const std::vector<UnitCase> cases = ag_cases(n, seed, 4, 0, AgGen{true, true, true});
  AgRun r = run_ag<4, Vag_offchip>(cases, seed, false, 1, true);
  ASSERT_TRUE(r.run.result.ok) << "AgOffchip random (seed " << seed << "): " << r.run.result.error;
  ASSERT_EQ(r.run.result.cases_done, cases.size());
  EXPECT_EQ(r.error, "") << "seed " << seed;
  EXPECT_GT(r.random_loads, n / 12);
  EXPECT_GT(r.random_stores, n / 12);
  std::cout << "AgOffchip random access: " << cases.size() << " cases (" << r.random_loads << " random loads, "
            << r.random_stores << " random stores, " << r.loads << " loads, " << r.stores << " stores, " << r.errs
            << " with err_o), " << r.tiles << " tiles, " << r.bundles << " bundles, " << r.run.result.cycles
            << " cycles in lock-step\n";
}

}  // namespace
}  // namespace stepsim::unit_test
