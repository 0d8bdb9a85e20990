// Exact cycle counts, one test per timing rule of reference-simulator-notes.md §3 as the
// operators implement it (their `timing` strings in the registry). Preset step-artifact:
// onchip_bw 64 B/cycle, compute_bw 4096 FLOPs/cycle, send latency 1, response latency 1,
// FIFO depth 2, routing_switch_cycles 1, shape_op_latency 0.
//
// Channel rule used throughout: a beat sent at sender time t is visible at t + send_latency;
// a Source emits one beat per `interval` cycles starting at 0; a Sink records the visible time.
#include "graph_builder.h"

namespace stepsim {
namespace {
using namespace test;

const std::string kT = "T[16x64]";                   // bf16 tile, 2048 B
constexpr uint64_t kTileBytes = bf16_bytes(16, 64);  // 2048
constexpr uint64_t kSiluFlops = 8 * 16 * 64;         // silu: 8 FLOPs per element

std::string tiles(int n, const std::string& t = kT) {
  std::string s;
  for (int i = 0; i < n; ++i) s += t + " ";
  return s;
}

// ---------------------------------------------------------------- Map roofline

TEST(MapTiming, FifoToFifoIsComputeBoundOnly) {
  GraphBuilder b;
  b.source("src", tiles(2) + "D").node("map", "Map", {{"fn", "silu"}}, {{"in0", "src"}}).sink("sink", "map");
  SimResult r = b.run();
  ASSERT_TRUE(r.ok) << r.error;
  const uint64_t comp = ceil_div(kSiluFlops, kComputeBw);  // 8192 / 4096 = 2; memory terms 0 (FIFO to FIFO)
  // Tile 0 visible at 1, computed 1..3, visible at the sink at 4; tile 1 (visible at 2) waits for
  // the Map until 3, computed 3..5, visible at 6.
  EXPECT_EQ(element_times(r, "sink"), (std::vector<uint64_t>{kSend + comp + kSend, kSend + 2 * comp + kSend}));
  EXPECT_EQ(r.cycles, kSend + 2 * comp + kSend);  // = 6, the lead's worked value
  EXPECT_EQ(r.cycles, 6u);
  for (const NodeResult& n : r.nodes)
    if (n.name == "map") {
      EXPECT_EQ(n.busy_cycles, 2 * comp);
      EXPECT_EQ(n.flops, 2 * kSiluFlops);
      EXPECT_EQ(n.firings, 2u);
    }
}

TEST(MapTiming, PerNodeComputeBandwidthOverride) {
  GraphBuilder b;
  b.source("src", tiles(2) + "D")
      .node("map", "Map", {{"fn", "silu"}}, {{"in0", "src"}}, std::nullopt, /*compute_bw=*/1024)
      .sink("sink", "map");
  SimResult r = b.run();
  ASSERT_TRUE(r.ok) << r.error;
  const uint64_t comp = ceil_div(kSiluFlops, 1024);  // 8
  EXPECT_EQ(r.cycles, kSend + 2 * comp + kSend);     // 18
}

TEST(MapTiming, OutputIntoBufferizePaysTheWriteBackTerm) {
  GraphBuilder b;
  b.source("src", tiles(2) + "S1 D")
      .node("map", "Map", {{"fn", "silu"}}, {{"in0", "src"}})
      .node("buf", "Bufferize", {{"rank", "1"}}, {{"in", "map"}})
      .sink("sink", "buf");
  SimResult r = b.run();
  ASSERT_TRUE(r.ok) << r.error;
  const uint64_t st = ceil_div(kTileBytes, kOnchipBw);  // 2048 / 64 = 32 > compute 2
  EXPECT_EQ(finish_of(r, "map"), kSend + 2 * st);       // 65
  // Map: 2 x max(0, 2, 32); Bufferize: 1 cycle for the last tile, then the reference.
  const uint64_t expected = kSend + 2 * st + kSend + 1 /*Bufferize last tile*/ + kSend;
  EXPECT_EQ(expected, 68u);  // the lead's worked value
  EXPECT_EQ(r.cycles, expected);
  EXPECT_EQ(r.recorded_times.at("sink").front(), expected);
  EXPECT_EQ(format_beats(r.recorded.at("sink")), "Buf[2](T[16x64] T[16x64] S1) D");
}

// Source -> Bufferize -> Streamify: the replayed tiles sit in a memory unit.
GraphBuilder& buffered(GraphBuilder& b, const std::string& name, const std::string& data,
                       const std::string& repeat = "[]") {
  return b.source(name + "_src", data)
      .node(name + "_buf", "Bufferize", {{"rank", "1"}}, {{"in", name + "_src"}})
      .node(name, "Streamify", {{"repeat", repeat}}, {{"in", name + "_buf"}});
}

TEST(MapTiming, InputFromAMemoryUnitPaysTheReadTerm) {
  GraphBuilder b;
  buffered(b, "str", tiles(2) + "S1 D");
  b.node("map", "Map", {{"fn", "silu"}}, {{"in0", "str"}}).sink("sink", "map");
  SimResult r = b.run();
  ASSERT_TRUE(r.ok) << r.error;
  const uint64_t ld = ceil_div(kTileBytes, kOnchipBw);  // 32
  // Tiles reach Bufferize at 1 and 2 (1 cycle each): reference sent at 3, visible 4;
  // Streamify spends 1 cycle per tile: tile 0 sent at 5 (visible 6), tile 1 at 6.
  const uint64_t first_tile_at_map = kSend + 2 /*Bufferize*/ + kSend + 1 /*Streamify*/ + kSend;  // 6
  EXPECT_EQ(element_times(r, "sink"),
            (std::vector<uint64_t>{first_tile_at_map + ld + kSend, first_tile_at_map + 2 * ld + kSend}));
  EXPECT_EQ(r.cycles, first_tile_at_map + 2 * ld + kSend);  // 71
}

// matmul [16x64] x [64x64]: both operands replayed from memory units.
SimResult two_input_matmul(const HardwareParams& hw, bool b_from_memory) {
  GraphBuilder b;
  buffered(b, "a", "T[16x64] S1 D");
  if (b_from_memory)
    buffered(b, "w", "T[64x64] S1 D");
  else
    b.source("w", "T[64x64] S1 D");
  b.node("mm", "Map", {{"fn", "matmul"}}, {{"in0", "a"}, {"in1", "w"}}).sink("sink", "mm");
  return b.run(hw);
}

TEST(MapTiming, TwoMemoryUnitInputsSumTheirLoads) {
  const uint64_t ld_a = ceil_div(bf16_bytes(16, 64), kOnchipBw);  // 32
  const uint64_t ld_w = ceil_div(bf16_bytes(64, 64), kOnchipBw);  // 128
  const uint64_t comp = ceil_div(2 * 16 * 64 * 64, kComputeBw);   // 131072 / 4096 = 32
  // Both operands: Source (visible 1) -> Bufferize (1 cycle, ref visible 3) -> Streamify (1 cycle,
  // tile visible 5).
  const uint64_t at_map = kSend + 1 + kSend + 1 + kSend;  // 5
  SimResult r = two_input_matmul(artifact(), true);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.cycles, at_map + std::max(ld_a + ld_w, comp) + kSend);  // loads_sum_inputs: 5 + 160 + 1 = 166
  EXPECT_EQ(r.cycles, 166u);

