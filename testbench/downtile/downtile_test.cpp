// Hierarchical tiling (sim/downtile.h): the rewritten graph has only T x T tiles, type-checks,
// moves the same off-chip payload, and computes the same SwiGLU up to the order of its fp32
// sums; what the pass does not handle is an error naming the node.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>

#include "graphs/layers/layer.h"
#include "hw/presets/hardware.h"
#include "sim/analyze.h"
#include "sim/downtile.h"
#include "sim/graph/npy.h"
#include "sim/simulation.h"

namespace stepsim {
namespace {

namespace fs = std::filesystem;

const NodeSpec& node(const Graph& g, const std::string& name) {
  const NodeSpec* n = g.find(name);
  if (!n) throw std::runtime_error("no node " + name);
  return *n;
}

NpyArray run_y(const Graph& g) {
  const fs::path dir = fs::temp_directory_path() / ("stepsim_downtile_" + g.name + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  SimOptions opt;
  opt.hw = load_preset("hdl-validation");
  opt.functional = true;
  opt.output_dir = dir.string();
  SimResult r = simulate(g, opt);
  EXPECT_TRUE(r.ok) << r.error;
  NpyArray a = read_npy((dir / "y.npy").string());
  fs::remove_all(dir);
  return a;
}

TEST(Downtile, LoadViewBecomesTheSameViewOfBlocks) {
  Graph g;
  g.name = "v";
  g.tensors.push_back(TensorSpec{"x", 32, 64, DType::BF16, "random", 1, ""});
  g.tensors.push_back(TensorSpec{"y", 32, 64, DType::BF16, "output", 0, ""});
  g.nodes.push_back(node_spec("ld", "LinearOffChipLoad", {{"tensor", "x"}, {"tile", "[16,32]"}}));
  g.nodes.push_back(node_spec("st", "LinearOffChipStore", {{"tensor", "y"}, {"tile", "[16,32]"}}, {{"in", "ld"}}));
  Graph d = downtile(g, 16);
  // Logical grid 2 x 2 tiles of [16x32]; blocks grid 2 x 4. Tile (r, c) starts at block (r, 2c).
  EXPECT_EQ(node(d, "ld").params.at("tile"), "[16,16]");
  EXPECT_EQ(node(d, "ld").params.at("out_shape"), "[2,2,1,2]");
  EXPECT_EQ(node(d, "ld").params.at("stride"), "[4,2,4,1]");
  EXPECT_EQ(node(d, "st").params.at("stride"), "[4,2,4,1]");
  // Copying block by block stores what the logical copy stores, bit for bit.
  const NpyArray logical = run_y(g), blocks = run_y(d);
  ASSERT_EQ(blocks.f.size(), size_t(32 * 64));
  EXPECT_EQ(blocks.f, logical.f);
}

class DowntileSwiglu : public ::testing::TestWithParam<std::map<std::string, std::string>> {};

TEST_P(DowntileSwiglu, SameOutputAndPayloadWithOnlyPhysicalTiles) {
  const Graph g = layers::build_layer("swiglu", GetParam());
  const Graph d = downtile(g, 16);
  Analysis a = analyze_graph(d, "paper");
  for (const auto& [n, t] : a.types.nodes)
    for (const auto& [port, s] : t.outputs)
      if (s.elem.kind == shape::ElemType::Tile) {
        EXPECT_EQ(shape::to_string(s.elem.rows) + "x" + shape::to_string(s.elem.cols), "16x16") << n;
      }
  // Off-chip payload: the same bytes read and written.
  Analysis la = analyze_graph(g, "paper");
  EXPECT_EQ(shape::to_string(a.metrics.read_bytes), shape::to_string(la.metrics.read_bytes));
  EXPECT_EQ(shape::to_string(a.metrics.write_bytes), shape::to_string(la.metrics.write_bytes));
  // Outputs: the block Accum sums the products in the logical k order: bit-identical.
  NpyArray y = run_y(g), yd = run_y(d);
  ASSERT_EQ(y.f.size(), size_t(32 * 64));
  EXPECT_EQ(y.f, yd.f);
}

INSTANTIATE_TEST_SUITE_P(
    Tilings, DowntileSwiglu,
    ::testing::Values(
        std::map<std::string, std::string>{
            {"batch", "32"}, {"hidden", "64"}, {"inter", "128"}, {"tile_b", "16"}, {"tile_f", "32"}},
        std::map<std::string, std::string>{
            {"batch", "32"}, {"hidden", "64"}, {"inter", "128"}, {"tile_b", "32"}, {"tile_f", "64"}}));

// With the tensors stored in [16 x 16] blocks, every block the down-tiled graph loads is one
// contiguous 512-byte run, so it issues exactly the requests of the logical graph: the measured
// off-chip bytes (whole requests) equal the payload in both. Row-major, each 32-byte block row
// takes a 64-byte request and the down-tiled graph reads twice the payload.
TEST(Downtile, BlockedTensorsKeepTheRequestBytes) {
  std::map<std::string, std::string> p{
      {"batch", "32"}, {"hidden", "64"}, {"inter", "128"}, {"tile_b", "16"}, {"tile_f", "32"}};
  SimOptions opt;
  opt.hw = load_preset("hdl-validation");
  auto measured = [&](const Graph& g) {
    SimResult r = simulate(g, opt);
    EXPECT_TRUE(r.ok) << r.error;
    return std::make_pair(r.offchip_read_bytes, r.offchip_write_bytes);
  };
  // Payload: x [32x64] read once per pass (1 pass), W1, W3 [64x128] and W2 [128x64] once per
  // batch tile (2), y [32x64] written; bf16.
  const uint64_t read = 2 * (32 * 64 + 2 * 3 * 64 * 128), written = 2 * 32 * 64;
  p["block"] = "16";
  const Graph blocked = layers::build_layer("swiglu", p);
  EXPECT_EQ(measured(blocked), std::make_pair(read, written));
  EXPECT_EQ(measured(downtile(blocked, 16)), std::make_pair(read, written));
  p["block"] = "0";
  EXPECT_EQ(measured(downtile(layers::build_layer("swiglu", p), 16)), std::make_pair(2 * read, 2 * written));
}

TEST(Downtile, UnsupportedOperatorAndTileAreNamedErrors) {
  Graph g;
  g.name = "f";
  g.tensors.push_back(TensorSpec{"x", 32, 32, DType::BF16, "random", 1, ""});
  g.nodes.push_back(node_spec("ld", "LinearOffChipLoad", {{"tensor", "x"}, {"tile", "[16,16]"}}));
  g.nodes.push_back(node_spec("fl", "Flatten", {{"min", "0"}, {"max", "1"}}, {{"in", "ld"}}));
  g.nodes.push_back(node_spec("sk", "Sink", {}, {{"in", "fl"}}));
  try {
    downtile(g, 16);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("node 'fl' (Flatten): operator Flatten is not supported"), std::string::npos)
        << e.what();
  }
  Graph s = layers::build_layer(
      "swiglu", {{"batch", "32"}, {"hidden", "64"}, {"inter", "128"}, {"tile_b", "16"}, {"tile_f", "32"}});
  try {
    downtile(s, 48);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 48"), std::string::npos) << e.what();
  }
}

TEST(Downtile, ANameThatOutgrowsTheLimitIsRefusedNotWritten) {
  // Derived names grow: the graph's by "_t16", Bufferize/Streamify pairs by their tags. A graph
  // the loader would refuse must not be the result.
  Graph g = layers::build_layer(
      "swiglu", {{"batch", "32"}, {"hidden", "64"}, {"inter", "128"}, {"tile_b", "16"}, {"tile_f", "32"}});
  g.name = std::string(127, 'g');
  try {
    downtile(g, 16);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the down-tiled graph would not load"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1 to 128 characters"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stepsim
