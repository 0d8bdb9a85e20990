// Writes a Graph back to the YAML graph format (docs/user-guide.md), so that graphs built in
// C++ (sim/frontend) can be saved, inspected and run with `stepsim run`. Reading the output
// with load_graph gives an identical Graph (testbench/frontend checks the round trip).
#pragma once

#include <string>

#include "sim/graph/graph.h"

namespace stepsim {

std::string graph_to_yaml(const Graph& g);
// Writes through OutputFile (sim/graph/output_file.h); throws std::runtime_error naming the path.
void write_graph(const Graph& g, const std::string& path);

}  // namespace stepsim
