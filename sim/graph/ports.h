// Ports of a graph's nodes: the names their descriptors give (PortSpec, hw/ops/op.h; "in*" is
// numbered: in0, in1, ...), references "node.port", and the check that every reference names a
// port the node has. One definition for the static check (sim/engine/validate.h), shape inference and
// the elaboration of a run.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "hw/ops/op.h"
#include "sim/graph/graph.h"

namespace stepsim {

// "in*": numbered ports in0, in1, ...
inline bool is_numbered(const PortSpec& p) { return !p.name.empty() && p.name.back() == '*'; }
// "in" for "in*", the name itself otherwise.
inline std::string port_base(const PortSpec& p) {
  return is_numbered(p) ? p.name.substr(0, p.name.size() - 1) : p.name;
}
// "in0.., sel" for messages; "none" for no ports.
std::string port_list(const std::vector<PortSpec>& specs);
// A reference "node.port" split in two; "node" alone gives an empty port (its single output).
std::pair<std::string, std::string> split_ref(const std::string& ref);
// Whether `port` is one of `specs`: a fixed name, or a numbered base followed by digits.
bool has_port(const std::vector<PortSpec>& specs, const std::string& port);

// Every input names a port its node has, every producer port read exists, every required input
// is connected. Throws std::invalid_argument naming the node, the port and the ports it has.
// References to unknown nodes are left to shape inference (which names them too).
void check_ports(const Graph& g);

}  // namespace stepsim
