#include "sim/report/analyze.h"
#include "sim/report/dram_report.h"
#include "sim/report/energy.h"
#include "sim/report/metrics.h"
#include "sim/report/report.h"
#include "sim/report/text.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "hw/ops/op.h"
#include "sim/engine/diagnose.h"
#include "sim/graph/output_file.h"

namespace stepsim {

using nlohmann::json;

namespace {

// ---- The bottleneck (find_bottleneck, report.h has the rule) ----------------------------

// The channels at each node, by node name.
struct ChannelsByNode {
  std::map<std::string, std::vector<const ChannelResult*>> inputs, outputs;
  explicit ChannelsByNode(const SimResult& r) {
    for (const ChannelResult& c : r.channels) {  // sorted by name: ties go to the first name
      inputs[c.consumer].push_back(&c);
      outputs[c.producer].push_back(&c);
    }
  }
};

using NodesByName = std::map<std::string, const NodeResult*>;

std::vector<const NodeResult*> walk_critical_path(const SimResult& r, const ChannelsByNode& ch,
                                                  const NodesByName& by_name) {
  const NodeResult* last = nullptr;
  for (const NodeResult& n : r.nodes)  // sorted by name: a tie goes to the first
    if (!last || n.finish_cycle > last->finish_cycle) last = &n;
  std::vector<const NodeResult*> path;
  std::set<std::string> on_path;
  for (const NodeResult* n = last; n;) {
    path.push_back(n);
    on_path.insert(n->name);
    std::string next;
    uint64_t most = 0;
    auto consider = [&](const std::string& other, uint64_t waited) {
      if (waited > most && !on_path.count(other) && by_name.count(other)) {
        most = waited;
        next = other;
      }
    };
    auto in = ch.inputs.find(n->name), out = ch.outputs.find(n->name);
    if (in != ch.inputs.end())
      for (const ChannelResult* c : in->second) consider(c->producer, c->stats.consumer_starve_cycles);
    if (out != ch.outputs.end())
      for (const ChannelResult* c : out->second) consider(c->consumer, c->stats.producer_stall_cycles);
    n = next.empty() ? nullptr : by_name.at(next);
  }
  return path;
}

// Cycles a node spent on one resource.
struct Share {
  std::string resource, channel;
  uint64_t cycles = 0;
};

std::vector<Share> resource_shares(const NodeResult& n, const ChannelsByNode& ch, const NodesByName& by_name) {
  const OpRegistry& reg = OpRegistry::instance();
  const OpInfo* info = reg.has(n.op) ? &reg.find(n.op) : nullptr;
  std::vector<Share> shares;
  if (info && info->is_offchip()) {
    shares.push_back({"offchip", "", n.busy_cycles});
  } else if (n.impl != "approx") {
    // Co-simulation: a unit's busy cycles are the cycles a beat moved on its pins; how they
    // split between its lanes and its buffers is not measured.
    shares.push_back({"unit", "", n.busy_cycles});
  } else if (info && info->uses_compute) {
    // The roofline charges max(load, compute, store) per firing: the compute part is at least
    // ceil(flops / compute_bw) (exact when every firing is compute-bound), the rest is memory.
    const uint64_t compute =
        n.compute_bw ? std::min(n.busy_cycles, n.flops / n.compute_bw + (n.flops % n.compute_bw ? 1 : 0)) : 0;
    shares.push_back({"compute", "", compute});
    shares.push_back({"onchip_bandwidth", "", n.busy_cycles - compute});
  } else if (info && info->category == OpCategory::kOnChipMemory) {
    shares.push_back({"onchip_bandwidth", "", n.busy_cycles});
  } else {
    shares.push_back({"latency", "", n.busy_cycles});
  }
  // A full output channel: the waits its consumer's work and its consumer's own blocking do not
  // explain are the channel's (its depth and round trip).
  auto out = ch.outputs.find(n.name);
  if (out != ch.outputs.end())
    for (const ChannelResult* c : out->second) {
      uint64_t explained = 0;
      if (auto it = by_name.find(c->consumer); it != by_name.end()) explained = it->second->busy_cycles;
      if (auto co = ch.outputs.find(c->consumer); co != ch.outputs.end())
        for (const ChannelResult* d : co->second) explained += d->stats.producer_stall_cycles;
      const uint64_t stall = c->stats.producer_stall_cycles;
      shares.push_back({"fifo", c->name, stall > explained ? stall - explained : 0});
    }
  return shares;
}

// What the resource is, with the parameters a what-if would change.
std::string resource_text(const Bottleneck& b, const SimResult& r, const HardwareParams& hw) {
  std::ostringstream s;
  if (b.resource == "offchip" || b.resource == "offchip_row_misses") {
    if (b.resource == "offchip_row_misses") s << row_miss_text(r, hw) << "; ";
    const double peak = hw.hbm.peak_bytes_per_cycle();
    const double use =
        r.cycles && peak > 0 ? double(r.offchip_read_bytes + r.offchip_write_bytes) / (double(r.cycles) * peak) : 0.0;
    if (b.impl != "approx") {
      s << "off-chip requests, issued by the address-generator unit";
    } else if (hw.offchip_one_tile_in_flight) {
      s << "off-chip requests with one tile in flight per load/store (offchip_one_tile_in_flight=true)";
    } else {
      s << "off-chip requests, issued at par_dispatch per cycle (preset par_dispatch=" << hw.par_dispatch
        << "; tiles overlap: offchip_one_tile_in_flight=false";
      if (hw.ag_max_outstanding)
        s << "; at most ag_max_outstanding=" << hw.ag_max_outstanding << " requests unanswered";
      s << ")";
    }
    if (r.offchip_uncontended)
      s << "; no request could wait for an HBM channel (offchip.uncontended), so more hbm.channels cannot help";
    else
      s << "; requests may queue on the hbm.channels=" << hw.hbm.channels << " HBM channels (off-chip bandwidth use "
        << percent_text(use) << ")";
  } else if (b.resource == "compute") {
    uint64_t bw = 0;
    for (const NodeResult& n : r.nodes)
      if (n.name == b.node) bw = n.compute_bw;
    s << "compute (compute_bw=" << bw << " FLOPs/cycle)";
  } else if (b.resource == "onchip_bandwidth") {
    if (b.op == op_name(OpKind::kBufferize) || b.op == op_name(OpKind::kStreamify))
      s << "on-chip memory unit (1 element per cycle)";
    else
      s << "on-chip bandwidth (tile reads and writes in memory units at onchip_bw=" << hw.onchip_bw << " B/cycle)";
  } else if (b.resource == "unit") {
    s << "its " << b.impl << " unit (cycles in which a beat moved on its pins)";
  } else if (b.resource == "fifo") {
    s << "a full FIFO: waiting for space on '" << b.channel << "' beyond its consumer's own work";
    for (const ChannelResult& c : r.channels)
      if (c.name == b.channel) s << " (depth " << c.params.depth << ")";
  } else {
    s << "its own latency per element (the " << b.op << " timing rule: stepsim ops)";
  }
  return s.str();
}

}  // namespace

Bottleneck find_bottleneck(const SimResult& r, const HardwareParams& hw) {
  Bottleneck b;
  const ChannelsByNode ch(r);
  NodesByName by_name;
  for (const NodeResult& n : r.nodes) by_name[n.name] = &n;
  const std::vector<const NodeResult*> path = walk_critical_path(r, ch, by_name);
  for (const NodeResult* n : path) {
    b.critical_path.push_back(n->name);
    for (const Share& s : resource_shares(*n, ch, by_name))
      if (s.cycles > b.cycles) {
        b.cycles = s.cycles;
        b.node = n->name;
        b.op = n->op;
        b.impl = n->impl;
        b.resource = s.resource;
        b.channel = s.channel;
      }
  }
  // The rows, not the data buses, set the off-chip rate.
  if (b.resource == "offchip" && row_miss_bound(r)) b.resource = "offchip_row_misses";
  if (b.resource == "none" || r.cycles == 0) {
    b.text = "none: no node on the critical path was busy or blocked";
    return b;
  }
  b.fraction = double(b.cycles) / double(r.cycles);
  std::ostringstream s;
  s << "node " << b.node << " (" << b.op << (b.impl == "approx" ? "" : " on the " + b.impl + " unit") << "), "
    << resource_text(b, r, hw) << ": " << (b.resource == "fifo" ? "blocked " : "busy ") << percent_text(b.fraction)
    << " of " << r.cycles << " cycles";
  if (b.fraction < 0.5)
    s << "; nothing on the critical path is busy for most of the run: its latency (channel hops, the first tiles) "
         "bounds it";
  b.text = s.str();
  return b;
}

Report make_report(const Graph& g, const SimOptions& opt, const SimResult& r) {
  json j;
  uint64_t total_flops = 0;
  for (const auto& n : r.nodes) total_flops += n.flops;
  j["symbolic"] = symbolic_vs_measured(g, r.static_check.get(), opt.hw.onchip_requirement_model, r.offchip_read_bytes,
                                       r.offchip_write_bytes,
                                       total_flops, r.onchip_requirement_bytes);
  j["graph"] = g.name;
  j["preset"] = opt.hw.name;
  j["mode"] = opt.functional ? "functional" : "timing";
  j["cycles"] = r.cycles;
  j["wall_seconds"] = r.wall_seconds;
  j["offchip"]["read_bytes"] = r.offchip_read_bytes;
  j["offchip"]["write_bytes"] = r.offchip_write_bytes;
  const double peak = opt.hw.hbm.peak_bytes_per_cycle();
  j["offchip"]["peak_bytes_per_cycle"] = peak;
  j["offchip"]["bandwidth_utilization"] =
      r.cycles ? double(r.offchip_read_bytes + r.offchip_write_bytes) / (double(r.cycles) * peak) : 0.0;
  j["offchip"]["uncontended"] = r.offchip_uncontended;
  add_dram_report(j, r, opt.hw);
  uint64_t flops = 0, alloc = 0, pcus = 0;
  json nodes = json::array();
  for (const NodeResult& n : r.nodes) {
    json jn;
    jn["name"] = n.name;
    jn["op"] = n.op;
    jn["impl"] = n.impl;
    jn["finish_cycle"] = n.finish_cycle;
    jn["busy_cycles"] = n.busy_cycles;
    jn["firings"] = n.firings;
    jn["flops"] = n.flops;
    if (n.compute_bw) {
      jn["compute_bw"] = n.compute_bw;
      jn["compute_units"] = n.compute_units;
      pcus += n.compute_units;
      alloc += n.compute_bw;
    }
    jn["memory_units"] = n.memory_units;
    jn["onchip_requirement_bytes"] = n.onchip_requirement_bytes;
    jn["onchip_peak_bytes"] = n.onchip_peak_bytes;
    flops += n.flops;
    nodes.push_back(jn);
  }
  j["nodes"] = nodes;
  j["compute"]["flops"] = flops;
  j["compute"]["allocated_flops_per_cycle"] = alloc;
  j["compute"]["compute_units"] = pcus;
  j["compute"]["utilization"] = (r.cycles && alloc) ? double(flops) / (double(alloc) * double(r.cycles)) : 0.0;
  // Fabric allocation (hw/fabric/allocation.h) and on-chip memory (hw/fabric/onchip_requirement.h).
  j["fabric"]["compute_units"] = r.compute_units;
  j["fabric"]["memory_units"] = r.memory_units;
  j["fabric"]["memory_units_static"] = r.memory_units_static;
  j["fabric"]["num_pcus"] = opt.hw.num_pcus;
  j["fabric"]["num_pmus"] = opt.hw.num_pmus;
  j["fabric"]["pcu_flops_per_cycle"] = opt.hw.pcu_flops;
  j["fabric"]["pmu_capacity_bytes"] = opt.hw.pmu_capacity;
  j["fabric"]["fits"] = fabric_excess(r, opt.hw).empty();
  j["onchip"]["model"] = r.onchip_model;
  j["onchip"]["requirement_bytes"] = r.onchip_requirement_bytes;
  j["onchip"]["measured_peak_bytes"] = r.onchip_peak_bytes;
  j["onchip"]["measured_peak_is"] = "sum of per-node peaks";
  json chans = json::array();
  for (const ChannelResult& c : r.channels) {
    json jc;
    jc["name"] = c.name;
    jc["depth"] = c.params.depth;
    jc["inflight"] = c.params.inflight;
    jc["beats"] = c.stats.beats;
    jc["elements"] = c.stats.elements;
    jc["bytes"] = c.stats.bytes;
    jc["peak_occupancy"] = c.stats.peak_occupancy;
    jc["producer_stall_cycles"] = c.stats.producer_stall_cycles;
    jc["consumer_starve_cycles"] = c.stats.consumer_starve_cycles;
    chans.push_back(jc);
  }
  j["channels"] = chans;
  const Bottleneck b = find_bottleneck(r, opt.hw);
  json& jb = j["bottleneck"];
  jb["node"] = b.node;
  jb["op"] = b.op;
  jb["resource"] = b.resource;
  jb["channel"] = b.channel;
  jb["cycles"] = b.cycles;
  jb["fraction"] = b.fraction;
  jb["text"] = b.text;
  jb["critical_path"] = b.critical_path;
  add_energy_report(j, r, opt.hw, opt.tech.name.empty() ? default_technology() : opt.tech, g.tokens);
  return Report{j};
}

// The keys of a bridged node that come from the approximate twin (cosim.cpp fills them).
const char* const kTwinKeys[] = {"firings",           "flops",       "memory_units", "onchip_requirement_bytes",
                                 "onchip_peak_bytes", "actions.mac", "actions.exp",  "actions.vector_op",
                                 "actions.sram_read", "actions.sram_write"};

Report make_report(const Graph& g, const SimOptions& opt, const CosimReport& cr) {
  Report rep = make_report(g, opt, cr.cosim);
  json& c = rep.json["cosim"];
  std::string impl = "approx";
  for (const NodeResult& n : cr.cosim.nodes)
    if (n.impl != "approx") impl = n.impl;
  c["impl"] = impl;
  c["bridged_nodes"] = cr.bridged_nodes;
  c["unit_clocks"] = cr.unit_clocks;
  c["approx_cycles"] = cr.approx.cycles;
  c["equivalent"] = cr.equivalent;
  c["from_approximate_run"] = json::array();
  for (const char* k : kTwinKeys) c["from_approximate_run"].push_back(std::string("nodes[].") + k);
  return rep;
}

// "1.23 uJ (1234567 pJ)": the largest unit that leaves at least 1.
std::string energy_text(double pj) {
  static const char* const kUnits[] = {"pJ", "nJ", "uJ", "mJ", "J"};
  double v = pj;
  int u = 0;
  while (v >= 1000.0 && u < 4) {
    v /= 1000.0;
    ++u;
  }
  std::ostringstream s;
  s << std::fixed << std::setprecision(u ? 3 : 1) << v << " " << kUnits[u];
  if (u) s << " (" << std::setprecision(0) << pj << " pJ)";
  return s.str();
}

// The energy and area lines: figures that are metrics come from the metric table.
void print_energy(const json& j, std::ostream& out) {
  const json& e = j["energy"];
  const json& a = j["area"];
  auto metric = [&](const char* name) { return metric_value(name, j); };
  auto fixed = [](double v, int digits) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(digits) << v;
    return s.str();
  };
  const std::string tech = e["technology"].get<std::string>();
  out << "  energy                     " << energy_text(metric("energy_pj").get<double>()) << ": dynamic "
      << energy_text(metric("energy_dynamic_pj").get<double>()) << ", leakage "
      << energy_text(metric("energy_static_pj").get<double>()) << " (technology " << tech << ")\n";
  // The priced actions, largest first (ties by name).
  std::vector<std::pair<double, std::string>> parts;
  for (const auto& [name, pj] : e["by_action_pj"].items()) parts.push_back({-pj.get<double>(), name});
  std::sort(parts.begin(), parts.end());
  const double dynamic = metric("energy_dynamic_pj").get<double>();
  std::string by;
  for (size_t k = 0; k < parts.size() && k < 4 && dynamic > 0; ++k)
    by += (k ? ", " : "") + parts[k].second + " " + percent_text(-parts[k].first / dynamic);
  if (!by.empty()) out << "  energy by action           " << by << " of the dynamic energy\n";
  const json power = metric("average_power_w"), per_flop = metric("energy_per_flop_pj"),
             per_token = metric("energy_per_token_pj");
  out << "  average power              " << (power.is_null() ? "none (no cycles)" : fixed(power.get<double>(), 3) + " W")
      << " at " << fixed(e["clock_ghz"].get<double>(), 2) << " GHz; energy per FLOP "
      << (per_flop.is_null() ? "none (no FLOPs)" : fixed(per_flop.get<double>(), 3) + " pJ") << "; per token "
      << (per_token.is_null() ? "none (the graph gives no tokens)" : energy_text(per_token.get<double>())) << "\n";
  out << "  area                       " << fixed(metric("area_mm2").get<double>(), 3)
      << " mm2 allocated: compute units " << fixed(a["compute_units_mm2"].get<double>(), 3) << ", memory units "
      << fixed(a["memory_units_mm2"].get<double>(), 3) << " (with SRAM), routers " << fixed(a["routers_mm2"].get<double>(), 3)
      << ", address generators " << fixed(a["address_generators_mm2"].get<double>(), 3) << ", HBM PHYs "
      << fixed(a["hbm_phys_mm2"].get<double>(), 3) << " (technology " << tech << ")\n";
}