  SimResult m = two_input_matmul(with(artifact(), "loads_sum_inputs", "false"), true);
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.cycles, at_map + std::max({ld_a, ld_w, comp}) + kSend);  // max of the loads: 134

  // Only the operand that sits in a memory unit pays: the weight now streams from a FIFO.
  SimResult f = two_input_matmul(artifact(), false);
  ASSERT_TRUE(f.ok) << f.error;
  EXPECT_EQ(f.cycles, at_map + std::max(ld_a, comp) + kSend);  // 5 + 32 + 1 = 38
}

// ---------------------------------------------------------------- Accum / Scan

TEST(AccumTiming, InnerElementsPayComputeTheClosingOneAlsoTheStore) {
  // add: 1 FLOP per element; compute_bw 256 -> 4 cycles per [16x64] tile. The result is rounded
  // to bf16 ([16x64] bf16 = 2048 B) and goes to a Bufferize: st = 2048 / 64 = 32, charged on the
  // closing element only.
  const uint64_t comp = ceil_div(16 * 64, 256);         // 4
  const uint64_t st = ceil_div(kTileBytes, kOnchipBw);  // 32
  {
    GraphBuilder b;
    b.source("src", tiles(3) + "S1 D")
        .node("acc", "Accum", {{"fn", "add"}, {"rank", "1"}}, {{"in0", "src"}}, std::nullopt, 256)
        .sink("sink", "acc");
    SimResult r = b.run();
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(format_beats(r.recorded.at("sink")), kT + " D");
    EXPECT_EQ(r.cycles, kSend + 3 * comp + kSend);  // 14: one output after the third element
  }
  {
    GraphBuilder b;
    b.source("src", tiles(2) + "S1 " + tiles(2) + "S2 D")
        .node("acc", "Accum", {{"fn", "add"}, {"rank", "1"}}, {{"in0", "src"}}, std::nullopt, 256)
        .node("buf", "Bufferize", {{"rank", "1"}}, {{"in", "acc"}})
        .sink("sink", "buf");
    SimResult r = b.run();
    ASSERT_TRUE(r.ok) << r.error;
    // Per group: inner element max(0, 4) + closing element max(0, 4, 32).
    EXPECT_EQ(finish_of(r, "acc"), kSend + 2 * (comp + std::max(comp, st)));         // 73
    EXPECT_EQ(r.cycles, kSend + 2 * (comp + st) + kSend + 1 /*Bufferize*/ + kSend);  // 76
  }
}

