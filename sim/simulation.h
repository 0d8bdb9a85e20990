// Elaborates a Graph into SystemC modules and channels, runs it, and collects the results.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hw/channel/channel.h"
#include "hw/ops/op.h"
#include "hw/presets/hardware.h"
#include "sim/graph.h"

namespace stepsim {

struct SimOptions {
  HardwareParams hw;
  bool functional = false;
  bool trace = false;
  // Non-zero: elaborate nodes and channels in a shuffled order (determinism checks).
  uint64_t shuffle_seed = 0;
  std::string output_dir;  // functional mode: where stored tensors are written as .npy
};

struct NodeResult {
  std::string name, op;
  uint64_t finish_cycle = 0;  // local clock at the end
  uint64_t busy_cycles = 0;
  uint64_t firings = 0;
  uint64_t flops = 0;
  uint64_t compute_bw = 0;  // FLOPs/cycle allocated (higher-order nodes)
};

struct ChannelResult {
  std::string name;
  ChannelParams params;
  ChannelStats stats;
};

struct SimResult {
  bool ok = false;
  std::string error;      // why the run failed (deadlock, operator error)
  uint64_t cycles = 0;    // largest final local time over all operators
  std::vector<NodeResult> nodes;
  std::vector<ChannelResult> channels;
  std::map<std::string, std::vector<Beat>> recorded;          // Sink node -> beats
  std::map<std::string, std::vector<uint64_t>> recorded_times;
  std::vector<TraceEvent> trace;
  uint64_t offchip_read_bytes = 0, offchip_write_bytes = 0;
  double wall_seconds = 0;
};

// Throws std::invalid_argument for a malformed graph (unknown op, bad port, bad parameter).
SimResult simulate(const Graph& graph, const SimOptions& options);

}  // namespace stepsim
