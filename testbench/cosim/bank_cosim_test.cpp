// Co-simulation of the tile Accum unit's accumulator bank (docs/units.md, "The accumulator bank"):
// Accum matmul_acc rank 2 bank_rank 2 on [16 x 16] tiles, y = h W with the output blocks (i, j)
// in the bank and the reduction split into chunks c and K-runs k. The node runs on the T = 16
// unit (hls and rtl); every channel's payload must equal the approximate Accum's, and HLS and
// RTL agree node by node.
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>

#include "hw/presets/hardware.h"
#include "sim/cosim/cosim.h"
#include "sim/engine/simulation.h"
#include "sim/graph/loader.h"
#include "testbench/cosim/cosim_util.h"

namespace stepsim {
namespace {

// h [32 x 64] = 2 x 4 tiles, w [64 x 32] = 4 x 2 tiles; both streams [C = 2, B1 = 2, B2 = 2, K = 2]:
// h tile (i, 2c + k) = 4i + 2c + k, w tile (2c + k, j) = 2(2c + k) + j. The outer stops 1..4 are
// the view's; the bank holds the 2 x 2 output blocks.
const char* kBankGraph = R"(name: cosim_bank
tensors:
  h: {shape: [32, 64], dtype: bf16, init: random, seed: 41}
  w: {shape: [64, 32], dtype: bf16, init: random, seed: 42}
nodes:
  - {name: lh, op: LinearOffChipLoad, params: {tensor: h, tile: [16, 16], out_shape: [2, 2, 2, 2], stride: [2, 4, 0, 1]}}
  - {name: lw, op: LinearOffChipLoad, params: {tensor: w, tile: [16, 16], out_shape: [2, 2, 2, 2], stride: [4, 0, 1, 2]}}
  - {name: y, op: Accum, params: {fn: matmul_acc, rank: 2, bank_rank: 2}, inputs: {in0: lh, in1: lw}, impl: IMPL}
  - {name: ys, op: Sink, inputs: {in: y}}
)";

// The graph `text` with its node y on implementation `impl`, under hdl-validation (without the
// static check: the bank's size is then found by the unit).
CosimReport run_bank(const std::string& impl, const char* text = kBankGraph, bool static_check = true) {
  std::string g = text;
  g.replace(g.find("IMPL"), 4, impl);
  SimOptions o;
  o.hw = load_preset("hdl-validation");
  o.functional = true;
  o.static_check = static_check;
  return cosimulate(parse_graph(g, "cosim_bank", ".", {}), o, CosimOptions{});
}

void expect_identical(const CosimReport& r) {
  ASSERT_TRUE(r.approx.ok) << r.approx.error;
  ASSERT_TRUE(r.cosim.ok) << r.cosim.error;
  std::ostringstream rep;
  print_cosim_report(r, rep);
  EXPECT_TRUE(r.identical) << rep.str();
  EXPECT_TRUE(r.equivalent) << rep.str();
  EXPECT_EQ(r.bridged_nodes, 3u) << rep.str();  // the two loads run on the [16 x 16] address generator
}

TEST(CosimBank, MatmulAccBankOn16x16TilesMatchesApprox) {
  const CosimReport h = run_bank("hls");
  expect_identical(h);
  std::cout << "bank: approx " << h.approx.cycles << " cycles, hls " << h.cosim.cycles << "\n";
#ifdef STEPSIM_HAVE_RTL_T16
  if (!have_rtl()) return;
  const CosimReport r = run_bank("rtl");
  expect_identical(r);
  ASSERT_EQ(h.nodes.size(), r.nodes.size());
  for (size_t k = 0; k < h.nodes.size(); ++k) {
    EXPECT_EQ(h.nodes[k].cosim_cycles, r.nodes[k].cosim_cycles) << h.nodes[k].name;
    EXPECT_EQ(h.nodes[k].unit_clocks, r.nodes[k].unit_clocks) << h.nodes[k].name;
  }
#endif
}

// 5 x 13 = 65 output blocks in one bank, one more than the T = 16 unit holds (64,
// kTileAccumBank16 in hw/bridge/unit_bridges.h): with the static check's types the node cannot be
// put on the unit (an error when named, approximate under a default); without them the unit raises
// err_o and the run fails with the bridge's message, on the HLS unit and on the Verilated one
// (driven without SystemC signals: its err_o is read from the model).
const char* kBankOverflowGraph = R"(name: cosim_bank_overflow
tensors:
  h: {shape: [80, 16], dtype: bf16, init: random, seed: 41}
  w: {shape: [16, 208], dtype: bf16, init: random, seed: 42}
nodes:
  - {name: lh, op: LinearOffChipLoad, params: {tensor: h, tile: [16, 16], out_shape: [1, 5, 13, 1], stride: [0, 1, 0, 1]}}
  - {name: lw, op: LinearOffChipLoad, params: {tensor: w, tile: [16, 16], out_shape: [1, 5, 13, 1], stride: [0, 0, 1, 13]}}
  - {name: y, op: Accum, params: {fn: matmul_acc, rank: 2, bank_rank: 2}, inputs: {in0: lh, in1: lw}, impl: IMPL}
  - {name: ys, op: Sink, inputs: {in: y}}
)";

void expect_bank_overflow(const std::string& impl) {
  try {
    run_bank(impl, kBankOverflowGraph);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("node 'y' (Accum): impl: " + impl +
                                         ": capacity: the tile Accum unit's accumulator bank has 64 entries at T = 16; "
                                         "the node's bank_rank 2 needs 65"),
              std::string::npos)
        << e.what();
  }
  const CosimReport r = run_bank(impl, kBankOverflowGraph, false);
  ASSERT_TRUE(r.approx.ok) << r.approx.error;  // the approximate Accum's bank has no bound
  ASSERT_FALSE(r.cosim.ok) << impl;
  EXPECT_NE(r.cosim.error.find("node 'y' (Accum): the tile Accum unit raised err_o (accumulator bank, bank_rank 2, "
                               "rank 2): more than 64 bank entries"),
            std::string::npos)
      << impl << ": " << r.cosim.error;
}

TEST(CosimBank, MoreBlocksThanTheBankHoldsRaiseErrO) {
  expect_bank_overflow("hls");
#ifdef STEPSIM_HAVE_RTL_T16
  if (have_rtl()) expect_bank_overflow("rtl");
#endif
}

}  // namespace
}  // namespace stepsim
