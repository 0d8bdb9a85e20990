// The micro-benchmark patterns of the `dram` model (testbench/dram/dram_patterns.h) at small
// sizes: each figure against its theory, exact where the rules give an exact number (the
// derivation in the comments, default HBM2 2 Gb/s timings: tRCD 7, tCL 7, tCWL 2, tBURST 4,
// tRP 7, tRAS 17, tRC 19, tRTP 3, tWR 8, tWTR_S/L 3/4, tFAW 15, tRFC 160, tREFI 3900; link 1
// cycle each way; 8 channels x 2 pseudo-channels x 8 banks), a stated bound otherwise.
// scripts/bench/bench_dram_micro.cpp runs the same patterns at ~1e6 requests;
// docs/hbm-dram-validation.md has the formulas.
#include <gtest/gtest.h>

#include <stdexcept>

#include "testbench/dram/dram_patterns.h"

namespace stepsim::dram_micro {
namespace {

const Figure& only(const CaseResult& r) {
  EXPECT_EQ(r.figures.size(), 1u);
  return r.figures.at(0);
}

HbmParams with_order(HbmParams p, const char* order) {
  p.mapping_order = order;
  return p;
}

TEST(DramMicro, EncodeIsTheInverseOfDecode) {
  for (const char* order : {"RoBaRaCoCh", "ChRaBaRoCo", "RoCoBaRaCh"}) {
    const HbmParams p = with_order(hbm2_8ch(), order);
    const HbmDram m(p);
    DramAddress a;
    a.channel = 5;
    a.pseudo_channel = 1;
    a.bank = 6;
    a.row = 12345;
    a.column = 9;
    const DramAddress b = m.decode(AddressEncoder(p)(a));
    EXPECT_EQ(b.channel, 5u) << order;
    EXPECT_EQ(b.pseudo_channel, 1u) << order;
    EXPECT_EQ(b.bank, 6u) << order;
    EXPECT_EQ(b.row, 12345u) << order;
    EXPECT_EQ(b.column, 9u) << order;
  }
}

TEST(DramMicro, SequentialStreamsReachThePeakOfEveryPseudoChannel) {
  // 65536 reads = 4096 per pseudo-channel, 1-KiB bursts one per cycle. The pseudo-channels of
  // Ra 1 get their first burst at cycle 8 (requests 128..255): ACT 9, RD 16, then one RD per
  // tBURST while the next bank opens behind; last RD 16 + 4 x 4095, its data + tCL + tBURST,
  // the response + link: 16408 cycles, i.e. 65536 x 64 B / 16408 = 255.6 B/cycle of 256.
  const CaseResult r = stream(without_refresh(hbm2_8ch()), false, 65536);
  EXPECT_EQ(r.last_completion, 16u + 4 * 4095 + 7 + 4 + 1);
  EXPECT_DOUBLE_EQ(only(r).theory, 256.0);  // 64 B / tBURST x 2 x 8
  EXPECT_TRUE(only(r).ok()) << only(r).measured;
  // 16 rows per pseudo-channel: 8 banks opened (misses), then 8 reopened (conflicts).
  EXPECT_EQ(r.dram.row_misses, 128u);
  EXPECT_EQ(r.dram.row_conflicts, 65536u / 16 - 128);
  // Writes: the same commands, data tCWL after the WR: 16 + 4 x 4095 + 2 + 4 + 1.
  EXPECT_EQ(stream(without_refresh(hbm2_8ch()), true, 65536).last_completion, 16u + 4 * 4095 + 2 + 4 + 1);
}

TEST(DramMicro, EachRefreshCostsAStreamTrpPlusTrfcPlusTrcd) {
  // The run of the test above with refresh: 16408 cycles hold 4 refreshes per pseudo-channel.
  // Each closes the open rows (tRP), refreshes (tRFC) and the stream reopens its row (tRCD):
  // L = 174 cycles (173 when the refresh falls a cycle into a burst: the precharge waits
  // only for tRTP = 3 after the last RD, one less than its tBURST).
  const CaseResult r = stream(hbm2_8ch(), false, 65536);
  ASSERT_EQ(r.dram.refreshes, 4u * 16);
  EXPECT_GE(r.last_completion, 16408u + 4 * 173);
  EXPECT_LE(r.last_completion, 16408u + 4 * 174);
  EXPECT_TRUE(only(r).ok()) << only(r).measured << " vs " << only(r).theory;
  // Writes: the precharge waits for the write data and tWR: L = tCWL + tWR + 174 = 184 exactly.
  const CaseResult w = stream(hbm2_8ch(), true, 65536);
  ASSERT_EQ(w.dram.refreshes, 4u * 16);
  EXPECT_EQ(w.last_completion, 16403u + 4 * 184);
  EXPECT_TRUE(only(w).ok()) << only(w).measured << " vs " << only(w).theory;
}

TEST(DramMicro, ChRaBaRoCoStreamsPayARowCycleEverySixteenRequests) {
  // One stream per pseudo-channel through the rows of its bank 0: every row a conflict. Row
  // cycle: ACT, RD tRCD later, 15 more RDs tBURST apart, PRE tRTP after the last, ACT tRP
  // later = 7 + 60 + 3 + 7 = 77 cycles for 16 reads (83 % of the data bus). Pseudo-channel 15
  // gets its first burst at cycle 15: ACT 16, its 16th row's last RD 16 + 7 + 77 x 15 + 60,
  // then tCL + tBURST + link.
  const HbmParams p = with_order(without_refresh(hbm2_8ch()), "ChRaBaRoCo");
  const CaseResult r = stream(p, false, 4096);
  EXPECT_EQ(r.last_completion, 16u + 7 + 77 * 15 + 60 + 12);
  EXPECT_DOUBLE_EQ(only(r).theory, 256.0 * 64 / 77);
  EXPECT_TRUE(only(r).ok()) << only(r).measured;
  // Writes: PRE after the write data and tWR: 7 + 60 + (2 + 4 + 8) + 7 = 88 cycles per row.
  const CaseResult w = stream(p, true, 4096);
  EXPECT_EQ(w.last_completion, 16u + 7 + 88 * 15 + 60 + 2 + 4 + 1);
  EXPECT_DOUBLE_EQ(only(w).theory, 256.0 * 64 / 88);
  // With refresh, the stated bound: one refresh loss and the start over the run's cycles, and
  // tRP + tRCD per tREFI (a refresh between two rows replaces their precharge and activate).
  const CaseResult f = stream(with_order(hbm2_8ch(), "ChRaBaRoCo"), false, 65536);
  EXPECT_TRUE(only(f).ok()) << only(f).measured << " vs " << only(f).theory << " within " << only(f).tolerance;
}

TEST(DramMicro, ReadWriteSwitchesCostTheTurnarounds) {
  // Read to write: WR >= RD + tCL + tBURST + 2 - tCWL = RD + 11, 7 beyond tBURST. Write to
  // read: RD >= WR + tCWL + tBURST + tWTR_L = WR + 10 (6 beyond tBURST), tWTR_S = 3 in
  // another bank group (5). N reads then N writes take 8N + 13 cycles for 2N x 64 B.
  for (uint64_t n : {1, 4, 16}) {
    const CaseResult r = rw_mix(without_refresh(hbm2_8ch()), n, false, 12 * n + 40);
    ASSERT_EQ(r.figures.size(), 3u);
    EXPECT_EQ(r.figures[0].measured, 7.0) << n;
    EXPECT_EQ(r.figures[1].measured, 6.0) << n;
    EXPECT_EQ(r.figures[2].measured, 128.0 * double(n) / double(8 * n + 13)) << n;
    for (const Figure& f : r.figures) EXPECT_TRUE(f.ok()) << f.name;
  }
  const CaseResult g = rw_mix(without_refresh(hbm2_8ch()), 16, true, 256);
  EXPECT_EQ(g.figures[0].measured, 7.0);
  EXPECT_EQ(g.figures[1].measured, 5.0);
  EXPECT_EQ(g.figures[2].measured, 128.0 * 16 / (8 * 16 + 12));
  EXPECT_THROW(rw_mix(hbm2_8ch(), 16, false, 80), std::invalid_argument);  // fewer than 3 pairs
}

TEST(DramMicro, IdleLatenciesAreTheSumsOfTheirCommands) {
  // 128 banks: 384 requests = one triple (miss, hit, conflict) per bank; 768 = two (the second
  // triple's first request is a conflict).
  const CaseResult r = idle_latency(without_refresh(hbm2_8ch()), false, 768);
  ASSERT_EQ(r.figures.size(), 3u);
  EXPECT_EQ(r.figures[0].measured, 20.0);  // 1 + tRCD + tCL + tBURST + 1
  EXPECT_EQ(r.figures[1].measured, 13.0);  // 1 + tCL + tBURST + 1
  EXPECT_EQ(r.figures[2].measured, 27.0);  // 1 + tRP + tRCD + tCL + tBURST + 1
  EXPECT_EQ(r.dram.row_misses, 128u);
  EXPECT_EQ(r.dram.row_hits, 256u);
  EXPECT_EQ(r.dram.row_conflicts, 384u);
  const CaseResult w = idle_latency(without_refresh(hbm2_8ch()), true, 768);
  EXPECT_EQ(w.figures[0].measured, 15.0);  // tCWL = 2 instead of tCL
  EXPECT_EQ(w.figures[1].measured, 8.0);
  EXPECT_EQ(w.figures[2].measured, 22.0);
  HbmParams closed = without_refresh(hbm2_8ch());
  closed.page_policy = "closed";
  const CaseResult c = idle_latency(closed, false, 768);
  ASSERT_EQ(c.figures.size(), 1u);  // closed page: every access a miss
  EXPECT_EQ(c.figures[0].measured, 20.0);
  for (const CaseResult* x : {&r, &w, &c})
    for (const Figure& f : x->figures) EXPECT_TRUE(f.ok()) << f.name;
}

TEST(DramMicro, RandomReadsOneAtATimeSeeTheExpectedRowMix) {
  // 4 rows in each of 128 banks: after the first touch of a bank (a miss), a hit with
  // probability 1/4: mean 13/4 + 27 x 3/4 = 23.5 cycles, nearly. The mix is random: the bound
  // is 5 standard errors (fixed seed, so deterministic). The latency of the model's own counts
  // is exact: every request costs its class's idle latency (nothing else is in flight).
  const CaseResult r = random_one_at_a_time(without_refresh(hbm2_8ch()), 4, 20000);
  ASSERT_EQ(r.figures.size(), 2u);
  EXPECT_EQ(r.figures[0].check, Check::kWithin);
  EXPECT_LT(r.figures[0].tolerance, 0.01);
  EXPECT_NEAR(r.figures[0].theory, 23.5, 0.1);
  EXPECT_TRUE(r.figures[0].ok()) << r.figures[0].measured << " vs " << r.figures[0].theory;
  EXPECT_EQ(r.figures[1].measured, r.figures[1].theory);
  EXPECT_EQ(r.dram.row_misses, 128u);  // every bank touched (20000 draws of 128)
}

TEST(DramMicro, SaturatingRandomReadsMeetTheActivationBound) {
  // Banks in turn, random rows: bounds 1/tBURST = 0.25, 4/tFAW = 0.267, banks / (tRAS + tRP) =
  // 8/24, 1/tRRD_S = 0.5: the data bus binds, one read per 4 cycles.
  const CaseResult r = saturating_random(without_refresh(hbm2_8ch()), true, 2000);
  EXPECT_EQ(only(r).measured, 0.25);
  EXPECT_TRUE(only(r).ok());
  // With tBURST 2 the data bus allows 0.5 and tFAW binds: groups of 4 ACTs every 15 cycles
  // (first ready reorders the columns a little: a few cycles at the span's ends, 0.2 %).
  HbmParams fast_bus = without_refresh(hbm2_8ch());
  fast_bus.dram_tBURST = 2;
  const CaseResult f = saturating_random(fast_bus, true, 2000);
  EXPECT_NEAR(only(f).measured, 4.0 / 15, 0.002 * 4.0 / 15);
  EXPECT_TRUE(only(f).ok());
  // Uniform banks: a read to a busy bank waits while the controller serves the reads whose
  // commands are ready first (32 in its queue), so the data bus still binds.
  const CaseResult u = saturating_random(without_refresh(hbm2_8ch()), false, 2000);
  EXPECT_NEAR(only(u).measured, 0.25, 0.002 * 0.25);
  EXPECT_TRUE(only(u).ok()) << only(u).measured;
  // The same controller serving in arrival order only (a queue of one) waits for each busy
  // bank's row cycle: far below the bound.
  HbmParams in_order = without_refresh(hbm2_8ch());
  in_order.dram_queue_depth = 1;
  const CaseResult o = saturating_random(in_order, false, 2000);
  EXPECT_LT(only(o).measured, 0.2);
  EXPECT_GT(only(o).measured, 1.0 / 24);  // at least one read per tRAS + tRP
}

TEST(DramMicro, FourActivatesPerFawWindow) {
  // Eight reads at once to the 8 closed banks of one pseudo-channel: ACTs at 1, 3, 5, 7
  // (tRRD_S 2, the bank groups alternate), then 16, 18, 20, 22 (the first + tFAW, ...).
  const CaseResult r = activate_window(without_refresh(hbm2_8ch()), 64);
  EXPECT_EQ(only(r).measured, 4.0 / 15);
  EXPECT_TRUE(only(r).ok());
}

TEST(DramMicro, EveryBenchmarkCaseRunsAndMeetsItsTheory) {
  // The benchmark's list at 32768 requests per case: the streams then hold two refreshes per
  // pseudo-channel and their stated tolerance (one refresh and the start over the run) is ~3 %.
  for (const Case& c : cases()) {
    const CaseResult r = c.run(32768);
    EXPECT_GT(r.requests, 0u) << c.name;
    for (const Figure& f : r.figures)
      EXPECT_TRUE(f.ok()) << c.name << ": " << f.name << " " << f.measured << " vs " << f.theory;
  }
}

TEST(DramMicro, PatternsRejectWhatTheyHaveNoTheoryFor) {
  EXPECT_THROW(stream(with_order(hbm2_8ch(), "RoCoBaRaCh"), false, 65536), std::invalid_argument);
  EXPECT_THROW(stream(hbm2_8ch(), false, 100), std::invalid_argument);  // not one row per pseudo-channel
  HbmParams few_banks = hbm2_8ch();
  few_banks.dram_banks_per_group = 1;
  EXPECT_THROW(activate_window(few_banks, 64), std::invalid_argument);
}

}  // namespace
}  // namespace stepsim::dram_micro
