// Energy and area of a run (docs/energy.md): the actions each node did (actions.def), priced by a
// technology table (hw/presets/tech.h), plus the leakage of the allocated fabric over the run's
// time; and the area of that fabric. make_report writes them into the JSON report (nodes[].actions,
// nodes[].energy_pj, energy, area); the metric table reads them from there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hw/presets/hardware.h"
#include "hw/presets/tech.h"
#include "sim/engine/simulation.h"

namespace stepsim {

// One node's (or a run's) actions, one member per row of actions.def.
struct Actions {
#define STEPSIM_ACTION(member, name, unit, price, doc) uint64_t member = 0;
#include "sim/report/actions.def"
#undef STEPSIM_ACTION

  struct Doc {
    std::string name, unit, price, doc;  // price: "section.key" of a technology entry, or ""
  };
  static const std::vector<Doc>& docs();  // the rows, in actions.def's order
  std::vector<uint64_t> counts() const;   // the members, in docs()' order
  Actions& operator+=(const Actions& a);
};

// The actions of each node of `r`, in r.nodes' order (energy.cpp says where each count comes from).
std::vector<Actions> node_actions(const SimResult& r);

// The price of each action in pJ per unit, in Actions::docs()' order (0 where unpriced): the
// technology's entries looked up once per report, not once per node.
std::vector<double> action_prices(const Technology& t);
// Dynamic energy of the actions by kind, in pJ, in Actions::docs()' order.
std::vector<double> action_energy_pj(const Actions& a, const std::vector<double>& prices);

// The units of the fabric a run allocated, which take area and leak.
struct FabricUnits {
  uint64_t compute_units = 0, memory_units = 0;
  uint64_t routers = 0;             // one per allocated compute or memory unit (its switch)
  uint64_t address_generators = 0;  // one per off-chip load or store node
  uint64_t hbm_channels = 0;        // the preset's hbm.channels, each with its PHY share
};
FabricUnits allocated_units(const SimResult& r, const HardwareParams& hw);

// Area in mm2 of each kind of unit of `u`, and their sum.
struct FabricArea {
  double compute_units = 0, memory_units = 0, routers = 0, address_generators = 0, hbm_phys = 0;
  double total() const { return compute_units + memory_units + routers + address_generators + hbm_phys; }
};
FabricArea fabric_area(const FabricUnits& u, const Technology& t, const HardwareParams& hw);
// Leakage of `u` in mW.
double fabric_leakage_mw(const FabricUnits& u, const Technology& t);

// Adds nodes[].actions, nodes[].energy_pj and the sections `energy` and `area` to a run's JSON
// report (its nodes[] in r.nodes' order). `tokens`: the tokens the graph processes (Graph::tokens),
// 0 when not known (energy.pj_per_token is then null).
void add_energy_report(nlohmann::json& report, const SimResult& r, const HardwareParams& hw, const Technology& t,
                       uint64_t tokens);

}  // namespace stepsim
