// Scan's forms (issue 20 item 7, the reference simulator's Scan: gina7484/step-perf
// src/operator/scan.rs): inclusive (default), exclusive, an output function beside the update
// function (out_fn), and the `prior` output (the state before each element). Values are checked
// bit for bit against the tile functions applied by hand in the same order; FLOPs and the static
// check (`stepsim analyze`) against the run.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "hw/functions/functions.h"
#include "hw/presets/hardware.h"
#include "sim/engine/simulation.h"
#include "sim/graph/loader.h"
#include "sim/graph/tensors.h"
#include "sim/report/analyze.h"
#include "testbench/ops/testutil.h"

namespace stepsim {
namespace {

namespace fs = std::filesystem;

// x [4 x 8] bf16, read as [1 x 8] rows in 2 groups of 2 ([2, 2] of T[1x8]); the Scan's outputs are
// stored to y (out) and p (prior).
std::string graph(const std::string& scan_params, bool with_prior) {
  std::string g =
      "name: scan_forms\n"
      "tensors:\n"
      "  x: {shape: [4, 8], dtype: bf16, init: random, seed: 7}\n"
      "  y: {shape: [4, 8], dtype: bf16, init: output}\n"
      "  p: {shape: [4, 8], dtype: bf16, init: output}\n"
      "nodes:\n"
      "  - {name: ld, op: LinearOffChipLoad, params: {tensor: x, tile: [1, 8], out_shape: [2, 2]}}\n"
      "  - {name: sc, op: Scan, params: {" +
      scan_params +
      "}, inputs: {in0: ld}}\n"
      "  - {name: sy, op: LinearOffChipStore, params: {tensor: y, tile: [1, 8], out_shape: [2, 2]}, inputs: {in: "
      "sc.out}}\n";
  if (with_prior)
    g += "  - {name: sp, op: LinearOffChipStore, params: {tensor: p, tile: [1, 8], out_shape: [2, 2]}, inputs: {in: "
         "sc.prior}}\n";
  return g;
}

// One file per test: CTest runs the tests of this file as parallel processes (ctest -j), which
// would otherwise load each other's graphs from one shared path.
Graph load(const std::string& yaml) {
  const fs::path file = fs::path(::testing::TempDir()) /
                        ("scan_forms." + test::test_file_name() + ".yaml");
  std::ofstream(file) << yaml;
  return load_graph(file.string(), {});
}

SimResult run(const Graph& g, bool functional) {
  SimOptions opt;
  opt.hw = load_preset("step-artifact");
  opt.functional = functional;
  opt.keep_stored = functional;
  opt.output_dir = "";
  return simulate(g, opt);
}

// Row r of x as a [1 x 8] bf16 tile with its payload.
Tile row(const Graph& g, int r) {
  const TileData x = initial_values(g.tensors.at(0));
  return make_tile(1, 8, DType::BF16, std::vector<float>(x.f.begin() + r * 8, x.f.begin() + (r + 1) * 8));
}

// The states of `fn` over each group of 2 rows, by hand: after[k] the state after row k, before[k]
// the state before it (the identity first in each group).
struct States {
  std::vector<Tile> before, after;
};
States states(const Graph& g, const std::string& fn) {
  const AccumFunction& f = accum_function(fn);
  States s;
  for (int group = 0; group < 2; ++group) {
    Tile acc = f.init();
    for (int k = 0; k < 2; ++k) {
      const Tile in = row(g, group * 2 + k);
      s.before.push_back(is_empty_acc(acc) ? identity_output(f, {in}) : f.finalize(acc));
      acc = f.update(std::move(acc), {in});
      s.after.push_back(f.finalize(acc));
    }
  }
  return s;
}

std::vector<float> values(const std::vector<Tile>& rows) {
  std::vector<float> v;
  for (const Tile& t : rows) v.insert(v.end(), t.data->f.begin(), t.data->f.end());
  return v;
}

// Bit-for-bit equality (NaN and the sign of zero included).
void expect_bits(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << "element " << i << ": " << got[i] << " vs " << want[i];
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::isnan(got[i]) && std::isnan(want[i]))) {
      EXPECT_EQ(got[i], want[i]) << "element " << i;
    }
}

TEST(ScanForms, InclusiveIsTheStateAfterEachElement) {
  const Graph g = load(graph("fn: add, rank: 1", false));
  const SimResult r = run(g, true);
  ASSERT_TRUE(r.ok) << r.error;
  expect_bits(r.stored.at("y").f, values(states(g, "add").after));
}

TEST(ScanForms, ExclusiveIsTheStateBeforeEachElementIdentityFirst) {
  const Graph g = load(graph("fn: add, rank: 1, exclusive: true", false));
  const SimResult r = run(g, true);
  ASSERT_TRUE(r.ok) << r.error;
  const States s = states(g, "add");
  expect_bits(r.stored.at("y").f, values(s.before));
  for (int k = 0; k < 8; ++k) EXPECT_EQ(r.stored.at("y").f[k], 0.0f);    // group 0 starts at +0
  for (int k = 16; k < 24; ++k) EXPECT_EQ(r.stored.at("y").f[k], 0.0f);  // and so does group 1
  expect_bits(std::vector<float>(r.stored.at("y").f.begin() + 8, r.stored.at("y").f.begin() + 16),
              row(g, 0).data->f);  // then the first row itself
}

