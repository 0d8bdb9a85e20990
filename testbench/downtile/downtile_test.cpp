// Hierarchical tiling (sim/transform/downtile.h): the rewritten graph has only T x T tiles, type-checks,
// moves the same off-chip payload, and computes the same SwiGLU up to the order of its fp32
// sums; what the pass does not handle is an error naming the node (strict) or stays at its logical
// tiles with the reason (partial), and every rewrite computes the logical graph's tensors bit for bit.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <set>

#include "graphs/layers/layer.h"
#include "hw/presets/hardware.h"
#include "hw/stream/bf16.h"
#include "sim/engine/simulation.h"
#include "sim/frontend/builder.h"
#include "sim/graph/npy.h"
#include "sim/report/analyze.h"
#include "sim/transform/downtile.h"

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
  g.nodes.push_back(node_spec("z", "Zip", {}, {{"in0", "ld"}, {"in1", "ld"}}));
  g.nodes.push_back(node_spec("sk", "Sink", {}, {{"in", "z"}}));
  try {
    downtile(g, 16);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("node 'z' (Zip): operator Zip is not rewritten onto blocks"),
              std::string::npos)
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

// ---- the rewrites of everything a lowered PyTorch module emits (partial mode, conversions)

// Every stored tensor of a functional run, all-approximate (FIFOs deep enough for the streams read
// twice: the logical graphs here are not sized).
std::map<std::string, TileData> stored(const Graph& g, const std::string& preset = "step-artifact") {
  SimOptions opt;
  opt.hw = load_preset(preset);
  opt.hw.fifo_depth = 4096;
  opt.functional = true;
  opt.keep_stored = true;
  SimResult r = simulate(g, opt);
  EXPECT_TRUE(r.ok) << g.name << ": " << r.error;
  return r.stored;
}

// The same tensors, bit for bit.
void expect_same_tensors(const std::map<std::string, TileData>& want, const std::map<std::string, TileData>& got,
                         const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (const auto& [name, a] : want) {
    ASSERT_TRUE(got.count(name)) << what << ": " << name;
    const TileData& b = got.at(name);
    ASSERT_EQ(a.f.size(), b.f.size()) << what << ": " << name;
    size_t differ = 0;
    for (size_t k = 0; k < a.f.size(); ++k) differ += f32_bits(a.f[k]) != f32_bits(b.f[k]);
    EXPECT_EQ(differ, 0u) << what << ": " << name << " differs in " << differ << " of " << a.f.size() << " elements";
    EXPECT_GT(a.f.size(), 0u) << name;
  }
}

// One graph with every rewrite the down-tiler has for a lowered module: a Linear (matmul_t with a
// repeated weight), silu, a scalar divisor ([1 x 1], two Repeats), a softmax's row_max and
// sub_row (an [R x 1] column: Repeat + Flatten), exp, a row broadcast ([1 x C]: a replaying view),
// a column add; a Bufferize -> Streamify view, Accum add (bank) and max (rank 2), FlatMap
// retile_streamify_row, Accum retile_row (rows packed into blocks, and whole block rows),
// retile_col, Flatten, Reshape, Promote, Partition and Reassemble.
Graph every_rewrite() {
  frontend::GraphBuilder b("every");
  b.tensor("x", 32, 64, DType::BF16, 1);
  b.tensor("w", 64, 64, DType::BF16, 2);
  b.tensor("c", 1, 1, DType::BF16, 3);
  b.tensor("g", 1, 64, DType::BF16, 4);
  b.literal_stream("sel", "{0} {1} S1 D");
  using S = frontend::Stream;
  const S x = b.load("x", "x", {16, 64}, {2}, {1});  // [1, 2] of [16x64]
  const S w = b.load("w", "w", {64, 64}, {2}, {0});
  const S s = b.map("s", "silu", {b.map("y", "matmul_t", {x, w})});
  const S d = b.map("d", "div", {s, b.load("c", "c", {1, 1}, {2}, {0})});
  const S rm = b.map("rm", "row_max", {d});  // [16x1]
  const S e = b.map("e", "exp", {b.map("sr", "sub_row", {d, rm})});
  const S m = b.map("m", "mul", {b.load("gl", "g", {1, 64}, {2}, {0}), e});  // a row broadcast
  const S col = b.map("col", "add", {m, rm});                                // a column broadcast
  const S buf = b.bufferize("buf", col, 1);
  const S rev = b.add1("rev", OpKind::kStreamify, {{"out_shape", "[2, 2]"}, {"stride", "[1, 0]"}}, {{"in", buf}});
  const S acc = b.accum("acc", "add", 1, {rev});                            // [1, 2]
  const S mx = b.accum("mx", "max", 2, {rev});                              // [1]
  const S rows = b.flatmap("rows", "retile_streamify_row", 1, {acc});       // [1, 2, 16] of [1x64]
  const S packed = b.accum("packed", "retile_row", 1, {rows});              // [1, 2] of [16x64]
  const S whole = b.accum("whole", "retile_row", 1, {packed});              // [1] of [32x64]
  const S wide = b.accum("wide", "retile_col", 1, {acc});                   // [1] of [16x128]
  const S flat = b.flatten("flat", rev, 0, 1);                              // [1, 4]
  const S shaped = b.promote("one", b.reshape("split", flat, 2).first, 0);  // [1, 2, 2, 1]
  const std::vector<S> parts = b.partition("part", m, b.source("sel_a", "sel"), 2);
  const S merged = b.reassemble("merge", {b.map("p0", "exp", {parts[0]}), b.map("p1", "silu", {parts[1]})},
                                b.source("sel_b", "sel"));
  b.output_tensor("o_whole", 32, 64);
  b.output_tensor("o_wide", 16, 128);
  b.output_tensor("o_mx", 16, 64);
  b.output_tensor("o_shaped", 64, 64);
  b.output_tensor("o_merged", 32, 64);
  b.store("st_whole", "o_whole", {32, 64}, whole);
  b.store("st_wide", "o_wide", {16, 128}, wide);
  b.store("st_mx", "o_mx", {16, 64}, mx);
  b.store("st_shaped", "o_shaped", {16, 64}, shaped);
  b.store("st_merged", "o_merged", {16, 64}, merged);
  return b.graph();
}

