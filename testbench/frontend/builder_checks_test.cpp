// One validation for every graph however built (issue 33, items 1 and 3): each declaration the
// YAML loader refuses, the GraphBuilder (and so the layer library and Python) refuses too, with
// the same rule (sim/graph/validate.h). Each case is given both ways.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "sim/frontend/builder.h"
#include "sim/graph/loader.h"
#include "sim/graph/validate.h"

namespace stepsim::frontend {
namespace {

// A graph file around `tensors`, `streams` and `nodes` (YAML flow text, may be empty).
std::string yaml(const std::string& tensors, const std::string& nodes, const std::string& streams = "") {
  std::string y = "name: g\n";
  if (!tensors.empty()) y += "tensors: {" + tensors + "}\n";
  if (!streams.empty()) y += "streams: {" + streams + "}\n";
  return y + "nodes: [" + nodes + "]\n";
}

const std::string kLoad = "{name: load, op: LinearOffChipLoad, params: {tensor: x, tile: [4, 4]}}";

// The builder with tensor x [4 x 4] and its load node.
GraphBuilder with_load() {
  GraphBuilder b("g");
  b.tensor("x", 4, 4);
  b.load("load", "x", {4, 4});
  return b;
}

struct Case {
  const char* what;
  std::string file;                             // the same graph as a file
  std::function<void(GraphBuilder&)> build;     // what the builder is asked
  const char* message;                          // a part of both errors
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {  // ShapeError is one too
    return e.what();
  }
  return "";
}

TEST(BuilderChecks, RefusesWhatTheLoaderRefuses) {
  const std::string ok_x = "x: {shape: [4, 4]}";
  const std::vector<Case> cases = {
      {"a tensor of 2^41 elements", yaml("t: {shape: [2097152, 1048576]}", ""),
       [](GraphBuilder& b) { b.tensor("t", uint64_t(1) << 21, uint64_t(1) << 20); }, "more elements than the limit"},
      {"a tensor side above 2^40", yaml("t: {shape: [1099511627777, 1]}", ""),
       [](GraphBuilder& b) { b.tensor("t", (uint64_t(1) << 40) + 1, 1); }, "1..1099511627776"},
      {"init: file with no .npy", yaml("t: {shape: [4, 4], init: file, file: /nonexistent/t.npy}", ""),
       [](GraphBuilder& b) {
         TensorSpec t;
         t.name = "t";
         t.rows = t.cols = 4;
         t.init = "file";
         t.file = "/nonexistent/t.npy";
         b.declare_tensor(t);
       },
       "/nonexistent/t.npy"},
      {"a tensor named ../escaped", yaml("'../escaped': {shape: [4, 4]}", ""),
       [](GraphBuilder& b) { b.tensor("../escaped", 4, 4); }, "is not an identifier"},
      {"a tensor named with a NUL", yaml("\"x\\0\": {shape: [4, 4]}", ""),
       [](GraphBuilder& b) { b.tensor(std::string("x\0", 2), 4, 4); }, "'x\\x00'"},
      {"a node named a.b", yaml(ok_x, "{name: a.b, op: Sink, inputs: {in: load}}, " + kLoad),
       [](GraphBuilder& b) { b.sink("a.b", b.stream("load", "out")); }, "node name 'a.b' is not an identifier"},
      {"a stream named ../s", yaml(ok_x, kLoad, "'../s': '1 D'"),
       [](GraphBuilder& b) { b.literal_stream("../s", "1 D"); }, "stream name '../s'"},
      {"Broadcast with 257 outputs", yaml(ok_x, kLoad + ", {name: bc, op: Broadcast, inputs: {in: load}, outputs: 257}"),
       [](GraphBuilder& b) { b.broadcast("bc", b.stream("load", "out"), 257); }, "1..256"},
      {"Broadcast with 10^9 outputs",
       yaml(ok_x, kLoad + ", {name: bc, op: Broadcast, inputs: {in: load}, outputs: 1000000000}"),
       [](GraphBuilder& b) { b.broadcast("bc", b.stream("load", "out"), 1000000000); }, "1000000000"},
      {"depth 0", yaml(ok_x, "{name: load, op: LinearOffChipLoad, params: {tensor: x, tile: [4, 4]}, depth: 0}"),
       [](GraphBuilder& b) { b.set_depth("load", 0); }, "depth"},
      {"depth above 2^20",
       yaml(ok_x, "{name: load, op: LinearOffChipLoad, params: {tensor: x, tile: [4, 4]}, depth: 1048577}"),
       [](GraphBuilder& b) { b.set_depth("load", (1u << 20) + 1); }, "1048577"},
      {"compute_bw 0",
       yaml(ok_x, "{name: load, op: LinearOffChipLoad, params: {tensor: x, tile: [4, 4]}, compute_bw: 0}"),
       [](GraphBuilder& b) { b.set_compute_bw("load", 0); }, "compute_bw"},
      {"set_depth of a missing node", "",  // a file has no set_depth (--set nope.depth=4 is refused)
       [](GraphBuilder& b) { b.set_depth("nope", 4); }, "no node 'nope'"},
      {"a literal stream defined twice", yaml(ok_x, kLoad, "s: '1 D', s: '2 D'"),
       [](GraphBuilder& b) {
         b.literal_stream("s", "1 D");
         b.literal_stream("s", "2 D");
       },
       "'s'"},
      {"a symbol given twice", yaml(ok_x, kLoad) + "symbols: {n: 4, n: 5}\n",
       [](GraphBuilder& b) {
         b.symbol("n", "4");
         b.symbol("n", "5");
       },
       "symbol 'n' is given twice"},
      {"an impl that is none", yaml(ok_x, kLoad) + "impl: fpga\n", [](GraphBuilder& b) { b.set_impl("fpga"); },
       "impl must be approx, hls or rtl"},
  };
  for (const Case& c : cases) {
    const std::string from_file = c.file.empty() ? "" : error_of([&] { parse_graph(c.file, "g.yaml", ".", {}); });
    const std::string from_builder = error_of([&] {
      GraphBuilder b = with_load();
      c.build(b);
    });
    if (!c.file.empty()) {
      EXPECT_NE(from_file, "") << c.what << ": the loader took\n" << c.file;
    }
    EXPECT_NE(from_builder, "") << c.what << ": the builder took it";
    EXPECT_NE(from_builder.find(c.message), std::string::npos) << c.what << ": " << from_builder;
  }
}

TEST(BuilderChecks, GraphNamesAreIdentifiers) {
  EXPECT_THROW(GraphBuilder("round: trip"), std::invalid_argument);
  EXPECT_THROW(GraphBuilder(""), std::invalid_argument);
  EXPECT_THROW(GraphBuilder(std::string(129, 'g')), std::invalid_argument);
  EXPECT_NO_THROW(GraphBuilder(std::string(128, 'g')));
  EXPECT_NO_THROW(GraphBuilder("_g2"));
  // A graph file without `name:` is named after its file, made an identifier.
  EXPECT_EQ(parse_graph("nodes: []\n", "/tmp/my-graph.v2.yaml", ".", {}).name, "my_graph_v2");
  EXPECT_EQ(parse_graph("nodes: []\n", "/tmp/2x.yaml", ".", {}).name, "_2x");
}

TEST(BuilderChecks, ABuiltGraphPassesTheWholeGraphCheck) {
  GraphBuilder b = with_load();
  b.sink("k", b.stream("load", "out"));
  EXPECT_NO_THROW(check_graph(b.graph()));
}

TEST(BuilderChecks, ASymbolOrSetDimExpressionNamesWhatItBelongsTo) {
  GraphBuilder b = with_load();
  const std::string sym = error_of([&] { b.symbol("n", "2*"); });
  EXPECT_NE(sym.find("symbol 'n'"), std::string::npos) << sym;
  EXPECT_EQ(sym.find("GiNaC"), std::string::npos) << sym;
  Stream s = b.stream("load", "out");
  const std::string dim = error_of([&] { s.set_dim(0, "2^100000000"); });
  EXPECT_NE(dim.find("set_dim on 'load.out'"), std::string::npos) << dim;
}

}  // namespace
}  // namespace stepsim::frontend
