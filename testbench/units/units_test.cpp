// The HLS units (hw/units) on randomized legal streams with random valid gaps and random
// back-pressure: every output stream equals the approximate operator's (sim/eval.h).
// The lock-step comparison with the RTL is in testbench/units/rtl (needs Verilator).
#include <gtest/gtest.h>

#include <iostream>

#include "testbench/units/benches.h"

namespace stepsim::unit_test {
namespace {

constexpr size_t kCases = 300;

template <template <class> class Bench>
void check_against_approx(const std::string& unit, const std::vector<UnitCase>& cases, uint64_t seed) {
  BenchRun r = run_bench<Bench<NoRtl>>(cases, seed);
  ASSERT_TRUE(r.result.ok) << r.result.error;
  ASSERT_EQ(r.result.cases_done, cases.size());
  size_t reference_only = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<std::string> want;
    if (unit == "Partition" && partition_approx_diverges(cases[i])) {
      want = partition_reference(cases[i], kN);  // the approximate Partition drops these stops
      ++reference_only;
    } else {
      want = expected(unit, cases[i]);
    }
    for (size_t o = 0; o < want.size(); ++o) {
      std::string in;
      for (const auto& s : cases[i].inputs) in += " [" + format_beats(s) + "]";
      ASSERT_EQ(format_beats(r.out[o][i]), want[o])
          << unit << " case " << i << " output " << o << " cfg[0]=" << (cases[i].cfg.empty() ? 0 : cases[i].cfg[0])
          << " inputs" << in;
    }
  }
  ::testing::Test::RecordProperty("cycles", std::to_string(r.result.cycles));
  if (reference_only)
    std::cout << unit << ": " << reference_only << " of " << cases.size()
              << " cases compared with the reference chunk rule, not the approximate operator\n";
}

TEST(UnitsVsApprox, Flatten) { check_against_approx<FlattenBench>("Flatten", flatten_cases(kCases, 11), 11); }
TEST(UnitsVsApprox, Promote) { check_against_approx<PromoteBench>("Promote", promote_cases(kCases, 12), 12); }
TEST(UnitsVsApprox, Repeat) { check_against_approx<RepeatBench>("Repeat", repeat_cases(kCases, 13), 13); }
TEST(UnitsVsApprox, Expand) { check_against_approx<ExpandBench>("Expand", expand_cases(kCases, 14), 14); }
TEST(UnitsVsApprox, Broadcast) { check_against_approx<BroadcastBench>("Broadcast", broadcast_cases(kCases, 15), 15); }
TEST(UnitsVsApprox, Partition) { check_against_approx<PartitionBench>("Partition", partition_cases(kCases, 16), 16); }

TEST(UnitsVsFunctions, PcuEwMatchesMapMulAndAddBitForBit) {
  const std::vector<UnitCase> cases = pcu_ew_cases(kCases, 17);
  BenchRun r = run_bench<PcuEwBench<NoRtl>>(cases, 17);
  ASSERT_TRUE(r.result.ok) << r.result.error;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string e = check_pcu_ew(cases[i], r.out[0][i]);
    ASSERT_EQ(e, "") << "case " << i;
  }
}

// ---- documented latency and throughput (docs/units.md), full-rate source and sink ----
struct Timing {
  uint64_t latency = 0;    // first output edge - first input edge
  uint64_t beats = 0;      // output beats on consumer 0
  uint64_t span = 0;       // edges from the first to the last output beat, inclusive
};

std::vector<Beat> beats_of(const std::string& text) { return to_beats(parse_tokens(text)); }

std::string iota_stream(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += std::to_string(i) + " ";
  return s + "D";
}

template <template <class> class Bench>
Timing full_rate(const UnitCase& c) {
  std::vector<UnitCase> cases{c};
  BenchRun r = run_bench<Bench<NoRtl>>(cases, 1, true);
  EXPECT_TRUE(r.result.ok) << r.result.error;
  Timing t;
  uint64_t first_in = UINT64_MAX;
  for (const auto& port : r.in_at) first_in = std::min(first_in, port[0][0]);
  const std::vector<uint64_t>& out = r.out_at[0][0];
  t.latency = out.front() - first_in;
  t.beats = out.size();
  t.span = out.back() - out.front() + 1;
  return t;
}

UnitCase one_case(std::vector<int> cfg, std::vector<std::string> inputs) {
  UnitCase c;
  c.cfg = std::move(cfg);
  for (const auto& t : inputs) c.inputs.push_back(beats_of(t));
  return c;
}

TEST(UnitsTiming, OneCycleLatencyOneBeatPerCycle) {
  const std::string s = iota_stream(200);
  Timing t = full_rate<FlattenBench>(one_case({0, 0}, {s}));
  EXPECT_EQ(t.latency, 1u);
  EXPECT_EQ(t.span, t.beats);
  EXPECT_EQ(t.beats, 200u);
  t = full_rate<PromoteBench>(one_case({0}, {s}));
  EXPECT_EQ(t.latency, 1u);
  EXPECT_EQ(t.span, 200u);
  t = full_rate<ExpandBench>(one_case({0}, {s, s}));
  EXPECT_EQ(t.latency, 1u);
  EXPECT_EQ(t.span, 200u);
  UnitCase tiles = one_case({0}, {});
  for (int k = 0; k < 2; ++k) {
    std::vector<Beat> v;
    std::mt19937_64 rng{uint64_t(k)};
    for (int i = 0; i < 200; ++i) v.push_back(Beat::data(random_bf16_tile(rng)));
    v.push_back(Beat::done_beat());
    tiles.inputs.push_back(v);
  }
  t = full_rate<PcuEwBench>(tiles);
  EXPECT_EQ(t.latency, 1u);
  EXPECT_EQ(t.span, 201u);
  t = full_rate<BroadcastBench>(one_case({}, {s}));
  EXPECT_EQ(t.latency, 1u);
  EXPECT_EQ(t.span, 200u);
  std::string sel;
  for (int i = 0; i < 200; ++i) sel += "{0,2} ";
  t = full_rate<PartitionBench>(one_case({0}, {s, sel + "D"}));
  EXPECT_EQ(t.latency, 1u);
  EXPECT_EQ(t.beats, 201u);  // 200 elements and the final bare done beat
  EXPECT_EQ(t.span, 201u);
  // Rank-1 chunks: the selector is consumed with each chunk's last beat, no bubble.
  sel.clear();
  for (int i = 0; i < 50; ++i) sel += "{0,1} ";
  std::string rows;  // 50 rows of 4 elements
  for (int i = 0; i < 200; ++i) rows += std::to_string(i) + (i % 4 == 3 ? " S1 " : " ");
  t = full_rate<PartitionBench>(one_case({1}, {rows + "D", sel + "D"}));
  EXPECT_EQ(t.beats, 201u);
  EXPECT_EQ(t.span, t.beats);
}

TEST(UnitsTiming, OuterPromoteHoldsOneBeat) {
  Timing t = full_rate<PromoteBench>(one_case({-1}, {iota_stream(200)}));
  EXPECT_EQ(t.latency, 2u);
  EXPECT_EQ(t.span, 200u);
}

TEST(UnitsTiming, RepeatSendsOneCopyPerCycle) {
  Timing t = full_rate<RepeatBench>(one_case({3}, {iota_stream(100)}));
  EXPECT_EQ(t.latency, 1u);
  EXPECT_EQ(t.beats, 300u);
  EXPECT_EQ(t.span, 300u);
}

}  // namespace
}  // namespace stepsim::unit_test