class DowntileEveryRewrite : public ::testing::TestWithParam<int> {};

TEST_P(DowntileEveryRewrite, ComputesTheLogicalTensorsBitForBit) {
  const Graph g = every_rewrite();
  const int T = GetParam();
  const DowntileResult d = downtile_graph(g, T, DowntileOptions{});  // strict: every node rewritten
  EXPECT_EQ(d.blocked_nodes(), g.nodes.size());
  EXPECT_TRUE(d.conversions.empty());
  EXPECT_EQ(d.max_blocks, uint64_t(T == 4 ? 16 * 16 : 4 * 4));  // the [64 x 64] weight tiles
  // Only blocks: no side above T.
  Analysis a = analyze_graph(d.graph, "paper");
  for (const auto& [n, t] : a.types.nodes)
    for (const auto& [port, st] : t.outputs)
      if (st.elem.kind == shape::ElemType::Tile) {
        int64_t r = 0, c = 0;
        ASSERT_TRUE(shape::to_int(st.elem.rows, r) && shape::to_int(st.elem.cols, c)) << n;
        EXPECT_LE(r, T) << n << "." << port << ": " << st.str();
        EXPECT_LE(c, T) << n << "." << port << ": " << st.str();
      }
  expect_same_tensors(stored(g), stored(d.graph), "T = " + std::to_string(T));
}

INSTANTIATE_TEST_SUITE_P(Sides, DowntileEveryRewrite, ::testing::Values(4, 16));

// What the pass does not rewrite: strict, an error naming the node; partial, the node at its
// logical tiles with the reason, retiling nodes on both sides, the same tensors bit for bit.
TEST(Downtile, PartialKeepsWhatItCannotRewriteAndConvertsItsStreams) {
  frontend::GraphBuilder b("softmax");
  b.tensor("x", 32, 64, DType::BF16, 5);
  const frontend::Stream x = b.load("x", "x", {16, 64}, {2}, {1});
  const frontend::Stream e = b.map("e", "exp", {x});
  const frontend::Stream sum = b.map("sum", "row_sum", {e});  // [16 x 1]
  const frontend::Stream p = b.map("p", "div", {e, sum});
  const frontend::Stream r = b.map("r", "rotate_half", {p});
  b.output_tensor("y", 32, 64);
  b.store("st", "y", {16, 64}, b.map("z", "neg", {r}));
  const Graph g = b.graph();
  try {
    downtile(g, 4);
    FAIL() << "no error";
  } catch (const std::invalid_argument& ex) {
    EXPECT_NE(std::string(ex.what()).find("downtile: node 'sum' (Map): Map row_sum sums a whole row in fp32"),
              std::string::npos)
        << ex.what();
  }
  DowntileOptions o;
  o.partial = true;
  o.fifo_depth = 2;
  const DowntileResult d = downtile_graph(g, 4, o);
  std::map<std::string, const DowntileNode*> by;
  for (const DowntileNode& n : d.nodes) by[n.name] = &n;
  EXPECT_TRUE(by.at("e")->blocked);
  EXPECT_TRUE(by.at("p")->blocked);
  EXPECT_FALSE(by.at("sum")->blocked);
  EXPECT_NE(by.at("sum")->reason.find("partial sums would be added in another order"), std::string::npos);
  EXPECT_FALSE(by.at("r")->blocked);
  EXPECT_EQ(by.at("r")->reason, "Map rotate_half moves columns across blocks");
  EXPECT_EQ(d.blocked_nodes(), 5u);  // x, e, p, z and the store: not r, not sum
  // e -> logical (for sum), sum -> blocks (for p), p -> logical (for r), r -> blocks (for z).
  std::vector<std::string> conv;
  for (const DowntileConversion& c : d.conversions)
    conv.push_back(c.stream + (c.to_blocks ? ">b" : ">l") + " for " + c.consumer);
  EXPECT_EQ(conv, (std::vector<std::string>{"e.out>l for sum", "sum.out>b for p", "p.out>l for r", "r.out>b for z"}));
  // A channel of blocks holds the logical tiles its FIFO held: the depth times the blocks of a tile.
  const NodeSpec* ex = d.graph.find("e");
  ASSERT_TRUE(ex);
  EXPECT_EQ(ex->depth, std::optional<uint32_t>(2 * 4 * 16));
  expect_same_tensors(stored(g), stored(d.graph), "partial");
}

