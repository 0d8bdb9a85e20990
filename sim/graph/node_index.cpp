#include "sim/graph/node_index.h"

namespace stepsim {

NodeIndex::NodeIndex(const Graph& g) : g_(g) {
  graph_pass_steps += g.nodes.size();
  positions_.reserve(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (!positions_.emplace(g.nodes[k].name, k).second && !duplicate_) duplicate_ = &g.nodes[k].name;
}

size_t NodeIndex::position(std::string_view name) const {
  ++graph_pass_steps;
  const auto it = positions_.find(name);
  return it == positions_.end() ? npos : it->second;
}

const NodeSpec* NodeIndex::find(std::string_view name) const {
  const size_t k = position(name);
  return k == npos ? nullptr : &g_.nodes[k];
}

}  // namespace stepsim
