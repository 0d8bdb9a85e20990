// Elaborates a Graph into SystemC modules and channels, runs it, and collects the results.
#pragma once

#include <memory>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hw/channel/channel.h"
#include "hw/memory/hbm_model.h"
#include "hw/ops/op.h"
#include "hw/presets/hardware.h"
#include "hw/presets/tech.h"
#include "sim/graph/graph.h"

namespace stepsim {

struct StaticCheck;  // sim/engine/validate.h

// How far a running simulation has got (SimOptions::progress).
struct SimProgress {
  uint64_t cycles = 0;      // simulated so far: the furthest local clock of any operator
  double wall_seconds = 0;  // since the run started
};

struct SimOptions {
  HardwareParams hw;
  // The technology table the report prices the run's actions and area with (docs/energy.md); an
  // empty name stands for kDefaultTechnology (hw/presets/tech.h).
  Technology tech;
  bool functional = false;
  // The static check of `stepsim analyze` before anything is elaborated (sim/engine/validate.h): a graph
  // it rejects fails with analyze's error. Off only where the operators' own run-time checks are
  // the point: `stepsim eval` (one operator on literal streams, which may be empty or malformed on
  // purpose) and the tests of those checks.
  bool static_check = true;
  bool trace = false;
  // Non-zero: elaborate nodes and channels in a shuffled order (determinism checks).
  uint64_t shuffle_seed = 0;
  std::string output_dir;  // functional mode: where stored tensors are written as .npy
  // Co-simulation (docs/cosim.md): implementation of the nodes without `impl:` ("" = the
  // graph's `impl:`, else approx), and the nodes whose channels are logged (cycle, beat; "*" = all).
  std::string default_impl;
  std::set<std::string> log_nodes;
  std::string vcd_dir;  // bridged nodes write pin waveforms here (<node>.<impl>.vcd)
  // Functional mode: keep the values of the stored tensors in SimResult::stored (co-simulation
  // compares them between its two runs).
  bool keep_stored = false;
  // Functional mode: initial values of tensors by name, row-major, instead of their `init:` (the
  // Python module's NumPy inputs; bf16 tensors round them as a file's values are rounded).
  std::map<std::string, TileData> tensor_values;
  // Long runs: called every progress_interval seconds of wall time while the graph runs, from a
  // thread of its own (the run loop checks nothing: unset, it costs nothing).
  std::function<void(const SimProgress&)> progress;
  double progress_interval = 0.25;
};

struct NodeResult {
  std::string name, op;
  uint64_t finish_cycle = 0;  // local clock at the end
  uint64_t busy_cycles = 0;
  uint64_t firings = 0;
  uint64_t flops = 0;
  // The node's actions (sim/report/actions.def): its FLOPs by kind (flops = arithmetic.flops()),
  // the bytes the timing moved in and out of memory units' SRAM (Op::sram_read_bytes), and its
  // off-chip requests with their bytes (requests x request_bytes; they sum to the run's).
  Arithmetic arithmetic;
  uint64_t sram_read_bytes = 0, sram_write_bytes = 0;
  uint64_t offchip_read_bytes = 0, offchip_write_bytes = 0, offchip_requests = 0;
  uint64_t compute_bw = 0;  // FLOPs/cycle allocated (higher-order nodes)
  // Fabric (hw/fabric/allocation.h) and on-chip memory (hw/fabric/onchip_requirement.h).
  uint64_t compute_units = 0;             // PCUs: ceil(compute_bw / pcu_flops)
  uint64_t memory_units = 0;              // PMUs: max(static, ceil(onchip_peak_bytes / pmu_capacity))
  uint64_t onchip_requirement_bytes = 0;  // the model's formula on the shapes this node saw
  uint64_t onchip_peak_bytes = 0;         // measured: most bytes held at once
  std::string impl = "approx";            // approx | hls | rtl (the unit that ran it)
  std::string impl_note;                  // why a node under an hls/rtl default stayed approximate
  uint64_t unit_clocks = 0;               // bridged nodes: clock edges the unit was given
  // Co-simulation (sim/cosim/cosim.h): firings, flops and the on-chip figures of a bridged node are
  // the approximate twin run's (the unit does not count them; the payloads are the same).
  bool counts_from_twin = false;
};

struct ChannelResult {
  std::string name;
  ChannelParams params;
  ChannelStats stats;
  std::string producer, consumer;  // node names at its two ends (the bottleneck walk, sim/report/report.h)
  // The run ended with its producer waiting for space on it: a deadlock's full channel, which a
  // deeper FIFO may resolve (stepsim size-fifos raises these).
  bool blocked_full = false;
};

struct SimResult {
  bool ok = false;
  std::string error;    // why the run failed (deadlock, operator error)
  uint64_t cycles = 0;  // largest final local time over all operators
  std::vector<NodeResult> nodes;
  std::vector<ChannelResult> channels;
  std::map<std::string, std::vector<Beat>> recorded;  // Sink node -> beats
  std::map<std::string, std::vector<uint64_t>> recorded_times;
  std::vector<TraceEvent> trace;
  uint64_t offchip_read_bytes = 0, offchip_write_bytes = 0;  // measured: requests x request_bytes
  uint64_t offchip_requests = 0;
  uint64_t offchip_tile_bytes = 0;  // paper's traffic formula: tiles moved x tile bytes
  // The clients' request rates could never make a request wait for its HBM channel, so the
  // memory served every tile in closed form without turns (OffChipMemory::add_client).
  bool offchip_uncontended = false;
  // An HBM model with banks (hbm.model: dram): what its banks and controller did, and each
  // channel's requests and busy cycles (accelerator cycles).
  std::optional<HbmDramStats> offchip_dram;
  std::vector<uint64_t> offchip_requests_per_channel, offchip_busy_cycles_per_channel;
  std::vector<std::string> written_files;  // functional mode: .npy files of stored tensors
  // Functional mode with keep_stored: every tensor a store wrote, and every declared output,
  // logical row-major values.
  std::map<std::string, TileData> stored;
  // Fabric allocation: totals over the nodes (static memory units: before the run).
  uint64_t compute_units = 0, memory_units = 0, memory_units_static = 0;
  // On-chip memory: the sum of the per-node formula values of `onchip_model`, and the sum of the
  // per-node measured peaks (an upper bound on the simultaneous total: nodes peak at different times).
  std::string onchip_model;
  uint64_t onchip_requirement_bytes = 0, onchip_peak_bytes = 0;
  double wall_seconds = 0;
  // Co-simulation: the logged channels' transfers, by channel name.
  std::map<std::string, std::vector<LoggedBeat>> channel_logs;
  std::vector<std::string> vcd_files;
  // The static check's types and symbols (sim/engine/validate.h), for the report's symbolic section; null
  // when none ran (SimOptions::static_check false) or inference cannot type the graph.
  std::shared_ptr<const StaticCheck> static_check;
};

// Runs the graph through the stages of a simulation, each in its own file:
//   plan (sim/engine/plan.h) -> implementation policy (sim/engine/impl_policy.h) -> elaborate
//   (sim/engine/elaborate.h) -> run (sim/engine/run.h) -> collect (sim/engine/collect.h) -> diagnose (sim/engine/diagnose.h),
// in a SystemC kernel of its own (sim/engine/sc_kernel.h).
// Throws std::invalid_argument for a malformed graph (unknown op, bad port, bad parameter).
SimResult simulate(const Graph& graph, const SimOptions& options);

}  // namespace stepsim