TEST(ScanTiming, EveryElementEmitsAndPaysTheStoreIntoABufferize) {
  const uint64_t comp = ceil_div(16 * 64, 256);         // 4
  const uint64_t st = ceil_div(kTileBytes, kOnchipBw);  // 32
  {
    GraphBuilder b;
    b.source("src", tiles(3) + "S1 D")
        .node("scan", "Scan", {{"fn", "add"}, {"rank", "1"}}, {{"in0", "src"}}, std::nullopt, 256)
        .sink("sink", "scan");
    SimResult r = b.run();
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(element_times(r, "sink"),
              (std::vector<uint64_t>{kSend + comp + kSend, kSend + 2 * comp + kSend, kSend + 3 * comp + kSend}));
  }
  {
    GraphBuilder b;
    b.source("src", tiles(3) + "S1 D")
        .node("scan", "Scan", {{"fn", "add"}, {"rank", "1"}}, {{"in0", "src"}}, std::nullopt, 256)
        .node("buf", "Bufferize", {{"rank", "1"}}, {{"in", "scan"}})
        .sink("sink", "buf");
    SimResult r = b.run();
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(finish_of(r, "scan"), kSend + 3 * std::max(comp, st));  // 1 + 3 * 32
    EXPECT_EQ(r.cycles, kSend + 3 * st + kSend + 1 + kSend);          // 100
  }
}

// ---------------------------------------------------------------- on-chip memory

TEST(BufferizeTiming, OneTilePerCycleWithBackPressureFromADepthTwoFifo) {
  // The Source offers all 8 tiles at time 0 (interval 0); depth 2 + response latency 1 still
  // lets Bufferize take one tile per cycle.
  const int n = 8;
  GraphBuilder b;
  b.source("src", tiles(n) + "S1 D", /*interval=*/0)
      .node("buf", "Bufferize", {{"rank", "1"}}, {{"in", "src"}})
      .sink("sink", "buf");
  SimResult r = b.run();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(finish_of(r, "buf"), kSend + n * 1);  // 9
  EXPECT_EQ(r.cycles, kSend + n * 1 + kSend);     // 10
  EXPECT_EQ(format_beats(r.recorded.at("sink")),
            "Buf[8](T[16x64] T[16x64] T[16x64] T[16x64] T[16x64] T[16x64] T[16x64] T[16x64] S1) D");
}

TEST(StreamifyTiming, OneCyclePerEmittedTileWithRepeat) {
  GraphBuilder b;
  buffered(b, "str", tiles(2) + "S1 D", "[3]");
  b.sink("sink", "str");
  SimResult r = b.run();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(format_beats(r.recorded.at("sink")), tiles(2) + "S1 " + tiles(2) + "S1 " + tiles(2) + "S2 D");
  // Reference visible at 1 + 2 + 1 = 4; tile k (k = 0..5) sent at 4 + k + 1, visible one later.
  const uint64_t ref_at = kSend + 2 + kSend;
  std::vector<uint64_t> expect;
  for (uint64_t k = 0; k < 6; ++k) expect.push_back(ref_at + (k + 1) + kSend);
  EXPECT_EQ(element_times(r, "sink"), expect);
  EXPECT_EQ(r.cycles, ref_at + 6 + kSend);  // 11
}

// ---------------------------------------------------------------- shape operators

TEST(RepeatTiming, CopiesAreSentAtTThroughTPlusCountMinusOne) {
  GraphBuilder b;
  b.source("src", kT + " S1 D").node("rep", "Repeat", {{"count", "4"}}, {{"in", "src"}}).sink("sink", "rep");
  SimResult r = b.run();
  ASSERT_TRUE(r.ok) << r.error;
  const uint64_t t = kSend;  // arrival
  EXPECT_EQ(element_times(r, "sink"),
            (std::vector<uint64_t>{t + 0 + kSend, t + 1 + kSend, t + 2 + kSend, t + 3 + kSend}));
  EXPECT_EQ(finish_of(r, "rep"), t + 4);  // advances count cycles
}

// Source (3 beats, one per cycle) -> Flatten -> Promote(rank 0) -> Flatten -> Sink.
SimResult shape_chain(const HardwareParams& hw) {
  GraphBuilder b;
  b.source("src", "1 2 S1 3 S2 D")
      .node("flat", "Flatten", {{"min", "0"}, {"max", "1"}}, {{"in", "src"}})
      .node("prom", "Promote", {{"rank", "0"}}, {{"in", "flat"}})
      .node("flat2", "Flatten", {{"min", "0"}, {"max", "1"}}, {{"in", "prom"}})
      .sink("sink", "flat2");
  return b.run(hw);
}

