// TopK: a router computed from the data. Selectors and masks against a reference sort over
// values chosen for the edge cases (ties, NaN, -Inf, -0), its timing rule (1 cycle per element),
// and its errors: no values (timing mode), wrong tiles, k out of range.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "hw/presets/hardware.h"
#include "sim/engine/simulation.h"
#include "sim/graph/loader.h"
#include "sim/graph/tensors.h"
#include "testbench/ops/testutil.h"

namespace stepsim {
namespace {

namespace fs = std::filesystem;

// Scores [4 x 8] fp32 from a .npy file, read as [1 x 8] rows; TopK k; the selectors to a Sink and
// the masks stored to m.
Graph topk_graph(const std::vector<float>& scores, int k, const std::string& dtype = "fp32") {
  // A folder per test: CTest runs this file's tests as parallel processes (ctest -j).
  const fs::path dir = fs::path(::testing::TempDir()) / ("topk." + test::test_file_name());
  fs::create_directories(dir);
  TileData d;
  d.f = scores;
  write_tensor_npy(dir.string(), "s", 4, 8, DType::FP32, d);
  std::ofstream(dir / "g.yaml") << "name: topk\n"
                                   "tensors:\n"
                                   "  s: {shape: [4, 8], dtype: " +
                                       dtype +
                                       ", init: file, file: s.npy}\n"
                                       "  m: {shape: [4, 8], dtype: " +
                                       dtype +
                                       ", init: output}\n"
                                       "nodes:\n"
                                       "  - {name: ld, op: LinearOffChipLoad, params: {tensor: s, tile: [1, 8]}}\n"
                                       "  - {name: top, op: TopK, params: {k: " +
                                       std::to_string(k) +
                                       "}, inputs: {in: ld}}\n"
                                       "  - {name: sink, op: Sink, inputs: {in: top.sel}}\n"
                                       "  - {name: st, op: LinearOffChipStore, params: {tensor: m, tile: [1, 8]}, "
                                       "inputs: {in: top.mask}}\n";
  return load_graph((dir / "g.yaml").string(), {});
}

SimResult run(const Graph& g, bool functional) {
  SimOptions opt;
  opt.hw = load_preset("step-artifact");
  opt.functional = functional;
  opt.keep_stored = functional;
  return simulate(g, opt);
}

// The reference: columns by value, larger first, NaN above every number, ties to the lower column.
std::vector<int> reference_top(const float* row, int k) {
  std::vector<int> idx(8);
  for (int j = 0; j < 8; ++j) idx[size_t(j)] = j;
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) {
    const float x = row[a], y = row[b];
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && !std::isnan(y);
    return x > y;
  });
  idx.resize(size_t(k));
  std::sort(idx.begin(), idx.end());
  return idx;
}

const std::vector<float> kScores = {
    1, 3, 3, NAN, -INFINITY, 0, 2, 3,          // NaN first, then the tie of three 3s: the lower columns
    0.5f, 0.25f, -1, 4, 4, -2, 0, 1,           // a tie of 4s
    -0.0f, 0.0f, -1e-30f, 1e-30f, -5, -5, -5, -5,  // -0 and +0 compare equal: the lower column
    NAN, NAN, NAN, 7, 7, 7, 7, 7,              // more NaNs than k
};

TEST(TopK, SelectorsAndMasksFollowTheValues) {
  for (int k : {1, 3, 8}) {
    SCOPED_TRACE("k = " + std::to_string(k));
    const SimResult r = run(topk_graph(kScores, k), true);
    ASSERT_TRUE(r.ok) << r.error;
    const std::vector<Beat>& sels = r.recorded.at("sink");
    const TileData& mask = r.stored.at("m");
    size_t row = 0;
    for (const Beat& b : sels) {
      if (!b.has_elem) continue;
      ASSERT_TRUE(b.elem.is_selector());
      const std::vector<int> want = reference_top(&kScores[row * 8], k);
      EXPECT_EQ(b.elem.selector().indices(), want) << "row " << row;
      for (int j = 0; j < 8; ++j) {
        const bool chosen = std::find(want.begin(), want.end(), j) != want.end();
        EXPECT_EQ(mask.f[row * 8 + size_t(j)], chosen ? 1.0f : 0.0f) << "row " << row << " col " << j;
      }
      ++row;
    }
    EXPECT_EQ(row, 4u);
  }
}

TEST(TopK, OneCyclePerElementAndTheSameShapeOut) {
  const SimResult r = run(topk_graph(kScores, 2), true);
  ASSERT_TRUE(r.ok) << r.error;
  for (const NodeResult& n : r.nodes)
    if (n.name == "top") {
      EXPECT_EQ(n.busy_cycles, 4u);  // 1 cycle per tile
      EXPECT_EQ(n.firings, 4u);
    }
  // The selector stream keeps the input's beats ([1, 4, 1]: each tile closes S1, the last S2 and
  // carries the end).
  const std::vector<Beat>& sels = r.recorded.at("sink");
  ASSERT_EQ(sels.size(), 4u);
  EXPECT_TRUE(sels.back().done);
  EXPECT_EQ(sels.front().stop, 1);
  EXPECT_EQ(sels.back().stop, 2);
}

TEST(TopK, ErrorsNameTheProblem) {
  // Timing mode: tiles carry no values.
  SimResult r = run(topk_graph(kScores, 2), false);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("TopK routes by value, so it runs in functional mode"), std::string::npos) << r.error;
  // k above the columns: the static check says so before anything runs.
  try {
    run(topk_graph(kScores, 9), true);
    ADD_FAILURE() << "k = 9 of 8 columns ran";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("k = 9 of T[1x8:fp32]"), std::string::npos) << e.what();
  }
  // k = 0 is outside the parameter's range.
  try {
    run(topk_graph(kScores, 0), true);
    ADD_FAILURE() << "k = 0 ran";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("parameter 'k' is 0, outside the allowed range 1..256"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace stepsim
