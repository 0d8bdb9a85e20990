// `stepsim analyze` and the simulator agree operator by operator on edge inputs (issue 33 item 6):
// every operator of the registry runs on generated streams (empty streams, empty and ragged
// dimensions, sizes that are not a multiple of a chunk or of the outputs) under a set of
// parameters, and for every case
//   - analyze accepts  => the operator's own run (no static check before it) succeeds, and the
//                         stream on each output port has the type the shape rule inferred;
//   - analyze refuses  => the operator's own run refuses too, unless the case is a static rule
//                         the operator does not repeat at run time (listed in static_only()).
// agreement_test.cpp checks the same promise on whole graphs (examples and layers);
// testbench/shape/rules_test.cpp checks each rule on a few hand-picked streams.
#include <gtest/gtest.h>

#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "../shape/shape_check.h"
#include "hw/ops/op.h"
#include "hw/presets/hardware.h"
#include "hw/stream/token.h"
#include "sim/engine/simulation.h"
#include "sim/engine/validate.h"
#include "sim/graph/ports.h"

namespace stepsim {
namespace {

using Params = std::map<std::string, std::string>;

// Stream structures, `x` standing for an element: the edge cases of the encoding.
const std::vector<std::string>& structures() {
  static const std::vector<std::string> s = {
      "D",                                // [0]: empty stream
      "x D",                              // [1]
      "x x x x x x D",                    // [6]: not a multiple of 4
      "S1 D",                             // [1, 0]: one empty row
      "S1 S1 D",                          // [2, 0]
      "x x S1 x S1 D",                    // [2, ragged]
      "x S1 S1 x x S1 D",                 // [3, ragged] with an empty row
      "x x x S1 x x x S1 D",              // [2, 3]
      "x S1 x S1 x S1 x S1 x S1 x S1 D",  // [6, 1]: outer 6
      "x x x x x x S1 D",                 // [1, 6]
      "x x S1 x x S2 x x S1 x x S2 D",    // [2, 2, 2]
      "x S1 x S1 x S1 x S1 x S1 x S2 D",  // [1, 6, 1]: a middle 6
      "x S1 x x S2 x x x S1 S1 x S2 D",   // [2, ragged, ragged] with an empty row
  };
  return s;
}

// `structure` with its i-th element written by `elem(i)`.
std::string fill(const std::string& structure, const std::function<std::string(int)>& elem) {
  std::string out;
  int i = 0;
  for (size_t p = 0; p < structure.size(); ++p) {
    const bool x = structure[p] == 'x' && (p + 1 == structure.size() || structure[p + 1] == ' ');
    out += x ? elem(i++) : std::string(1, structure[p]);
  }
  return out;
}
std::string scalars(const std::string& s) {
  return fill(s, [](int i) { return std::to_string(i % 5); });
}
std::string tiles(const std::string& s, const std::string& tile = "T[2x4]") {
  return fill(s, [&](int) { return tile; });
}
std::string selectors(const std::string& s) {
  static const char* sel[] = {"{0}", "{1}", "{0,1}", "{}"};
  return fill(s, [](int i) { return std::string(sel[i % 4]); });
}
std::string one_hot(const std::string& s) {
  return fill(s, [](int i) { return "{" + std::to_string(i % 2) + "}"; });
}

// One operator node "op" fed by literal Sources (directly or through one producer node), with a
// Sink on every output port.
class Case {
 public:
  Case(std::string op, Params params, size_t outputs = 2) : outputs_(outputs) {
    node_ = node_spec("op", op, std::move(params));
    what_ = op;
    for (const auto& [k, v] : node_.params) what_ += " " + k + "=" + v;
  }
  // Input `port` reads the literal `tokens`.
  Case& in(const std::string& port, const std::string& tokens) { return via(port, tokens, "", {}); }
  // Input `port` reads `producer` (an operator with an output `out`) whose input `producer_in`
  // reads `tokens`.
  Case& via(const std::string& port, const std::string& tokens, const std::string& producer, Params params,
            const std::string& producer_in = "in") {
    const std::string src = "src_" + port;
    g_.streams[src] = to_beats(parse_tokens(tokens));
    g_.nodes.push_back(node_spec(src, OpKind::kSource, {{param::kStream.name, src}}));
    std::string ref = src + ".out0";
    if (!producer.empty()) {
      g_.nodes.push_back(node_spec("pre_" + port, producer, std::move(params), {{producer_in, ref}}));
      ref = "pre_" + port + ".out";
    }
    node_.inputs[port] = ref;
    what_ += " " + port + "='" + tokens + "'" + (producer.empty() ? "" : " via " + producer);
    return *this;
  }
  Case& tensor(const std::string& name, uint64_t rows, uint64_t cols) {
    TensorSpec t;
    t.name = name;
    t.rows = rows;
    t.cols = cols;
    t.init = "random";
    t.seed = 1;
    g_.tensors.push_back(t);
    return *this;
  }
  Case& functional() {
    functional_ = true;
    return *this;
  }

