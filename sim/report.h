// Run reports: the human summary, the JSON report (keys documented in docs/user-guide.md, "The JSON report") and the
// Perfetto/Chrome trace of operator firings.
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/graph.h"
#include "sim/simulation.h"

namespace stepsim {

struct Report {
  nlohmann::json json;
};

Report make_report(const Graph& g, const SimOptions& opt, const SimResult& r);
void print_summary(const Report& rep, std::ostream& out);
void write_json_report(const Report& rep, const std::string& path);
void write_trace(const Graph& g, const SimResult& r, const std::string& path);

}  // namespace stepsim
