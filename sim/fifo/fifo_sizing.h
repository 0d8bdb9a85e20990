// FIFO sizing (`stepsim size-fifos`, docs/fifo-sizing.md): per-channel depths that keep a run's
// cycles within a tolerance of the run with deep FIFOs, at the least total FIFO bytes.
//
//   1. deep run: every channel deeper than it ever fills (deepened until none fills up); its
//      per-beat send times give each channel's rate and latency, each node's start;
//   2. linear program (sim/fifo/fifo_lp.h, StreamTensor's formulation): node start times, and per
//      channel the beats that wait while its consumer waits for the other paths that reconverge
//      there, at the channel's rate; minimise the sum of depth x bytes per beat;
//   3. verification: the timing run at those depths; a deadlock raises the full channels it
//      names, a run over the tolerance the full FIFOs on its critical path; repeated (bounded);
//   4. tightening: channel by channel, most bytes first, the least depth whose run stays within
//      the tolerance (a bisection of single runs, bounded), which also finds the depth below
//      which a channel deadlocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "sim/engine/simulation.h"
#include "sim/graph/graph.h"

namespace stepsim {

struct FifoSizingOptions {
  SimOptions sim;           // the preset and settings of every run (timing mode)
  double tolerance = 0.01;  // the sized run may take up to (1 + tolerance) x the deep run's cycles
  // Runs spent tightening single channels (0: the verified LP depths), and at most as many
  // re-checking the depths that deadlock.
  uint32_t probe_runs = 64;
  uint32_t repair_rounds = 12;
};

// One channel (named as the run names it, "producer.port->consumer.port").
struct ChannelSizing {
  std::string name;
  uint64_t beat_bytes = 0;  // the largest element it carried (a FIFO slot holds one)
  uint32_t given = 0;       // depth in the graph as given
  uint32_t deep = 0;        // depth in the deep run
  uint32_t deep_peak = 0;   // most beats it held in the deep run (FIFO slots, not a load's tiles in flight)
  uint32_t lp = 0;          // the linear program's depth
  uint32_t depth = 0;       // chosen
  // The largest depth a run deadlocked at, the other channels at their depths when it was probed
  // (0: none found), or at their sized depths (final_check);
  // runs_from the least depth above it found to run; ran_below a depth below it that ran (0: none:
  // a run is not always monotone in a depth, as arrival-order decisions change with the timing).
  uint32_t deadlocks_at = 0, runs_from = 0, ran_below = 0;
  bool final_check = false;  // the boundary holds with every other channel at its sized depth
  uint64_t fifo_bytes() const { return uint64_t(depth) * beat_bytes; }
};

// A run's outcome and its FIFO bytes (sum of depth x bytes per beat).
struct SizingRun {
  bool ok = false;
  std::string error;  // first line of the run's error
  uint64_t cycles = 0;
  uint64_t fifo_bytes = 0;
};

struct FifoSizingResult {
  Graph graph;  // the input graph with the chosen depths (input_depth, and depth into Broadcasts)
  std::vector<ChannelSizing> channels;
  SizingRun given, deep, lp, sized;  // lp: at the LP's depths, before the verification raised any
  uint64_t cycle_limit = 0;          // the deep run's cycles x (1 + tolerance), rounded down
  double tolerance = 0;
  size_t deep_runs = 0, repair_rounds = 0, probe_runs = 0, deadlock_runs = 0, lp_rows = 0, lp_columns = 0;
  double wall_seconds = 0;
};

// Throws std::invalid_argument for a graph that fails even with deep FIFOs (an operator error,
// or a deadlock no depth resolves), std::runtime_error without GLPK.
FifoSizingResult size_fifos(const Graph& g, const FifoSizingOptions& options);

// The command's report: the totals, the channels that deadlock below a depth, every channel.
void print_fifo_sizing(const FifoSizingResult& r, std::ostream& out);

}  // namespace stepsim
