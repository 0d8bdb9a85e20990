// The checks every graph passes however it was made (a YAML file, the C++ GraphBuilder, the
// Python package): names, tensor declarations, node settings and parameters, stream lengths.
// The loader reads each field with its line number first, but the rules live here only, so a
// graph built in code is refused where `stepsim run` of its own YAML is refused. (The static
// shape check over the typed graph is sim/engine/validate.h.)
#pragma once

#include <cstddef>
#include <string>

#include "sim/graph/graph.h"

namespace stepsim {

// Names of graphs, tensors, nodes, streams and symbols are identifiers: a letter or '_', then
// letters, digits or '_', 1 to kMaxNameLength characters. They end up in file names (NAME.npy),
// in references ("node.port") and in symbolic expressions, so nothing else is safe there.
constexpr size_t kMaxNameLength = 128;
bool is_identifier(const std::string& name);
// Throws std::invalid_argument "WHERE: KIND name '...' is not an identifier (...)". `where` may
// be empty; the name is shown with control characters escaped and cut when long.
void check_name(const std::string& kind, const std::string& name, const std::string& where);
// An identifier made from text (a graph file's stem as its default name): other characters
// become '_', a leading digit gets a '_' before it, and it is cut to kMaxNameLength.
std::string identifier_from(const std::string& text);
// `text` quoted for a message: control characters escaped (\x00), cut after 60 characters.
std::string quoted(const std::string& text);

// A numbered port ("in3", "out12") beyond what selectors can address. Throws naming `where`.
void check_port_number(const std::string& port, const std::string& where);

// One tensor declaration: its name, shape (each side 1..2^40, at most 2^40 elements), init,
// seed, blocks and, for init: file, the .npy itself. `source` is the graph's ("g.yaml").
void check_tensor(const TensorSpec& t, const std::string& source);
// One node: its name, operator, impl, compute_bw, depth, input depths, outputs, numbered ports
// and parameters (the operator's descriptor). Ranges are checked before anything is sized by
// them. `where` is the graph's source ("g.yaml", "builder 'g'").
void check_node(const NodeSpec& n, const std::string& where);
// A literal or trace stream: its name and length.
void check_stream(const std::string& name, size_t beats, const std::string& where);

// All of the above over the graph, and no name given twice. Messages start with g.source.
void check_graph(const Graph& g);

}  // namespace stepsim
