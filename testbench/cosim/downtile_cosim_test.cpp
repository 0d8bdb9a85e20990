// Co-simulation of a down-tiled graph (sim/transform/downtile.h downtile_for_units, sim/cosim/cosim.h with
// CosimOptions::downtile and ::logical; docs/cosim.md, "Co-simulating a lowered PyTorch module"):
// the graph of large logical tiles rewritten onto the units' blocks, every node with a unit on it,
// the payloads identical to the approximate run of the down-tiled graph, the stored tensors equal
// to the logical graph's bit for bit, and the account of every node (where it ran, why not).
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "hw/presets/hardware.h"
#include "sim/cosim/cosim.h"
#include "sim/engine/simulation.h"
#include "sim/frontend/builder.h"
#include "sim/transform/downtile.h"
#include "testbench/cosim/cosim_util.h"

namespace stepsim {
namespace {

using frontend::GraphBuilder;
using frontend::Stream;

// A Linear + SiLU + Linear with a residual, as stepsim.torch lowers one: [16 x 64] row tiles, the
// first weight in [64 x 64] tiles replayed per row tile, the hidden columns joined by retile_col.
Graph mlp() {
  GraphBuilder b("mlp");
  b.tensor("x", 32, 64, DType::BF16, 11);
  b.tensor("a", 128, 64, DType::BF16, 12);
  b.tensor("w", 64, 128, DType::BF16, 13);
  b.output_tensor("y", 32, 64);
  const Stream x = b.load("x", "x", {16, 64}, {2}, {1});
  const Stream h = b.map("h", "matmul_t", {b.repeat("rep", x, 2), b.load("a", "a", {64, 64}, {2, 2}, {0, 1})});
  const Stream j = b.accum("join", "retile_col", 1, {b.map("s", "silu", {h})});
  const Stream o = b.map("o", "matmul_t", {j, b.load("w", "w", {64, 128}, {2}, {0})});
  b.store("st", "y", {16, 64}, b.map("res", "add", {x, o}));
  return b.graph();
}

// A softmax: row_sum stays at its logical tiles (partial sums per block would round otherwise), div
// has no unit; retiling nodes convert between the two.
Graph softmax() {
  GraphBuilder b("softmax");
  b.tensor("x", 32, 64, DType::BF16, 14);
  b.output_tensor("y", 32, 64);
  const Stream e = b.map("e", "exp", {b.load("x", "x", {16, 64}, {2}, {1})});
  b.store("st", "y", {16, 64}, b.map("p", "div", {e, b.map("sum", "row_sum", {e})}));
  return b.graph();
}

struct DtRun {
  DowntileResult d;
  CosimReport r;
};

DtRun run(const Graph& g, const std::string& impl) {
  SimOptions o;
  o.hw = load_preset("step-artifact");
  o.hw.fifo_depth = 4;
  o.functional = true;
  DtRun out;
  out.d = downtile_for_units(g, "auto", impl, o.hw);
  CosimOptions co;
  co.impl = impl;
  co.downtile = &out.d;
  co.logical = &g;
  out.r = cosimulate(out.d.graph, o, co);
  return out;
}

std::map<std::string, CosimDowntileRow> rows(const CosimReport& r) {
  std::map<std::string, CosimDowntileRow> m;
  for (const CosimDowntileRow& row : r.downtile) m[row.node] = row;
  return m;
}

void expect_mlp_on_units(const std::string& impl) {
  const Graph g = mlp();
  const DtRun x = run(g, impl);
  ASSERT_TRUE(x.r.approx.ok) << x.r.approx.error;
  ASSERT_TRUE(x.r.cosim.ok) << x.r.cosim.error;
  std::ostringstream rep;
  print_cosim_report(x.r, rep);
  EXPECT_EQ(x.d.tile, 4) << "step-artifact's par_dispatch 1 keeps [r x 16] loads off the address generator";
  EXPECT_TRUE(x.r.identical) << rep.str();
  EXPECT_TRUE(x.r.equivalent) << rep.str();
  EXPECT_TRUE(x.r.logical_compared);
  EXPECT_TRUE(x.r.logical_identical) << rep.str();
  ASSERT_EQ(x.r.downtile.size(), g.nodes.size()) << rep.str();  // no conversions
  for (const CosimDowntileRow& row : x.r.downtile) {
    EXPECT_TRUE(row.blocked) << row.node;
    EXPECT_EQ(row.on_units, row.nodes) << row.node << ": " << row.reason;
  }
  const auto by = rows(x.r);
  EXPECT_EQ(by.at("h").units, "2 Bufferize, 2 Streamify, Accum");   // the matmul: operand views and the block Accum
  EXPECT_EQ(by.at("join").units, "Bufferize, Streamify, Flatten");  // the retiling
  EXPECT_EQ(by.at("s").units, "Map");
  EXPECT_NE(rep.str().find("## Down-tiled to [4 x 4] blocks"), std::string::npos);
  EXPECT_NE(rep.str().find("y identical (bit for bit)"), std::string::npos) << rep.str();
}

TEST(CosimDowntile, LoweredMlpRunsEveryNodeOnHlsUnits) { expect_mlp_on_units("hls"); }

TEST(CosimDowntile, LoweredMlpRunsEveryNodeOnRtlUnits) {
  if (!have_rtl()) GTEST_SKIP() << "built without Verilator (STEPSIM_RTL=OFF)";
  expect_mlp_on_units("rtl");
}

TEST(CosimDowntile, TheAccountSaysWhyANodeStaysApproximate) {
  const Graph g = softmax();
  const DtRun x = run(g, "hls");
  ASSERT_TRUE(x.r.cosim.ok) << x.r.cosim.error;
  std::ostringstream rep;
  print_cosim_report(x.r, rep);
  EXPECT_TRUE(x.r.equivalent) << rep.str();
  EXPECT_TRUE(x.r.logical_identical) << rep.str();
  const auto by = rows(x.r);
  EXPECT_FALSE(by.at("sum").blocked);
  EXPECT_EQ(by.at("sum").kind, "not down-tiled");
  EXPECT_NE(by.at("sum").reason.find("Map row_sum sums a whole row"), std::string::npos);
  EXPECT_TRUE(by.at("p").blocked);
  EXPECT_EQ(by.at("p").kind, "function without a unit");
  EXPECT_NE(by.at("p").reason.find("Map p: no unit computes Map fn=div"), std::string::npos) << by.at("p").reason;
  EXPECT_EQ(by.at("e").on_units, 1u);
  EXPECT_EQ(by.at("e").units, "Map");
  // The two conversions: exp's blocks to logical tiles for row_sum, its sums back to blocks for div.
  ASSERT_TRUE(by.count("e.out -> logical (for sum)")) << rep.str();
  ASSERT_TRUE(by.count("sum.out -> blocks (for p)")) << rep.str();
  EXPECT_TRUE(by.at("e.out -> logical (for sum)").conversion);
}

}  // namespace
}  // namespace stepsim
