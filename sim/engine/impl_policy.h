// Stage 2 of a simulation (sim/engine/simulation.h): the implementation policy. Which nodes run as the
// approximate operators and which on a cycle-accurate unit (impl hls or rtl, docs/cosim.md): a
// node's own `impl:` must be honoured or is an error; under a default the nodes without a unit
// stay approximate, with a note saying why. With the static check's stream types, the tiles a
// node will see are checked before the run too: a compute, retile or memory unit whose tiles or
// buffers it cannot take leaves the node approximate under a default ("tile shape: ...",
// "capacity: ..."), where the bridge would otherwise fail the run at the first such beat.
#pragma once

#include <map>
#include <string>

#include "hw/bridge/unit_bridge.h"
#include "hw/ops/op.h"
#include "sim/engine/plan.h"
#include "sim/graph/graph.h"

namespace stepsim {

struct StaticCheck;  // sim/engine/validate.h

struct ImplChoice {
  std::string impl = "approx";             // approx, or the unit's implementation (hls | rtl)
  std::string note;                        // why a node under a unit default stayed approximate
  const bridge::UnitImpl* unit = nullptr;  // null: the approximate operator
};

class ImplPolicy {
 public:
  // default_impl: for the nodes without `impl:` ("" = approx). `types` (may be null): the static
  // check's stream types, for the tile and buffer checks.
  ImplPolicy(const Plan& plan, std::string default_impl, const StaticCheck* types = nullptr);
  // The implementation of node n, configured as `cfg`. Throws std::invalid_argument for an
  // unknown or not built implementation, and for a node whose own `impl:` its unit cannot run.
  ImplChoice choose(const NodeSpec& n, const OpConfig& cfg) const;

 private:
  std::string impl_for(const NodeSpec& n) const;
  // Why the memory-unit node n cannot go on its unit with its partner ("" = it can).
  std::string pair_problem(const NodeSpec& n, const NodeSpec* partner) const;
  void find_unpaired(const Plan& plan);
  // Why node n's tiles or buffers (from the static check) do not fit the unit it would run on
  // ("" = they do, or they are not known).
  std::string static_problem(const NodeSpec& n, const bridge::UnitImpl& unit) const;

  std::string default_impl_;
  const StaticCheck* types_ = nullptr;
  // Nodes whose tiles or buffers their unit cannot take: why.
  std::map<std::string, std::string> shapes_;
  // The memory unit takes a Bufferize -> Streamify pair (hw/bridge/pmu_bridge.h): why a
  // Bufferize or Streamify node cannot go on it, by node.
  std::map<std::string, std::string> unpaired_;
};

// The implementation under which `run` co-simulates the graph (the --impl option, else the
// graph's default, else the first unit a node names), or "" for an all-approximate run.
std::string cosim_impl(const Graph& g, const std::string& impl_option);
// The graph with every `impl:` dropped: it runs all-approximate.
Graph all_approximate(Graph g);

// What a note of ImplChoice says, in a few words: "function without a unit", "operator without a
// unit", "tile shape", "unit capacity", "memory unit pairing" or "parameters" (the co-simulation
// account of a down-tiled graph, sim/cosim/cosim.h, groups its reasons by it).
std::string impl_note_kind(const std::string& note);

// The configuration of node n as the elaboration gives it, as far as the units' checks read it
// (operator, parameters, port counts, which outputs are read), without an environment.
OpConfig static_config(const Plan& plan, const NodeSpec& n);
// How many nodes of the plan would run on a unit of `impl` (under it as the default), with the
// static check's types; an error choosing counts as approximate.
size_t nodes_on_units(const Plan& plan, const std::string& impl, const StaticCheck* types);

}  // namespace stepsim
