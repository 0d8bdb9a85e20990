// `stepsim analyze` and the simulator cannot disagree (issue 20 item 2): both check a graph with
// validate_graph (sim/engine/validate.h), so on every graph we have they accept the same graphs, reject
// the same graphs with the same error, and the stream shapes analyze infers are the streams the
// run carries. The graphs: every example of graphs/examples/, every layer of the library at
// several sizes, and a set of invalid graphs (one per kind of static error).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "graphs/layers/layer.h"
#include "hw/presets/hardware.h"
#include "sim/engine/simulation.h"
#include "sim/engine/validate.h"
#include "sim/graph/loader.h"
#include "sim/report/analyze.h"

namespace stepsim {
namespace {

namespace fs = std::filesystem;

struct Verdict {
  bool accepted = false;
  std::string error;
};

Verdict analyze(const Graph& g) {
  try {
    analyze_graph(g, "paper");
    return {true, ""};
  } catch (const std::exception& e) {
    return {false, e.what()};
  }
}

SimResult run(const Graph& g) {
  SimOptions opt;
  opt.hw = load_preset("step-artifact");
  return simulate(g, opt);
}

Verdict simulator(const Graph& g) {
  try {
    SimResult r = run(g);
    return {r.ok, r.error};
  } catch (const std::exception& e) {
    return {false, e.what()};
  }
}

// Every channel the run made from a node of `g` carried what analyze says that port carries: as
// many elements as the stream's cardinality, and, for a tile element of known size, as many bytes.
void expect_streams_match(const Graph& g, const SimResult& r) {
  shape::SymbolTable syms;
  const shape::GraphTypes types = validate_graph(g, syms);
  size_t checked = 0;
  for (const ChannelResult& c : r.channels) {
    const std::string from = c.name.substr(0, c.name.find("->"));
    const std::string node = from.substr(0, from.find('.')), port = from.substr(from.find('.') + 1);
    auto n = types.nodes.find(node);
    if (n == types.nodes.end() || !n->second.outputs.count(port)) continue;  // an inserted Broadcast
    const shape::StreamType& t = n->second.outputs.at(port);
    int64_t card = 0;
    if (!shape::to_int(shape::evaluate(t.card(), syms), card)) continue;  // data-dependent
    EXPECT_EQ(c.stats.elements, uint64_t(card)) << c.name << " carries " << t.str();
    int64_t elem_bytes = 0;
    if (t.elem.kind == shape::ElemType::Tile && !t.elem.has_rows_mean &&
        shape::to_int(shape::evaluate(t.elem.bytes(), syms), elem_bytes)) {
      EXPECT_EQ(c.stats.bytes, uint64_t(card * elem_bytes)) << c.name << " carries " << t.str();
    }
    ++checked;
  }
  EXPECT_GT(checked, 0u) << "no channel with a known cardinality";
}

void expect_agreement(const Graph& g, bool valid) {
  const Verdict a = analyze(g), s = simulator(g);
  EXPECT_EQ(a.accepted, valid) << "analyze: " << a.error;
  EXPECT_EQ(s.accepted, a.accepted) << "simulator: " << s.error << "\nanalyze: " << a.error;
  EXPECT_EQ(s.error, a.error);
  if (valid && a.accepted && s.accepted) expect_streams_match(g, run(g));
}

TEST(Agreement, EveryExampleGraph) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(STEPSIM_SOURCE_DIR) / "graphs/examples")) {
    if (e.path().extension() != ".yaml") continue;
    SCOPED_TRACE(e.path().filename().string());
    expect_agreement(load_graph(e.path().string(), {}), true);
    ++n;
  }
  EXPECT_GE(n, 8u);
}

using LayerParams = std::map<std::string, std::string>;

TEST(Agreement, EveryLayerAtSeveralSizes) {
  const std::vector<std::pair<std::string, LayerParams>> cases = {
      {"swiglu", {}},
      {"swiglu", {{"tile_b", "32"}, {"tile_f", "128"}}},
      {"moe", {{"batch", "32"}, {"hidden", "256"}, {"inter", "512"}}},
      {"moe", {{"batch", "32"}, {"tile_n", "0"}, {"hidden", "256"}, {"inter", "512"}}},
      {"moe", {{"model", "qwen"}, {"batch", "16"}, {"hidden", "256"}, {"inter", "256"}}},
      {"moe_tm", {{"batch", "32"}, {"regions", "8"}, {"hidden", "256"}, {"inter", "768"}}},
      {"moe_tm",
       {{"model", "mixtral"}, {"regions", "4"}, {"batch", "16"}, {"hidden", "256"}, {"inter", "480"}, {"tile_n", "0"}}},
      {"attention", {{"batch", "32"}}},
      {"attention", {{"batch", "32"}, {"parallel", "coarse"}, {"per_region", "8"}}},
      {"attention", {{"batch", "32"}, {"parallel", "interleaved"}}},
      {"decoder", {{"batch", "8"}, {"hidden", "256"}, {"inter", "256"}}},
      {"decoder", {{"batch", "4"}, {"hidden", "256"}, {"inter", "256"}, {"kv_lengths", "7 300 0 64"}}},
      {"prefill", {{"tokens", "40"}, {"hidden", "256"}, {"inter", "256"}}},
      {"prefill", {{"model", "mixtral"}, {"tokens", "70"}, {"offset", "64"}, {"hidden", "256"}, {"inter", "512"}}},
      {"lm_head", {{"tokens", "3"}, {"hidden", "64"}, {"vocab", "1000"}, {"tile_v", "256"}, {"regions", "3"}}},
  };
  std::set<std::string> covered;
  for (const auto& [layer, params] : cases) {
    std::string what = layer;
    for (const auto& [k, v] : params) what += " " + k + "=" + v;
    SCOPED_TRACE(what);
    expect_agreement(layers::build_layer(layer, params), true);
    covered.insert(layer);
  }
  for (const layers::LayerInfo* l : layers::LayerRegistry::instance().all())
    EXPECT_TRUE(covered.count(l->name)) << "layer " << l->name << " has no case here";
}

