#include "sim/engine/collect.h"

#include <algorithm>
#include <tuple>

#include "hw/bridge/unit_bridge.h"
#include "hw/fabric/allocation.h"
#include "sim/graph/output_file.h"
#include "sim/graph/tensors.h"

namespace stepsim {

namespace {

// The node's clock and counts, the implementation the policy chose, and what the operator
// reports itself (its timeline, a Sink's stream, a unit's clock edges and waveform file).
NodeResult node_result(Op& op, const ImplChoice& impl, const OffChipMemory& memory, SimResult& r,
                       std::vector<WrittenFile>& files) {
  OpReport report = op.take_report();
  NodeResult nr;
  nr.name = op.node_name();
  nr.op = op.config().info->name;
  nr.finish_cycle = op.ctx().now();
  nr.busy_cycles = op.ctx().busy_cycles();
  nr.firings = op.firings();
  nr.flops = op.flops_executed();
  nr.arithmetic = op.arithmetic();
  nr.sram_read_bytes = op.sram_read_bytes();
  nr.sram_write_bytes = op.sram_write_bytes();
  const OffChipMemory::ClientTraffic traffic = memory.traffic_of(op.ctx());
  nr.offchip_read_bytes = traffic.read_bytes;
  nr.offchip_write_bytes = traffic.write_bytes;
  nr.offchip_requests = traffic.requests;
  nr.compute_bw = op.config().compute_bw;
  nr.impl = impl.impl;
  nr.impl_note = impl.note;
  nr.unit_clocks = report.unit_clocks;
  r.trace.insert(r.trace.end(), report.trace.begin(), report.trace.end());
  files.insert(files.end(), report.files.begin(), report.files.end());
  if (report.records) {
    r.recorded[nr.name] = std::move(report.recorded);
    r.recorded_times[nr.name] = std::move(report.recorded_times);
  }
  return nr;
}

// Per-node fabric units and on-chip bytes (hw/fabric), from the operators after the run; the
// nodes of r are in elaboration order, like e.order.
void add_fabric_results(SimResult& r, const Elaboration& e, const Plan& plan, const HardwareParams& hw) {
  std::map<std::string, const NodeAllocation*> by_name;
  for (const NodeAllocation& a : plan.alloc.nodes) by_name[a.name] = &a;
  const std::vector<const Op*> ops(e.order.begin(), e.order.end());
  const std::vector<NodeObservation> obs = observe_nodes(ops, e.links);
  const OnChipRequirementModel& model = onchip_requirement_model(hw.onchip_requirement_model);
  r.onchip_model = model.name();
  r.memory_units_static = plan.alloc.memory_units;
  for (size_t i = 0; i < ops.size(); ++i) {
    NodeResult& nr = r.nodes.at(i);
    const NodeAllocation* a = by_name.at(nr.name);
    nr.onchip_requirement_bytes = model.requirement(obs[i]);
    nr.onchip_peak_bytes = ops[i]->onchip_peak_bytes();
    nr.compute_units = a->compute_units;
    nr.memory_units = std::max(a->memory_units, memory_units_for(nr.onchip_peak_bytes, hw));
  }
  sum_node_totals(r);
}

// Timeline events name their node by its position in r.nodes (sorted by name), and come in
// model-time order: neither may depend on the elaboration or process order.
void order_trace(SimResult& r, const Elaboration& e) {
  std::map<int, int> by_ctx;
  for (size_t k = 0; k < r.nodes.size(); ++k) by_ctx[e.ops.at(r.nodes[k].name)->ctx().index()] = int(k);
  for (TraceEvent& t : r.trace) t.op = by_ctx[t.op];
  std::sort(r.trace.begin(), r.trace.end(), [](const TraceEvent& a, const TraceEvent& b) {
    return std::tie(a.start, a.op, a.dur) < std::tie(b.start, b.op, b.dur);
  });
}

std::vector<ChannelResult> channel_results(const Elaboration& e) {
  std::vector<ChannelResult> channels;
  for (const auto& c : e.channels) {
    ChannelResult cr{c->name(), c->params(), c->stats(), c->producer()->name(), c->consumer()->name()};
    const Context& producer = *c->producer();
    cr.blocked_full = producer.state() == Context::State::kBlockedSend && producer.blocked_on() == c.get();
    // A unit waits at its pins, not in the channel's receive and send: its bridge counts those.
    cr.stats.consumer_starve_cycles += e.ops.at(cr.consumer)->input_wait_cycles(c.get());
    cr.stats.producer_stall_cycles += e.ops.at(cr.producer)->output_wait_cycles(c.get());
    channels.push_back(std::move(cr));
  }
  std::sort(channels.begin(), channels.end(),
            [](const ChannelResult& a, const ChannelResult& b) { return a.name < b.name; });
  return channels;
}

void add_offchip_results(SimResult& r, const OffChipMemory& memory) {
  r.offchip_read_bytes = memory.bytes_read();
  r.offchip_write_bytes = memory.bytes_written();
  r.offchip_requests = memory.hbm_stats().requests();
  r.offchip_tile_bytes = memory.tile_bytes();
  r.offchip_uncontended = memory.uncontended();
  const HbmStats& hbm = memory.hbm_stats();
  if (hbm.dram) {
    r.offchip_dram = hbm.dram;
    r.offchip_requests_per_channel = hbm.requests_per_channel;
    r.offchip_busy_cycles_per_channel = hbm.busy_cycles_per_channel;
  }
}

}  // namespace

void sum_node_totals(SimResult& r) {
  r.compute_units = r.memory_units = r.onchip_requirement_bytes = r.onchip_peak_bytes = 0;
  for (const NodeResult& n : r.nodes) {
    r.compute_units += n.compute_units;
    r.memory_units += n.memory_units;
    r.onchip_requirement_bytes += n.onchip_requirement_bytes;
    r.onchip_peak_bytes += n.onchip_peak_bytes;
  }
}

SimResult collect_results(Elaboration& e, const Plan& plan, const HardwareParams& hw) {
  SimResult r;
  std::vector<WrittenFile> files;
  for (Op* op : e.order) {
    r.nodes.push_back(node_result(*op, e.impls.at(op->node_name()), *e.memory, r, files));
    r.cycles = std::max(r.cycles, r.nodes.back().finish_cycle);
  }
  // The files in the order they were written.
  std::sort(files.begin(), files.end(), [](const WrittenFile& a, const WrittenFile& b) { return a.order < b.order; });
  for (WrittenFile& f : files) r.vcd_files.push_back(std::move(f.path));
  add_fabric_results(r, e, plan, hw);
  std::sort(r.nodes.begin(), r.nodes.end(), [](const NodeResult& a, const NodeResult& b) { return a.name < b.name; });
  order_trace(r, e);
  r.channels = channel_results(e);
  for (const auto& c : e.channels)
    if (c->logged()) r.channel_logs[c->name()] = c->take_log();
  add_offchip_results(r, *e.memory);
  return r;
}

void store_tensors(const Graph& graph, OffChipMemory& memory, const SimOptions& options, SimResult& r) {
  if (!options.functional || (options.output_dir.empty() && !options.keep_stored)) return;
  try {
    for (const TensorSpec& spec : graph.tensors) {
      const OffChipTensor& t = memory.tensor(spec.name);
      if (!t.written && spec.init != "output") continue;
      TileData values = memory.read_values(t);
      if (!options.output_dir.empty())
        r.written_files.push_back(write_tensor_npy(options.output_dir, t.name, t.rows, t.cols, t.dtype, values));
      if (options.keep_stored) r.stored[t.name] = std::move(values);
    }
  } catch (const std::exception& ex) {
    for (const std::string& f : r.written_files) discard_output_file(f);
    r.written_files.clear();
    r.ok = false;
    r.error = ex.what();
  }
}

}  // namespace stepsim
