// YAML graph files (docs/user-guide.md, "Writing a graph"): nodes, parameters, inputs, tensors,
// streams from literal text or trace files, per-node compute bandwidth and FIFO depth, `params:`
// with ${name} substitution (not in comment lines) overridable by --set.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/graph/graph.h"

namespace stepsim {

// Throws std::invalid_argument with the file name and the problem for any malformed input.
Graph load_graph(const std::string& path, const std::vector<std::pair<std::string, std::string>>& sets);
Graph parse_graph(const std::string& yaml_text, const std::string& source, const std::string& base_dir,
                  const std::vector<std::pair<std::string, std::string>>& sets);
// --set NODE.PARAM=VALUE on a graph in memory (what the loader does with the sets that are not
// graph parameters), the parameters checked after. Throws std::invalid_argument.
void apply_node_sets(Graph& g, const std::vector<std::pair<std::string, std::string>>& sets);

// Trace files (CSV with a header; CRLF and a missing final newline are accepted).
struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  size_t column(const std::string& name, const std::string& file) const;  // throws if absent
};
CsvTable read_csv(const std::string& path);

// Directory of the shared traces (env STEPSIM_SHARED, else the build-time ../shared).
std::string shared_dir();

// A file path as graph files give it: "shared:REST" is REST under shared_dir(), a relative path
// is relative to base_dir.
std::string resolve_path(const std::string& p, const std::string& base_dir);

}  // namespace stepsim