TEST(ShapeOpTiming, ZeroCyclesByDefaultOneCycleWithShapeOpLatency) {
  SimResult r = shape_chain(artifact());
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(format_beats(r.recorded.at("sink")), "1 2 3 S1 D");
  // Three beats sent at 0, 1, 2; three hops of 0 cycles + the send latency each.
  const uint64_t hops = 3;  // Flatten, Promote, Flatten
  EXPECT_EQ(element_times(r, "sink"),
            (std::vector<uint64_t>{0 + kSend + hops * kSend, 1 + kSend + hops * kSend, 2 + kSend + hops * kSend}));
  EXPECT_EQ(r.cycles, 2 + kSend + hops * kSend);  // 6

  SimResult l = shape_chain(with(artifact(), "shape_op_latency", "1"));
  ASSERT_TRUE(l.ok) << l.error;
  // Each shape op now spends 1 cycle per beat (after dequeuing it); one beat per cycle still flows.
  const uint64_t lat = 1;
  EXPECT_EQ(element_times(l, "sink"),
            (std::vector<uint64_t>{0 + kSend + hops * (lat + kSend), 1 + kSend + hops * (lat + kSend),
                                   2 + kSend + hops * (lat + kSend)}));
  EXPECT_EQ(l.cycles, 2 + kSend + hops * (lat + kSend));  // 9
}

// Flatten runs as a step function (StepOp, no fiber): behind a slow consumer it holds the beat
// that found its output full and sends it when the slot frees, with the stall a blocking send
// has. Source (4 tiles at once) -> Flatten (depth-1 output) -> Map (8 cycles) -> Sink.
TEST(ShapeOpTiming, FlattenBehindASlowConsumerStallsLikeABlockingSend) {
  GraphBuilder b;
  b.source("src", tiles(4) + "D", 0)
      .node("flat", "Flatten", {{"min", "0"}, {"max", "0"}}, {{"in", "src"}}, 1)
      .node("map", "Map", {{"fn", "silu"}}, {{"in0", "flat"}}, std::nullopt, 1024)
      .sink("sink", "map");
  SimResult r = b.run();
  ASSERT_TRUE(r.ok) << r.error;
  const uint64_t comp = ceil_div(kSiluFlops, 1024);  // 8
  // Tile 0 reaches the Map at 2 (two hops). Tile k >= 1 waits in the Flatten until the Map has
  // dequeued tile k-1 (after computing it) + the response latency, then takes one more hop.
  const uint64_t period = comp + kResponse + kSend;  // 10
  std::vector<uint64_t> sink(4);
  for (uint64_t k = 0; k < 4; ++k) sink[k] = 2 * kSend + comp + k * period + kSend;  // 11 21 31 41
  EXPECT_EQ(element_times(r, "sink"), sink);
  // The Map dequeues tile k at d_k = 2 * kSend + comp + k * period. The Flatten sends tile 0 at
  // kSend and tile k >= 1 when the slot tile k-1 held frees, d_{k-1} + kResponse: from kSend on
  // its clock only waits for slots. (The done token rides on tile 3's beat.)
  const uint64_t d2 = 2 * kSend + comp + 2 * period;  // 30
  for (const ChannelResult& c : r.channels)
    if (c.name == "flat.out->map.in0") {
      EXPECT_EQ(c.stats.beats, 4u);
      EXPECT_EQ(c.stats.peak_occupancy, 1u);
      EXPECT_EQ(c.stats.producer_stall_cycles, d2 + kResponse - kSend);  // 30 = 3 periods
    }
  EXPECT_EQ(finish_of(r, "flat"), d2 + kResponse);  // 31: tile 3 (with the done token) sent
}

TEST(ShapeOpTiming, ZipAndFlatMapAddNoCycles) {
  auto run = [](const HardwareParams& hw) {
    GraphBuilder b;
    b.source("a", "T[16x64] S1 D")
        .source("b", "T[16x64] S1 D")
        .node("zip", "Zip", {}, {{"in0", "a"}, {"in1", "b"}})
        .source("c", "T[2x64] S1 D")
        .node("rows", "FlatMap", {{"fn", "retile_streamify_row"}, {"rank", "1"}}, {{"in0", "c"}})
        .sink("zs", "zip")
        .sink("rs", "rows");
    return b.run(hw);
  };
  SimResult r = run(artifact());
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(format_beats(r.recorded.at("zs")), "(T[16x64],T[16x64]) S1 D");
  EXPECT_EQ(format_beats(r.recorded.at("rs")), "T[1x64] T[1x64] S2 D");
  EXPECT_EQ(element_times(r, "zs"), (std::vector<uint64_t>{kSend + 0 + kSend}));
  EXPECT_EQ(element_times(r, "rs"), (std::vector<uint64_t>{kSend + 0 + kSend, kSend + 0 + kSend}));  // FlatMap: 0
  SimResult l = run(with(artifact(), "shape_op_latency", "1"));
  ASSERT_TRUE(l.ok) << l.error;
  EXPECT_EQ(element_times(l, "zs"), (std::vector<uint64_t>{kSend + 1 + kSend}));
  EXPECT_EQ(element_times(l, "rs"), (std::vector<uint64_t>{kSend + 0 + kSend, kSend + 0 + kSend}));  // not a shape op
}

