// Every HLS unit (hw/units) and its Verilated RTL twin (rtl/) in lock-step: the same input
// pins, random valid gaps on the inputs, random back-pressure on the outputs, reset pulses and
// cfg changes between cases; every output pin (valid, payload, ready) must be identical at
// every clock cycle. The output streams must also equal the approximate operator's
// (sim/eval.h), except the documented Partition difference (docs/units.md).
// STEPSIM_UNIT_CASES overrides the number of cases per unit (default 2000; the longer run in
// scripts/units_long.sh uses more).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>

#include "Vpcu_ew.h"
#include "Vrouter_broadcast.h"
#include "Vrouter_partition.h"
#include "Vshape_expand.h"
#include "Vshape_flatten.h"
#include "Vshape_promote.h"
#include "Vshape_repeat.h"
#include "testbench/units/benches.h"

namespace stepsim::unit_test {
namespace {

size_t num_cases() {
  const char* e = std::getenv("STEPSIM_UNIT_CASES");
  return e ? size_t(std::strtoull(e, nullptr, 10)) : 2000;
}
uint64_t seed_base() {
  const char* e = std::getenv("STEPSIM_UNIT_SEED");
  return e ? std::strtoull(e, nullptr, 10) : 1;
}

template <template <class> class Bench, class Rtl>
void lockstep(const std::string& unit, const std::function<std::vector<UnitCase>(size_t, uint64_t)>& gen,
              uint64_t salt) {
  const uint64_t seed = seed_base() * 1000 + salt;
  const std::vector<UnitCase> cases = gen(num_cases(), seed);
  BenchRun r = run_bench<Bench<Rtl>>(cases, seed);
  ASSERT_TRUE(r.result.ok) << unit << " (seed " << seed << "): " << r.result.error;
  ASSERT_EQ(r.result.cases_done, cases.size());
  size_t beats = 0, reference_only = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<std::string> want;
    if (unit == "Partition" && partition_approx_diverges(cases[i])) {
      want = partition_reference(cases[i], kN);
      ++reference_only;
    } else {
      want = expected(unit, cases[i]);
    }
    for (size_t o = 0; o < want.size(); ++o) {
      beats += r.out[o][i].size();
      ASSERT_EQ(format_beats(r.out[o][i]), want[o]) << unit << " case " << i << " output " << o;
    }
  }
  std::cout << unit << ": " << cases.size() << " cases, " << r.result.cycles << " cycles in lock-step, " << beats
            << " output beats";
  if (reference_only) std::cout << " (" << reference_only << " checked against the reference chunk rule)";
  std::cout << "\n";
}

TEST(UnitsLockstep, Flatten) { lockstep<FlattenBench, Vshape_flatten>("Flatten", flatten_cases, 1); }
TEST(UnitsLockstep, Promote) { lockstep<PromoteBench, Vshape_promote>("Promote", promote_cases, 2); }
TEST(UnitsLockstep, Repeat) { lockstep<RepeatBench, Vshape_repeat>("Repeat", repeat_cases, 3); }
TEST(UnitsLockstep, Expand) { lockstep<ExpandBench, Vshape_expand>("Expand", expand_cases, 4); }
TEST(UnitsLockstep, Broadcast) { lockstep<BroadcastBench, Vrouter_broadcast>("Broadcast", broadcast_cases, 5); }
TEST(UnitsLockstep, Partition) { lockstep<PartitionBench, Vrouter_partition>("Partition", partition_cases, 6); }

TEST(UnitsLockstep, PcuEw) {
  const uint64_t seed = seed_base() * 1000 + 7;
  const std::vector<UnitCase> cases = pcu_ew_cases(num_cases(), seed);
  BenchRun r = run_bench<PcuEwBench<Vpcu_ew>>(cases, seed);
  ASSERT_TRUE(r.result.ok) << "PcuEw (seed " << seed << "): " << r.result.error;
  ASSERT_EQ(r.result.cases_done, cases.size());
  size_t elems = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_EQ(check_pcu_ew(cases[i], r.out[0][i]), "") << "case " << i;
    for (const Beat& b : r.out[0][i]) elems += b.has_elem;
  }
  std::cout << "PcuEw: " << cases.size() << " cases, " << r.result.cycles << " cycles in lock-step, " << elems
            << " tiles of " << kL << " bf16 lanes\n";
}

}  // namespace
}  // namespace stepsim::unit_test
