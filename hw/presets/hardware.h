// Hardware parameters of the modelled fabric. Every timing constant the simulator uses is a
// named field here, loaded from a YAML preset (hw/presets/*.yaml) and overridable with
// `--set key=value`. docs/timing-model.md lists each with its unit and origin.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
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
  std::string name = "step-artifact";
  double clock_ghz = 1.0;                          // for reporting wall-clock equivalents only
  uint64_t onchip_bw = 64;                         // B/cycle of one on-chip memory unit (PMU)
  uint64_t compute_bw = 4096;                      // default FLOPs/cycle allocated to a higher-order node
  uint64_t pcu_flops = 4096;                       // FLOPs/cycle of one compute unit (PCU)
  uint64_t pmu_capacity = 512 * 1024;              // bytes of one memory unit
  uint32_t num_pcus = 1024;                        // compute units on the fabric
  uint32_t num_pmus = 1024;                        // memory units on the fabric
  uint32_t fifo_depth = 2;                         // default channel depth (beats)
  uint32_t send_latency = 1;                       // cycles per channel hop
  uint32_t response_latency = 1;                   // cycles before a freed slot is reusable
  uint32_t shape_op_latency = 0;                   // Flatten/Reshape/Promote/Expand/Zip cycles per beat
  uint32_t routing_switch_cycles = 1;              // Partition/Reassemble cycles to switch output/input
  uint32_t par_dispatch = 1;                       // off-chip requests issued per cycle by one load/store
  bool loads_sum_inputs = true;                    // quirk: n-ary Map sums its memory-unit loads
  bool offchip_one_tile_in_flight = true;          // quirk: off-chip loads/stores do not overlap tiles
  uint32_t ag_load_pipeline_cycles = 0;            // a loaded tile's cycles from its last response to its consumer
  uint32_t ag_store_pipeline_cycles = 0;           // a store's cycles from its last acknowledgement to its end
  bool input_register = false;                     // ops take an input beat as a firing starts, not as it ends
  uint32_t ag_max_outstanding = 0;                 // requests one load/store keeps in flight (0: see hardware.cpp)
  uint32_t load_buffer_tiles = 0;                  // tiles a load's memory unit holds for its consumer (0: a FIFO)
  HbmParams hbm;                                   // the off-chip memory model (hw/memory)
  std::string hbm_mode = "fast";                   // fast (one transaction per tile) | request (per request)
  std::string onchip_requirement_model = "paper";  // one of onchip_requirement_models()

  // Sets one field by its dotted name ("hbm.channels"); throws std::invalid_argument naming an
  // unknown key or a bad value.
  void set(const std::string& key, const std::string& value);
  // Dotted names of every field with its documentation and unit.
  struct FieldDoc {
    std::string key, unit, doc;
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
