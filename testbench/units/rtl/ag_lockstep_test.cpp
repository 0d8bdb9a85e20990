// The address generator (hw/units/ag_offchip.h) and its Verilated RTL twin
// (rtl/ag_offchip.sv) in lock-step: the same input pins (cfg, tile input, memory responses),
// random valid gaps and back-pressure on the tile ports, a testbench memory with random
// latency and request stalls; every output pin (tile port, request port, rsp_ready_o, err_o)
// identical at every cycle, and every case against the reference (ag_bench.h).
// STEPSIM_UNIT_CASES / STEPSIM_UNIT_SEED as in lockstep_test.cpp.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>

#include "Vag_offchip.h"
#include "testbench/units/ag_run.h"

namespace stepsim::unit_test {
namespace {

TEST(UnitsLockstep, AgOffchip) {
  const char* e = std::getenv("STEPSIM_UNIT_CASES");
  const char* s = std::getenv("STEPSIM_UNIT_SEED");
  const size_t n = e ? size_t(std::strtoull(e, nullptr, 10)) : 2000;
  const uint64_t seed = (s ? std::strtoull(s, nullptr, 10) : 1) * 1000 + 15;
  const std::vector<UnitCase> cases = ag_cases(n, seed, 4);
  AgRun r = run_ag<4, Vag_offchip>(cases, seed);
  ASSERT_TRUE(r.run.result.ok) << "AgOffchip (seed " << seed << "): " << r.run.result.error;
  ASSERT_EQ(r.run.result.cases_done, cases.size());
  EXPECT_EQ(r.error, "") << "seed " << seed;
  std::cout << "AgOffchip: " << cases.size() << " cases (" << r.loads << " loads, " << r.stores << " stores, " << r.errs
            << " with err_o), " << r.tiles << " tiles, " << r.requests << " memory requests, " << r.run.result.cycles
            << " cycles in lock-step\n";
}

}  // namespace
}  // namespace stepsim::unit_test
