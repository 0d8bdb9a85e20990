#include "sim/report.h"
#include "sim/analyze.h"

#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "hw/ops/op.h"

namespace stepsim {

using nlohmann::json;

namespace {

// "1.23 MiB (1289748 B)"; plain bytes below 1 KiB.
std::string bytes_text(uint64_t b) {
  std::ostringstream s;
  if (b < 1024) {
    s << b << " B";
    return s.str();
  }
  const char* unit = b >= (uint64_t(1) << 30) ? "GiB" : b >= (uint64_t(1) << 20) ? "MiB" : "KiB";
  const double div = b >= (uint64_t(1) << 30) ? double(uint64_t(1) << 30) : b >= (uint64_t(1) << 20) ? 1048576.0 : 1024.0;
  s << std::fixed << std::setprecision(2) << double(b) / div << " " << unit << " (" << b << " B)";
  return s.str();
}

}  // namespace

Report make_report(const Graph& g, const SimOptions& opt, const SimResult& r) {
  json j;
  uint64_t total_flops = 0;
  for (const auto& n : r.nodes) total_flops += n.flops;
  j["symbolic"] = symbolic_vs_measured(g, opt.hw.onchip_requirement_model, r.offchip_read_bytes, r.offchip_write_bytes,
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
  uint64_t flops = 0, alloc = 0, pcus = 0;
  json nodes = json::array();
  for (const NodeResult& n : r.nodes) {
    json jn;
    jn["name"] = n.name;
    jn["op"] = n.op;
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
  j["fabric"]["fits"] = r.compute_units <= opt.hw.num_pcus && r.memory_units <= opt.hw.num_pmus;
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
  return Report{j};
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
  out << "  cycles                     " << j["cycles"].get<uint64_t>() << " cycles\n";
  out << "  off-chip read              " << j["offchip"]["read_bytes"].get<uint64_t>() << " B\n";
  out << "  off-chip written           " << j["offchip"]["write_bytes"].get<uint64_t>() << " B\n";
  out << "  off-chip bandwidth use     " << num(100.0 * j["offchip"]["bandwidth_utilization"].get<double>())
      << " % of " << num(j["offchip"]["peak_bytes_per_cycle"].get<double>()) << " B/cycle\n";
  out << "  FLOPs executed             " << j["compute"]["flops"].get<uint64_t>() << " FLOPs\n";
  out << "  compute allocated          " << j["compute"]["allocated_flops_per_cycle"].get<uint64_t>()
      << " FLOPs/cycle on " << j["compute"]["compute_units"].get<uint64_t>() << " compute units\n";
  out << "  compute utilization        " << num(100.0 * j["compute"]["utilization"].get<double>()) << " %\n";
  const json& fab = j["fabric"];
  out << "  compute units              " << fab["compute_units"].get<uint64_t>() << " PCU of "
      << fab["pcu_flops_per_cycle"].get<uint64_t>() << " FLOPs/cycle (fabric has " << fab["num_pcus"].get<uint64_t>()
      << ")\n";
  out << "  memory units               " << fab["memory_units"].get<uint64_t>() << " PMU of "
      << bytes_text(fab["pmu_capacity_bytes"].get<uint64_t>()) << " (" << fab["memory_units_static"].get<uint64_t>()
      << " allocated before the run; fabric has " << fab["num_pmus"].get<uint64_t>() << ")"
      << (fab["fits"].get<bool>() ? "" : "  EXCEEDS THE FABRIC") << "\n";
  out << "  on-chip requirement        " << bytes_text(j["onchip"]["requirement_bytes"].get<uint64_t>()) << " ("
      << j["onchip"]["model"].get<std::string>() << " formulas)\n";
  out << "  on-chip measured peak      " << bytes_text(j["onchip"]["measured_peak_bytes"].get<uint64_t>())
      << " (sum of per-node peaks)\n";
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
  out << "  simulation wall time       " << std::setprecision(3) << j["wall_seconds"].get<double>() << " s\n";
}

void write_json_report(const Report& rep, const std::string& path) {
  std::ofstream f(path + ".tmp");
  if (!f) throw std::invalid_argument("cannot write report '" + path + "'");
  f << rep.json.dump(2) << "\n";
  f.close();
  std::rename((path + ".tmp").c_str(), path.c_str());
}

void write_trace(const Graph&, const SimResult& r, const std::string& path) {
  // Chrome trace-event format (loads in Perfetto): one complete event per firing; 1 cycle = 1 us.
  json events = json::array();
  // One track per node (tid = its position in the report's node list), named by a metadata event.
  for (size_t i = 0; i < r.nodes.size(); ++i)
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", int(i)},
                      {"args", {{"name", r.nodes[i].name + " (" + r.nodes[i].op + ")"}}}});
  for (const TraceEvent& e : r.trace)
    events.push_back({{"name", r.nodes[size_t(e.op)].op}, {"ph", "X"}, {"pid", 0}, {"tid", e.op}, {"ts", e.start},
                      {"dur", e.dur}});
  json j;
  j["traceEvents"] = events;
  j["displayTimeUnit"] = "ns";
  std::ofstream f(path + ".tmp");
  if (!f) throw std::invalid_argument("cannot write trace '" + path + "'");
  f << j.dump() << "\n";
  f.close();
  std::rename((path + ".tmp").c_str(), path.c_str());
}

}  // namespace stepsim
