// Fabric co-simulation report (docs/cosim.md): one graph run all-approximate and with its nodes
// on the cycle-accurate units (impl hls or rtl), every channel logged in both runs. The payload
// streams must be identical on every channel; the report gives per-node and total cycle error.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "sim/engine/simulation.h"
#include "sim/graph/graph.h"

namespace stepsim {

struct DowntileResult;  // sim/transform/downtile.h

struct CosimOptions {
  std::string impl = "hls";  // default implementation of the nodes without `impl:`
  std::string dir;           // "": no files; else transaction logs, report.md (and VCD) go here
  bool vcd = false;          // pin waveforms of the bridged nodes (needs dir)
  // The graph was down-tiled (sim/transform/downtile.h, downtile_for_units): the report accounts for every
  // node of the graph before down-tiling (which of its nodes ran on units, and why the others not).
  const DowntileResult* downtile = nullptr;
  // Functional mode: the graph before down-tiling, run all-approximate too; its stored tensors
  // are compared with the co-simulation's bit for bit.
  const Graph* logical = nullptr;
};

// One node of the graph before down-tiling, in the co-simulation of the down-tiled graph (or the
// retiling nodes of one conversion: `conversion`, node "X.out -> blocks" or "X.out -> logical").
struct CosimDowntileRow {
  std::string node, op, fn;
  bool blocked = false;  // rewritten onto blocks
  bool conversion = false;
  size_t nodes = 0, on_units = 0;  // its nodes in the down-tiled graph, and how many ran on units
  std::string units;               // the operators of those on units, e.g. "Accum, 2 Bufferize, 2 Streamify"
  std::string kind;                // why (some of) them stayed approximate, in a few words (impl_note_kind)
  std::string reason;              // and in full: the down-tiler's reason, else the units' notes
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
  // Down-tiled (CosimOptions::downtile): the side T and the account, the graph's nodes in order,
  // then the conversions.
  int64_t downtile_tile = 0;
  std::vector<CosimDowntileRow> downtile;
  // CosimOptions::logical in functional mode: the graph before down-tiling, all-approximate.
  bool logical_compared = false;
  uint64_t logical_cycles = 0;
  double logical_wall_seconds = 0;
  std::vector<CosimTensorRow> logical_tensors;  // against the co-simulation's stored tensors
  bool logical_identical = true;
};

// Throws std::invalid_argument for a malformed graph; a failed run (deadlock, operator error)
// leaves ok == false in the SimResult concerned.
CosimReport cosimulate(const Graph& graph, const SimOptions& options, const CosimOptions& cosim);
void print_cosim_report(const CosimReport& r, std::ostream& out);
// The down-tiling account alone (part of print_cosim_report when the graph was down-tiled).
void print_downtile_account(const CosimReport& r, std::ostream& out);
// The error of a failed run with units: "co-simulation (the run with nodes on rtl units): ..."
// (with co.impl "approx", the nodes' own impl: decides where they run).
std::string cosim_failure(const CosimOptions& co, const std::string& error);
// Beat as log text: elements with their values (tiles as bf16/fp32 bit patterns).
std::string beat_payload_text(const Beat& b);
// Whether two beats carry the same tokens and bit-identical elements.
bool same_beat(const Beat& a, const Beat& b);

}  // namespace stepsim