void print_summary(const Report& rep, std::ostream& out) {
  const json& j = rep.json;
  auto num = [](double v) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(1) << v;
    return s.str();
  };
  out << "graph " << j["graph"].get<std::string>() << " (preset " << j["preset"].get<std::string>() << ", "
      << j["mode"].get<std::string>() << " mode)\n";
  // The figures that are metrics come from the metric table (sim/report/metrics.h).
  auto metric = [&](const char* name) { return metric_value(name, j); };
  out << "  cycles                     " << metric("cycles").get<uint64_t>() << " cycles\n";
  out << "  off-chip read              " << metric("offchip_read_bytes").get<uint64_t>() << " B\n";
  out << "  off-chip written           " << metric("offchip_write_bytes").get<uint64_t>() << " B\n";
  out << "  off-chip bandwidth use     " << num(100.0 * metric("offchip_bw_utilization").get<double>()) << " % of "
      << num(j["offchip"]["peak_bytes_per_cycle"].get<double>()) << " B/cycle\n";
  print_dram_summary(j, out);
  out << "  FLOPs executed             " << metric("flops").get<uint64_t>() << " FLOPs\n";
  out << "  compute allocated          " << metric("allocated_flops_per_cycle").get<uint64_t>() << " FLOPs/cycle on "
      << j["compute"]["compute_units"].get<uint64_t>() << " compute units\n";
  out << "  compute utilization        " << num(100.0 * metric("compute_utilization").get<double>()) << " %\n";
  const json& fab = j["fabric"];
  out << "  compute units              " << metric("compute_units").get<uint64_t>() << " PCU of "
      << fab["pcu_flops_per_cycle"].get<uint64_t>() << " FLOPs/cycle (fabric has " << fab["num_pcus"].get<uint64_t>()
      << ")\n";
  out << "  memory units               " << metric("memory_units").get<uint64_t>() << " PMU of "
      << bytes_text(fab["pmu_capacity_bytes"].get<uint64_t>()) << " (" << fab["memory_units_static"].get<uint64_t>()
      << " allocated before the run; fabric has " << fab["num_pmus"].get<uint64_t>() << ")"
      << (fab["fits"].get<bool>() ? "" : "  EXCEEDS THE FABRIC") << "\n";
  out << "  on-chip requirement        " << bytes_text(metric("onchip_bytes").get<uint64_t>()) << " ("
      << j["onchip"]["model"].get<std::string>() << " formulas)\n";
  out << "  on-chip measured peak      " << bytes_text(j["onchip"]["measured_peak_bytes"].get<uint64_t>())
      << " (sum of per-node peaks)\n";
  print_energy(j, out);
  const json& sym = j["symbolic"];
  if (sym["available"].get<bool>()) {
    auto pred = [&](const char* k) {
      const json& x = sym[k];
      return x["value"].is_null() ? "symbolic " + x["evaluated"].get<std::string>() + " (unknown symbols)"
                                  : std::to_string(x["value"].get<int64_t>());
    };
    out << "  symbolic prediction        off-chip read " << pred("read_bytes") << " B, written " << pred("write_bytes")
        << " B, " << pred("flops") << " FLOPs, on-chip requirement " << pred("onchip_requirement_bytes") << " B\n";
  } else {
    out << "  symbolic prediction        unavailable: " << sym["reason"].get<std::string>() << "\n";
  }
  const json& b = j["bottleneck"];
  out << "  bottleneck                 " << b["text"].get<std::string>() << "\n";
  const json& path = b["critical_path"];
  if (!path.empty()) {
    // The path from the node that finishes last backwards; a long one by its two ends.
    std::string p;
    for (size_t k = 0; k < path.size(); ++k) {
      if (k == 4 && path.size() > 7) {  // the first four, the last two
        p += " <- ... (" + std::to_string(path.size() - 6) + " more)";
        k = path.size() - 3;
        continue;
      }
      p += (k ? " <- " : "") + path[k].get<std::string>();
    }
    out << "  critical path              " << p << "\n";
  }
  if (j.contains("cosim")) {
    const json& c = j["cosim"];
    out << "  co-simulation              " << c["bridged_nodes"].get<uint64_t>() << " nodes on "
        << c["impl"].get<std::string>() << " units (" << c["unit_clocks"].get<uint64_t>()
        << " clock edges); the all-approximate run took " << c["approx_cycles"].get<uint64_t>()
        << " cycles; their firings, FLOPs, on-chip bytes and memory-unit bytes are the approximate run's\n";
  }
  out << "  simulation wall time       " << std::setprecision(3) << j["wall_seconds"].get<double>() << " s\n";
}

