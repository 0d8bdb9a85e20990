// The C++ frontend (sim/frontend/builder.h): shapes printed while a graph is built, producer /
// consumer mismatches caught at construction, named dynamic dimensions, the YAML round trip
// (sim/graph/graph_writer.h + load_graph) and a run of a built graph.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "hw/presets/hardware.h"
#include "sim/engine/simulation.h"
#include "sim/frontend/builder.h"
#include "sim/graph/graph_writer.h"
#include "sim/graph/loader.h"
#include "sim/shape/metrics.h"

namespace stepsim::frontend {
namespace {

namespace fs = std::filesystem;

// x [64x256] @ w [256x512] by [16x256] row tiles and [256x64] weight tiles, stored to y.
struct Ffn {
  GraphBuilder b{"ffn", "a small matmul"};
  Stream x, xrep, w, mm, act;
  Ffn() {
    b.tensor("x", 64, 256, DType::BF16, 3);
    b.tensor("w", 256, 512, DType::BF16, 4);
    b.output_tensor("y", 64, 512);
    x = b.load("x_load", "x", {16, 256}, {4}, {1});
    auto xs = b.broadcast("xs", x, 2);
    xrep = b.repeat("xrep", xs[0], 8);
    w = b.load("w_load", "w", {256, 64}, {8}, {1}, xs[1]);
    mm = b.map("mm", "matmul", {xrep, w}, 1024);
    act = b.map("act", "silu", {mm});
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const shape::ShapeError& e) {
    return e.what();
  }
  return "no ShapeError";
}

bool has(const std::string& s, const std::string& w) { return s.find(w) != std::string::npos; }

TEST(Builder, StreamsPrintTheirShapes) {
  Ffn f;
  EXPECT_EQ(f.x.shape(), "[1, 4] of T[16x256:bf16]");
  EXPECT_EQ(f.xrep.shape(), "[1, 4, 8] of T[16x256:bf16]");
  EXPECT_EQ(f.w.shape(), "[1, 4, 8] of T[256x64:bf16]");
  EXPECT_EQ(f.mm.shape(), "[1, 4, 8] of T[16x64:bf16]");
  EXPECT_EQ(f.act.ref(), "act.out");
  EXPECT_EQ(f.act.node(), "act");
  EXPECT_EQ(f.act.port(), "out");
  f.b.store("y_store", "y", {16, 64}, f.act);
  // Metrics of the built graph.
  shape::SymbolTable& syms = f.b.symbols();
  shape::GraphMetrics m = shape::symbolic_metrics(f.b.graph(), f.b.types(), "paper");
  EXPECT_EQ(shape::to_string(shape::evaluate(m.read_bytes, syms)), std::to_string(64 * 256 * 2 + 4 * 256 * 512 * 2));
  EXPECT_EQ(shape::to_string(shape::evaluate(m.write_bytes, syms)), std::to_string(64 * 512 * 2));
  EXPECT_EQ(shape::to_string(shape::evaluate(m.flops, syms)), std::to_string(2 * 64 * 256 * 512 + 8 * 64 * 512));
  EXPECT_EQ(f.b.graph().find("mm")->compute_bw, std::optional<uint64_t>(1024));
}

TEST(Builder, MismatchesNameTheConsumerBothProducersAndBothShapes) {
  Ffn f;
  // Map of two streams with different dims.
  std::string e = error_of([&] { f.b.map("bad_add", "add", {f.x, f.mm}); });
  EXPECT_EQ(e,
            "node 'bad_add' (Map): inputs must have the same shape: in0 from 'x_load.out' is [1, 4] of "
            "T[16x256:bf16], in1 from 'mm.out' is [1, 4, 8] of T[16x64:bf16] (rank 2 vs 3)");
  // matmul with mismatched inner dims.
  e = error_of([&] { f.b.map("bad_mm", "matmul", {f.w, f.w}); });
  EXPECT_EQ(e,
            "node 'bad_mm' (Map): matmul: T[256x64:bf16] x T[256x64:bf16]: inner dimensions 64 and 256 differ "
            "(in0 from 'w_load.out' is [1, 4, 8] of T[256x64:bf16], in1 from 'w_load.out' is [1, 4, 8] of "
            "T[256x64:bf16])");
  // A store of the wrong tile.
  e = error_of([&] { f.b.store("bad_store", "y", {16, 32}, f.act); });
  EXPECT_EQ(e,
            "node 'bad_store' (LinearOffChipStore): input 'in' from 'act.out' carries T[16x64:bf16], expected "
            "T[16x32:bf16] (tensor tile and dtype)");
  // A failed node is not added: the name is free and the graph unchanged.
  EXPECT_EQ(f.b.graph().find("bad_store"), nullptr);
  EXPECT_EQ(f.b.graph().nodes.size(), 6u);
  f.b.store("bad_store", "y", {16, 64}, f.act);
  EXPECT_EQ(f.b.graph().nodes.size(), 7u);
  // Duplicate names.
  EXPECT_EQ(error_of([&] { f.b.map("act", "silu", {f.mm}); }), "node 'act' is defined twice");
}

TEST(Builder, UnknownOperatorsAndParametersThrow) {
  Ffn f;
  try {
    f.b.add1("m", "Mapp", {}, {{"in0", f.mm}});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(has(e.what(), "unknown operator 'Mapp'")) << e.what();
  }
  try {
    f.b.add1("m", "Map", {{"fn", "silu"}, {"colour", "red"}}, {{"in0", f.mm}});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(has(e.what(), "node 'm'") && has(e.what(), "colour")) << e.what();
  }
  EXPECT_THROW(f.b.map("m2", "no_such_fn", {f.mm}), shape::ShapeError);
  EXPECT_EQ(f.b.graph().find("m"), nullptr);
  EXPECT_THROW(Stream().type(), std::logic_error);
}

TEST(Builder, SetDimNamesADynamicDimension) {
  GraphBuilder b("dyn");
  b.literal_stream("x", "T[1x8] T[1x8] T[1x8] S1 D");
  b.literal_stream("mask", "T[1x1:int32] T[1x1:int32] T[1x1:int32] S1 D");
  b.symbol("kept", "2");
  Stream x = b.source("x", "x");
  Stream m = b.source("mask", "mask");
  Stream rows = b.flatmap("rows", "retile_streamify_row_filter", 1, {x, m});
  EXPECT_EQ(rows.shape(), "[1, 3, n_rows_out~] of T[1x8:bf16]");
  rows.set_dim(2, "kept");
  EXPECT_EQ(rows.shape(), "[1, 3, kept~] of T[1x8:bf16]");
  EXPECT_EQ(b.graph().find("rows")->dims.at("out"), (std::vector<std::string>{"", "", "kept"}));
  Stream act = b.map("act", "silu", {rows});
  EXPECT_EQ(act.shape(), "[1, 3, kept~] of T[1x8:bf16]");
  EXPECT_EQ(shape::to_string(shape::evaluate(b.types().nodes.at("act").flops, b.symbols())), "128");  // 2 x 8 x 8
  // Once read, a stream's dims can no longer be renamed; a dimension must exist.
  EXPECT_TRUE(has(error_of([&] { rows.set_dim(2, "other"); }), "node 'act' already reads it")) << "";
  EXPECT_TRUE(has(error_of([&] { act.set_dim(5, "n"); }), "no dimension 5"));
  // The node order is kept.
  EXPECT_EQ(b.graph().nodes[2].name, "rows");
}

// Every field of two graphs.
void expect_same(const Graph& a, const Graph& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.description, b.description);
  EXPECT_EQ(a.symbols, b.symbols);
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const NodeSpec &x = a.nodes[i], &y = b.nodes[i];
    SCOPED_TRACE("node " + x.name);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.op, y.op);
    EXPECT_EQ(x.params, y.params);
    EXPECT_EQ(x.inputs, y.inputs);
    EXPECT_EQ(x.compute_bw, y.compute_bw);
    EXPECT_EQ(x.depth, y.depth);
    EXPECT_EQ(x.num_outputs, y.num_outputs);
    EXPECT_EQ(x.dims, y.dims);
    EXPECT_EQ(x.impl, y.impl);
  }
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const TensorSpec &x = a.tensors[i], &y = b.tensors[i];
    SCOPED_TRACE("tensor " + x.name);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.rows, y.rows);
    EXPECT_EQ(x.cols, y.cols);
    EXPECT_EQ(x.dtype, y.dtype);
    EXPECT_EQ(x.init, y.init);
    EXPECT_EQ(x.seed, y.seed);
    EXPECT_EQ(x.file, y.file);
    EXPECT_EQ(x.block_rows, y.block_rows);
    EXPECT_EQ(x.block_cols, y.block_cols);
  }
  ASSERT_EQ(a.streams.size(), b.streams.size());
  for (const auto& [name, beats] : a.streams) {
    ASSERT_TRUE(b.streams.count(name)) << name;
    EXPECT_EQ(format_beats(beats), format_beats(b.streams.at(name))) << name;
  }
}

