// Co-simulation of Bufferize -> Streamify pairs on the memory unit (hw/bridge/pmu_bridge.h,
// docs/cosim.md): static repeats (one and two factors, rank 1 and rank 2 buffers) and a
// ref-driven replay on [1 x 8] bf16 tiles, all-hls and all-rtl against the approximate run;
// the errors for an unpaired node and for a buffer larger than the unit; the down-tiled SwiGLU's
// pairs (affine views, a Repeat as Bufferize rank 2 -> Streamify repeat [8]) on the unit.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <sstream>

#include "graphs/layers/layer.h"
#include "hw/bridge/unit_bridges.h"

#include "hw/bridge/unit_bridge.h"
#include "hw/presets/hardware.h"
#include "sim/cosim/cosim.h"
#include "sim/engine/simulation.h"
#include "sim/graph/loader.h"
#include "sim/transform/downtile.h"
#include "testbench/cosim/cosim_util.h"

namespace stepsim {
namespace {

SimOptions options() {
  SimOptions o;
  o.hw = load_preset("step-artifact");
  o.functional = true;
  return o;
}

const char* kPairs =
    "name: pmu_pairs\n"
    "tensors:\n"
    "  x: {shape: [8, 8], dtype: bf16, init: random, seed: 1}\n"
    "  y: {shape: [4, 8], dtype: bf16, init: random, seed: 2}\n"
    "streams:\n"
    "  r: '0 0 S1 0 0 0 S2 D'\n"
    "nodes:\n"
    // four buffers of two tiles, each replayed three times
    "  - {name: xa, op: LinearOffChipLoad, params: {tensor: x, tile: [1, 8], out_shape: [4, 2]}}\n"
    "  - {name: ba, op: Bufferize, params: {rank: 1}, inputs: {in: xa}}\n"
    "  - {name: sa, op: Streamify, params: {repeat: [3]}, inputs: {in: ba}}\n"
    "  - {name: ka, op: Sink, inputs: {in: sa}}\n"
    // one rank-2 buffer of 4 x 2 tiles, replayed [2, 2]
    "  - {name: xb, op: LinearOffChipLoad, params: {tensor: x, tile: [1, 8], out_shape: [4, 2]}}\n"
    "  - {name: bb, op: Bufferize, params: {rank: 2}, inputs: {in: xb}}\n"
    "  - {name: sb, op: Streamify, params: {repeat: [2, 2]}, inputs: {in: bb}}\n"
    "  - {name: kb, op: Sink, inputs: {in: sb}}\n"
    // two buffers replayed twice and three times (ref-driven)
    "  - {name: yc, op: LinearOffChipLoad, params: {tensor: y, tile: [1, 8], out_shape: [2, 2]}}\n"
    "  - {name: bc, op: Bufferize, params: {rank: 1}, inputs: {in: yc}}\n"
    "  - {name: r, op: Source, params: {stream: r}}\n"
    "  - {name: sc, op: Streamify, params: {rank: 1}, inputs: {in: bc, ref: r}}\n"
    "  - {name: kc, op: Sink, inputs: {in: sc}}\n";

CosimReport run(const std::string& text, const std::string& impl) {
  CosimOptions co;
  co.impl = impl;
  return cosimulate(parse_graph(text, "test", ".", {}), options(), co);
}

void expect_good(const CosimReport& r, const std::string& impl) {
  ASSERT_TRUE(r.approx.ok) << r.approx.error;
  ASSERT_TRUE(r.cosim.ok) << r.cosim.error;
  std::ostringstream rep;
  print_cosim_report(r, rep);
  EXPECT_TRUE(r.identical) << rep.str();
  EXPECT_EQ(r.bridged_nodes, 6u) << rep.str();
  for (const CosimNodeRow& n : r.nodes)
    if (n.op == "Streamify") {
      EXPECT_EQ(n.impl, impl);
      EXPECT_GT(n.unit_clocks, 0u) << n.name;
    }
  // Replayed tiles: 4 x 3 x 2, 8 x 4, 2 x 2 + 3 x 2.
  EXPECT_EQ(r.cosim.recorded.at("ka").size(), 24u);
  EXPECT_EQ(r.cosim.recorded.at("kb").size(), 32u);
  EXPECT_EQ(format_beats(r.cosim.recorded.at("kc")), format_beats(r.approx.recorded.at("kc")));
  EXPECT_LT(std::abs(double(r.cosim.cycles) - double(r.approx.cycles)) / double(r.approx.cycles), 0.15) << rep.str();
}

TEST(CosimPmu, BufferizeStreamifyPairsOnHlsMatchApprox) { expect_good(run(kPairs, "hls"), "hls"); }

TEST(CosimPmu, BufferizeStreamifyPairsOnRtlMatchApprox) {
  if (!have_rtl()) GTEST_SKIP() << "built without Verilator (STEPSIM_RTL=OFF)";
  CosimReport r = run(kPairs, "rtl");
  expect_good(r, "rtl");
  CosimReport h = run(kPairs, "hls");
  ASSERT_EQ(h.nodes.size(), r.nodes.size());
  for (size_t k = 0; k < h.nodes.size(); ++k)
    EXPECT_EQ(h.nodes[k].cosim_cycles, r.nodes[k].cosim_cycles) << h.nodes[k].name;
}

TEST(CosimPmu, UnpairedNodesStayApproximateOversizedBufferIsAnError) {
  // The references go through a Broadcast: the pair is not adjacent, the unit cannot take it.
  const std::string shared =
      "name: t\n"
      "tensors:\n  x: {shape: [8, 8], dtype: bf16, init: random, seed: 1}\n"
      "nodes:\n"
      "  - {name: x, op: LinearOffChipLoad, params: {tensor: x, tile: [1, 8], out_shape: [4, 2]}}\n"
      "  - {name: b, op: Bufferize, params: {rank: 1}, inputs: {in: x}}\n"
      "  - {name: f, op: Broadcast, inputs: {in: b}}\n"
      "  - {name: s, op: Streamify, params: {repeat: [2]}, inputs: {in: f.out0}}\n"
      "  - {name: k, op: Sink, inputs: {in: s}}\n"
      "  - {name: k1, op: Sink, inputs: {in: f.out1}}\n";
  // Under a default impl the two nodes stay approximate, with the reason in the report.
  CosimReport r = run(shared, "hls");
  ASSERT_TRUE(r.cosim.ok) << r.cosim.error;
  EXPECT_TRUE(r.identical);
  for (const CosimNodeRow& n : r.nodes)
    if (n.name == "b" || n.name == "s") {
      EXPECT_EQ(n.impl, "approx") << n.name;
      EXPECT_NE(n.note.find("the memory unit takes a Bufferize whose only consumer is a Streamify"), std::string::npos)
          << n.name << ": " << n.note;
    }
  // Asked for by name, it is an error that names the node and the rule.
  std::string named = shared;
  named.replace(named.find("inputs: {in: f.out0}}"), 21, "inputs: {in: f.out0}, impl: hls}");
  try {
    run(named, "approx");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("node 's' (Streamify): impl: hls: the memory unit takes a Bufferize"),
              std::string::npos)
        << e.what();
  }
  // More tiles in one buffer than the unit's words (kPmuCap in the co-simulation configuration).
  const std::string n = std::to_string(bridge::kPmuCap + 16);
  const std::string big =
      "name: t\n"
      "tensors:\n  x: {shape: [" +
      n +
      ", 8], dtype: bf16, init: random, seed: 1}\n"
      "nodes:\n"
      "  - {name: x, op: LinearOffChipLoad, params: {tensor: x, tile: [1, 8], out_shape: [" +
      n +
      "]}}\n"
      "  - {name: b, op: Bufferize, params: {rank: 1}, inputs: {in: x}}\n"
      "  - {name: s, op: Streamify, params: {repeat: [2]}, inputs: {in: b}}\n"
      "  - {name: k, op: Sink, inputs: {in: s}}\n";
  // The static check's types give the buffer's size before the run: approximate under a default.
  r = run(big, "hls");
  ASSERT_TRUE(r.cosim.ok) << r.cosim.error;
  for (const CosimNodeRow& row : r.nodes)
    if (row.name == "b" || row.name == "s") {
      EXPECT_EQ(row.impl, "approx") << row.name;
      EXPECT_NE(row.note.find("capacity: a buffer of " + n + " elements; the memory unit holds " +
                              std::to_string(bridge::kPmuCap)),
                std::string::npos)
          << row.note;
    }
  // Without them the unit finds it.
  SimOptions o = options();
  o.static_check = false;
  CosimOptions co;
  co.impl = "hls";
  r = cosimulate(parse_graph(big, "test", ".", {}), o, co);
  ASSERT_TRUE(r.approx.ok) << r.approx.error;
  ASSERT_FALSE(r.cosim.ok);
  EXPECT_NE(r.cosim.error.find("raised err_o"), std::string::npos) << r.cosim.error;
}

// The down-tiled SwiGLU (stepsim build swiglu --param tile_b=16 --param tile_f=TF, stepsim downtile
// --tile 16; a blocked layout, --param block=16, changes only the off-chip addresses, not these
// nodes): every Bufferize -> Streamify pair on the memory unit (the other nodes approximate), its
// affine views and the Repeat's repeat [8] (tile_f 64) included.
CosimReport run_swiglu(const std::string& tile_f, const std::string& impl) {
  Graph g = downtile(layers::build_layer("swiglu", {{"tile_b", "16"}, {"tile_f", tile_f}}), 16);
  for (NodeSpec& n : g.nodes)
    if (n.op == "Bufferize" || n.op == "Streamify") n.impl = impl;
  CosimOptions co;
  co.impl = "approx";
  return cosimulate(g, options(), co);
}

void expect_swiglu(const std::string& tile_f, const std::string& impl) {
  const CosimReport r = run_swiglu(tile_f, impl);
  ASSERT_TRUE(r.approx.ok) << r.approx.error;
  ASSERT_TRUE(r.cosim.ok) << r.cosim.error;
  std::ostringstream rep;
  print_cosim_report(r, rep);
  EXPECT_TRUE(r.identical) << rep.str();
  EXPECT_EQ(r.bridged_nodes, 14u) << rep.str();  // 7 pairs: the Repeat and the 6 matmul operands
  size_t affine = 0;
  for (const CosimNodeRow& n : r.nodes)
    if (n.op == "Streamify") {
      EXPECT_EQ(n.impl, impl) << n.name;
      EXPECT_GT(n.unit_clocks, 0u) << n.name;
      affine += n.name.find("_view") != std::string::npos;
    }
  EXPECT_EQ(affine, 6u);
  const double err = (double(r.cosim.cycles) - double(r.approx.cycles)) / double(r.approx.cycles);
  std::cout << "swiglu tile_f " << tile_f << " on " << impl << ": " << r.approx.cycles << " cycles approximate, "
            << r.cosim.cycles << " with the memory units (" << 100 * err << " %), " << r.unit_clocks
            << " unit clocks\n";
  EXPECT_LT(std::abs(err), 0.15) << rep.str();
}

TEST(CosimPmu, DownTiledSwigluAffinePairsOnHlsMatchApprox) {
  expect_swiglu("64", "hls");
  expect_swiglu("256", "hls");  // its W2 buffer: 2 x 16 x 16 = 512 tiles
}

TEST(CosimPmu, DownTiledSwigluAffinePairsOnRtlMatchApprox) {
  if (!have_rtl()) GTEST_SKIP() << "built without Verilator (STEPSIM_RTL=OFF)";
  expect_swiglu("64", "rtl");
  expect_swiglu("256", "rtl");
}

TEST(CosimPmu, AffineViewOverABufferizeRankAboveFourStaysApproximate) {
  const std::string g =
      "name: t\n"
      "tensors:\n  x: {shape: [8, 8], dtype: bf16, init: random, seed: 1}\n"
      "nodes:\n"
      "  - {name: x, op: LinearOffChipLoad, params: {tensor: x, tile: [1, 8], out_shape: [1, 1, 1, 2, 4]}}\n"
      "  - {name: b, op: Bufferize, params: {rank: 5}, inputs: {in: x}}\n"
      "  - {name: s, op: Streamify, params: {out_shape: [4, 2], stride: [1, 4]}, inputs: {in: b}}\n"
      "  - {name: k, op: Sink, inputs: {in: s}}\n";
  CosimReport r = run(g, "hls");
  ASSERT_TRUE(r.cosim.ok) << r.cosim.error;
  EXPECT_TRUE(r.identical);
  for (const CosimNodeRow& n : r.nodes)
    if (n.name == "b" || n.name == "s") {
      EXPECT_EQ(n.impl, "approx") << n.name;
      EXPECT_NE(n.note.find("Bufferize rank <= 4"), std::string::npos) << n.name << ": " << n.note;
    }
}

}  // namespace
}  // namespace stepsim