void write_json_report(const Report& rep, const std::string& path) {
  write_output_file(path, "report", rep.json.dump(2) + "\n");
}

void write_trace(const Graph&, const SimResult& r, const std::string& path) {
  // Chrome trace-event format (loads in Perfetto): one complete event per firing; 1 cycle = 1 us.
  json events = json::array();
  // One track per node (tid = its position in the report's node list), named by a metadata event.
  bool bridged = false;
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const NodeResult& n = r.nodes[i];
    const bool on_unit = n.impl != "approx";
    bridged = bridged || on_unit;
    events.push_back(
        {{"name", "thread_name"},
         {"ph", "M"},
         {"pid", 0},
         {"tid", int(i)},
         {"args", {{"name", n.name + " (" + n.op + (on_unit ? " on the " + n.impl + " unit" : "") + ")"}}}});
  }
  for (const TraceEvent& e : r.trace)
    events.push_back(
        {{"name", r.nodes[size_t(e.op)].op}, {"ph", "X"}, {"pid", 0}, {"tid", e.op}, {"ts", e.start}, {"dur", e.dur}});
  json j;
  j["traceEvents"] = std::move(events);
  j["displayTimeUnit"] = "ns";
  if (bridged)
    j["otherData"]["units"] =
        "co-simulation: the events of a node on a unit (its track says which) are the unit's busy spans, runs of "
        "clock cycles in which a beat moved on one of its pins, not firings";
  OutputFile f(path, "trace");
  f.stream() << j << "\n";
  f.commit();
}

}  // namespace stepsim
