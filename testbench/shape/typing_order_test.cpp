// The order shape inference types the nodes in (sim/shape/infer.cpp, TypingOrder): the one of the
// pass-by-pass search it replaced (issue 33, item 9: that search took a pass per node on a chain
// listed consumers first, 106 s at 10^4 nodes). The order must not change: the rules make
// symbols as they go, and their order shows in printed expressions.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "sim/shape/infer.h"

namespace stepsim::shape {
namespace {

// The order of the former search: passes over the file order, each typing every node whose
// producers are typed or typed ahead; after a pass that types nothing, the first waiting node
// that declares types is typed ahead. Empty when it finds no order (a cycle without types).
std::vector<std::string> reference_order(const Graph& g) {
  std::set<std::string> done, seeded;
  std::vector<std::string> order;
  while (done.size() < g.nodes.size()) {
    bool progressed = false;
    for (const NodeSpec& n : g.nodes) {
      if (done.count(n.name)) continue;
      bool ready = true;
      for (const auto& [port, ref] : n.inputs) {
        const std::string src = ref.substr(0, ref.find('.'));
        ready = ready && (done.count(src) || seeded.count(src));
      }
      if (!ready) continue;
      order.push_back(n.name);
      done.insert(n.name);
      progressed = true;
    }
    if (progressed) continue;
    const auto seed = std::find_if(g.nodes.begin(), g.nodes.end(), [&](const NodeSpec& n) {
      return !done.count(n.name) && !seeded.count(n.name) && !n.types.empty();
    });
    if (seed == g.nodes.end()) return {};
    seeded.insert(seed->name);
  }
  return order;
}

// `n` nodes of one type ([2] of T[1x64:bf16]): three Sources, then Maps reading one or two nodes
// anywhere in the graph (back edges make cycles), some declaring their type, in shuffled order.
Graph random_graph(std::mt19937_64& rng, size_t n) {
  Graph g;
  g.streams["t"] = to_beats(parse_tokens("T[1x64] T[1x64] D"));
  for (size_t k = 0; k < n; ++k) {
    const std::string name = "n" + std::to_string(k);
    if (k < 3) {
      g.nodes.push_back(node_spec(name, OpKind::kSource, {{"stream", "t"}}));
      continue;
    }
    auto pick = [&] {
      // Mostly an earlier node; one read in eight may be any node (a cycle).
      const size_t range = rng() % 8 == 0 ? n : k;
      return "n" + std::to_string(rng() % range);
    };
    const bool binary = rng() % 2;
    NodeSpec m = binary ? node_spec(name, OpKind::kMap, {{"fn", "add"}}, {{"in0", pick()}, {"in1", pick()}})
                        : node_spec(name, OpKind::kMap, {{"fn", "exp"}}, {{"in0", pick()}});
    if (rng() % 4 == 0) m.types["out"] = "[2] of T[1x64:bf16]";
    g.nodes.push_back(m);
  }
  std::shuffle(g.nodes.begin(), g.nodes.end(), rng);
  return g;
}

TEST(TypingOrder, IsThePassBySearchOrderInAnyFileOrderWithAndWithoutCycles) {
  std::mt19937_64 rng(33);
  int typed = 0, untypable = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const Graph g = random_graph(rng, 4 + rng() % 40);
    const std::vector<std::string> want = reference_order(g);
    SymbolTable syms;
    try {
      const GraphTypes t = infer_types(g, syms);
      EXPECT_EQ(t.order, want) << "trial " << trial;
      ++typed;
    } catch (const UntypableGraph&) {
      EXPECT_TRUE(want.empty()) << "trial " << trial;
      ++untypable;
    }
  }
  // Both kinds of graph were tried.
  EXPECT_GT(typed, 50);
  EXPECT_GT(untypable, 10);
}

}  // namespace
}  // namespace stepsim::shape
