#include "sim/report/energy.h"

#include <map>

#include "hw/ops/op.h"

namespace stepsim {

using nlohmann::json;

const std::vector<Actions::Doc>& Actions::docs() {
  static const std::vector<Doc> rows = {
#define STEPSIM_ACTION(member, name, unit, price, doc) {name, unit, price, doc},
#include "sim/report/actions.def"
#undef STEPSIM_ACTION
  };
  return rows;
}

std::vector<uint64_t> Actions::counts() const {
  return {
#define STEPSIM_ACTION(member, name, unit, price, doc) member,
#include "sim/report/actions.def"
#undef STEPSIM_ACTION
  };
}

Actions& Actions::operator+=(const Actions& a) {
#define STEPSIM_ACTION(member, name, unit, price, doc) member += a.member;
#include "sim/report/actions.def"
#undef STEPSIM_ACTION
  return *this;
}

// Where each count comes from:
//   * mac, exp, vector_op: the FLOPs the node's functions were charged, split by kind
//     (tile_arithmetic, hw/functions/flops.h);
//   * sram_read, sram_write: the bytes the node's timing charged at onchip_bw for tiles in
//     memory units (Op::mem_read_cycles, mem_write_cycles), plus a load's staging writes and a
//     Bufferize's buffer (Op::count_sram_write);
//   * fifo_push, noc_transfer: the bytes on the node's output channels (ChannelStats::bytes), one
//     network hop each; fifo_pop: the bytes on its input channels;
//   * hbm_read, hbm_write, hbm_request: the node's own off-chip requests (OffChipMemory::traffic_of).
std::vector<Actions> node_actions(const SimResult& r) {
  std::map<std::string, size_t> index;
  std::vector<Actions> actions(r.nodes.size());
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const NodeResult& n = r.nodes[i];
    index[n.name] = i;
    Actions& a = actions[i];
    a.macs = n.arithmetic.macs;
    a.exps = n.arithmetic.exps;
    a.vector_ops = n.arithmetic.others;
    a.sram_read_bytes = n.sram_read_bytes;
    a.sram_write_bytes = n.sram_write_bytes;
    a.hbm_read_bytes = n.offchip_read_bytes;
    a.hbm_write_bytes = n.offchip_write_bytes;
    a.hbm_requests = n.offchip_requests;
  }
  for (const ChannelResult& c : r.channels) {
    if (auto p = index.find(c.producer); p != index.end()) {
      actions[p->second].fifo_push_bytes += c.stats.bytes;
      actions[p->second].noc_byte_hops += c.stats.bytes;
    }
    if (auto q = index.find(c.consumer); q != index.end()) actions[q->second].fifo_pop_bytes += c.stats.bytes;
  }
  return actions;
}

std::vector<double> action_prices(const Technology& t) {
  std::vector<double> prices;
  for (const Actions::Doc& d : Actions::docs()) prices.push_back(d.price.empty() ? 0.0 : t.entry(d.price).value);
  return prices;
}

std::vector<double> action_energy_pj(const Actions& a, const std::vector<double>& prices) {
  const std::vector<uint64_t> counts = a.counts();
  std::vector<double> pj;
  for (size_t k = 0; k < counts.size(); ++k) pj.push_back(double(counts[k]) * prices[k]);
  return pj;
}

FabricUnits allocated_units(const SimResult& r, const HardwareParams& hw) {
  FabricUnits u;
  u.compute_units = r.compute_units;
  u.memory_units = r.memory_units;
  u.routers = u.compute_units + u.memory_units;
  const OpRegistry& reg = OpRegistry::instance();
  for (const NodeResult& n : r.nodes)
    if (reg.has(n.op) && reg.find(n.op).is_offchip()) ++u.address_generators;
  u.hbm_channels = hw.hbm.channels;
  return u;
}

