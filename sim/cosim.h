// Fabric co-simulation report (docs/cosim.md): one graph run all-approximate and with its nodes
// on the cycle-accurate units (impl hls or rtl), every channel logged in both runs. The payload
// streams must be identical on every channel; the report gives per-node and total cycle error.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "sim/graph/graph.h"
#include "sim/simulation.h"

namespace stepsim {

struct CosimOptions {
  std::string impl = "hls";  // default implementation of the nodes without `impl:`
  std::string dir;           // "": no files; else transaction logs, report.md (and VCD) go here
  bool vcd = false;          // pin waveforms of the bridged nodes (needs dir)
};

struct CosimNodeRow {
  std::string name, op, impl, note;
  uint64_t approx_cycles = 0, cosim_cycles = 0;  // the node's final local time
  uint64_t unit_clocks = 0;
};

struct CosimChannelRow {
  std::string name;
  uint64_t approx_beats = 0, cosim_beats = 0;
  uint64_t approx_last = 0, cosim_last = 0;  // model time of the last beat sent
  bool identical = true;
  std::string mismatch;  // the first differing beat
  bool bridged = false;  // touches a node on a unit
  // Not identical, but downstream of an arrival-order decision (Reassemble, EagerMerge) and the
  // same beats in another order: the same elements, and the same stop and done tokens.
  bool reordered = false;
};

struct CosimTensorRow {
  std::string name;
  uint64_t elements = 0, differing = 0;  // bit-level comparison of the two runs' stored values
};

struct CosimReport {
  SimResult approx, cosim;
  std::vector<CosimNodeRow> nodes;
  std::vector<CosimChannelRow> channels;
  bool identical = true;                // every channel's payload stream, beat by beat
  std::vector<CosimTensorRow> tensors;  // functional mode: the stored tensors
  // The verdict: every channel identical or reordered, and every stored tensor bit-identical.
  bool equivalent = true;
  std::vector<std::string> order_nodes;  // the arrival-order nodes (Reassemble, EagerMerge)
  size_t bridged_nodes = 0;
  uint64_t unit_clocks = 0;  // clock edges given to all units
  std::vector<std::string> files;
};

// Throws std::invalid_argument for a malformed graph; a failed run (deadlock, operator error)
// leaves ok == false in the SimResult concerned.
CosimReport cosimulate(const Graph& graph, const SimOptions& options, const CosimOptions& cosim);
void print_cosim_report(const CosimReport& r, std::ostream& out);
// The error of a failed run with units: "co-simulation (the run with nodes on rtl units): ..."
// (with co.impl "approx", the nodes' own impl: decides where they run).
std::string cosim_failure(const CosimOptions& co, const std::string& error);
// Beat as log text: elements with their values (tiles as bf16/fp32 bit patterns).
std::string beat_payload_text(const Beat& b);
// Whether two beats carry the same tokens and bit-identical elements.
bool same_beat(const Beat& a, const Beat& b);

}  // namespace stepsim