  // The graph, and the output ports of "op" a Sink reads.
  Graph graph(std::vector<std::string>& ports) const {
    Graph g = g_;
    g.name = "edges";
    g.nodes.push_back(node_);
    for (const PortSpec& p : OpRegistry::instance().find(node_.op).outputs)
      for (size_t k = 0; k < (is_numbered(p) ? outputs_ : 1); ++k)
        ports.push_back(is_numbered(p) ? port_base(p) + std::to_string(k) : p.name);
    for (const std::string& p : ports)
      g.nodes.push_back(node_spec("sink_" + p, OpKind::kSink, {}, {{"in", "op." + p}}));
    return g;
  }
  const std::string& what() const { return what_; }
  bool is_functional() const { return functional_; }
  const std::string& op() const { return node_.op; }

 private:
  NodeSpec node_;
  Graph g_;
  size_t outputs_;
  bool functional_ = false;
  std::string what_;
};

// What the check saw over all cases, for the summary line.
struct Tally {
  size_t cases = 0, accepted = 0, refused_by_both = 0, static_only = 0;
  std::map<std::string, size_t> accepted_by_op;  // every operator must run some case through
};

// Refusals of analyze that the operator cannot repeat at run time: what a stream does not show
// as it passes. A run always makes the static check first (sim/engine/validate.h), so such a graph is
// refused by `run` too, with analyze's words; here the operator runs without it.
bool static_only(const std::string& analyze_error) {
  static const char* const unseen[] = {
      // Ranks: a stream shows its highest stop only when it has one (a rank-1 "1 2 D" looks
      // rank 0), and an operator that closes its units at the done token accepts a lower rank.
      "dimension(s);", "outside the dims of", "above all", "must have the same rank",
      // Element types of a stream without elements (typed scalar: an empty literal).
      "needs tiles, operand", "carries scalar, not selectors", "carries scalar, expected",
      // Stop structure an operator does not read: Partition and Expand rank 0 count elements,
      // Streamify counts buffers; Expand repeats whatever it gets.
      "must have the outer shape of the data", "differ outside the expanded dims", "must match the buffer stream",
      "must have size 1 in its",
      // The paper's static rule for Reshape above the innermost dimension; the run checks only
      // the sizes it sees (and refuses those that are not a multiple of the chunk).
      "not a static multiple of chunk"};
  for (const char* u : unseen)
    if (analyze_error.find(u) != std::string::npos) return true;
  return false;
}

void check(const Case& c, Tally& tally) {
  SCOPED_TRACE(c.what());
  ++tally.cases;
  tally.accepted_by_op[c.op()] += 0;
  std::vector<std::string> ports;
  const Graph g = c.graph(ports);
  shape::SymbolTable syms;
  shape::GraphTypes types;
  std::string refused;
  try {
    types = validate_graph(g, syms);
  } catch (const std::exception& e) {
    refused = e.what();
  }
  SimOptions opt;
  opt.hw = load_preset("step-artifact");
  opt.static_check = false;  // the operator's own checks
  opt.functional = c.is_functional();
  SimResult r;
  try {
    r = simulate(g, opt);
  } catch (const std::exception& e) {
    r.ok = false;
    r.error = e.what();
  }
  if (!refused.empty()) {
    if (!r.ok) ++tally.refused_by_both;
    if (r.ok && static_only(refused)) ++tally.static_only;
    EXPECT_TRUE(!r.ok || static_only(refused)) << "analyze refuses, the operator runs: " << refused;
    return;
  }
  ++tally.accepted;
  ++tally.accepted_by_op[c.op()];
  ASSERT_TRUE(r.ok) << "analyze accepts, the operator refuses: " << r.error;
  const shape::NodeTypes& nt = types.nodes.at("op");
  for (const std::string& p : ports) {
    ASSERT_TRUE(nt.outputs.count(p)) << "the rule gives no type for output " << p;
    shape::testing::expect_matches(nt.outputs.at(p), r.recorded.at("sink_" + p), syms, "output " + p);
  }
}

// ---- The cases, by operator.

using Cases = std::vector<Case>;

Cases shape_op_cases() {
  Cases v;
  for (const std::string& s : structures()) {
    for (auto [lo, hi] : std::vector<std::pair<int, int>>{{0, 0}, {0, 1}, {1, 2}, {0, 2}})
      v.push_back(Case("Flatten", {{"min", std::to_string(lo)}, {"max", std::to_string(hi)}}).in("in", scalars(s)));
    for (const char* chunk : {"1", "4"})
      for (const char* rank : {"0", "1", "2"})
        v.push_back(Case("Reshape", {{"chunk", chunk}, {"rank", rank}}).in("in", tiles(s, "T[1x8]")));
    for (const char* rank : {"-1", "0", "1", "2"}) v.push_back(Case("Promote", {{"rank", rank}}).in("in", scalars(s)));
    for (const char* count : {"0", "2"}) v.push_back(Case("Repeat", {{"count", count}}).in("in", scalars(s)));
    for (const std::string& t : structures())  // zipped streams of every pair of shapes
      v.push_back(Case("Zip", {}).in("in0", scalars(s)).in("in1", tiles(t)));
    for (const std::string& r : structures())  // Expand: every data shape against every ref shape
      for (const char* rank : {"0", "1", "2"})
        v.push_back(Case("Expand", {{"rank", rank}}).in("in", scalars(s)).in("ref", scalars(r)));
  }
  return v;
}

Cases routing_cases() {
  Cases v;
  for (const std::string& s : structures()) {
    v.push_back(Case("Broadcast", {}, 3).in("in", scalars(s)));
    for (const char* rank : {"0", "1", "2"})
      for (size_t outs : {2, 4}) v.push_back(Case("Parallelize", {{"rank", rank}}, outs).in("in", scalars(s)));
    for (const std::string& sel : structures())
      for (const char* rank : {"0", "1"}) {
        v.push_back(Case("Partition", {{"rank", rank}}, 2).in("in", scalars(s)).in("sel", selectors(sel)));
        v.push_back(Case("EagerMerge", {{"rank", rank}}).in("in0", scalars(s)).in("in1", scalars(sel)));
      }
  }
  // Reassemble: two inputs and selectors of a few shapes each.
  const std::vector<std::string> few = {"D", "x x x D", "S1 D", "x x S1 x S1 D", "x S1 x S1 x S1 D"};
  for (const std::string& a : few)
    for (const std::string& b : few)
      for (const std::string sel : {"D", "x x D", "x x x x S1 D", "x S1 x S1 D"})
        for (const char* rank : {"0", "1"})
          v.push_back(Case("Reassemble", {{"rank", rank}})
                          .in("in0", scalars(a))
                          .in("in1", scalars(b))
                          .in("sel", selectors(sel)));
  return v;
}

Cases higher_order_cases() {
  Cases v;
  for (const std::string& s : structures()) {
    v.push_back(Case("Map", {{"fn", "silu"}}).in("in0", tiles(s)));
    for (const std::string& t : structures())
      v.push_back(Case("Map", {{"fn", "add"}}).in("in0", tiles(s)).in("in1", tiles(t, "T[2x1]")));
    for (const char* rank : {"1", "2"}) {
      v.push_back(Case("Accum", {{"fn", "add"}, {"rank", rank}}).in("in0", tiles(s)));
      v.push_back(Case("Accum", {{"fn", "retile_row"}, {"rank", rank}}).in("in0", tiles(s, "T[1x8]")));
      v.push_back(Case("Scan", {{"fn", "add"}, {"rank", rank}}).in("in0", tiles(s)));
    }
    for (const char* rank : {"0", "1", "2"})
      v.push_back(Case("FlatMap", {{"fn", "retile_streamify_row"}, {"rank", rank}}).in("in0", tiles(s)));
    v.push_back(Case("FlatMap", {{"fn", "filter_padding"}, {"rank", "0"}})
                    .in("in0", tiles(s, "T[1x8]"))
                    .in("in1", fill(s, [](int i) { return std::to_string(i % 3 == 2); })));
  }
  return v;
}

Cases memory_and_address_cases() {
  Cases v;
  for (const std::string& s : structures()) {
    for (const char* rank : {"1", "2"}) {
      v.push_back(Case("Bufferize", {{"rank", rank}}).in("in", tiles(s)));
      v.push_back(Case("Streamify", {{"repeat", "[2]"}}).via("in", tiles(s), "Bufferize", {{"rank", rank}}));
      for (const std::string ref : {"x x D", "x S1 x x S1 D", "S1 S1 D", "x x S1 x x S2 D"})
        for (const char* c : {"0", "1"})
          v.push_back(Case("Streamify", {{"rank", c}})
                          .via("in", tiles(s), "Bufferize", {{"rank", rank}})
                          .in("ref", scalars(ref)));
    }
    v.push_back(Case("ExpertAddrGen", {{"tiles_per_expert", "3"}}).in("in", selectors(s)));
    v.push_back(Case("ExpertAddrGen", {{"tiles_per_expert", "2"}}).in("in", one_hot(s)));
    for (const std::string& t : structures())
      v.push_back(Case("KvCacheAddrGen", {{"tile_rows", "4"}, {"max_tiles", "4"}})
                      .in("idx", scalars(s))
                      .in("kv_len", fill(t, [](int i) { return std::to_string((i * 5) % 13); })));
    v.push_back(
        Case("LinearOffChipLoad", {{"tensor", "w"}, {"tile", "[4, 8]"}}).tensor("w", 8, 16).in("ref", scalars(s)));
    v.push_back(Case("RandomOffChipLoad", {{"tensor", "w"}, {"tile", "[4, 8]"}})
                    .tensor("w", 8, 16)
                    .in("raddr", fill(s, [](int i) { return std::to_string(i % 4); })));
    for (const std::string& t : structures())
      v.push_back(Case("RandomOffChipStore", {{"tensor", "w"}, {"tile", "[4, 8]"}})
                      .tensor("w", 8, 16)
                      .in("waddr", fill(s, [](int i) { return std::to_string(i % 4); }))
                      .in("wdata", tiles(t, "T[4x8]")));
    v.push_back(Case("LinearOffChipStore", {{"tensor", "w"}, {"tile", "[4, 8]"}})
                    .tensor("w", 8, 16)
                    .in("in", tiles(s, "T[4x8]")));
    // TopK routes by value: scores loaded from a tensor, one [1 x 8] tile per ref element.
    for (const char* k : {"1", "3"})
      v.push_back(Case("TopK", {{"k", k}})
                      .tensor("g", 1, 8)
                      .via("in", scalars(s), "LinearOffChipLoad", {{"tensor", "g"}, {"tile", "[1, 8]"}}, "ref")
                      .functional());
  }
  // A store takes exactly its view's 4 tiles, in any stream shape.
  for (const std::string s : {"x x x x D", "x x S1 x x S1 D", "x S1 x x x S1 D", "x x S1 S1 x x S1 D"})
    v.push_back(Case("LinearOffChipStore", {{"tensor", "w"}, {"tile", "[4, 8]"}})
                    .tensor("w", 8, 16)
                    .in("in", tiles(s, "T[4x8]")));
  return v;
}

void check_all(const Cases& cases, const std::string& family) {
  Tally t;
  for (const Case& c : cases) check(c, t);
  std::string ops;
  for (const auto& [op, n] : t.accepted_by_op) {
    EXPECT_GT(n, 0u) << op << ": analyze accepts none of its cases, so no output type was compared";
    ops += " " + op + " (" + std::to_string(n) + ")";
  }
  std::cout << family << ": " << t.cases << " cases, " << t.accepted << " accepted by both, " << t.refused_by_both
            << " refused by both, " << t.static_only
            << " refused by analyze only (static rules); accepted by operator:" << ops << "\n";
}

TEST(OperatorEdges, ShapeOperators) { check_all(shape_op_cases(), "shape"); }
TEST(OperatorEdges, Routing) { check_all(routing_cases(), "routing"); }
TEST(OperatorEdges, HigherOrder) { check_all(higher_order_cases(), "higher-order"); }
TEST(OperatorEdges, MemoryAndAddressGeneration) { check_all(memory_and_address_cases(), "memory"); }

// Every operator of the registry has cases above (Source and Sink are in all of them).
TEST(OperatorEdges, EveryOperatorIsCovered) {
  std::set<std::string> covered = {"Source", "Sink"};
  for (const Cases& cs : {shape_op_cases(), routing_cases(), higher_order_cases(), memory_and_address_cases()})
    for (const Case& c : cs) covered.insert(c.op());
  for (const OpInfo* info : OpRegistry::instance().all())
    EXPECT_TRUE(covered.count(info->name)) << "operator " << info->name << " has no edge cases here";
}

}  // namespace
}  // namespace stepsim