class RoundTrip : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("stepsim_frontend_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string read(const std::string& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  fs::path dir_;
};

TEST_F(RoundTrip, BuiltGraphWritesLoadsAndWritesIdentically) {
  GraphBuilder b("round_trip", "every kind of field: 'quotes', #hash");
  b.tensor("x", 8, 64, DType::BF16, 7);
  b.set_tensor_block(4, 16);
  b.tensor("f", 4, 32, DType::FP32, 1);
  b.set_tensor_block(0, 0);
  b.output_tensor("y", 8, 64);
  b.literal_stream("sel", "{0} {1} {0,1} {} {1} {0} {0} {1} S1 D");
  b.literal_stream("odd", "(1,T[2x2:fp32]) S1 D");
  b.trace_stream(
      "routing",
      "{trace: 'shared:traces/moe/mixtral8x7b_b64_iter008_layer010.csv', kind: selector, limit: 8, rank: 1}");
  b.symbol("n", "2*k + 1");
  Stream x = b.load("x_load", "x", {1, 64}, {8}, {1});
  Stream sel = b.source("sel", "sel", 4);
  auto parts = b.partition("route", x, sel, 2);
  Stream gather = b.reassemble("gather", parts, b.source("sel2", "sel"));
  gather.set_dim(2, "n_route_out0 + n_route_out1");
  NodeOptions o;
  o.depth = 3;
  o.num_outputs = 2;
  b.add("r", "Source", {{"stream", "routing"}, {"interval", "2"}}, {}, o);
  b.source("odd", "odd");
  Stream act = b.map("act", "silu", {gather}, 512);
  auto flat = b.flatten("flat", act, 0, 1);
  b.store("store", "y", {1, 64}, flat, {8}, {1});
  const Graph& g = b.graph();

  const std::string p1 = (dir_ / "g1.yaml").string(), p2 = (dir_ / "g2.yaml").string();
  write_graph(g, p1);
  EXPECT_FALSE(fs::exists(p1 + ".tmp"));
  const std::string text = read(p1);
  // Streams are written back as given: the trace by reference.
  EXPECT_TRUE(has(text, "shared:traces/moe/mixtral8x7b_b64_iter008_layer010.csv")) << text;
  EXPECT_TRUE(has(text, "dims: {out: [\"\", \"\", \"n_route_out0 + n_route_out1\"]}")) << text;
  EXPECT_TRUE(has(text, "block: [4, 16]")) << text;
  Graph back = load_graph(p1, {});
  expect_same(g, back);
  EXPECT_EQ(graph_to_yaml(back), text);
  write_graph(back, p2);
  EXPECT_EQ(read(p2), text);
  // The loaded graph types to the same shapes.
  shape::SymbolTable syms;
  shape::GraphTypes t = shape::infer_types(back, syms);
  for (const auto& [node, nt] : b.types().nodes)
    for (const auto& [port, type] : nt.outputs)
      EXPECT_EQ(t.nodes.at(node).outputs.at(port).str(), type.str()) << node << "." << port;
  EXPECT_THROW(write_graph(g, (dir_ / "no/such/dir/g.yaml").string()), std::runtime_error);
}

