// The retile unit at T = 16 ([16 x 16] tiles, a 5-bit tile header, W = 4101): the HLS unit
// PcuRetile<16> and the Verilated rtl/pcu_retile_t16.sv (library stepsim_rtl_t16) in lock-step as
// retile_lockstep_test.cpp does at T = 4: every pin at every cycle, the outputs against the
// reference and the approximate operators, err_o at each case's done. STEPSIM_UNIT_CASES_T16
// overrides the number of cases (default 1000 legal cases, a third of that with faults).
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <iostream>

#include "Vpcu_retile_t16.h"
#include "testbench/units/retile_bench.h"
#include "testbench/units/rtl/unit_env.h"

namespace stepsim::unit_test {
namespace {

size_t num_cases() { return env_cases(1000, "STEPSIM_UNIT_CASES_T16"); }

template <class B>
void run(const std::string& unit, uint64_t seed, size_t n) {
  const std::vector<UnitCase> cases = B::cases(n, seed);
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  std::string stats;
  ASSERT_EQ((run_retile<B, 16>(cases, seed, &stats)), "") << unit;
  std::cout << unit << ": " << stats << " in lock-step, "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s wall, "
            << double(std::clock() - c0) / CLOCKS_PER_SEC << " s CPU\n";
}

TEST(UnitsLockstepT16, PcuRetile) { run<PcuRetile16Bench<Vpcu_retile_t16>>("PcuRetile T=16", 1630, num_cases()); }
TEST(UnitsLockstepT16, PcuRetileFaults) {
  run<PcuRetileFault16Bench<Vpcu_retile_t16>>("PcuRetileFaults T=16", 1631, num_cases() / 3);
}

}  // namespace
}  // namespace stepsim::unit_test