// ---------------------------------------------------------------- channels

TEST(ChannelTiming, SendLatencyIsPaidOnEveryHop) {
  GraphBuilder b;
  b.source("src", tiles(2) + "D").node("map", "Map", {{"fn", "silu"}}, {{"in0", "src"}}).sink("sink", "map");
  const uint64_t comp = ceil_div(kSiluFlops, kComputeBw);  // 2
  SimResult r = b.run(with(artifact(), "send_latency", "3"));
  ASSERT_TRUE(r.ok) << r.error;
  // Tile 1 is visible at 1 + 3 = 4 < 3 + 2 = 5: the Map is the bottleneck.
  EXPECT_EQ(r.cycles, 3 + 2 * comp + 3);  // 10
}

// Source (4 tiles at once) -> A (8 cycles) -> B (8 cycles) -> Sink, depth of A's output varied.
SimResult two_stage(uint32_t depth, const HardwareParams& hw) {
  GraphBuilder b;
  b.source("src", tiles(4) + "D", 0)
      .node("a", "Map", {{"fn", "silu"}}, {{"in0", "src"}}, depth, 1024)
      .node("b", "Map", {{"fn", "silu"}}, {{"in0", "a"}}, std::nullopt, 1024)
      .sink("sink", "b");
  return b.run(hw);
}

TEST(ChannelTiming, DepthOneFifoThrottlesAPipelineDepthTwoDoesNot) {
  const uint64_t comp = ceil_div(kSiluFlops, 1024);  // 8
  const uint64_t n = 4;
  // Depth 2: A's next output always finds a free slot; B is busy back to back.
  SimResult d2 = two_stage(2, artifact());
  ASSERT_TRUE(d2.ok) << d2.error;
  EXPECT_EQ(d2.cycles, kSend + comp + kSend + n * comp + kSend);  // 43
  // Depth 1: A can send element k only once B dequeued k-1 (when B starts on it... B pops after
  // computing) plus the response latency; B then waits the send latency. Period = comp + resp + send.
  SimResult d1 = two_stage(1, artifact());
  ASSERT_TRUE(d1.ok) << d1.error;
  EXPECT_EQ(d1.cycles, kSend + comp + kSend + (n - 1) * (comp + kResponse + kSend) + comp + kSend);  // 49
  // A longer response latency lengthens the period one for one.
  SimResult d1r = two_stage(1, with(artifact(), "response_latency", "3"));
  ASSERT_TRUE(d1r.ok) << d1r.error;
  EXPECT_EQ(d1r.cycles, kSend + comp + kSend + (n - 1) * (comp + 3 + kSend) + comp + kSend);  // 55
  // The stall shows up in the channel statistics.
  for (const ChannelResult& c : d1.channels)
    if (c.name == "a.out->b.in0") {
      EXPECT_EQ(c.params.depth, 1u);
      EXPECT_EQ(c.stats.peak_occupancy, 1u);
      EXPECT_EQ(c.stats.producer_stall_cycles, (n - 1) * (kResponse + kSend));  // 2 per blocked send
    }
}

TEST(ChannelTiming, InputRegisterFreesTheSlotAsTheFiringStarts) {
  // input_register (hdl-validation): B dequeues element k as it starts on it, so A's send of k+1
  // waits only for that start + the response latency, not for B's end: with comp = 8 > resp + send
  // = 2, B works back to back even behind a depth-1 FIFO, the same 43 cycles as depth 2 above.
  const uint64_t comp = ceil_div(kSiluFlops, 1024);  // 8
  const uint64_t n = 4;
  SimResult d1 = two_stage(1, with(artifact(), "input_register", "true"));
  ASSERT_TRUE(d1.ok) << d1.error;
  EXPECT_EQ(d1.cycles, kSend + comp + kSend + n * comp + kSend);  // 43
  // A 1-cycle firing: the depth-1 FIFO then bounds the period at resp + send = 2 cycles (without
  // the register: comp + resp + send = 3). Source (4 tiles at 0) -> A -> B -> Sink, both 1 cycle.
  auto fast = [](const HardwareParams& hw) {
    GraphBuilder b;
    b.source("src", tiles(4) + "D", 0)
        .node("a", "Map", {{"fn", "silu"}}, {{"in0", "src"}}, 1, 8192)
        .node("b", "Map", {{"fn", "silu"}}, {{"in0", "a"}}, std::nullopt, 8192)
        .sink("sink", "b");
    return b.run(hw);
  };
  const uint64_t c1 = ceil_div(kSiluFlops, 8192);  // 1
  SimResult reg = fast(with(artifact(), "input_register", "true"));
  ASSERT_TRUE(reg.ok) << reg.error;
  // Element 0 reaches the sink at send + c1 + send + c1 + send; every later one 2 cycles after.
  const uint64_t first = kSend + c1 + kSend + c1 + kSend;  // 5
  EXPECT_EQ(element_times(reg, "sink"), (std::vector<uint64_t>{first, first + 2, first + 4, first + 6}));
  SimResult ref = fast(artifact());
  ASSERT_TRUE(ref.ok) << ref.error;
  const uint64_t period = c1 + kResponse + kSend;  // 3
  EXPECT_EQ(element_times(ref, "sink"),
            (std::vector<uint64_t>{first, first + period, first + 2 * period, first + 3 * period}));
}

