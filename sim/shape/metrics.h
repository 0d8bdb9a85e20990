// Symbolic metrics of a typed graph (step-paper-notes §3.4, §6): off-chip traffic per off-chip
// operator (cardinality of the stream it reads or writes x element bytes), FLOPs per
// higher-order operator, the on-chip memory requirement by the paper's (or the artifact's)
// per-operator formulas, and the operational intensity, all as expressions in the graph's
// symbols. These mirror hw/fabric/onchip_requirement.cpp, which evaluates the same formulas on
// what a run observed; testbench/shape checks that both agree.
#pragma once

#include <string>
#include <vector>

#include "sim/shape/infer.h"

namespace stepsim::shape {

struct NodeMetrics {
  std::string name, op;
  ex read_bytes = 0, write_bytes = 0;  // off-chip traffic
  ex flops = 0;
  ex onchip_bytes = 0;  // on-chip requirement by the chosen model
};

struct GraphMetrics {
  std::vector<NodeMetrics> nodes;  // in graph order
  ex read_bytes = 0, write_bytes = 0, flops = 0, onchip_bytes = 0;
  ex traffic() const { return read_bytes + write_bytes; }
};

// `onchip_model` is "paper" or "artifact" (hw/fabric/onchip_requirement.h); throws
// std::invalid_argument for another name.
GraphMetrics symbolic_metrics(const Graph& g, const GraphTypes& types, const std::string& onchip_model);

// Substitutes the known symbol values; a fully known result is an integer.
ex evaluate(const ex& e, const SymbolTable& syms);
// The integer value of a fully substituted expression, or false.
bool to_int(const ex& e, int64_t& out);

}  // namespace stepsim::shape
