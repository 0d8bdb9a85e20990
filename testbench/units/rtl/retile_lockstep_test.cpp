// The retile unit at T = 4: the HLS unit (hw/units/pcu_retile.h) and its Verilated RTL twin
// (rtl/pcu_retile.sv) in lock-step on the same input pins, with random valid gaps, random
// back-pressure, reset pulses and cfg changes between cases: every output pin (valid, payload,
// ready, err_o) must be identical at every cycle. The outputs must also equal the reference of
// the STeP operators and the approximate operators (retile_bench.h), and err_o at each case's
// done the reference's. The unit is cheap to simulate, so it runs twice STEPSIM_UNIT_CASES legal
// cases (default 2 x 2000) and half of STEPSIM_UNIT_CASES with faults (1000); STEPSIM_UNIT_SEED
// sets the seed.
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <iostream>

#include "Vpcu_retile.h"
#include "testbench/units/retile_bench.h"
#include "testbench/units/rtl/unit_env.h"

namespace stepsim::unit_test {
namespace {

size_t num_cases() { return env_cases(2000); }

template <class B>
void lockstep(const std::string& unit, uint64_t salt, size_t n) {
  const uint64_t seed = env_seed(salt);
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  const std::vector<UnitCase> cases = B::cases(n, seed);
  std::string stats;
  ASSERT_EQ((run_retile<B, kRetileT>(cases, seed, &stats)), "") << unit;
  std::cout << unit << ": " << stats << " in lock-step, "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s wall, "
            << double(std::clock() - c0) / CLOCKS_PER_SEC << " s CPU\n";
}

TEST(UnitsLockstep, PcuRetile) { lockstep<PcuRetileBench<Vpcu_retile>>("PcuRetile", 30, 2 * num_cases()); }
// Faulty streams (err_o rises; each case after a reset).
TEST(UnitsLockstep, PcuRetileFaults) {
  lockstep<PcuRetileFaultBench<Vpcu_retile>>("PcuRetileFaults", 31, num_cases() / 2);
}

}  // namespace
}  // namespace stepsim::unit_test