// ---------------------------------------------------------------- Broadcast

// Source -> Broadcast(depth d) -> {Sink fast, Map (8 cycles) -> Sink slow}.
SimResult broadcast_graph(uint32_t depth) {
  GraphBuilder b;
  b.source("src", tiles(4) + "D")
      .node("bc", "Broadcast", {}, {{"in", "src"}}, depth)
      .sink("fast", "bc.out0")
      .node("map", "Map", {{"fn", "silu"}}, {{"in0", "bc.out1"}}, std::nullopt, 1024)
      .sink("slow", "map");
  return b.run();
}

TEST(BroadcastTiming, ZeroCyclesButLockStepWithTheSlowestOutput) {
  const uint64_t comp = ceil_div(kSiluFlops, 1024);  // 8
  {
    SimResult r = broadcast_graph(1);
    ASSERT_TRUE(r.ok) << r.error;
    // Element 0 goes out at once (0 cycles): visible at both ends at 1 + 1 = 2.
    // Element k >= 1 can enter the Map's depth-1 FIFO only when the Map dequeued k-1 (after
    // computing it) + response latency: Map pops element k at P_k = 2 + comp + k*(comp+resp+send).
    std::vector<uint64_t> pop(4), slow(4), fast(4);
    for (uint64_t k = 0; k < 4; ++k) {
      pop[k] = 2 + comp + k * (comp + kResponse + kSend);
      slow[k] = pop[k] + kSend;
    }
    // Lock-step: the fast output gets element k only after element k-1 went to the Map.
    fast[0] = 2;
    fast[1] = 2 + kResponse + kSend;  // waits only for the fast Sink's own slot (freed at 2 + 1)
    for (uint64_t k = 2; k < 4; ++k) fast[k] = pop[k - 2] + kResponse + kSend;
    EXPECT_EQ(element_times(r, "slow"), slow);          // 11 21 31 41
    EXPECT_EQ(element_times(r, "fast"), fast);          // 2 4 12 22
    EXPECT_EQ(finish_of(r, "bc"), pop[2] + kResponse);  // last element sent once the Map freed slot 2
  }
  {
    SimResult r = broadcast_graph(2);
    ASSERT_TRUE(r.ok) << r.error;
    // Depth 2 hides the response and send latency: the Map runs back to back.
    std::vector<uint64_t> slow(4);
    for (uint64_t k = 0; k < 4; ++k) slow[k] = 2 + (k + 1) * comp + kSend;  // 11 19 27 35
    EXPECT_EQ(element_times(r, "slow"), slow);
    // Element 3 needs a slot of the Map's FIFO: freed when the Map dequeues element 0 (at 10) + 1.
    EXPECT_EQ(element_times(r, "fast"), (std::vector<uint64_t>{2, 3, 4, 2 + comp + kResponse + kSend}));
  }
}

// ---------------------------------------------------------------- routing

