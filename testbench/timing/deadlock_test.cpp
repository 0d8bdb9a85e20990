// Deadlock detection (architecture.md §4): a graph that stops making progress returns ok=false
// with a message naming the blocked operators and channels (full/empty) instead of hanging; the
// message lists the blocked frontier first, is capped, and does not depend on elaboration order.
// Cyclic graphs are legal: a feedback loop that terminates must finish.
#include "graph_builder.h"

namespace stepsim {
namespace {
using namespace test;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

size_t count_lines(const std::string& s, const std::string& prefix) {
  size_t n = 0, pos = 0;
  while ((pos = s.find("\n" + prefix, pos)) != std::string::npos) {
    ++n;
    ++pos;
  }
  return n;
}

TEST(Deadlock, TwoMapsFeedingEachOtherWithoutAnInitialToken) {
  GraphBuilder b;
  b.node("ping", "Map", {{"fn", "silu"}}, {{"in0", "pong"}}).node("pong", "Map", {{"fn", "silu"}}, {{"in0", "ping"}});
  SimResult r = b.run();
  ASSERT_FALSE(r.ok);
  EXPECT_TRUE(has(r.error, "deadlock")) << r.error;
  EXPECT_TRUE(has(r.error, "2 of 2 operators are blocked")) << r.error;
  EXPECT_TRUE(has(r.error, "node 'ping' (Map) at cycle 0 waits for data on 'pong.out->ping.in0' (empty)")) << r.error;
  EXPECT_TRUE(has(r.error, "node 'pong' (Map) at cycle 0 waits for data on 'ping.out->pong.in0' (empty)")) << r.error;
  EXPECT_TRUE(has(r.error, "wait-for cycle: 'ping' -(empty)-> 'pong' -(empty)-> 'ping'")) << r.error;
}

// Broadcast (depth 1) feeds both inputs of a Zip; one copy goes through Bufferize -> Streamify,
// which needs the whole row before it emits anything. The direct copy fills its one slot, the
// Zip waits for the other input, the Broadcast cannot send the second element: deadlock.
Graph zip_after_broadcast(uint32_t depth) {
  GraphBuilder b;
  b.source("src", "1 2 3 S1 D")
      .node("bc", "Broadcast", {}, {{"in", "src"}}, depth)
      .node("buf", "Bufferize", {{"rank", "1"}}, {{"in", "bc.out1"}})
      .node("replay", "Streamify", {}, {{"in", "buf"}})
      .node("zip", "Zip", {}, {{"in0", "bc.out0"}, {"in1", "replay"}})
      .sink("sink", "zip");
  return b.g;
}

TEST(Deadlock, ZipAfterBroadcastWithUnequalConsumptionNamesTheFullChannelFirst) {
  SimOptions opt;
  opt.hw = artifact();
  SimResult r = simulate(zip_after_broadcast(1), opt);
  ASSERT_FALSE(r.ok);
  const std::string& e = r.error;
  // The first listed operator is the one stuck on a full channel, with the channel and its fill.
  // (The second element is visible to the Broadcast at 1 + send latency = 2.)
  const std::string first = "\n  node 'bc' (Broadcast) at cycle 2 waits for space on 'bc.out0->zip.in0' (full, 1/1)";
  EXPECT_EQ(e.find(first), e.find("\n  node ")) << e;
  EXPECT_TRUE(has(e, "consumer 'zip' does not dequeue")) << e;
  EXPECT_TRUE(has(e, "node 'buf' (Bufferize)")) << e;
  EXPECT_TRUE(has(e, "waits for data on 'bc.out1->buf.in' (empty); producer 'bc' is blocked too")) << e;
  EXPECT_TRUE(has(e, "node 'zip' (Zip)")) << e;
  EXPECT_TRUE(has(e, "'replay.out->zip.in1' (empty)")) << e;
  EXPECT_TRUE(has(e, "wait-for cycle: 'bc' -(full)-> 'zip' -(empty)-> 'replay' -(empty)-> 'buf' -(empty)-> 'bc'")) << e;
  // The finished Source is not listed; the Sink waits on a Zip that is itself blocked.
  EXPECT_FALSE(has(e, "node 'src'")) << e;
  EXPECT_TRUE(has(e, "5 of 6 operators are blocked")) << e;
  // With one more slot the direct copy can wait for the whole row: 3 elements need depth 3.
  SimResult ok = simulate(zip_after_broadcast(3), opt);
  EXPECT_TRUE(ok.ok) << ok.error;
  EXPECT_EQ(format_beats(ok.recorded.at("sink")), "(1,1) (2,2) (3,3) S1 D");
}

// The same deadlock with a Flatten (a step function without a fiber, StepOp) on the direct
// path: it is reported like a blocked operator, holding the beat that found its output full.
// The direct path holds 3 elements (Broadcast's slot, the Flatten, its slot); the row has 4.
TEST(Deadlock, AStepFunctionOperatorIsReportedLikeABlockedOne) {
  GraphBuilder b;
  b.source("src", "1 2 3 4 S1 D")
      .node("bc", "Broadcast", {}, {{"in", "src"}}, 1)
      .node("flat", "Flatten", {{"min", "0"}, {"max", "0"}}, {{"in", "bc.out0"}}, 1)
      .node("buf", "Bufferize", {{"rank", "1"}}, {{"in", "bc.out1"}})
      .node("replay", "Streamify", {}, {{"in", "buf"}})
      .node("zip", "Zip", {}, {{"in0", "flat"}, {"in1", "replay"}})
      .sink("sink", "zip");
  SimOptions opt;
  opt.hw = artifact();
  SimResult r = simulate(b.g, opt);
  ASSERT_FALSE(r.ok);
  const std::string& e = r.error;
  // Element k leaves the Source at k. The Flatten dequeues element 1 at 2 * kSend and sends it
  // into its one slot, which the Zip never frees. The Broadcast sends element 2 once that
  // dequeue has freed its own slot (+ kResponse); the Flatten takes it one send latency later
  // and is stuck with it.
  const uint64_t stuck = 2 * kSend + kResponse + kSend;  // 4
  EXPECT_TRUE(has(e, "node 'flat' (Flatten) at cycle " + std::to_string(stuck) +
                         " waits for space on 'flat.out->zip.in0' (full, 1/1)"))
      << e;
  EXPECT_TRUE(has(e, "wait-for cycle: 'bc' -(full)-> 'flat' -(full)-> 'zip' -(empty)-> 'replay'")) << e;
  for (uint64_t seed : {1, 2}) {
    opt.shuffle_seed = seed;
    SimResult s = simulate(b.g, opt);
    ASSERT_FALSE(s.ok);
    EXPECT_EQ(s.error, e) << "seed " << seed;
  }
}

TEST(Deadlock, MessageIsIndependentOfElaborationOrder) {
  SimOptions opt;
  opt.hw = artifact();
  SimResult base = simulate(zip_after_broadcast(1), opt);
  ASSERT_FALSE(base.ok);
  for (uint64_t seed : {1, 2, 3}) {
    opt.shuffle_seed = seed;
    SimResult r = simulate(zip_after_broadcast(1), opt);
    ASSERT_FALSE(r.ok);
    EXPECT_EQ(r.error, base.error) << "seed " << seed;
  }
}

TEST(Deadlock, LongListsAreCappedAtTwentyOperators) {
  // A ring of 30 Maps: every one waits for data from the previous one.
  GraphBuilder b;
  const int n = 30;
  for (int i = 0; i < n; ++i) {
    char name[8], prev[8];
    std::snprintf(name, sizeof name, "m%02d", i);
    std::snprintf(prev, sizeof prev, "m%02d", (i + n - 1) % n);
    b.node(name, "Map", {{"fn", "silu"}}, {{"in0", prev}});
  }
  SimResult r = b.run();
  ASSERT_FALSE(r.ok);
  EXPECT_TRUE(has(r.error, "30 of 30 operators are blocked")) << r.error;
  EXPECT_EQ(count_lines(r.error, "  node '"), 20u) << r.error;
  EXPECT_TRUE(has(r.error, "\n  ... and 10 more blocked operators")) << r.error;
  // Sorted by name: m00 .. m19 are listed, m20 .. m29 are not.
  EXPECT_TRUE(has(r.error, "node 'm00'") && has(r.error, "node 'm19'")) << r.error;
  EXPECT_FALSE(has(r.error, "node 'm20'")) << r.error;
  EXPECT_TRUE(has(r.error, "wait-for cycle: 'm00' -(empty)-> 'm29' -(empty)-> 'm28'")) << r.error;
}

// A legal cycle that terminates: the dynamic-parallelization pattern (paper §4.3) in miniature.
// A Reassemble prepends the initial token (input 0) to the feedback (input 1) under an external
// selector; an EagerMerge forwards whatever arrives; a Partition sends the first result back
// around the loop and the second one out. The Reassemble knows from its selector when the stream
// ends, so the done token can travel around the loop.
TEST(CyclicGraph, FeedbackLoopThroughEagerMergeTerminates) {
  GraphBuilder b;
  b.source("init", "T[16x64] D")
      .source("sel", "{0} {1} D")
      .source("route", "{1} {0} D")
      .source("none", "D")
      .node("join", "Reassemble", {{"rank", "0"}}, {{"in0", "init"}, {"in1", "back.out1"}, {"sel", "sel"}})
      .node("work", "Map", {{"fn", "silu"}}, {{"in0", "join"}}, std::nullopt, 1024)
      .node("merge", "EagerMerge", {{"rank", "1"}}, {{"in0", "work"}, {"in1", "none"}})
      .node("back", "Partition", {{"rank", "1"}}, {{"in", "merge.out"}, {"sel", "route"}})
      .sink("out", "back.out0")
      .sink("merge_sel", "merge.sel");
  SimResult r = b.run();
  ASSERT_TRUE(r.ok) << r.error;
  // The token went around once (through the Map twice) and then out.
  EXPECT_EQ(format_beats(r.recorded.at("out")), "T[16x64] S1 D");
  EXPECT_EQ(format_beats(r.recorded.at("merge_sel")), "{0} {0} D");
  for (const NodeResult& n : r.nodes)
    if (n.name == "work") {
      EXPECT_EQ(n.firings, 2u);
    }
  // Exact timing around the loop: the Map takes 8 cycles, Reassemble releases at
  // arrival + switch, EagerMerge forwards in the arrival cycle, Partition spends 1 switch cycle.
  const uint64_t comp = ceil_div(8 * 16 * 64, 1024);                                   // 8
  const uint64_t lap1_join = kSend + kSwitch;                                          // 2: init arrives at 1
  const uint64_t lap1_part = lap1_join + kSend + comp + kSend + kSend + kSwitch;       // 14: routed back
  const uint64_t lap2_join = lap1_part + kSend + kSwitch;                              // 16
  const uint64_t out_at = lap2_join + kSend + comp + kSend + kSend + kSwitch + kSend;  // 29
  EXPECT_EQ(element_times(r, "out"), (std::vector<uint64_t>{out_at}));
}

}  // namespace
}  // namespace stepsim
