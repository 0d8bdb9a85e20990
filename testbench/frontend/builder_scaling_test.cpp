// Building a graph node by node (the C++ frontend, and through it Python) costs a constant number
// of lookups per node: the builder keeps its own index of the nodes (issue 33, item 9: a 4000-node
// chain took 36 s from Python, quadratic in the nodes, and 10^5 nodes never finished).
#include <gtest/gtest.h>

#include "sim/frontend/builder.h"
#include "sim/graph/node_index.h"

namespace stepsim {
namespace {

// Steps (lookups by name; a scan counts one step per node scanned) of building a chain of a load,
// n Maps and a sink.
uint64_t build_steps(size_t n) {
  frontend::GraphBuilder b("chain");
  b.tensor("x", 4, 64);
  graph_pass_steps = 0;
  frontend::Stream s = b.load("k0", "x", {1, 64});
  for (size_t k = 1; k <= n; ++k) s = b.map("k" + std::to_string(k), "exp", {s});
  b.sink("end", s);
  EXPECT_EQ(b.graph().nodes.size(), n + 2);
  return graph_pass_steps;
}

TEST(BuilderScaling, AddingANodeLooksUpOnlyItsInputs) {
  const uint64_t small = build_steps(500), big = build_steps(4000);
  EXPECT_LE(small, 4u * 500);
  EXPECT_LE(big, 4u * 4000);
  EXPECT_LE(big, 9 * small) << small << " -> " << big;  // 8x the nodes, not 64x
}

}  // namespace
}  // namespace stepsim
