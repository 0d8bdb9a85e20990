// Arrival-order decisions in model time (architecture.md §4): Reassemble serves the selected
// inputs in the order their chunks arrive and never interleaves two chunks (paper v2 Fig. 4:
// selector {0,7}, input 7 first); EagerMerge forwards whole chunks in arrival order and names the
// source (v2 Fig. 4 inputs: W->Y->X->Z or Y->W->X->Z). Inputs are delayed with slow Maps, so every
// arrival time below follows from the Map rule (silu = 8 FLOPs/element; [16x64] = 8192 FLOPs).
//
// Reassemble timing (reference-simulator-notes.md §3, FlatReassemble): each element is released
// at max(now, arrival + routing_switch_cycles + ld) + st.
#include "graph_builder.h"

namespace stepsim {
namespace {
using namespace test;

constexpr uint64_t kSilu = 8 * 16 * 64;  // FLOPs of silu on a [16x64] tile

// Arrival (visible time at the consumer) of tile k of a Source (one beat per cycle from 0) that
// passes through a Map of `per_tile` cycles.
uint64_t through_map(uint64_t k, uint64_t per_tile) { return kSend + (k + 1) * per_tile + kSend; }

TEST(ReassembleTiming, ElementsReleasedAtArrivalPlusSwitchCycles) {
  GraphBuilder b;
  b.source("in0", "T[16x64] T[16x64] S1 D")
      .source("in1", "T[8x64] S1 D")
      .source("sel", "{0,1} D")
      .node("re", "Reassemble", {{"rank", "1"}}, {{"in0", "in0"}, {"in1", "in1"}, {"sel", "sel"}}, /*depth=*/4)
      .sink("out", "re");
  SimResult r = b.run();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(format_beats(r.recorded.at("out")), "T[16x64] T[16x64] S1 T[8x64] S2 D");
  // Input 0 wins the tie at 1. Its elements arrive at 1 and 2; input 1's at 1.
  const uint64_t e0 = std::max<uint64_t>(1, 1 + kSwitch);   // 2
  const uint64_t e1 = std::max<uint64_t>(e0, 2 + kSwitch);  // 3
  const uint64_t f0 = std::max<uint64_t>(e1, 1 + kSwitch);  // 3: the switch overlapped the wait
  EXPECT_EQ(element_times(r, "out"), (std::vector<uint64_t>{e0 + kSend, e1 + kSend, f0 + kSend}));
}

// in0: a [16x64] tile replayed from a memory unit (Streamify), in1: a [8x64] tile from a FIFO.
SimResult reassemble_mu(bool into_bufferize) {
  GraphBuilder b;
  b.source("a_src", "T[16x64] S1 D")
      .node("a_buf", "Bufferize", {{"rank", "1"}}, {{"in", "a_src"}})
      .node("a", "Streamify", {}, {{"in", "a_buf"}})
      .source("in1", "T[8x64] S1 D")
      .source("sel", "{0,1} D")
      .node("re", "Reassemble", {{"rank", "1"}}, {{"in0", "a"}, {"in1", "in1"}, {"sel", "sel"}});
  if (into_bufferize) {
    b.node("buf", "Bufferize", {{"rank", "2"}}, {{"in", "re"}}).sink("out", "buf");
  } else {
    b.sink("out", "re");
  }
  return b.run();
}

TEST(ReassembleTiming, ReadTermForMemoryUnitTilesWriteTermIntoABufferize) {
  const uint64_t a_arrival = kSend + 1 + kSend + 1 + kSend;       // Bufferize 1 cycle, Streamify 1: 5
  const uint64_t ld_a = ceil_div(bf16_bytes(16, 64), kOnchipBw);  // 32
  const uint64_t st_a = ceil_div(bf16_bytes(16, 64), kOnchipBw);  // 32
  const uint64_t st_b = ceil_div(bf16_bytes(8, 64), kOnchipBw);   // 16
  {
    SimResult r = reassemble_mu(false);
    ASSERT_TRUE(r.ok) << r.error;
    // The FIFO input (arrival 1) goes first although the selector names input 0 first.
    EXPECT_EQ(format_beats(r.recorded.at("out")), "T[8x64] S1 T[16x64] S2 D");
    const uint64_t b0 = std::max<uint64_t>(1, 1 + kSwitch + 0);              // 2
    const uint64_t a0 = std::max<uint64_t>(b0, a_arrival + kSwitch + ld_a);  // 38
    EXPECT_EQ(element_times(r, "out"), (std::vector<uint64_t>{b0 + kSend, a0 + kSend}));
  }
  {
    SimResult r = reassemble_mu(true);
    ASSERT_TRUE(r.ok) << r.error;
    const uint64_t b0 = std::max<uint64_t>(1, 1 + kSwitch) + st_b;                  // 18
    const uint64_t a0 = std::max<uint64_t>(b0, a_arrival + kSwitch + ld_a) + st_a;  // 70
    EXPECT_EQ(finish_of(r, "re"), a0);
    // Bufferize: 1 cycle for the last tile, then the reference.
    EXPECT_EQ(r.recorded_times.at("out").front(), a0 + kSend + 1 + kSend);  // 73
  }
}

TEST(ReassembleOrder, LaterSelectedInputThatArrivesFirstGoesFirst) {
  const uint64_t slow = ceil_div(kSilu, 256);  // 32 cycles per tile on input 0
  GraphBuilder b;
  b.source("a", "T[16x64] T[16x64] S1 D")
      .node("slow", "Map", {{"fn", "silu"}}, {{"in0", "a"}}, std::nullopt, 256)
      .source("fast", "T[8x64] T[8x64] T[8x64] S1 D", 1, /*depth=*/4)  // no back-pressure on the Source
      .source("sel", "{0,1} D")
      .node("re", "Reassemble", {{"rank", "1"}}, {{"in0", "slow"}, {"in1", "fast"}, {"sel", "sel"}})
      .sink("out", "re");
  SimResult r = b.run();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(format_beats(r.recorded.at("out")), "T[8x64] T[8x64] T[8x64] S1 T[16x64] T[16x64] S2 D");
  // Input 1 arrives at 1, 2, 3; input 0 at 34 and 66.
  std::vector<uint64_t> expect;
  uint64_t now = 1;  // the selector arrives at 1
  for (uint64_t k = 0; k < 3; ++k) expect.push_back((now = std::max(now, kSend + k + kSwitch)) + kSend);
  for (uint64_t k = 0; k < 2; ++k) expect.push_back((now = std::max(now, through_map(k, slow) + kSwitch)) + kSend);
  EXPECT_EQ(element_times(r, "out"), expect);  // 3 4 5 36 68
}

TEST(ReassembleOrder, ReverseDelaysReverseTheOrder) {
  const uint64_t slow = ceil_div(kSilu, 256);  // 32
  GraphBuilder b;
  b.source("fast", "T[8x64] T[8x64] T[8x64] S1 D")
      .source("a", "T[16x64] T[16x64] S1 D")
      .node("slow", "Map", {{"fn", "silu"}}, {{"in0", "a"}}, std::nullopt, 256)
      .source("sel", "{0,1} D")
      .node("re", "Reassemble", {{"rank", "1"}}, {{"in0", "fast"}, {"in1", "slow"}, {"sel", "sel"}})
      .sink("out", "re");
  SimResult r = b.run();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(format_beats(r.recorded.at("out")), "T[8x64] T[8x64] T[8x64] S1 T[16x64] T[16x64] S2 D");
  EXPECT_EQ(element_times(r, "out").back(), through_map(1, slow) + kSwitch + kSend);  // 68
}

TEST(ReassembleOrder, NoInterleavingOnceAChunkStarted) {
  // Input 0's chunk starts first (34) but its tiles trickle in (34, 66, 98); input 1's whole
  // chunk is there at 42 and still waits for input 0's S1.
  const uint64_t slow = ceil_div(kSilu, 256);   // 32
  const uint64_t other = ceil_div(kSilu, 205);  // 40
  GraphBuilder b;
  b.source("a", "T[16x64] T[16x64] T[16x64] S1 D")
      .node("a_map", "Map", {{"fn", "silu"}}, {{"in0", "a"}}, std::nullopt, 256)
      .source("c", "T[16x64:fp32] S1 D")
      .node("c_map", "Map", {{"fn", "silu"}}, {{"in0", "c"}}, std::nullopt, 205)
      .source("sel", "{0,1} D")
      .node("re", "Reassemble", {{"rank", "1"}}, {{"in0", "a_map"}, {"in1", "c_map"}, {"sel", "sel"}})
      .sink("out", "re");
  b.static_check = false;  // bf16 and fp32 tiles reassembled on purpose, to tell the inputs apart
  SimResult r = b.run();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(format_beats(r.recorded.at("out")), "T[16x64] T[16x64] T[16x64] S1 T[16x64:fp32] S2 D");
  const uint64_t c_arrival = kSend + other + kSend;  // 42 < 66: ready in the middle of input 0's chunk
  EXPECT_LT(c_arrival, through_map(1, slow));
  const uint64_t last_a = through_map(2, slow) + kSwitch;  // 99
  EXPECT_EQ(element_times(r, "out"),
            (std::vector<uint64_t>{through_map(0, slow) + kSwitch + kSend, through_map(1, slow) + kSwitch + kSend,
                                   last_a + kSend, std::max(last_a, c_arrival + kSwitch) + kSend}));
}

// The paper's example (v2 Fig. 4): selector {0,7} over 8 inputs, input 7 ready first.
SimResult paper_0_7(bool seven_first) {
  GraphBuilder b;
  const std::string fast = "T[8x64] S1 D", slow_data = "T[16x64] S1 D";
  b.source("a", slow_data).node("slow", "Map", {{"fn", "silu"}}, {{"in0", "a"}}, std::nullopt, 256);
  b.source("f", fast);
  std::map<std::string, std::string> ins{{"sel", "sel"}};
  for (int i = 1; i <= 6; ++i) {
    b.source("e" + std::to_string(i), "D");
    ins["in" + std::to_string(i)] = "e" + std::to_string(i);
  }
  ins["in0"] = seven_first ? "slow" : "f";
  ins["in7"] = seven_first ? "f" : "slow";
  b.source("sel", "{0,7} {} S1 D").node("re", "Reassemble", {{"rank", "1"}}, ins).sink("out", "re");
  b.static_check = false;  // inputs 1..6 are empty literals ("D"), of no rank the static check can know
  return b.run();
}

TEST(ReassembleOrder, PaperSelector0And7WithInput7First) {
  const uint64_t slow = ceil_div(kSilu, 256);
  SimResult r = paper_0_7(true);
  ASSERT_TRUE(r.ok) << r.error;
  // Group {0,7}: input 7's chunk, then input 0's; group {}: empty. The selector's S1 closes S3.
  EXPECT_EQ(format_beats(r.recorded.at("out")), "T[8x64] S1 T[16x64] S2 S3 D");
  EXPECT_EQ(element_times(r, "out"),
            (std::vector<uint64_t>{kSend + kSwitch + kSend, through_map(0, slow) + kSwitch + kSend}));  // 3 36
  SimResult z = paper_0_7(false);
  ASSERT_TRUE(z.ok) << z.error;
  EXPECT_EQ(format_beats(z.recorded.at("out")), "T[8x64] S1 T[16x64] S2 S3 D");  // now input 0 is the fast one
}

TEST(ReassembleOrder, EachSelectorGroupFollowsItsOwnArrivals) {
  // Group 1: input 1 (arrives 1) before input 0 (34). Group 2: input 0 (66) before input 1 (101).
  const uint64_t slow = ceil_div(kSilu, 256);  // 32
  GraphBuilder b;
  b.source("a", "T[16x64] S1 T[16x64] S1 D")
      .node("slow", "Map", {{"fn", "silu"}}, {{"in0", "a"}}, std::nullopt, 256)
      .source("late", "T[8x64] S1 T[8x64] S1 D", /*interval=*/100)
      .source("sel", "{0,1} {0,1} D")
      .node("re", "Reassemble", {{"rank", "1"}}, {{"in0", "slow"}, {"in1", "late"}, {"sel", "sel"}})
      .sink("out", "re");
  SimResult r = b.run();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(format_beats(r.recorded.at("out")), "T[8x64] S1 T[16x64] S2 T[16x64] S1 T[8x64] S2 D");
  uint64_t now = 1;
  std::vector<uint64_t> expect;
  for (uint64_t arrival : {kSend, through_map(0, slow), through_map(1, slow), 100 + kSend})
    expect.push_back((now = std::max(now, arrival + kSwitch)) + kSend);
  EXPECT_EQ(element_times(r, "out"), expect);  // 3 36 68 103
}

// EagerMerge over input 0 = W, X and input 1 = Y, Z (distinguished by dtype), each input
// optionally slowed by a Map; Sources emit one chunk every `interval` cycles.
SimResult eager(uint64_t w_delay_bw, uint64_t interval0, uint64_t interval1) {
  GraphBuilder b;
  b.source("wx", "T[16x64] S1 T[16x64] S1 D", interval0);
  std::string in0 = "wx";
  if (w_delay_bw) {
    b.node("wx_map", "Map", {{"fn", "silu"}}, {{"in0", "wx"}}, std::nullopt, w_delay_bw);
    in0 = "wx_map";
  }
  b.source("yz", "T[16x64:fp32] S1 T[16x64:fp32] S1 D", interval1)
      .node("yz_map", "Map", {{"fn", "silu"}}, {{"in0", "yz"}}, std::nullopt, 2048)
      .node("merge", "EagerMerge", {{"rank", "1"}}, {{"in0", in0}, {"in1", "yz_map"}})
      .sink("out", "merge.out")
      .sink("sel", "merge.sel");
  b.static_check = false;  // bf16 and fp32 tiles merged on purpose, to tell the inputs apart
  return b.run();
}

const std::string W = "T[16x64]", Y = "T[16x64:fp32]";

TEST(EagerMergeOrder, PaperExampleWYXZ) {
  SimResult r = eager(0, 10, 20);
  ASSERT_TRUE(r.ok) << r.error;
  // W visible at 1, X at 10 + 1; Y at 1 + 4 + 1 = 6 (silu at 2048 FLOPs/cycle), Z at 20 + 1 + 4 + 1.
  const uint64_t w = kSend, x = 10 + kSend, y = kSend + ceil_div(kSilu, 2048) + kSend,
                 z = 20 + kSend + ceil_div(kSilu, 2048) + kSend;
  EXPECT_EQ(format_beats(r.recorded.at("out")), W + " S1 " + Y + " S1 " + W + " S1 " + Y + " S1 D");
  EXPECT_EQ(format_beats(r.recorded.at("sel")), "{0} {1} {0} {1} D");
  // 0-cycle latency: each chunk leaves when it arrives (one element per cycle, never earlier).
  EXPECT_EQ(element_times(r, "out"), (std::vector<uint64_t>{w + kSend, y + kSend, x + kSend, z + kSend}));
  EXPECT_EQ(element_times(r, "sel"), element_times(r, "out"));
}

TEST(EagerMergeOrder, PaperExampleYWXZ) {
  SimResult r = eager(1024, 10, 20);  // W and X now take 8 cycles each
  ASSERT_TRUE(r.ok) << r.error;
  const uint64_t w = kSend + 8 + kSend, x = std::max<uint64_t>(10 + kSend, w - kSend) + 8 + kSend,
                 y = kSend + 4 + kSend, z = 20 + kSend + 4 + kSend;
  EXPECT_EQ(format_beats(r.recorded.at("out")), Y + " S1 " + W + " S1 " + W + " S1 " + Y + " S1 D");
  EXPECT_EQ(format_beats(r.recorded.at("sel")), "{1} {0} {0} {1} D");
  EXPECT_EQ(element_times(r, "out"),
            (std::vector<uint64_t>{y + kSend, w + kSend, x + kSend, z + kSend}));  // 7 11 21 27
}

TEST(EagerMergeOrder, SimultaneousArrivalsTieToTheLowestInput) {
  GraphBuilder b;
  b.source("a", "T[8x64] S1 D").source("c", "T[4x64] S1 D");
  b.node("merge", "EagerMerge", {{"rank", "1"}}, {{"in0", "c"}, {"in1", "a"}})
      .sink("out", "merge.out")
      .sink("sel", "merge.sel");
  SimResult r = b.run();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(format_beats(r.recorded.at("out")), "T[4x64] S1 T[8x64] S1 D");
  EXPECT_EQ(format_beats(r.recorded.at("sel")), "{0} {1} D");
  EXPECT_EQ(element_times(r, "out"), (std::vector<uint64_t>{kSend + kSend, kSend + 1 + kSend}));  // 1 element/cycle
}

}  // namespace
}  // namespace stepsim
