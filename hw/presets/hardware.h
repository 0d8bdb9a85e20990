// Hardware parameters of the modelled fabric. Every timing constant the simulator uses is a
// named field here, loaded from a YAML preset (hw/presets/*.yaml) and overridable with
// `--set key=value`. Each is declared once, as one row of hardware_params.def (HBM's:
// hbm_params.def) with its key, type, default, unit, range, doc and origin; docs/presets.md lists
// them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "hw/presets/hbm_params.h"

namespace stepsim {

// Upper limits of the hardware parameters (HardwareParams::set rejects larger values). Far above
// any fabric, and small enough that the simulator's own structures (one per unit, channel or
// beat slot) stay within a host's memory.
constexpr uint64_t kMaxUnits = uint64_t(1) << 20;      // num_pcus, num_pmus
constexpr uint64_t kMaxFifoDepth = uint64_t(1) << 20;  // beats per channel
constexpr uint64_t kMaxHbmChannels = 4096;
constexpr uint64_t kMaxParDispatch = uint64_t(1) << 16;  // requests per cycle
constexpr uint64_t kMaxCycles = uint64_t(1) << 30;       // any latency or interval in cycles
constexpr uint64_t kMaxBandwidth = uint64_t(1) << 40;    // B/cycle, FLOPs/cycle, bytes

struct HardwareParams {
#define STEPSIM_PARAM(type, member, key, def, unit, codec, doc, origin) type member = def;
#include "hw/presets/hardware_params.def"
#undef STEPSIM_PARAM
  // A struct of its own (hw/memory takes HbmParams alone); its rows are hbm_params.def.
  HbmParams hbm;
  // The HBM device keys (hbm_device.h) set by name so far, from a preset file or --set: a device
  // (hbm.device) set before or after them leaves them as they are.
  std::set<std::string> explicit_device_keys;

  // Sets one field by its dotted name ("hbm.channels"); throws std::invalid_argument naming an
  // unknown key or a bad value. Setting hbm.device also sets the device keys not in
  // explicit_device_keys to its file's values; setting a device key adds it there. Every call then
  // derives hbm.dram_clock_ratio from clock_ghz and hbm.dram.tCK_ps.
  void set(const std::string& key, const std::string& value);
  // Dotted names of every field with its documentation, unit and origin, in the rows' order.
  struct FieldDoc {
    std::string key, unit, doc, origin;
    uint64_t min = 0, max = 0;  // allowed range of an integer field (0..0: not an integer)
  };
  static const std::vector<FieldDoc>& fields();
  static bool has_field(const std::string& key);      // a hardware parameter (not a graph one)
  std::map<std::string, std::string> to_map() const;  // dotted key -> value as text

  // Depth of an off-chip load's output channel: its tiles (tile_bytes each) wait for the consumer
  // in the load's memory unit, load_buffer_tiles of them as far as they fit; at least fifo_depth.
  // The approximate load and its unit's bridge use the same, so both runs see the same channel.
  uint32_t load_output_depth(uint64_t tile_bytes, uint32_t fifo_depth) const {
    if (!load_buffer_tiles) return fifo_depth;
    const uint64_t fit = tile_bytes ? pmu_capacity / tile_bytes : pmu_capacity;
    const uint64_t n = fit < load_buffer_tiles ? (fit ? fit : 1) : load_buffer_tiles;
    return n > fifo_depth ? uint32_t(n) : fifo_depth;
  }
};

// Loads a preset by name (from hw/presets/NAME.yaml) or by path to a YAML file.
HardwareParams load_preset(const std::string& name_or_path);
std::vector<std::string> preset_names();

// The names of the formulas of the reported on-chip requirement, sorted: the values of
// `onchip_requirement_model`. hw/fabric/onchip_requirement.cpp implements one model per name
// (and checks at start-up that it implements exactly these).
const std::vector<std::string>& onchip_requirement_models();

}  // namespace stepsim
