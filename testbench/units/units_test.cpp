// The HLS units (hw/units) on randomized legal streams with random valid gaps and random
// back-pressure: every output stream equals the approximate operator's (sim/engine/eval.h).
// The lock-step comparison with the RTL is in testbench/units/rtl (needs Verilator).
#include <gtest/gtest.h>

#include "testbench/units/benches.h"
#include "testbench/units/tile_benches.h"

namespace stepsim::unit_test {
namespace {

constexpr size_t kCases = 300;

// Runs the HLS unit alone on `kCases` random cases and checks every case's outputs.
template <template <class> class Bench>
void check_hls(uint64_t seed) {
  const std::vector<UnitCase> cases = Bench<NoRtl>::cases(kCases, seed);
  BenchRun r = run_bench<Bench<NoRtl>>(cases, seed);
  ASSERT_TRUE(r.result.ok) << r.result.error;
  ASSERT_EQ(r.result.cases_done, cases.size());
  for (size_t i = 0; i < cases.size(); ++i)
    ASSERT_EQ(Bench<NoRtl>::check(cases[i], case_outputs(r.out, i)), "") << "case " << i;
  ::testing::Test::RecordProperty("cycles", std::to_string(r.result.cycles));
}

TEST(UnitsVsApprox, Flatten) { check_hls<FlattenBench>(11); }
TEST(UnitsVsApprox, Promote) { check_hls<PromoteBench>(12); }
TEST(UnitsVsApprox, Repeat) { check_hls<RepeatBench>(13); }
TEST(UnitsVsApprox, Expand) { check_hls<ExpandBench>(14); }
TEST(UnitsVsApprox, Broadcast) { check_hls<BroadcastBench>(15); }
TEST(UnitsVsApprox, Partition) { check_hls<PartitionBench>(16); }
TEST(UnitsVsApprox, Reshape) { check_hls<ReshapeBench>(18); }
TEST(UnitsVsApprox, Zip) { check_hls<ZipBench>(19); }
TEST(UnitsVsApprox, Reassemble) { check_hls<ReassembleBench>(20); }
TEST(UnitsVsApprox, EagerMerge) { check_hls<EagerMergeBench>(21); }
// The 8-way routers of the 8-expert MoE (N = 8: the co-simulation's Partition/Reassemble).
TEST(UnitsVsApprox, Partition8) { check_hls<Partition8Bench>(31); }
TEST(UnitsVsApprox, Reassemble8) { check_hls<Reassemble8Bench>(32); }
TEST(UnitsVsFunctions, PcuEwMatchesMapMulAndAddBitForBit) { check_hls<PcuEwBench>(17); }
TEST(UnitsVsFunctions, PcuAccumMatchesAccumAddAndMaxBitForBit) { check_hls<PcuAccumBench>(22); }
TEST(UnitsVsFunctions, PcuReduceMatchesRowSumAndRowMaxBitForBit) { check_hls<PcuReduceBench>(23); }
TEST(UnitsVsFunctions, PcuTileMapMatchesMatmulMulAddBitForBit) { check_hls<PcuTileMapBench>(24); }
TEST(UnitsVsFunctions, PcuTileMapMatchesSiluExpSigmoidBitForBit) { check_hls<PcuTileUnaryBench>(27); }
TEST(UnitsVsFunctions, PcuTileAccumMatchesAccumAddAndMaxBitForBit) { check_hls<PcuTileAccumBench>(25); }
TEST(UnitsVsFunctions, PcuTileAccumMatchesMatmulAccBitForBit) { check_hls<PcuTileMatmulAccBench>(26); }
// Scan on the Accum units (cfg_scan_i): every beat out as it came, each element the running
// state, as hw/ops/higher_order.cpp's Scan, bit for bit.
TEST(UnitsVsFunctions, PcuAccumMatchesScanAddAndMaxBitForBit) { check_hls<PcuScanBench>(33); }
TEST(UnitsVsFunctions, PcuTileAccumMatchesScanBitForBit) {
  check_hls<PcuTileScanBench>(34);
  check_hls<PcuTileScanMatmulBench>(35);
}
// The accumulator bank: each result equals a rank-2 Accum over the reordered stream, bit for bit.
TEST(UnitsVsFunctions, PcuTileBankEqualsRank2AccumOverTheReorderedStream) {
  check_hls<PcuTileBankBench>(28);
  check_hls<PcuTileBankMatmulBench>(29);
}

// ---- documented latency and throughput (docs/units.md), full-rate source and sink ----
struct Timing {
  uint64_t latency = 0;  // first output edge - first input edge
  uint64_t beats = 0;    // output beats on consumer 0
  uint64_t span = 0;     // edges from the first to the last output beat, inclusive
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
  t = full_rate<PromoteBench>(one_case({0, 0}, {s}));
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
  Timing t = full_rate<PromoteBench>(one_case({1, 0}, {iota_stream(200)}));
  EXPECT_EQ(t.latency, 2u);
  EXPECT_EQ(t.span, 200u);
}

TEST(UnitsTiming, RepeatSendsOneCopyPerCycle) {
  Timing t = full_rate<RepeatBench>(one_case({3}, {iota_stream(100)}));
  EXPECT_EQ(t.latency, 1u);
  EXPECT_EQ(t.beats, 300u);
  EXPECT_EQ(t.span, 300u);
}

TEST(UnitsTiming, NewShapeUnitsOneBeatPerCycle) {
  const std::string s = iota_stream(200);
  Timing t = full_rate<ZipBench>(one_case({}, {s, s}));
  EXPECT_EQ(t.latency, 1u);
  EXPECT_EQ(t.span, 200u);
  t = full_rate<ReshapeBench>(one_case({4, 0, 0}, {s}));  // 50 whole chunks: no padding
  EXPECT_EQ(t.latency, 1u);
  EXPECT_EQ(t.beats, 200u);
  EXPECT_EQ(t.span, 200u);
  t = full_rate<ReshapeBench>(one_case({3, 0, 0}, {"1 2 S1 3 4 S1 5 S1 D"}));  // padding, one per cycle
  EXPECT_EQ(t.beats, 9u);
  EXPECT_EQ(t.span, 9u);
}

TEST(UnitsTiming, RoutersMergeWithoutBubbles) {
  // Reassemble: 50 groups of one element from each of the 4 inputs.
  std::string in[kN], sel;
  for (int g = 0; g < 50; ++g) {
    for (int i = 0; i < kN; ++i) in[i] += std::to_string(100 * i + g) + " ";
    sel += "{0,1,2,3} ";
  }
  UnitCase c = one_case({0}, {in[0] + "D", in[1] + "D", in[2] + "D", in[3] + "D", sel + "D"});
  Timing t = full_rate<ReassembleBench>(c);
  EXPECT_EQ(t.latency, 1u);
  EXPECT_EQ(t.beats, 200u);
  EXPECT_EQ(t.span, 200u);
  // EagerMerge: the same inputs; one element per cycle, then the done.
  c = one_case({0}, {in[0] + "D", in[1] + "D", in[2] + "D", in[3] + "D"});
  t = full_rate<EagerMergeBench>(c);
  EXPECT_EQ(t.latency, 1u);
  EXPECT_EQ(t.beats, 201u);
  EXPECT_EQ(t.span, 201u);
}

TEST(UnitsTiming, ComputeReductionsTakeOneBeatPerCycle) {
  UnitCase rows = one_case({0, 1}, {});
  std::vector<Beat> v;
  std::mt19937_64 rng{3};
  for (int i = 0; i < 200; ++i) v.push_back(Beat::data(random_finite_tile(rng), i % 4 == 3 ? 1 : 0));
  v.back().done = true;
  rows.inputs.push_back(v);
  Timing t = full_rate<PcuAccumBench>(rows);  // 50 rows of 4 tiles: a result every 4 cycles
  EXPECT_EQ(t.latency, 4u);
  EXPECT_EQ(t.beats, 50u);
  EXPECT_EQ(t.span, 197u);
  rows.cfg = {0};
  t = full_rate<PcuReduceBench>(rows);
  EXPECT_EQ(t.latency, 1u);
  EXPECT_EQ(t.span, 200u);
}

// [T x T] tiles: PcuTileMap has a pipeline of kTS stages (latency kTS) and takes one tile per
// cycle; PcuTileAccum emits a result 1 cycle after the closing beat and takes one beat per cycle.
std::vector<Beat> square_tiles(uint64_t seed, int n, int row) {
  std::vector<Beat> v;
  std::mt19937_64 rng{seed};
  for (int i = 0; i < n; ++i) v.push_back(Beat::data(random_square(rng, 0), row > 0 && i % row == row - 1 ? 1 : 0));
  return v;
}

TEST(UnitsTiming, TileMapPipelineTakesOneTilePerCycle) {
  for (int op = 0; op < 4; ++op) {
    UnitCase c = one_case({op}, {});
    for (uint64_t k = 0; k < 2; ++k) {
      c.inputs.push_back(square_tiles(k, 200, 0));
      c.inputs.back().push_back(Beat::done_beat());
    }
    Timing t = full_rate<PcuTileMapBench>(c);
    EXPECT_EQ(t.latency, uint64_t(kTS)) << tile_map_fn(op);
    EXPECT_EQ(t.beats, 201u);
    EXPECT_EQ(t.span, 201u);
  }
  for (int op = 4; op < 7; ++op) {  // unary: input a only
    UnitCase c = one_case({op}, {});
    c.inputs.push_back(square_tiles(op, 200, 0));
    c.inputs.back().push_back(Beat::done_beat());
    Timing t = full_rate<PcuTileUnaryBench>(c);
    EXPECT_EQ(t.latency, uint64_t(kTS)) << tile_map_fn(op);
    EXPECT_EQ(t.beats, 201u);
    EXPECT_EQ(t.span, 201u);
  }
}

TEST(UnitsTiming, TileAccumTakesOneBeatPerCycle) {
  // 50 groups of 4 tiles (rank 1): a result every 4 cycles, 1 cycle after the closing beat.
  UnitCase c = one_case({2, 1, 0}, {});
  c.inputs.push_back(square_tiles(5, 200, 4));
  c.inputs.push_back(square_tiles(6, 200, 4));
  c.inputs[0].back().done = c.inputs[1].back().done = true;
  Timing t = full_rate<PcuTileMatmulAccBench>(c);
  EXPECT_EQ(t.latency, 4u);
  EXPECT_EQ(t.beats, 50u);
  EXPECT_EQ(t.span, 197u);
  c.cfg = {0, 1, 0};
  c.inputs.pop_back();
  t = full_rate<PcuTileAccumBench>(c);
  EXPECT_EQ(t.latency, 4u);
  EXPECT_EQ(t.beats, 50u);
  EXPECT_EQ(t.span, 197u);
}

// The bank (q = 1): 4 entries x 3 chunks x K = 4 tiles, twice. The input moves one beat per
// cycle while accumulating; after the closing beat the 4 entries leave one per cycle (the first
// 2 cycles after the closing beat) while the input waits.
TEST(UnitsTiming, TileAccumBankTakesOneBeatPerCycleAndEmitsOneEntryPerCycle) {
  UnitCase c = one_case({2, 2, 1}, {});
  for (uint64_t k = 0; k < 2; ++k) {
    std::vector<Beat> v = square_tiles(7 + k, 96, 4);
    for (size_t i = 3; i < v.size(); i += 4) {
      const size_t e = (i / 4) % 4, ch = (i / 16) % 3;
      v[i].stop = uint8_t(e < 3 ? 1 : ch < 2 ? 2 : 3);
    }
    v.back().done = true;
    c.inputs.push_back(v);
  }
  Timing t = full_rate<PcuTileBankMatmulBench>(c);
  EXPECT_EQ(t.latency, 49u);  // 48 beats, then 1 more cycle
  EXPECT_EQ(t.beats, 8u);
  EXPECT_EQ(t.span, 56u);  // 4 entries, the next group (48 beats), its 4 entries: N + M cycles a group
}

// Bank errors raise the sticky err_o; the stream still ends (the done leaves).
bool bank_err(const UnitCase& c, bool* ended = nullptr) {
  BenchRun r = run_bench<PcuTileBankBench<NoRtl>>({c}, 3);
  if (ended) *ended = r.result.ok && r.result.cases_done == 1;
  return PcuTileBankBench<NoRtl>::last->err_hls.read();
}
UnitCase bank_case(std::vector<int> cfg, const std::vector<int>& stops, bool done_beat = false) {
  UnitCase c = one_case(std::move(cfg), {});
  std::mt19937_64 rng{1};
  std::vector<Beat> v;
  for (int s : stops) {
    if (s < 0) {
      v.push_back(Beat::bare_stop(uint8_t(-s)));
    } else {
      v.push_back(Beat::data(random_square(rng, 0), uint8_t(s)));
    }
  }
  if (done_beat)
    v.push_back(Beat::done_beat());
  else
    v.back().done = true;
  c.inputs.push_back(v);
  return c;
}

TEST(UnitsCapacity, TileAccumBankErrors) {
  bool ended = false;
  // A good case: 3 entries, 2 chunks (q = 1): no error.
  EXPECT_FALSE(bank_err(bank_case({0, 2, 1}, {0, 1, 1, 2, 1, 1, 0, 3}), &ended));
  EXPECT_TRUE(ended);
  EXPECT_FALSE(bank_err(bank_case({0, 2, 1}, {1, 1, 3}, true)));
  // 17 entries in the 16-entry bank.
  std::vector<int> s(16, 1);
  s.push_back(3);
  EXPECT_TRUE(bank_err(bank_case({0, 2, 1}, s), &ended));
  EXPECT_TRUE(ended);
  s.erase(s.begin());  // 16 entries fit
  EXPECT_FALSE(bank_err(bank_case({0, 2, 1}, s)));
  // A later chunk with fewer entries (a close at q + 1 early), or more (no close at M - 1).
  EXPECT_TRUE(bank_err(bank_case({0, 2, 1}, {1, 1, 2, 1, 2, 1, 1, 3}), &ended));
  EXPECT_TRUE(ended);
  EXPECT_TRUE(bank_err(bank_case({0, 2, 1}, {1, 2, 1, 1, 2, 1, 3})));
  EXPECT_TRUE(bank_err(bank_case({0, 2, 1}, {1, 1, 2, 1, 3})));  // the last chunk ends early
  // q = 2 (B = 2 x 2): entry stops 1, 2 (B2 ends too), 1, then 3 (the chunk ends).
  EXPECT_FALSE(bank_err(bank_case({0, 2, 2}, {1, 2, 1, 3, 1, 2, 1, 4})));
  EXPECT_TRUE(bank_err(bank_case({0, 2, 2}, {1, 2, 1, 3, 1, 3, 1, 4})));
  // A bare stop in bank mode; a stream that ends inside a group; rank 3 with a bank.
  EXPECT_TRUE(bank_err(bank_case({0, 2, 1}, {0, -1, 1, 3}), &ended));
  EXPECT_TRUE(ended);
  EXPECT_TRUE(bank_err(bank_case({0, 2, 1}, {0, 1, 1}), &ended));
  EXPECT_TRUE(ended);
  EXPECT_TRUE(bank_err(bank_case({0, 3, 1}, {1, 1, 3})));
  // Bank off: the same unit raises nothing.
  EXPECT_FALSE(bank_err(bank_case({0, 2, 0}, {0, -1, 1, 3})));
}

}  // namespace
}  // namespace stepsim::unit_test
