// The cases of issue 33 item 6 where `stepsim analyze` and a run disagreed, and the differences
// from the STeP reference that were decided (docs/semantics.md), each on a small graph: analyze's
// verdict and types against a run's verdict and streams. operator_edges_test.cpp finds the class.
#include <gtest/gtest.h>

#include <string>

#include "hw/presets/hardware.h"
#include "hw/stream/token.h"
#include "sim/engine/simulation.h"
#include "sim/engine/validate.h"
#include "sim/graph/loader.h"

namespace stepsim {
namespace {

Graph graph(const std::string& body) { return parse_graph("name: edge\n" + body, "edge.yaml", ".", {}); }

// analyze: the types of every node.port, or the error.
struct Analysis {
  std::string error;
  shape::GraphTypes types;
  std::string type(const std::string& node, const std::string& port) const {
    return types.nodes.at(node).outputs.at(port).str();
  }
};
Analysis analyze(const Graph& g) {
  Analysis a;
  shape::SymbolTable syms;
  try {
    a.types = validate_graph(g, syms);
  } catch (const std::exception& e) {
    a.error = e.what();
  }
  return a;
}

// A run; `static_check` false leaves the operators to find what is wrong on their own.
SimResult run(const Graph& g, bool static_check = true) {
  SimOptions opt;
  opt.hw = load_preset("step-artifact");
  opt.static_check = static_check;
  try {
    return simulate(g, opt);
  } catch (const std::exception& e) {  // the static check refused the graph
    SimResult r;
    r.ok = false;
    r.error = e.what();
    return r;
  }
}
std::string stream(const SimResult& r, const std::string& sink) { return format_beats(r.recorded.at(sink)); }

const char* const kNotAMultiple =
    "node 'r' (Reshape): dimension 1 has 6 entries, not a multiple of chunk 4 (only the innermost dimension can be "
    "padded)";

// Found: analyze accepted [1, 6, 1] -> [1, 2, 4, 1]; the run refused it.
TEST(EdgeSemantics, ReshapeOfAMiddleDimensionNotAMultipleOfTheChunkIsRefusedByBoth) {
  const Graph g = graph(
      "streams: {x: '1 S1 2 S1 3 S1 4 S1 5 S1 6 S2 D'}\nnodes:\n"
      "  - {name: s, op: Source, params: {stream: x}}\n"
      "  - {name: r, op: Reshape, params: {chunk: 4, rank: 1}, inputs: {in: s}}\n"
      "  - {name: k, op: Sink, inputs: {in: r.out}}\n");
  EXPECT_EQ(analyze(g).error, kNotAMultiple);
  EXPECT_EQ(run(g).error, kNotAMultiple);
  EXPECT_EQ(run(g, false).error, kNotAMultiple);
}

// Found beside it: the outermost dimension ends at D, and the run sent a short last chunk
// ("1 S1 2 S1 3 S1 4 S2 5 S1 6 S1 D", no S2 before D) and exit 0.
TEST(EdgeSemantics, ReshapeOfTheOutermostDimensionNotAMultipleOfTheChunkIsRefusedByBoth) {
  const Graph g = graph(
      "streams: {x: '1 S1 2 S1 3 S1 4 S1 5 S1 6 S1 D'}\nnodes:\n"
      "  - {name: s, op: Source, params: {stream: x}}\n"
      "  - {name: r, op: Reshape, params: {chunk: 4, rank: 1}, inputs: {in: s}}\n"
      "  - {name: k, op: Sink, inputs: {in: r.out}}\n");
  EXPECT_EQ(analyze(g).error, kNotAMultiple);
  EXPECT_EQ(run(g, false).error, kNotAMultiple);
}

// The paper: a dimension above the innermost is split only when it is static (here the tokens
// a TopK routes, unknown before the run).
TEST(EdgeSemantics, ReshapeOfADynamicMiddleDimensionIsRefused) {
  const Graph g = graph(
      "tensors: {g: {shape: [1, 8], dtype: bf16, init: random}}\n"
      "streams: {x: '7 S2 D'}\nnodes:\n"
      "  - {name: s, op: Source, params: {stream: x}}\n"
      "  - {name: ld, op: LinearOffChipLoad, params: {tensor: g, tile: [1, 8]}}\n"
      "  - {name: sel, op: TopK, params: {k: 1}, inputs: {in: ld}}\n"
      "  - {name: p, op: Partition, inputs: {in: s, sel: sel.sel}}\n"
      "  - {name: one, op: Promote, params: {rank: 0}, inputs: {in: p.out0}}\n"
      "  - {name: r, op: Reshape, params: {chunk: 2, rank: 1}, inputs: {in: one}}\n"
      "  - {name: k, op: Sink, inputs: {in: r.out}}\n  - {name: k1, op: Sink, inputs: {in: p.out1}}\n");
  EXPECT_EQ(analyze(g).error,
            "node 'r' (Reshape): dimension 1 of [n_p_out0, 1] of scalar is dynamic, not a static multiple of chunk 2 "
            "(only the innermost dimension can be padded)");
}

// Found: Promote of a Partition output that no selector names said [1, 0]; the run sends D alone
// ([0, 0]: the paper's D_a+1 = 0 for an empty stream). Reshape of it is [0, 4] in both.
TEST(EdgeSemantics, PromoteAndReshapeOfAnEmptyPartitionOutput) {
  const Graph g = graph(
      "streams: {x: '1 2 3 S1 D', sel: '{0} {0} {0} S1 D'}\nnodes:\n"
      "  - {name: s, op: Source, params: {stream: x}}\n"
      "  - {name: sel, op: Source, params: {stream: sel}}\n"
      "  - {name: p, op: Partition, inputs: {in: s, sel: sel}}\n"
      "  - {name: b, op: Broadcast, inputs: {in: p.out1}}\n"
      "  - {name: pr, op: Promote, inputs: {in: b.out0}}\n"
      "  - {name: r, op: Reshape, params: {chunk: 4}, inputs: {in: b.out1}}\n"
      "  - {name: k0, op: Sink, inputs: {in: p.out0}}\n  - {name: kp, op: Sink, inputs: {in: pr}}\n"
      "  - {name: kr, op: Sink, inputs: {in: r.out}}\n  - {name: kf, op: Sink, inputs: {in: r.pad}}\n");
  const Analysis a = analyze(g);
  ASSERT_EQ(a.error, "");
  EXPECT_EQ(a.type("pr", "out"), "[0, n_p_out1] of scalar");
  EXPECT_EQ(a.type("r", "out"), "[ceil_div(n_p_out1,4), 4] of scalar");  // n_p_out1 = 0
  const SimResult r = run(g);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(stream(r, "kp"), "D");
  EXPECT_EQ(stream(r, "kr"), "D");
}

// Reshape of one empty row: [1, 0] -> [1, ceil(0/4) = 0, 4] (the paper's rule). The run sends
// "S2 D", which also encodes [1, 1, 0]: only the highest stop is sent (docs/semantics.md).
TEST(EdgeSemantics, ReshapeOfAnEmptyRowHasNoChunks) {
  const Graph g = graph(
      "streams: {x: 'S1 D'}\nnodes:\n"
      "  - {name: s, op: Source, params: {stream: x}}\n"
      "  - {name: r, op: Reshape, params: {chunk: 4}, inputs: {in: s}}\n"
      "  - {name: k, op: Sink, inputs: {in: r.out}}\n");
  EXPECT_EQ(analyze(g).type("r", "out"), "[1, 0, 4] of scalar");
  const SimResult r = run(g);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(stream(r, "k"), "S2 D");
}

// Found: Promote rank 1 of a rank-0 stream was typed [1, 6]; the run sent the stream unchanged
// (no S1 before D). Above every dimension only the outermost form (rank -1) can promote.
TEST(EdgeSemantics, PromoteAboveEveryDimensionNeedsTheOutermostForm) {
  const Graph g = graph(
      "streams: {x: '1 2 3 4 5 6 D'}\nnodes:\n"
      "  - {name: s, op: Source, params: {stream: x}}\n"
      "  - {name: p, op: Promote, params: {rank: 1}, inputs: {in: s}}\n"
      "  - {name: k, op: Sink, inputs: {in: p}}\n");
  EXPECT_EQ(analyze(g).error,
            "node 'p' (Promote): rank 1 inserts the new dimension above all 1 dims of [6] of scalar; use rank -1 (the "
            "outermost form) for that");
}

// Found: analyze read past the data's dims (a segmentation fault) for an Expand rank above them.
TEST(EdgeSemantics, ExpandRankAboveTheDataIsAnError) {
  const Graph g = graph(
      "streams: {x: '7 D', y: '1 2 D'}\nnodes:\n"
      "  - {name: a, op: Source, params: {stream: x}}\n  - {name: b, op: Source, params: {stream: y}}\n"
      "  - {name: e, op: Expand, params: {rank: 2}, inputs: {in: a, ref: b}}\n"
      "  - {name: k, op: Sink, inputs: {in: e}}\n");
  EXPECT_EQ(analyze(g).error,
            "node 'e' (Expand): input 'in' [1] of scalar has 1 dimension(s); Expand rank 2 repeats the data over that "
            "many inner ones");
}

// Found: EagerMerge of two [2, 3~] streams was typed [4, 3~] (3 elements); it carries 6.
TEST(EdgeSemantics, MergedRaggedChunksAddUp) {
  const Graph g = graph(
      "streams: {x: '1 2 S1 3 S1 D'}\nnodes:\n"
      "  - {name: s, op: Source, params: {stream: x}}\n  - {name: b, op: Broadcast, inputs: {in: s}}\n"
      "  - {name: m, op: EagerMerge, params: {rank: 1}, inputs: {in0: b.out0, in1: b.out1}}\n"
      "  - {name: k, op: Sink, inputs: {in: m.out}}\n  - {name: ks, op: Sink, inputs: {in: m.sel}}\n");
  EXPECT_EQ(analyze(g).type("m", "out"), "[4, 6~] of scalar");
}

// Found: a ragged dim and a static one of the same size but other totals zipped in analyze.
TEST(EdgeSemantics, RaggedAndStaticDimsWithOtherTotalsDiffer) {
  const Graph g = graph(
      "streams: {x: '1 2 3 S1 4 5 6 S1 D', sel: '{0} {1} S1 {0,1} S1 D'}\nnodes:\n"
      "  - {name: s, op: Source, params: {stream: x}}\n  - {name: sel, op: Source, params: {stream: sel}}\n"
      "  - {name: p, op: Partition, inputs: {in: s, sel: sel}}\n"
      "  - {name: k0, op: Sink, inputs: {in: p.out0}}\n  - {name: k1, op: Sink, inputs: {in: p.out1}}\n");
  EXPECT_NE(analyze(g).error.find("(dimension 0: 6 vs 3 in all)"), std::string::npos) << analyze(g).error;
  EXPECT_FALSE(run(g, false).ok);
}

// Found: Reassemble over literal selectors that select another number of chunks than an input
// has (analyze accepted; the run refused), and an unselected empty chunk (both accepted).
TEST(EdgeSemantics, ReassembleTakesEveryChunkOnce) {
  const auto reassemble = [](const std::string& in0, const std::string& sel) {
    return graph("streams: {a: '" + in0 + "', b: '5 S1 D', sel: '" + sel +
                 "'}\nnodes:\n"
                 "  - {name: a, op: Source, params: {stream: a}}\n  - {name: b, op: Source, params: {stream: b}}\n"
                 "  - {name: sel, op: Source, params: {stream: sel}}\n"
                 "  - {name: r, op: Reassemble, params: {rank: 1}, inputs: {in0: a, in1: b, sel: sel}}\n"
                 "  - {name: k, op: Sink, inputs: {in: r}}\n");
  };
  const Graph fewer = reassemble("1 S1 2 S1 3 S1 D", "{0} {1} S1 D");
  EXPECT_EQ(analyze(fewer).error,
            "node 'r' (Reassemble): the selectors from 'sel.out0' select 1 chunks of input 'in0' from 'a.out0' [3, 1] "
            "of scalar, which has 3 (chunks of rank 1; each is taken once)");
  EXPECT_FALSE(run(fewer, false).ok);
  const Graph empty = reassemble("1 S1 S1 D", "{0} {1} S1 D");
  EXPECT_NE(analyze(empty).error, "");
  EXPECT_NE(run(empty, false).error.find("still has an empty chunk (S1"), std::string::npos) << run(empty, false).error;
}

// Found: a store of another number of tiles than its view, and a random store of another number
// of tiles than addresses, passed analyze.
TEST(EdgeSemantics, StoresTakeTheirTileCount) {
  const std::string head =
      "tensors: {w: {shape: [8, 16], dtype: bf16}}\n"
      "streams: {t: 'T[4x8] T[4x8] T[4x8] D', a: '0 1 D'}\nnodes:\n"
      "  - {name: t, op: Source, params: {stream: t}}\n";
  const Graph linear =
      graph(head + "  - {name: st, op: LinearOffChipStore, params: {tensor: w, tile: [4, 8]}, inputs: {in: t}}\n");
  EXPECT_EQ(analyze(linear).error,
            "node 'st' (LinearOffChipStore): received 3 tiles but its view of tensor 'w' (out_shape [2, 2]) expects 4");
  EXPECT_EQ(run(linear, false).error, analyze(linear).error);
  const Graph random = graph(head +
                             "  - {name: a, op: Source, params: {stream: a}}\n"
                             "  - {name: st, op: RandomOffChipStore, params: {tensor: w, tile: [4, 8]}, "
                             "inputs: {waddr: a, wdata: t}}\n  - {name: k, op: Sink, inputs: {in: st}}\n");
  EXPECT_NE(analyze(random).error.find("has 2 addresses but wdata"), std::string::npos) << analyze(random).error;
  EXPECT_FALSE(run(random, false).ok);
}

// Decided (kept, docs/semantics.md): Parallelize splits any chunk count, output i taking
// ceil((n - i) / p) of n chunks, where the reference requires p to divide n.
TEST(EdgeSemantics, ParallelizeSplitsSixChunksOverFourOutputsAsTwoTwoOneOne) {
  const Graph g = graph(
      "streams: {x: '1 2 3 4 5 6 D'}\nnodes:\n"
      "  - {name: s, op: Source, params: {stream: x}}\n"
      "  - {name: p, op: Parallelize, params: {rank: 0}, inputs: {in: s}, outputs: 4}\n"
      "  - {name: k0, op: Sink, inputs: {in: p.out0}}\n  - {name: k1, op: Sink, inputs: {in: p.out1}}\n"
      "  - {name: k2, op: Sink, inputs: {in: p.out2}}\n  - {name: k3, op: Sink, inputs: {in: p.out3}}\n");
  const Analysis a = analyze(g);
  ASSERT_EQ(a.error, "");
  EXPECT_EQ(a.type("p", "out0") + " " + a.type("p", "out3"), "[2] of scalar [1] of scalar");
  const SimResult r = run(g);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(stream(r, "k0") + " | " + stream(r, "k1") + " | " + stream(r, "k2") + " | " + stream(r, "k3"),
            "1 5 D | 2 6 D | 3 D | 4 D");
}

// Decided (kept): a chunk rank below the input's flattens the dims above the chunks, as
// Partition does; the reference requires the input's rank.
TEST(EdgeSemantics, ParallelizeBelowTheInputRankFlattensTheOuterDims) {
  const Graph g = graph(
      "streams: {x: '1 2 S1 3 4 5 S1 D'}\nnodes:\n"
      "  - {name: s, op: Source, params: {stream: x}}\n"
      "  - {name: p, op: Parallelize, params: {rank: 0}, inputs: {in: s}}\n"
      "  - {name: k0, op: Sink, inputs: {in: p.out0}}\n  - {name: k1, op: Sink, inputs: {in: p.out1}}\n");
  EXPECT_EQ(analyze(g).type("p", "out0") + " " + analyze(g).type("p", "out1"), "[3] of scalar [2] of scalar");
  const SimResult r = run(g);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(stream(r, "k0") + " | " + stream(r, "k1"), "1 3 5 D | 2 4 D");
}

// Decided (kept): ExpertAddrGen gives [sel dims.., tiles_per_expert]; the reference's
// [sel dims.., tiles_per_expert, 1] has a stop per address.
TEST(EdgeSemantics, ExpertAddrGenHasOneDimensionOfAddresses) {
  const Graph g = graph(
      "streams: {x: '{0} {2} {1} {3} D'}\nnodes:\n"
      "  - {name: s, op: Source, params: {stream: x}}\n"
      "  - {name: a, op: ExpertAddrGen, params: {tiles_per_expert: 3}, inputs: {in: s}}\n"
      "  - {name: k, op: Sink, inputs: {in: a}}\n");
  EXPECT_EQ(analyze(g).type("a", "out"), "[4, 3] of scalar");
  const SimResult r = run(g);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(stream(r, "k"), "0 1 2 S1 6 7 8 S1 3 4 5 S1 9 10 11 S1 D");
}

}  // namespace
}  // namespace stepsim
