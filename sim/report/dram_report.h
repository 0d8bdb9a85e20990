// What the banks and the controller of a DRAM-level HBM did in a run (hbm.model: dram;
// docs/hbm-dram.md, "In the report"): the JSON section `offchip.dram`, its summary lines and the
// row-miss part of the bottleneck. Runs with the fixed-latency model have none of it, so their
// reports stay as they were.
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "hw/presets/hardware.h"
#include "sim/engine/simulation.h"

namespace stepsim {

// Requests that open a row (misses and conflicts) at or above this share make the off-chip
// bottleneck "off-chip row misses": the rows, not the channels' data buses, set the rate.
inline constexpr double kRowMissBottleneckShare = 0.5;

// Adds `offchip.dram` to the report when r.offchip_dram is set.
void add_dram_report(nlohmann::json& j, const SimResult& r, const HardwareParams& hw);
// The summary lines of `offchip.dram`, if the report has it.
void print_dram_summary(const nlohmann::json& j, std::ostream& out);
// Whether the off-chip requests of `r` are row-miss bound (kRowMissBottleneckShare).
bool row_miss_bound(const SimResult& r);
// "off-chip row misses: 62.5 % of the requests opened a row (hbm.mapping_order=..., ...)".
std::string row_miss_text(const SimResult& r, const HardwareParams& hw);

}  // namespace stepsim