TEST(ScanForms, ExclusiveMaxStartsAtMinusInfinity) {
  const Graph g = load(graph("fn: max, rank: 1, exclusive: true", false));
  const SimResult r = run(g, true);
  ASSERT_TRUE(r.ok) << r.error;
  expect_bits(r.stored.at("y").f, values(states(g, "max").before));
  EXPECT_EQ(r.stored.at("y").f[0], -INFINITY);
}

TEST(ScanForms, PriorOutputBesideTheInclusiveOne) {
  const Graph g = load(graph("fn: add, rank: 1", true));
  const SimResult r = run(g, true);
  ASSERT_TRUE(r.ok) << r.error;
  const States s = states(g, "add");
  expect_bits(r.stored.at("y").f, values(s.after));
  expect_bits(r.stored.at("p").f, values(s.before));
}

TEST(ScanForms, OutputFunctionOfTheOperandsAndTheState) {
  // Running max as the update, x - (running max) as the output: the safe-softmax shift.
  const Graph g = load(graph("fn: max, rank: 1, out_fn: sub", false));
  const SimResult r = run(g, true);
  ASSERT_TRUE(r.ok) << r.error;
  const States s = states(g, "max");
  std::vector<Tile> want;
  for (int k = 0; k < 4; ++k) want.push_back(map_function("sub").apply({row(g, k), s.after[k]}));
  expect_bits(r.stored.at("y").f, values(want));
}

TEST(ScanForms, OutputFunctionFlopsAreChargedAndPredicted) {
  // Per element: max over [1x8] (8 FLOPs) then sub (8 FLOPs); 4 elements.
  const Graph g = load(graph("fn: max, rank: 1, out_fn: sub", false));
  const SimResult r = run(g, false);
  ASSERT_TRUE(r.ok) << r.error;
  uint64_t flops = 0;
  for (const NodeResult& n : r.nodes)
    if (n.name == "sc") flops = n.flops;
  EXPECT_EQ(flops, 4u * (8 + 8));
  Analysis a = analyze_graph(g, "paper");
  int64_t predicted = 0;
  ASSERT_TRUE(shape::to_int(shape::evaluate(a.metrics.flops, a.syms), predicted));
  EXPECT_EQ(uint64_t(predicted), flops);
  // The inclusive form without out_fn keeps its cycles: the forms add nothing unless used.
  const SimResult plain = run(load(graph("fn: max, rank: 1", false)), false);
  const SimResult excl = run(load(graph("fn: max, rank: 1, exclusive: true", false)), false);
  ASSERT_TRUE(plain.ok && excl.ok);
  EXPECT_EQ(plain.cycles, excl.cycles);
}

TEST(ScanForms, TimingModeShapesMatchAnalyze) {
  for (const char* params : {"fn: add, rank: 1, exclusive: true", "fn: max, rank: 1, out_fn: sub"}) {
    SCOPED_TRACE(params);
    const Graph g = load(graph(params, true));
    const SimResult r = run(g, false);
    ASSERT_TRUE(r.ok) << r.error;
    Analysis a = analyze_graph(g, "paper");
    EXPECT_EQ(a.types.nodes.at("sc").outputs.at("out").str(), "[1, 2, 2] of T[1x8:bf16]");
    EXPECT_EQ(a.types.nodes.at("sc").outputs.at("prior").str(), "[1, 2, 2] of T[1x8:bf16]");
  }
}

TEST(ScanForms, NoIdentityNoExclusiveFormSameErrorBothWays) {
  const std::string want =
      "node 'sc' (Scan): an exclusive Scan or its prior output needs a function with an identity element (the "
      "state before the first element); accum function 'retile_row' has none";
  for (bool prior : {false, true}) {
    const Graph g = load(graph(prior ? "fn: retile_row, rank: 1" : "fn: retile_row, rank: 1, exclusive: true", prior));
    try {
      analyze_graph(g, "paper");
      ADD_FAILURE() << "analyze accepted it";
    } catch (const std::exception& e) {
      EXPECT_EQ(std::string(e.what()), want);
    }
    try {
      const SimResult r = run(g, false);
      ADD_FAILURE() << "the run accepted it: " << r.error;
    } catch (const std::exception& e) {
      EXPECT_EQ(std::string(e.what()), want);
    }
  }
}

// The Accum units' Scan is the inclusive one: under co-simulation (impl hls) the other forms stay
// approximate, and the node says why.
TEST(ScanForms, TheUnitsRunOnlyTheInclusiveForm) {
  struct Case {
    std::string params;
    bool prior;
    std::string impl, why;
  };
  for (const Case& c : {Case{"fn: add, rank: 1", false, "hls", ""},
                        Case{"fn: add, rank: 1, exclusive: true", false, "approx", "inclusive only"},
                        Case{"fn: max, rank: 1, out_fn: sub", false, "approx", "no output function"},
                        Case{"fn: add, rank: 1", true, "approx", "no prior output"}}) {
    SCOPED_TRACE(c.params);
    SimOptions opt;
    opt.hw = load_preset("step-artifact");
    opt.default_impl = "hls";
    const SimResult r = simulate(load(graph(c.params, c.prior)), opt);
    ASSERT_TRUE(r.ok) << r.error;
    for (const NodeResult& n : r.nodes)
      if (n.name == "sc") {
        EXPECT_EQ(n.impl, c.impl);
        EXPECT_NE(n.impl_note.find(c.why), std::string::npos) << n.impl_note;
      }
  }
}

}  // namespace
}  // namespace stepsim
