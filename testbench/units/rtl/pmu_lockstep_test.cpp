// The memory unit (hw/units/pmu_buffer.h) and its Verilated RTL twin (rtl/pmu_buffer.sv) in
// lock-step, as lockstep_test.cpp does for the other units: the same input pins, random valid
// gaps and back-pressure, reset pulses and cfg changes between cases; every output pin (valid,
// payload, ready, err_o) identical at every cycle, and every output stream equal to the
// approximate Bufferize -> Streamify pair. STEPSIM_UNIT_CASES / STEPSIM_UNIT_SEED as there.
#include <gtest/gtest.h>

#include <iostream>

#include "Vpmu_buffer.h"
#include "testbench/units/pmu_bench.h"
#include "testbench/units/rtl/unit_env.h"

namespace stepsim::unit_test {
namespace {

TEST(UnitsLockstep, PmuBuffer) {
  const size_t n = env_cases(2000);
  const uint64_t seed = env_seed(14);
  const std::vector<UnitCase> cases = PmuBench<Vpmu_buffer>::cases(n, seed);
  BenchRun r = run_bench<PmuBench<Vpmu_buffer>>(cases, seed);
  ASSERT_TRUE(r.result.ok) << "PmuBuffer (seed " << seed << "): " << r.result.error;
  ASSERT_EQ(r.result.cases_done, cases.size());
  EXPECT_FALSE(PmuBench<Vpmu_buffer>::last->err_hls.read());
  size_t beats = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const CaseOutputs out = case_outputs(r.out, i);
    ASSERT_EQ(PmuBench<Vpmu_buffer>::check(cases[i], out), "") << "PmuBuffer (seed " << seed << ") case " << i;
    beats += out[0].size();
  }
  std::cout << "PmuBuffer: " << cases.size() << " cases, " << r.result.cycles << " cycles in lock-step, " << beats
            << " output beats\n";
}

// Linear and affine cases (Streamify out_shape/stride, half of the cases) in alternating blocks.
TEST(UnitsLockstep, PmuBufferAffine) {
  const size_t n = env_cases(3000);
  const uint64_t seed = env_seed(15);
  const std::vector<UnitCase> cases = pmu_all_cases(n, seed);
  BenchRun r = run_bench<PmuBench<Vpmu_buffer>>(cases, seed);
  ASSERT_TRUE(r.result.ok) << "PmuBuffer affine (seed " << seed << "): " << r.result.error;
  ASSERT_EQ(r.result.cases_done, cases.size());
  EXPECT_FALSE(PmuBench<Vpmu_buffer>::last->err_hls.read());
  size_t beats = 0, affine = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const CaseOutputs out = case_outputs(r.out, i);
    ASSERT_EQ(PmuBench<Vpmu_buffer>::check(cases[i], out), "") << "PmuBuffer affine (seed " << seed << ") case " << i;
    beats += out[0].size();
    affine += !PmuCfg::of(cases[i].cfg).shape.empty();
  }
  EXPECT_EQ(affine, n / 2);
  std::cout << "PmuBuffer affine: " << cases.size() << " cases (" << affine << " affine), " << r.result.cycles
            << " cycles in lock-step, " << beats << " output beats\n";
}

// The affine range error and the fold in lock-step: err_o on the same cycle in both forms.
TEST(UnitsLockstep, PmuBufferAffineRangeError) {
  PmuCfg c;
  c.rank = 2;
  c.shape = {2, 3};
  c.stride = {3, 1};
  std::vector<UnitCase> cases;
  for (const char* d : {"0 1 2 S1 3 4 5 S2 D", "0 1 S1 2 3 S2 D", "0 1 2 S1 3 4 5 S2 D"}) {
    UnitCase u;
    u.cfg = c.pins();
    std::mt19937_64 rng(1);
    u.inputs = {loosen(rng, to_beats(parse_tokens(d)), 2), to_beats(parse_tokens("D"))};
    cases.push_back(u);
  }
  BenchRun r = run_bench<PmuBench<Vpmu_buffer>>(cases, 6);
  ASSERT_TRUE(r.result.ok) << r.result.error;
  EXPECT_TRUE(PmuBench<Vpmu_buffer>::last->err_hls.read());
  EXPECT_TRUE(PmuBench<Vpmu_buffer>::last->err_rtl.read());
}

// The capacity error in lock-step: err_o rises on the same cycle in both forms.
TEST(UnitsLockstep, PmuBufferCapacityError) {
  PmuCfg c;
  c.repeat = {2};
  std::vector<UnitCase> cases;
  for (int len : {kPmuCap, kPmuCap + 1, 3}) {
    std::string d;
    for (int j = 0; j < len; ++j) d += std::to_string(j) + " ";
    UnitCase u;
    u.cfg = c.pins();
    u.inputs = {to_beats(parse_tokens(d + "S1 D")), to_beats(parse_tokens("D"))};
    cases.push_back(u);
  }
  BenchRun r = run_bench<PmuBench<Vpmu_buffer>>(cases, 5);
  ASSERT_TRUE(r.result.ok) << r.result.error;
  EXPECT_TRUE(PmuBench<Vpmu_buffer>::last->err_hls.read());
  EXPECT_TRUE(PmuBench<Vpmu_buffer>::last->err_rtl.read());
}

}  // namespace
}  // namespace stepsim::unit_test
