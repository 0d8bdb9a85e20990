// Parameters of the off-chip (HBM) memory model.
//
// The model is the reference simulator's HBM node (step-perf `src/ramulator/hbm_context.rs`,
// see shared/spec/reference-simulator-notes.md §2.4) written down as closed-form timing rules
// over explicit cycle timestamps; docs in hw/memory/hbm_fixed.h (the interface: hbm_model.h). The parameters are declared
// one row each in hbm_params.def; their defaults are the paper's / reference's setting
// `HBMConfig(64, 32, 2, 2, 1, 14)` with the reference quirk on: 32 channels x 64 B every 2
// cycles = 1024 B/cycle peak, 18-cycle idle round trip.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "hw/presets/param_kinds.h"

namespace stepsim {

// How a request's channel is chosen.
enum class HbmMapping : uint8_t {
  // The reference: a global counter advances by one channel per request, in the order the
  // requests reach the memory (addresses are ignored). The reference's HBMContext uses
  // triangular offsets within a cycle; for power-of-two channel counts both schemes give a
  // bundle of <= channels requests distinct channels, which is what matters for timing.
  RoundRobin,
  // channel = (addr / request_bytes) % channels.
  AddressInterleave,
};

const char* hbm_mapping_name(HbmMapping m);
// "round_robin" | "address_interleave"; throws std::invalid_argument naming the bad value.
HbmMapping parse_hbm_mapping(const std::string& s);

// The checks of the dram model's text rows (hbm_params.def); each throws std::invalid_argument
// saying what it expected. A mapping order names the fields Ro, Ba, Ra, Co and Ch once each,
// most significant first ("RoBaRaCoCh"); a page policy is "open" or "closed".
void check_hbm_mapping_order(const std::string& order);
void check_hbm_page_policy(const std::string& policy);
void check_hbm_refresh(const std::string& refresh);
void check_hbm_write_policy(const std::string& policy);

struct HbmParams {
#define STEPSIM_PARAM(type, member, key, def, unit, codec, doc, origin) type member = def;
#include "hw/presets/hbm_params.def"
#undef STEPSIM_PARAM
  // Not a preset parameter (no preset varies it; the tests of hw/memory do): how long a channel
  // stays warm when startup_every_request is false. 0 = any gap in a channel's schedule makes it
  // cold; kNeverCold = only a channel's first request ever pays (the reference's evident intent
  // before the quirk).
  uint64_t cold_after = 0;

  static constexpr uint64_t kNeverCold = std::numeric_limits<uint64_t>::max();

  // Not a preset parameter either: accelerator cycles per DRAM clock cycle (tCK), by which the dram
  // model scales the hbm.dram.t* timings. HardwareParams derives it from clock_ghz and
  // hbm.dram.tCK_ps whenever a parameter is set (set_accelerator_clock); an HbmParams built on its
  // own keeps 1.0, a 1 GHz accelerator on the default device's 1000-ps tCK.
  double dram_clock_ratio = 1.0;
  // dram_clock_ratio = clock_ghz x dram_tCK_ps / 1000 (GHz x ps = 1/1000).
  void set_accelerator_clock(double clock_ghz) { dram_clock_ratio = clock_ghz * dram_tCK_ps / 1000.0; }

  // channels * request_bytes / init_interval (1024 B/cycle for the defaults).
  // Peak off-chip bandwidth in B per accelerator cycle: fixed, a request per init_interval per
  // channel; dram, a request per tBURST tCK per pseudo-channel.
  double peak_bytes_per_cycle() const;
  // Round trip of one request to an idle (cold) channel:
  // link_latency + startup + latency + link_latency (18 cycles for the defaults).
  uint64_t idle_latency() const { return 2ull * link_latency + startup + latency; }
  // Throws std::invalid_argument if channels, request_bytes or init_interval is 0.
  void validate() const;
  // One-line description for logs and reports.
  std::string describe() const;
};

}  // namespace stepsim
