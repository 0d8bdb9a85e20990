// FIFO sizing (sim/fifo/fifo_sizing.h, docs/fifo-sizing.md) on graphs whose needs follow from the
// timing rules (docs/timing-model.md, step-artifact preset: send and response latency 1, slots
// freed when a firing ends):
//   * a fork-join whose one branch buffers the whole stream (Bufferize) needs the other branch to
//     hold the stream: the LP finds it, the verification keeps it, one beat less deadlocks;
//   * a pipeline that sends a beat every 4 cycles needs depth 1 everywhere (a beat's slot is free
//     again 2 + the consumer's cycles after its send);
//   * a Source sending every cycle into a Sink needs depth 2 (a depth-d FIFO carries d beats per
//     2 cycles), or depth 1 when the tolerance admits twice the cycles.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

#include "hw/presets/hardware.h"
#include "sim/engine/simulation.h"
#include "sim/fifo/fifo_lp.h"
#include "sim/fifo/fifo_sizing.h"
#include "sim/graph/graph_writer.h"
#include "sim/graph/loader.h"
#include "testbench/sizing/fork_join.h"

namespace stepsim {
namespace {

Graph parse(const std::string& yaml) { return parse_graph(yaml, "g.yaml", ".", {}); }

FifoSizingOptions options(double tolerance = 0.01) {
  FifoSizingOptions o;
  o.sim.hw = load_preset("step-artifact");
  o.tolerance = tolerance;
  return o;
}

const ChannelSizing& channel(const FifoSizingResult& r, const std::string& name) {
  for (const ChannelSizing& c : r.channels)
    if (c.name == name) return c;
  throw std::runtime_error("no channel " + name);
}

SimResult run(const Graph& g) { return simulate(g, options().sim); }

// N elements, one copy straight into the Zip, one through a Bufferize of the whole row.
constexpr int kRow = 16;

std::string row_stream() { return sizing_test::row_stream(kRow); }

// testbench/sizing/fork_join.h: out0 (the direct copy) is served first, so it holds all N
// elements before the last one reaches the Bufferize through out1.
std::string fork_join() { return sizing_test::fork_join_graph(kRow); }

// The source's output read twice: the plan's Broadcast serves the Bufferize (first reader) first,
// so the last element reaches it before the direct copy's: N - 1 slots.
std::string fork_join_implicit() {
  return "name: fork_join_implicit\n" + row_stream() +
         "nodes:\n"
         "  - {name: src, op: Source, params: {stream: row}}\n"
         "  - {name: buf, op: Bufferize, params: {rank: 1}, inputs: {in: src}}\n"
         "  - {name: replay, op: Streamify, inputs: {in: buf}}\n"
         "  - {name: zip, op: Zip, inputs: {in0: src, in1: replay}}\n"
         "  - {name: sink, op: Sink, inputs: {in: zip}}\n";
}

// Node 0 forks to node 2 directly (lead 1) and through node 1 (leads 5 and 1): node 2 starts 6
// cycles after node 0, so the direct channel's first beat waits 5 cycles, at 1 beat per cycle.
std::vector<LpChannel> fork(double cap) {
  LpChannel direct{0, 2, 1, 1.0, 2, cap, 8, true}, slow{0, 1, 5, 1.0, 2, cap, 8, true},
      join{1, 2, 1, 1.0, 2, cap, 8, true};
  return {direct, slow, join};
}

TEST(FifoLp, TheDirectBranchHoldsTheSlackOfTheReconvergingPaths) {
  const LpSolution s = solve_fifo_lp({100, 100, 100}, fork(100));
  ASSERT_EQ(s.beats.size(), 3u);
  EXPECT_EQ(s.beats[0], 2 + 5);  // floor + rate x wait
  EXPECT_EQ(s.beats[1], 2);
  EXPECT_EQ(s.beats[2], 2);
  EXPECT_NEAR(s.start[2] - s.start[0], 6, 1e-6);
  EXPECT_EQ(s.rows, 6u);
  EXPECT_EQ(s.columns, 6u);
  EXPECT_EQ(solve_fifo_lp({100, 100, 100}, fork(4)).beats[0], 4);  // never more than the channel carries
}

TEST(FifoLp, AProducerWithoutInputsStartsLateInsteadOfFillingItsFifo) {
  // Node 3 (a source) feeds node 2 too: it may start up to cycle 50, so its beats need not wait.
  std::vector<LpChannel> ch = fork(100);
  ch.push_back(LpChannel{3, 2, 1, 1.0, 1, 100, 1000, true});
  const LpSolution late = solve_fifo_lp({100, 100, 100, 50}, ch);
  EXPECT_EQ(late.beats[3], 1);
  EXPECT_GE(late.start[3], late.start[2] - 1 - 1e-6);
  // Made to start at 0, its channel holds the 6 - 1 cycles of wait at 1 beat per cycle.
  EXPECT_EQ(solve_fifo_lp({0, 100, 100, 0}, ch).beats[3], 1 + 5);
}

TEST(FifoSizing, ForkJoinBranchHoldsTheBufferedStream) {
  const FifoSizingResult r = size_fifos(parse(fork_join()), options());
  EXPECT_FALSE(r.given.ok);  // depth 2 everywhere deadlocks
  EXPECT_EQ(r.given.error.rfind("deadlock", 0), 0u) << r.given.error;
  ASSERT_TRUE(r.deep.ok);
  const ChannelSizing& direct = channel(r, "bc.out0->zip.in0");
  EXPECT_GE(direct.lp, uint32_t(kRow));  // the LP finds the slack of the buffered branch
  EXPECT_EQ(direct.depth, uint32_t(kRow));
  EXPECT_EQ(direct.deadlocks_at, uint32_t(kRow - 1));
  EXPECT_EQ(direct.runs_from, uint32_t(kRow));
  EXPECT_TRUE(direct.final_check);  // with every other channel at its sized depth
  EXPECT_EQ(direct.ran_below, 0u);
  EXPECT_TRUE(r.lp.ok) << r.lp.error;  // the LP's own depths run (its verification)
  ASSERT_TRUE(r.sized.ok);
  EXPECT_EQ(r.sized.cycles, r.deep.cycles);
  for (const ChannelSizing& c : r.channels) {
    if (c.name != direct.name) {
      EXPECT_LE(c.depth, 2u) << c.name;
    }
  }
  EXPECT_LT(r.sized.fifo_bytes, r.deep.fifo_bytes);
}

TEST(FifoSizing, TheWrittenGraphRunsAtTheSizedDepthsAndDeadlocksOneBelow) {
  const FifoSizingResult r = size_fifos(parse(fork_join_implicit()), options());
  const ChannelSizing& direct = channel(r, "src.out0.broadcast.out1->zip.in0");
  EXPECT_EQ(direct.depth, uint32_t(kRow - 1));
  EXPECT_EQ(direct.deadlocks_at, uint32_t(kRow - 2));
  // The graph file round-trips: input_depth on the consumer sizes a channel behind the plan's Broadcast.
  const std::string yaml = graph_to_yaml(r.graph);
  EXPECT_NE(yaml.find("input_depth: {in0: " + std::to_string(kRow - 1)), std::string::npos) << yaml;
  Graph g = parse(yaml);
  const SimResult sized = run(g);
  ASSERT_TRUE(sized.ok) << sized.error;
  EXPECT_EQ(sized.cycles, r.sized.cycles);
  for (const ChannelResult& c : sized.channels) EXPECT_EQ(c.params.depth, channel(r, c.name).depth) << c.name;
  for (NodeSpec& n : g.nodes)
    if (n.name == "zip") n.input_depth["in0"] = uint32_t(kRow - 2);
  const SimResult below = run(g);
  EXPECT_FALSE(below.ok);
  EXPECT_EQ(below.error.rfind("deadlock", 0), 0u) << below.error;
}

TEST(FifoSizing, WithoutTighteningTheVerifiedLpDepthsRun) {
  FifoSizingOptions o = options();
  o.probe_runs = 0;
  const FifoSizingResult r = size_fifos(parse(fork_join()), o);
  EXPECT_EQ(r.probe_runs, 0u);
  ASSERT_TRUE(r.sized.ok);
  EXPECT_LE(r.sized.cycles, r.cycle_limit);
  EXPECT_GE(channel(r, "bc.out0->zip.in0").depth, uint32_t(kRow));
  EXPECT_EQ(channel(r, "bc.out0->zip.in0").deadlocks_at, 0u);  // not looked for
}

TEST(FifoSizing, AStraightPipelineNeedsOnlyDepthOne) {
  const Graph g = parse(
      "name: pipeline\nstreams:\n  x: {repeat: 'T[16x16]', count: 32, rank: 1}\nnodes:\n"
      "  - {name: src, op: Source, params: {stream: x, interval: 4}}\n"
      "  - {name: a, op: Map, params: {fn: exp}, inputs: {in0: src}}\n"
      "  - {name: b, op: Map, params: {fn: exp}, inputs: {in0: a}}\n"
      "  - {name: sink, op: Sink, inputs: {in: b}}\n");
  const FifoSizingResult r = size_fifos(g, options());
  ASSERT_EQ(r.channels.size(), 3u);
  for (const ChannelSizing& c : r.channels) {
    EXPECT_EQ(c.lp, 1u) << c.name;
    EXPECT_EQ(c.depth, 1u) << c.name;
    EXPECT_EQ(c.beat_bytes, 512u) << c.name;  // [16 x 16] bf16
  }
  EXPECT_EQ(r.sized.cycles, r.deep.cycles);
  EXPECT_EQ(r.sized.fifo_bytes, 3u * 512u);
  EXPECT_EQ(r.repair_rounds, 0u);
}

TEST(FifoSizing, TheToleranceBoundsTheCycles) {
  const Graph g = parse(
      "name: source_sink\nstreams:\n  x: {repeat: '1', count: 100, rank: 1}\nnodes:\n"
      "  - {name: src, op: Source, params: {stream: x}}\n"
      "  - {name: sink, op: Sink, inputs: {in: src}}\n");
  const FifoSizingResult tight = size_fifos(g, options(0.01));
  EXPECT_EQ(tight.deep.cycles, 100u);
  EXPECT_EQ(tight.cycle_limit, 101u);
  EXPECT_EQ(tight.channels.at(0).depth, 2u);
  EXPECT_EQ(tight.sized.cycles, 100u);
  // Depth 1: a beat every 2 cycles, 199 cycles, within a tolerance of 100 %.
  const FifoSizingResult loose = size_fifos(g, options(1.0));
  EXPECT_EQ(loose.cycle_limit, 200u);
  EXPECT_EQ(loose.channels.at(0).depth, 1u);
  EXPECT_EQ(loose.sized.cycles, 199u);
}

TEST(FifoSizing, AConsumersInputDepthWinsOverItsProducersDepth) {
  Graph g = parse(
      "streams:\n  s: '1 2 3 D'\nnodes:\n"
      "  - {name: src, op: Source, params: {stream: s}, outputs: 2, depth: 8}\n"
      "  - {name: a, op: Sink, inputs: {in: src.out0}, input_depth: {in: 3}}\n"
      "  - {name: b, op: Sink, inputs: {in: src.out1}}\n");
  std::map<std::string, uint32_t> depth;
  for (const ChannelResult& c : run(g).channels) depth[c.name] = c.params.depth;
  EXPECT_EQ(depth.at("src.out0->a.in"), 3u);
  EXPECT_EQ(depth.at("src.out1->b.in"), 8u);
}

TEST(FifoSizing, AGraphThatFailsWithDeepFifosIsAnError) {
  // More selectors than data: an operator error no depth changes.
  const Graph g = parse(
      "streams:\n  d: '1 2 3 4 D'\n  sel: '{0} {1} {0,1} {} {1} D'\nnodes:\n"
      "  - {name: d, op: Source, params: {stream: d}}\n"
      "  - {name: sel, op: Source, params: {stream: sel}}\n"
      "  - {name: p, op: Partition, params: {rank: 0}, inputs: {in: d, sel: sel}, outputs: 2}\n"
      "  - {name: k0, op: Sink, inputs: {in: p.out0}}\n"
      "  - {name: k1, op: Sink, inputs: {in: p.out1}}\n");
  FifoSizingOptions unchecked = options();
  unchecked.sim.static_check = false;  // analyze would reject the graph before any run (as `run` does)
  EXPECT_THROW(size_fifos(g, options()), std::invalid_argument);
  try {
    size_fifos(g, unchecked);
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("the graph fails even with deep FIFOs: node 'p' (Partition)", 0), 0u)
        << e.what();
  }
  FifoSizingOptions functional = options();
  functional.sim.functional = true;
  EXPECT_THROW(size_fifos(parse(fork_join()), functional), std::invalid_argument);
  EXPECT_THROW(size_fifos(parse("nodes:\n  - {name: k, op: Sink, inputs: {in: nowhere}}\n"), options()),
               std::invalid_argument);
}

}  // namespace
}  // namespace stepsim