TEST_F(RoundTrip, EveryExampleSurvivesTheRoundTrip) {
  for (const auto& e : fs::directory_iterator(fs::path(STEPSIM_SOURCE_DIR) / "graphs/examples")) {
    if (e.path().extension() != ".yaml") continue;
    SCOPED_TRACE(e.path().filename().string());
    Graph g = load_graph(e.path().string(), {});
    // Written next to the original so relative trace/tensor paths resolve alike.
    const std::string p = (dir_ / e.path().filename()).string();
    write_graph(g, p);
    Graph back = load_graph(p, {});
    expect_same(g, back);
    EXPECT_EQ(graph_to_yaml(back), read(p));
  }
}

TEST(Builder, BuiltGraphRuns) {
  Ffn f;
  f.b.store("y_store", "y", {16, 64}, f.act);
  SimOptions opt;
  opt.hw = load_preset("step-artifact");
  SimResult r = simulate(f.b.graph(), opt);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_GT(r.cycles, 0u);
  EXPECT_EQ(r.offchip_read_bytes, uint64_t(64 * 256 * 2 + 4 * 256 * 512 * 2));
  EXPECT_EQ(r.offchip_write_bytes, uint64_t(64 * 512 * 2));
  uint64_t flops = 0;
  for (const NodeResult& n : r.nodes) flops += n.flops;
  EXPECT_EQ(flops, uint64_t(2 * 64 * 256 * 512 + 8 * 64 * 512));
}

}  // namespace
}  // namespace stepsim::frontend
