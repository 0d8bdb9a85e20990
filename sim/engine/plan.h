// Stage 1 of a simulation (sim/engine/simulation.h): the plan. The graph's references resolved into
// edges, a Broadcast for every port read more than once, the numbered ports counted, and the
// fabric allocated; everything that can reject a graph before a SystemC object exists.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "hw/fabric/allocation.h"
#include "hw/ops/op.h"
#include "hw/presets/hardware.h"
#include "sim/graph/graph.h"
#include "sim/graph/ports.h"

namespace stepsim {

// One stream: producer node and output port, consumer node and input port (ports as named in
// the graph: "out0", "in").
struct Edge {
  std::string from, from_port, to, to_port;
};

// How many numbered ports (in0, in1, ...; out0, ...) a node has.
struct PortUse {
  size_t in_numbered = 0, out_numbered = 0;
};

struct Plan {
  std::vector<NodeSpec> nodes;  // the graph's, then the Broadcasts
  std::vector<Edge> edges;
  std::map<std::string, PortUse> ports;  // by node name
  FabricAllocation alloc;

  const NodeSpec& node(const std::string& name) const { return nodes[index_.at(name)]; }
  // Channels on the node's inputs and outputs (a numbered port counts as its PortUse).
  size_t num_inputs(const NodeSpec& n) const;
  size_t num_outputs(const NodeSpec& n) const;

 private:
  friend Plan plan_graph(const Graph& g, const HardwareParams& hw);
  std::map<std::string, size_t> index_;  // node name -> position in `nodes`
};

// Throws std::invalid_argument for a malformed graph (a node without a name or named twice, an
// unknown operator, a reference to an unknown node or to a node without outputs) and for a graph
// that does not fit the fabric (allocate_fabric).
Plan plan_graph(const Graph& g, const HardwareParams& hw);

// Position of `port` among the op's ports, given how many numbered ports exist: -1 if the op has
// no such port, -2 for a numbered port beyond the count.
int port_index(const std::vector<PortSpec>& specs, size_t numbered, const std::string& port);

}  // namespace stepsim