FabricArea fabric_area(const FabricUnits& u, const Technology& t, const HardwareParams& hw) {
  FabricArea a;
  const double kib = double(hw.pmu_capacity) / 1024.0;
  a.compute_units = double(u.compute_units) * t.pcu_area.value;
  a.memory_units = double(u.memory_units) * (t.pmu_logic_area.value + kib * t.sram_area_kib.value);
  a.routers = double(u.routers) * t.router_area.value;
  a.address_generators = double(u.address_generators) * t.ag_area.value;
  a.hbm_phys = double(u.hbm_channels) * t.hbm_phy_area.value;
  return a;
}

double fabric_leakage_mw(const FabricUnits& u, const Technology& t) {
  return double(u.compute_units) * t.pcu_leak.value + double(u.memory_units) * t.pmu_leak.value +
         double(u.routers) * t.router_leak.value + double(u.address_generators) * t.ag_leak.value +
         double(u.hbm_channels) * t.hbm_phy_leak.value;
}

namespace {

json action_counts_json(const Actions& a) {
  json j = json::object();
  const std::vector<uint64_t> counts = a.counts();
  for (size_t k = 0; k < counts.size(); ++k) j[Actions::docs()[k].name] = counts[k];
  return j;
}

double sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

json area_json(const FabricUnits& u, const FabricArea& a, const Technology& t) {
  json j;
  j["technology"] = t.name;
  j["total_mm2"] = a.total();
  j["compute_units_mm2"] = a.compute_units;
  j["memory_units_mm2"] = a.memory_units;
  j["routers_mm2"] = a.routers;
  j["address_generators_mm2"] = a.address_generators;
  j["hbm_phys_mm2"] = a.hbm_phys;
  j["units"] = {{"compute_units", u.compute_units},
                {"memory_units", u.memory_units},
                {"routers", u.routers},
                {"address_generators", u.address_generators},
                {"hbm_channels", u.hbm_channels}};
  return j;
}

}  // namespace

void add_energy_report(json& report, const SimResult& r, const HardwareParams& hw, const Technology& t,
                       uint64_t tokens) {
  const std::vector<Actions> per_node = node_actions(r);
  const std::vector<double> prices = action_prices(t);
  json& nodes = report["nodes"];
  Actions total;
  uint64_t flops = 0;
  for (size_t i = 0; i < per_node.size(); ++i) {
    nodes[i]["actions"] = action_counts_json(per_node[i]);
    nodes[i]["energy_pj"] = sum(action_energy_pj(per_node[i], prices));
    total += per_node[i];
    flops += r.nodes[i].flops;
  }
  const FabricUnits units = allocated_units(r, hw);
  const double leakage_mw = fabric_leakage_mw(units, t);
  const std::vector<double> by_action = action_energy_pj(total, prices);
  const double dynamic_pj = sum(by_action);
  // 1 mW for 1 ns is 1 pJ: the run lasts cycles / clock_ghz ns.
  const double static_pj = leakage_mw * double(r.cycles) / hw.clock_ghz;
  const double total_pj = dynamic_pj + static_pj;
  json& e = report["energy"];
  e["technology"] = t.name;
  e["node_nm"] = t.node_nm;
  e["clock_ghz"] = hw.clock_ghz;
  e["total_pj"] = total_pj;
  e["dynamic_pj"] = dynamic_pj;
  e["static_pj"] = static_pj;
  e["leakage_mw"] = leakage_mw;
  e["by_action_pj"] = json::object();
  for (size_t k = 0; k < by_action.size(); ++k)
    if (!Actions::docs()[k].price.empty()) e["by_action_pj"][Actions::docs()[k].name] = by_action[k];
  e["actions"] = action_counts_json(total);
  // pJ per ns is mW: total_pj / (cycles / clock_ghz) mW = that / 1000 W.
  e["average_power_w"] = r.cycles ? json(total_pj * hw.clock_ghz / double(r.cycles) / 1000.0) : json(nullptr);
  e["pj_per_flop"] = flops ? json(total_pj / double(flops)) : json(nullptr);
  e["tokens"] = tokens ? json(tokens) : json(nullptr);
  e["pj_per_token"] = tokens ? json(total_pj / double(tokens)) : json(nullptr);
  report["area"] = area_json(units, fabric_area(units, t, hw), t);
}

}  // namespace stepsim