// One graph per kind of static error; each names what it breaks.
struct InvalidCase {
  std::string what, yaml;
};

std::vector<InvalidCase> invalid_cases() {
  const std::string two =
      "streams:\n  a: 'T[2x2] T[2x2] S1 D'\n  b: 'T[3x3] T[3x3] S1 D'\n  c: 'T[2x2] S1 D'\n"
      "  sel: '{0} {1} {0,1} S1 D'\nnodes:\n"
      "  - {name: a, op: Source, params: {stream: a}}\n"
      "  - {name: b, op: Source, params: {stream: b}}\n"
      "  - {name: c, op: Source, params: {stream: c}}\n"
      "  - {name: sel, op: Source, params: {stream: sel}}\n";
  auto sink = [](const std::string& in) { return "  - {name: k, op: Sink, inputs: {in: " + in + "}}\n"; };
  return {
      {"elementwise shapes that do not broadcast",
       two + "  - {name: m, op: Map, params: {fn: add}, inputs: {in0: a, in1: b}}\n" + sink("m") +
           "  - {name: kc, op: Sink, inputs: {in: c}}\n  - {name: ks, op: Sink, inputs: {in: sel}}\n"},
      {"zipped streams of different lengths",
       two + "  - {name: m, op: Map, params: {fn: add}, inputs: {in0: a, in1: c}}\n" + sink("m") +
           "  - {name: kb, op: Sink, inputs: {in: b}}\n  - {name: ks, op: Sink, inputs: {in: sel}}\n"},
      {"matmul inner dimensions",
       two + "  - {name: m, op: Map, params: {fn: matmul}, inputs: {in0: a, in1: b}}\n" + sink("m") +
           "  - {name: kc, op: Sink, inputs: {in: c}}\n  - {name: ks, op: Sink, inputs: {in: sel}}\n"},
      {"a reduction deeper than the stream",
       two + "  - {name: m, op: Accum, params: {fn: add, rank: 3}, inputs: {in0: a}}\n" + sink("m") +
           "  - {name: kb, op: Sink, inputs: {in: b}}\n  - {name: kc, op: Sink, inputs: {in: c}}\n"
           "  - {name: ks, op: Sink, inputs: {in: sel}}\n"},
      {"selectors of another shape than the data",
       two + "  - {name: p, op: Partition, params: {rank: 0}, inputs: {in: a, sel: sel}}\n" +
           "  - {name: k0, op: Sink, inputs: {in: p.out0}}\n  - {name: k1, op: Sink, inputs: {in: p.out1}}\n"
           "  - {name: kb, op: Sink, inputs: {in: b}}\n  - {name: kc, op: Sink, inputs: {in: c}}\n"},
      {"a Bufferize deeper than the stream",
       two + "  - {name: m, op: Bufferize, params: {rank: 2}, inputs: {in: a}}\n" + sink("m") +
           "  - {name: kb, op: Sink, inputs: {in: b}}\n  - {name: kc, op: Sink, inputs: {in: c}}\n"
           "  - {name: ks, op: Sink, inputs: {in: sel}}\n"},
      {"Expand of data whose expanded dimension is not 1",
       two + "  - {name: m, op: Expand, params: {rank: 1}, inputs: {in: a, ref: sel}}\n" + sink("m") +
           "  - {name: kc, op: Sink, inputs: {in: c}}\n  - {name: kb, op: Sink, inputs: {in: b}}\n"},
      {"a store of the wrong tile",
       "tensors:\n  t: {shape: [4, 4], dtype: bf16}\n" + two +
           "  - {name: st, op: LinearOffChipStore, params: {tensor: t, tile: [2, 2]}, inputs: {in: b}}\n"
           "  - {name: ka, op: Sink, inputs: {in: a}}\n  - {name: kc, op: Sink, inputs: {in: c}}\n"
           "  - {name: ks, op: Sink, inputs: {in: sel}}\n"},
  };
}

TEST(Agreement, InvalidGraphsAreRejectedByBothWithTheSameError) {
  const fs::path dir = fs::temp_directory_path() / "stepsim_agreement";
  fs::create_directories(dir);
  for (const InvalidCase& c : invalid_cases()) {
    SCOPED_TRACE(c.what);
    const fs::path file = dir / "invalid.yaml";
    {
      std::ofstream f(file);
      f << "name: invalid\n" << c.yaml;
    }
    const Graph g = load_graph(file.string(), {});
    expect_agreement(g, false);
    const Verdict a = analyze(g);
    EXPECT_NE(a.error.find("node '"), std::string::npos) << "the error names the node: " << a.error;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stepsim