TEST(PartitionTiming, SwitchCyclePerElementPlusReadAndWriteTerms) {
  {  // FIFO data: 1 switch cycle per routed element, multi-hot copies in the same cycle. (A deeper
     // data FIFO: Partition holds an element's slot while it switches, which with depth 2 would
     // delay the Source's third beat by the response latency.)
    GraphBuilder b;
    b.source("data", tiles(3) + "S1 D", 1, /*depth=*/4)
        .source("sel", "{0} {1} {0,1} S1 D")
        .node("part", "Partition", {{"rank", "0"}}, {{"in", "data"}, {"sel", "sel"}})
        .sink("s0", "part.out0")
        .sink("s1", "part.out1");
    SimResult r = b.run();
    ASSERT_TRUE(r.ok) << r.error;
    // Selector k and element k are both visible at 1 + k; the element is sent kSwitch later.
    auto at = [](uint64_t k) { return kSend + k + kSwitch + kSend; };
    EXPECT_EQ(element_times(r, "s0"), (std::vector<uint64_t>{at(0), at(2)}));
    EXPECT_EQ(element_times(r, "s1"), (std::vector<uint64_t>{at(1), at(2)}));
    EXPECT_EQ(format_beats(r.recorded.at("s0")), tiles(2) + "D");
  }
  {  // Same with the default depth 2: Partition dequeues element 0 only after its switch cycle (at
     // 2), so the Source's third beat finds a free slot at 2 + response latency = 3 (visible 4).
    GraphBuilder b;
    b.source("data", tiles(3) + "S1 D")
        .source("sel", "{0} {1} {0,1} S1 D")
        .node("part", "Partition", {{"rank", "0"}}, {{"in", "data"}, {"sel", "sel"}})
        .sink("s0", "part.out0")
        .sink("s1", "part.out1");
    SimResult r = b.run();
    ASSERT_TRUE(r.ok) << r.error;
    const uint64_t third_visible = (kSend + kSwitch) + kResponse + kSend;  // 4
    EXPECT_EQ(element_times(r, "s0"), (std::vector<uint64_t>{3, third_visible + kSwitch + kSend}));
    EXPECT_EQ(element_times(r, "s1"), (std::vector<uint64_t>{4, third_visible + kSwitch + kSend}));
  }
  {  // Data replayed from a memory unit: + ld per element.
    GraphBuilder b;
    buffered(b, "data", tiles(2) + "S1 D");
    b.source("sel", "{1} {0} S1 D")
        .node("part", "Partition", {{"rank", "0"}}, {{"in", "data"}, {"sel", "sel"}})
        .sink("s0", "part.out0")
        .sink("s1", "part.out1");
    SimResult r = b.run();
    ASSERT_TRUE(r.ok) << r.error;
    const uint64_t ld = ceil_div(kTileBytes, kOnchipBw);   // 32
    const uint64_t first = kSend + 2 + kSend + 1 + kSend;  // Streamify's tile 0 visible at 6
    EXPECT_EQ(element_times(r, "s1"), (std::vector<uint64_t>{first + ld + kSwitch + kSend}));        // 40
    EXPECT_EQ(element_times(r, "s0"), (std::vector<uint64_t>{first + 2 * (ld + kSwitch) + kSend}));  // 73
  }
  {  // Output 0 feeds a Bufferize: + st per element routed there.
    GraphBuilder b;
    b.source("data", tiles(2) + "S1 " + tiles(2) + "S2 D")
        .source("sel", "{0} {0} S1 D")
        .node("part", "Partition", {{"rank", "1"}}, {{"in", "data"}, {"sel", "sel"}})
        .node("buf", "Bufferize", {{"rank", "1"}}, {{"in", "part.out0"}})
        .sink("s0", "buf")
        .sink("s1", "part.out1");
    SimResult r = b.run();
    ASSERT_TRUE(r.ok) << r.error;
    const uint64_t st = ceil_div(kTileBytes, kOnchipBw);  // 32
    const uint64_t per = kSwitch + st;                    // 33 per element
    EXPECT_EQ(element_times(r, "s0"), (std::vector<uint64_t>{kSend + 2 * per + kSend + 1 + kSend,
                                                             kSend + 4 * per + kSend + 1 + kSend}));  // 70 136
    EXPECT_EQ(format_beats(r.recorded.at("s1")), "D");
  }
}

TEST(ParallelizeTiming, ZeroCyclesElementsVisibleSwitchCyclesLater) {
  GraphBuilder b;
  b.source("src", tiles(4) + "S1 D")
      .node("par", "Parallelize", {{"rank", "0"}}, {{"in", "src"}})
      .sink("s0", "par.out0")
      .sink("s1", "par.out1");
  SimResult r = b.run();
  ASSERT_TRUE(r.ok) << r.error;
  // Element k arrives at 1 + k and is stamped now + kSwitch (+ the send latency).
  auto at = [](uint64_t k) { return kSend + k + kSwitch + kSend; };
  EXPECT_EQ(element_times(r, "s0"), (std::vector<uint64_t>{at(0), at(2)}));
  EXPECT_EQ(element_times(r, "s1"), (std::vector<uint64_t>{at(1), at(3)}));
  for (const NodeResult& n : r.nodes)
    if (n.name == "par") {
      EXPECT_EQ(n.busy_cycles, 0u);  // no self-advance
    }
}