// A stream read by a node kept at its tiles is converted once, and a side above T that T does not
// divide keeps the node (and the load) at its tiles.
TEST(Downtile, PartialKeepsTilesTheSideDoesNotDivide) {
  frontend::GraphBuilder b("odd");
  b.tensor("x", 24, 24, DType::BF16, 6);
  b.output_tensor("y", 24, 24);
  b.store("st", "y", {24, 24}, b.map("s", "silu", {b.load("x", "x", {24, 24})}));
  DowntileOptions o;
  o.partial = true;
  const DowntileResult d = downtile_graph(b.graph(), 16, o);
  EXPECT_EQ(d.blocked_nodes(), 0u);
  for (const DowntileNode& n : d.nodes) EXPECT_NE(n.reason.find("above 16"), std::string::npos) << n.reason;
  const DowntileResult d8 = downtile_graph(b.graph(), 8, o);
  EXPECT_EQ(d8.blocked_nodes(), 3u);
  expect_same_tensors(stored(b.graph()), stored(d8.graph), "T = 8");
}

// A cycle (the attention layer's dynamic parallelization: region completions fed back to the
// dispatcher, typed by declared types) keeps its nodes at their logical tiles; the rest is
// down-tiled around it, and the result is the same, bit for bit.
TEST(Downtile, NodesOnACycleKeepTheirTiles) {
  const Graph g = layers::build_layer("attention", {{"batch", "8"}, {"regions", "2"}, {"parallel", "dynamic"}});
  DowntileOptions o;
  o.partial = true;
  const DowntileResult d = downtile_graph(g, 16, o);
  std::set<std::string> cyclic;
  for (const DowntileNode& n : d.nodes)
    if (n.reason.find("it is on a cycle of the graph") != std::string::npos) cyclic.insert(n.name);
  EXPECT_TRUE(cyclic.count("dispatch_merge") && cyclic.count("dispatch")) << cyclic.size();  // and the regions
  EXPECT_LT(cyclic.size(), d.nodes.size());
  EXPECT_GT(d.blocked_nodes(), 0u);
  expect_same_tensors(stored(g), stored(d.graph), "attention, dynamic");
  EXPECT_THROW(downtile(g, 16), std::invalid_argument);
}

// Before a co-simulation: the side that puts the most nodes on the units. At par_dispatch 1
// (step-artifact) the [r x 16] address generator is out, so T = 4; at 4 (hdl-validation) both sides
// put every node on a unit and the larger wins (fewer beats).
TEST(Downtile, ForUnitsPicksTheSideThatPutsTheMostNodesOnUnits) {
  frontend::GraphBuilder b("mlp");
  b.tensor("x", 32, 64, DType::BF16, 7);
  b.tensor("w", 64, 64, DType::BF16, 8);
  b.output_tensor("y", 32, 64);
  const frontend::Stream x = b.load("x", "x", {16, 64}, {2}, {1});
  b.store("st", "y", {16, 64},
          b.map("s", "silu", {b.map("mm", "matmul_t", {x, b.load("w", "w", {64, 64}, {2}, {0})})}));
  const Graph g = b.graph();
  HardwareParams hw = load_preset("step-artifact");
  EXPECT_EQ(downtile_for_units(g, "auto", "hls", hw).tile, 4);
  EXPECT_EQ(downtile_for_units(g, "auto", "hls", load_preset("hdl-validation")).tile, 16);
  EXPECT_EQ(downtile_for_units(g, "16", "hls", hw).tile, 16);
  try {
    downtile_for_units(g, "4x4", "hls", hw);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'4x4' is neither a tile side 1..65536 nor auto"), std::string::npos);
  }
}

}  // namespace
}  // namespace stepsim
