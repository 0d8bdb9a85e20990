// Nodes of a graph by name, for the passes that look a node up for every input: shape inference,
// the port check, the plan and the host-memory estimate. Graph::find scans the nodes; called
// once per input it made loading quadratic in the nodes (issue 33: 36 to 55 s at 10^5 nodes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>

#include "sim/graph/graph.h"

namespace stepsim {

// Steps of the passes over a graph's nodes on this thread: one per node indexed, one per lookup
// by name, one per node taken when shape inference orders the nodes. A test
// (testbench/loader/big_graph_test.cpp) checks that they grow linearly with the graph: a lookup
// by scan or an index built per node would not.
inline thread_local uint64_t graph_pass_steps = 0;

class NodeIndex {
 public:
  static constexpr size_t npos = ~size_t(0);

  // Indexes the nodes `g` has now; `g` must outlive the index and keep its nodes unchanged.
  explicit NodeIndex(const Graph& g);
  // The first node called `name`, or nullptr (as Graph::find).
  const NodeSpec* find(std::string_view name) const;
  // Its position in g.nodes, or npos.
  size_t position(std::string_view name) const;
  // The name of a node given twice (the first such in file order), or nullptr.
  const std::string* duplicate() const { return duplicate_; }

 private:
  const Graph& g_;
  std::unordered_map<std::string_view, size_t> positions_;
  const std::string* duplicate_ = nullptr;
};

}  // namespace stepsim
