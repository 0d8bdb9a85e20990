// `stepsim analyze`: shape inference plus the symbolic metrics of a graph (sim/shape), with the
// known symbol values substituted, as text and JSON; also the "symbolic" section of a run's
// report (prediction beside the measured value).
#pragma once

#include <map>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/engine/validate.h"
#include "sim/graph/graph.h"
#include "sim/shape/metrics.h"

namespace stepsim {

struct Analysis {
  shape::SymbolTable syms;
  shape::GraphTypes types;
  shape::GraphMetrics metrics;
  std::string onchip_model;
};

// Throws shape::ShapeError (or std::invalid_argument) for a graph that does not type-check.
// `values` are extra symbol values (--sym), applied after the graph's own.
Analysis analyze_graph(const Graph& g, const std::string& onchip_model,
                       const std::map<std::string, std::string>& values = {});

void print_analysis(const Graph& g, Analysis& a, std::ostream& out);

// The report's "symbolic" section after a run: the symbolic prediction of off-chip bytes read
// and written, FLOPs and the on-chip requirement (known symbol values substituted) beside the
// measured values. A graph the shape inference cannot type (e.g. a cycle) gives
// {"available": false, "reason": ...}. `checked`: the run's static check (SimResult::static_check),
// reused; null: the graph is checked here.
nlohmann::json symbolic_vs_measured(const Graph& g, const StaticCheck* checked, const std::string& onchip_model,
                                    uint64_t read_bytes, uint64_t write_bytes, uint64_t flops, uint64_t onchip_bytes);
nlohmann::json analysis_json(const Graph& g, Analysis& a);

}  // namespace stepsim
