// Stage 2 of a simulation (sim/simulation.h): the implementation policy. Which nodes run as the
// approximate operators and which on a cycle-accurate unit (impl hls or rtl, docs/cosim.md): a
// node's own `impl:` must be honoured or is an error; under a default the nodes without a unit
// stay approximate, with a note saying why.
#pragma once

#include <map>
#include <string>

#include "hw/bridge/unit_bridge.h"
#include "hw/ops/op.h"
#include "sim/graph/graph.h"
#include "sim/plan.h"

namespace stepsim {

struct ImplChoice {
  std::string impl = "approx";             // approx, or the unit's implementation (hls | rtl)
  std::string note;                        // why a node under a unit default stayed approximate
  const bridge::UnitImpl* unit = nullptr;  // null: the approximate operator
};

class ImplPolicy {
 public:
  // default_impl: for the nodes without `impl:` ("" = approx).
  ImplPolicy(const Plan& plan, std::string default_impl);
  // The implementation of node n, configured as `cfg`. Throws std::invalid_argument for an
  // unknown or not built implementation, and for a node whose own `impl:` its unit cannot run.
  ImplChoice choose(const NodeSpec& n, const OpConfig& cfg) const;

 private:
  std::string impl_for(const NodeSpec& n) const;
  // Why the memory-unit node n cannot go on its unit with its partner ("" = it can).
  std::string pair_problem(const NodeSpec& n, const NodeSpec* partner) const;
  void find_unpaired(const Plan& plan);

  std::string default_impl_;
  // The memory unit takes a Bufferize -> Streamify pair (hw/bridge/pmu_bridge.h): why a
  // Bufferize or Streamify node cannot go on it, by node.
  std::map<std::string, std::string> unpaired_;
};

// The implementation under which `run` co-simulates the graph (the --impl option, else the
// graph's default, else the first unit a node names), or "" for an all-approximate run.
std::string cosim_impl(const Graph& g, const std::string& impl_option);
// The graph with every `impl:` dropped: it runs all-approximate.
Graph all_approximate(Graph g);

}  // namespace stepsim
