// Parameters of the off-chip (HBM) memory model.
//
// The model is the reference simulator's HBM node (step-perf `src/ramulator/hbm_context.rs`,
// see shared/spec/reference-simulator-notes.md §2.4) written down as closed-form timing rules
// over explicit cycle timestamps; docs in hw/memory/hbm_timing.h. The defaults are the
// paper's / reference's setting `HBMConfig(64, 32, 2, 2, 1, 14)` with the reference quirk on:
// 32 channels x 64 B every 2 cycles = 1024 B/cycle peak, 18-cycle idle round trip.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

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

struct HbmParams {
  uint32_t channels = 32;       // independent channels
  uint32_t request_bytes = 64;  // bytes per request (reference `addr_offset`)
  uint32_t init_interval = 2;   // cycles: a channel accepts one request every II cycles
  uint32_t latency = 2;         // cycles from service start to response (every request)
  uint32_t startup = 14;        // extra cycles paid by a "cold" request (see below)
  // true  = reference quirk: every request pays startup + latency.
  // false = only a cold request pays startup: the channel's first request ever, or a request
  //         that reaches the channel more than `cold_after` cycles after the channel's
  //         previous service slot ended (arrival > free + cold_after). Startup adds latency
  //         to that request only; it does not occupy the channel (responses of one channel
  //         may therefore complete out of order, as a row miss behind a row hit would).
  bool startup_every_request = true;
  // Only used when startup_every_request == false. 0 = any gap in a channel's schedule makes
  // it cold; UINT64_MAX = only a channel's first request ever pays (the reference's evident
  // intent before the quirk).
  uint64_t cold_after = 0;
  uint32_t link_latency = 1;  // cycles initiator -> HBM, and again HBM -> initiator
  HbmMapping mapping = HbmMapping::RoundRobin;

  static constexpr uint64_t kNeverCold = std::numeric_limits<uint64_t>::max();

  // channels * request_bytes / init_interval (1024 B/cycle for the defaults).
  double peak_bytes_per_cycle() const { return double(channels) * request_bytes / double(init_interval); }
  // Round trip of one request to an idle (cold) channel:
  // link_latency + startup + latency + link_latency (18 cycles for the defaults).
  uint64_t idle_latency() const { return 2ull * link_latency + startup + latency; }
  // Throws std::invalid_argument if channels, request_bytes or init_interval is 0.
  void validate() const;
  // One-line description for logs and reports.
  std::string describe() const;
};

}  // namespace stepsim