TEST(RoutingTiming, RoutingSwitchCyclesIsAParameter) {
  const HardwareParams hw = with(artifact(), "routing_switch_cycles", "3");
  const uint64_t sw = 3;
  {  // Partition: a throughput cost, sw cycles per routed element.
    GraphBuilder b;
    b.source("data", tiles(3) + "S1 D", 1, 4)
        .source("sel", "{0} {0} {0} S1 D")
        .node("part", "Partition", {{"rank", "0"}}, {{"in", "data"}, {"sel", "sel"}})
        .sink("s0", "part.out0")
        .sink("s1", "part.out1");
    SimResult r = b.run(hw);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(element_times(r, "s0"),
              (std::vector<uint64_t>{kSend + 1 * sw + kSend, kSend + 2 * sw + kSend, kSend + 3 * sw + kSend}));
  }
  {  // Parallelize: a latency only (stamped now + sw), one element per cycle still.
    GraphBuilder b;
    b.source("src", tiles(2) + "S1 D").node("par", "Parallelize", {{"rank", "0"}}, {{"in", "src"}});
    b.sink("s0", "par.out0").sink("s1", "par.out1");
    SimResult r = b.run(hw);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(element_times(r, "s0"), (std::vector<uint64_t>{kSend + 0 + sw + kSend}));
    EXPECT_EQ(element_times(r, "s1"), (std::vector<uint64_t>{kSend + 1 + sw + kSend}));
  }
  {  // Reassemble: released at max(now, arrival + sw).
    GraphBuilder b;
    b.source("in0", "T[16x64] T[16x64] S1 D")
        .source("in1", "T[8x64] S1 D")
        .source("sel", "{0,1} D")
        .node("re", "Reassemble", {{"rank", "1"}}, {{"in0", "in0"}, {"in1", "in1"}, {"sel", "sel"}}, 4)
        .sink("out", "re");
    SimResult r = b.run(hw);
    ASSERT_TRUE(r.ok) << r.error;
    const uint64_t e0 = 1 + sw, e1 = std::max<uint64_t>(e0, 2 + sw), f0 = std::max<uint64_t>(e1, 1 + sw);
    EXPECT_EQ(element_times(r, "out"), (std::vector<uint64_t>{e0 + kSend, e1 + kSend, f0 + kSend}));  // 5 6 6
  }
}

TEST(EagerMergeTiming, ZeroLatencyOneElementPerCycle) {
  GraphBuilder b;
  b.source("a", tiles(3) + "S1 D", 0).source("b", "T[8x64] S1 D", 0);
  b.node("merge", "EagerMerge", {{"rank", "1"}}, {{"in0", "a"}, {"in1", "b"}})
      .sink("out", "merge.out")
      .sink("sel", "merge.sel");
  SimResult r = b.run();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(format_beats(r.recorded.at("out")), tiles(3) + "S1 T[8x64] S1 D");
  EXPECT_EQ(format_beats(r.recorded.at("sel")), "{0} {1} D");
  // Everything is visible at 1 (the Source offers two beats at 0; the third once a slot frees at
  // 1 + resp = 2, visible 3). Element j of the merged stream leaves at max(arrival, 1 + j).
  EXPECT_EQ(element_times(r, "out"), (std::vector<uint64_t>{1 + kSend, 2 + kSend, 3 + kSend, 4 + kSend}));
  EXPECT_EQ(element_times(r, "sel"), (std::vector<uint64_t>{1 + kSend, 4 + kSend}));
}

TEST(EagerMergeTiming, NoMemoryUnitTermsOneElementPerCycleWhateverTheTileSize) {
  // The reference's EagerMerge(inputs, input_rank) has no read/write-back terms (unlike
  // FlatPartition/FlatReassemble): tiles replayed from a memory unit, merged into a Bufferize,
  // still pass at one element per cycle; the read is paid by whoever computes on them.
  GraphBuilder b;
  buffered(b, "str", tiles(2) + "S1 D");
  b.source("none", "D")
      .node("merge", "EagerMerge", {{"rank", "1"}}, {{"in0", "str"}, {"in1", "none"}})
      .node("buf", "Bufferize", {{"rank", "1"}}, {{"in", "merge.out"}})
      .sink("out", "buf")
      .sink("sel", "merge.sel");
  b.static_check = false;  // "none" is an empty literal ("D"), of no rank the static check can know
  SimResult r = b.run();
  ASSERT_TRUE(r.ok) << r.error;
  const uint64_t first = kSend + 2 + kSend + 1 + kSend;  // Streamify's tile 0 visible at 6, tile 1 at 7
  EXPECT_EQ(finish_of(r, "merge"), first + 2);           // two elements, one cycle each
  EXPECT_EQ(element_times(r, "sel"), (std::vector<uint64_t>{first + kSend}));
  // Bufferize: tiles visible at 7 and 8, 1 cycle each; the reference leaves at 9, visible at 10.
  EXPECT_EQ(element_times(r, "out"), (std::vector<uint64_t>{first + 1 + kSend + 1 + kSend}));
}

}  // namespace
}  // namespace stepsim
