// The address generator at T = 16 with 4 request lanes (hw/units/ag_offchip.h, P = 4) and its
// Verilated RTL twin (rtl/ag_offchip_t16.sv) in lock-step, as ag_lockstep_test.cpp: every
// output pin (the tile port, the 4 request lanes, rsp_ready_o, err_o) identical at every cycle,
// every case against the reference and every request bundle against the approximate
// operator's (ag_expected_bundles). STEPSIM_UNIT_CASES / STEPSIM_UNIT_SEED as in lockstep_test.cpp.
#include <gtest/gtest.h>

#include <iostream>

#include "Vag_offchip_t16.h"
#include "testbench/units/ag_run.h"
#include "testbench/units/rtl/unit_env.h"

namespace stepsim::unit_test {
namespace {

TEST(UnitsLockstep, AgOffchipT16P4) {
  const size_t n = env_cases(1000);
  const uint64_t seed = env_seed(16);
  const std::vector<UnitCase> cases = ag_cases(n, seed, 16);
  AgRun r = run_ag<16, Vag_offchip_t16, 4>(cases, seed, false, 1, true);
  ASSERT_TRUE(r.run.result.ok) << "AgOffchip T = 16 (seed " << seed << "): " << r.run.result.error;
  ASSERT_EQ(r.run.result.cases_done, cases.size());
  EXPECT_EQ(r.error, "") << "seed " << seed;
  std::cout << "AgOffchip T = 16, P = 4: " << cases.size() << " cases (" << r.loads << " loads, " << r.stores
            << " stores, " << r.errs << " with err_o), " << r.tiles << " tiles, " << r.requests
            << " memory requests in " << r.bundles << " bundles, " << r.run.result.cycles << " cycles in lock-step\n";
}

// The new features at T = 16, P = 4 in lock-step (as UnitsLockstep.AgOffchipRowsRef): tiles of
// r <= 16 rows, row tiles [1 x 16] included, and loads with a ref stream.
TEST(UnitsLockstep, AgOffchipRowsRefT16P4) {
  const size_t n = env_cases(1000);
  const uint64_t seed = env_seed(18);
  const std::vector<UnitCase> cases = ag_cases(n, seed, 16, 0, AgGen{true, true});
  AgRun r = run_ag<16, Vag_offchip_t16, 4>(cases, seed, false, 1, true);
  ASSERT_TRUE(r.run.result.ok) << "AgOffchip T = 16 rows/ref (seed " << seed << "): " << r.run.result.error;
  ASSERT_EQ(r.run.result.cases_done, cases.size());
  EXPECT_EQ(r.error, "") << "seed " << seed;
  EXPECT_GT(r.passes, n / 4);
  EXPECT_GT(r.row_cases, n / 2);
  std::cout << "AgOffchip T = 16, P = 4, rows/ref: " << cases.size() << " cases (" << r.row_cases << " with r < T; "
            << r.loads << " loads, " << r.ref_loads << " with a ref stream: " << r.passes << " passes, " << r.bare
            << " bare beats; " << r.stores << " stores, " << r.errs << " with err_o), " << r.tiles << " tiles, "
            << r.bundles << " bundles, " << r.run.result.cycles << " cycles in lock-step\n";
}

// Random access at T = 16, P = 4 in lock-step (as UnitsLockstep.AgOffchipRandom).
TEST(UnitsLockstep, AgOffchipRandomT16P4) {
  const size_t n = env_cases(1000);
  const uint64_t seed = env_seed(20);
  const std::vector<UnitCase> cases = ag_cases(n, seed, 16, 0, AgGen{true, true, true});
  AgRun r = run_ag<16, Vag_offchip_t16, 4>(cases, seed, false, 1, true);
  ASSERT_TRUE(r.run.result.ok) << "AgOffchip T = 16 random (seed " << seed << "): " << r.run.result.error;
  ASSERT_EQ(r.run.result.cases_done, cases.size());
  EXPECT_EQ(r.error, "") << "seed " << seed;
  EXPECT_GT(r.random_loads, n / 12);
  EXPECT_GT(r.random_stores, n / 12);
  std::cout << "AgOffchip T = 16, P = 4, random access: " << cases.size() << " cases (" << r.random_loads
            << " random loads, " << r.random_stores << " random stores, " << r.errs << " with err_o), " << r.tiles
            << " tiles, " << r.bundles << " bundles, " << r.run.result.cycles << " cycles in lock-step\n";
}

}  // namespace
}  // namespace stepsim::unit_test
