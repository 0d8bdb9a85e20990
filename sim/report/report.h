// Run reports: the human summary, the JSON report (keys documented in docs/user-guide.md, "The JSON report") and the
// Perfetto/Chrome trace of operator firings. Every file goes through OutputFile (sim/graph/output_file.h).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/cosim/cosim.h"
#include "sim/engine/simulation.h"
#include "sim/graph/graph.h"

namespace stepsim {

struct Report {
  nlohmann::json json;
};

// What bounds a run (docs/user-guide.md, "The bottleneck line"):
//
//   * the critical path starts at the node that finishes last (ties: the first by name) and
//     follows, node by node, the channel it waited on most: an input by its consumer_starve_cycles
//     (to the producer) or an output by its producer_stall_cycles (to the consumer), among the
//     channels whose other end is not on the path yet (ties: inputs first, then by channel
//     name); it ends at a node that waited on no such channel;
//   * each node on the path spends cycles on resources: an off-chip load/store its busy cycles
//     on off-chip requests; a higher-order node ceil(flops / compute_bw) of its busy cycles on
//     compute and the rest on on-chip bandwidth (tile reads and writes at onchip_bw B/cycle);
//     Bufferize and Streamify their busy cycles on on-chip bandwidth (1 element per cycle); any
//     other node its busy cycles on its own latency; a node on a unit (co-simulation) its busy
//     cycles (a beat moved on its pins) on the unit, an address generator on off-chip requests;
//     and, per output channel, the cycles it
//     waited for space there beyond what its consumer spent working or blocked on its own
//     outputs (a full FIFO: the channel's depth and round trip limit the rate);
//   * the bottleneck is the node and resource with the most cycles on the path (ties: the first
//     on the path); `fraction` is those cycles over the run's cycles.
struct Bottleneck {
  std::string node, op, impl;  // impl: approx, or the unit (co-simulation)
  // offchip | offchip_row_misses | compute | onchip_bandwidth | fifo | latency | unit; "none" when
  // nothing on the path was busy or blocked (or the run took no cycles). offchip_row_misses: an
  // off-chip node, with a DRAM-level HBM where most requests open a row (dram_report.h).
  std::string resource = "none";
  std::string channel;  // resource fifo: the full output channel
  uint64_t cycles = 0;  // cycles the node spent on the resource
  double fraction = 0;  // cycles / run cycles
  std::string text;     // the summary's sentence: node, resource (with the parameters that set it), share
  std::vector<std::string> critical_path;  // node names, from the node that finishes last backwards
};

Bottleneck find_bottleneck(const SimResult& r, const HardwareParams& hw);

Report make_report(const Graph& g, const SimOptions& opt, const SimResult& r);
// Co-simulation: the report of the run with the units (cr.cosim), plus its `cosim` section.
Report make_report(const Graph& g, const SimOptions& opt, const CosimReport& cr);
void print_summary(const Report& rep, std::ostream& out);
// Both throw std::runtime_error naming the file when it cannot be written (nothing partial is left).
void write_json_report(const Report& rep, const std::string& path);
void write_trace(const Graph& g, const SimResult& r, const std::string& path);

}  // namespace stepsim
