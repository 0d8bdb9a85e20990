// Initiator-side helpers for the HBM TLM target (used by off-chip load/store address
// generators). They fill a generic payload + HbmBurstExtension (one pair per thread, reused
// from call to call: no allocation per transaction), call b_transport and return the
// completion in cycles.
//
//   Fast    : one transaction for the whole tile (target runs HbmModel::serve_burst:
//             immediate, later bursts cannot delay it).
//   Request : one transaction per request_bytes request, in row-major order, request j
//             stamped issue_cycle + floor(j / par_dispatch) (target runs serve_request).
//   Deferred fast (hbm_issue + hbm_result): one transaction to issue the tile, one (or
//             more) to take its result once the caller's watermark allows; equals the
//             request level exactly (HbmModel::issue_burst / try_result).
// Both modes give the same timing for a tile served alone; with several initiators the
// request mode interleaves their requests only if the caller interleaves the calls (use
// hbm_request directly for that). `data` (may be null = timing only) holds the tile packed
// row after row, rows*row_bytes bytes; reads fill it, writes take it. A TLM error response
// throws std::runtime_error.
#pragma once

#include <systemc>
#include <tlm>

#include "hw/memory/hbm_model.h"
#include "hw/memory/hbm_target.h"

namespace stepsim {

enum class HbmAccessMode : uint8_t { Fast, Request };
const char* hbm_access_mode_name(HbmAccessMode m);
// "fast" | "request"; throws std::invalid_argument naming the bad value.
HbmAccessMode parse_hbm_access_mode(const std::string& s);

// One tile transfer. request_bytes must match the target's HbmParams::request_bytes.
BurstResult hbm_transfer(tlm::tlm_fw_transport_if<>& fw, const Burst& burst, HbmAccessMode mode, uint32_t request_bytes,
                         uint8_t* data = nullptr);

// One request-level transaction (len <= request_bytes data bytes at addr, or timing only).
// Returns the completion cycle. `initiator`: same-cycle order against pending bursts.
uint64_t hbm_request(tlm::tlm_fw_transport_if<>& fw, uint64_t addr, bool write, uint64_t issue_cycle,
                     uint8_t* data = nullptr, uint32_t len = 0, uint32_t initiator = 0);

// Deferred fast mode. hbm_issue moves the data (if any) and registers the tile at
// burst.issue_cycle; returns the handle (and, in *info, requests / bytes /
// last_issue_cycle; completion_cycle = issue cycle). hbm_result takes the result once
// `watermark` allows it (HbmModel::try_result): true and *out filled, or false (call again
// with a later watermark). Typical use in a turn-ordered simulator: issue at the client's
// turn at cycle t; advance the client to the tile's last issue cycle L; wait for the turn
// at L (no client can issue before (L, this client) any more); hbm_result(h, L) with
// burst.initiator = the client's turn index.
uint64_t hbm_issue(tlm::tlm_fw_transport_if<>& fw, const Burst& burst, uint32_t request_bytes, uint8_t* data = nullptr,
                   BurstResult* info = nullptr);
bool hbm_result(tlm::tlm_fw_transport_if<>& fw, uint64_t handle, uint64_t watermark, uint32_t request_bytes,
                BurstResult* out);

// The tile transactions of fast mode through one generic payload and extension, set up once
// and reused for every transaction: issue() and result() are those of hbm_issue / hbm_result,
// serve() that of hbm_transfer in fast mode (HbmModel::serve_burst: the target's result at
// once, exact when the memory is uncontended, HbmModel::set_arrival_bound); same fields in,
// same fields out, without preparing a payload per call. For one caller whose calls never
// overlap (the HbmTarget never waits inside b_transport).
class HbmTilePort {
 public:
  explicit HbmTilePort(uint32_t request_bytes);
  ~HbmTilePort();
  HbmTilePort(const HbmTilePort&) = delete;
  HbmTilePort& operator=(const HbmTilePort&) = delete;

  uint64_t issue(tlm::tlm_fw_transport_if<>& fw, const Burst& burst, uint8_t* data, BurstResult* info);
  bool result(tlm::tlm_fw_transport_if<>& fw, uint64_t handle, uint64_t watermark, BurstResult* out);
  BurstResult serve(tlm::tlm_fw_transport_if<>& fw, const Burst& burst, uint8_t* data);

 private:
  void prepare(const Burst& burst, uint8_t* data);
  void send(tlm::tlm_fw_transport_if<>& fw);
  tlm::tlm_generic_payload gp_;
  HbmBurstExtension ext_;
  uint32_t request_bytes_;
};

// Convenience wrapper around an initiator socket (bound to an HbmTarget's socket).
class HbmInitiator {
 public:
  HbmInitiator(tlm::tlm_initiator_socket<>& socket, HbmAccessMode mode, uint32_t request_bytes = 64,
               sc_core::sc_time clock_period = sc_core::sc_time(1, sc_core::SC_NS))
      : socket_(socket), mode_(mode), request_bytes_(request_bytes), period_(clock_period) {}

  HbmAccessMode mode() const { return mode_; }
  void set_mode(HbmAccessMode m) { mode_ = m; }

  // If delay is given, adds (completion - issue_cycle) * clock_period to it (in both modes).
  BurstResult transfer(const Burst& burst, uint8_t* data = nullptr, sc_core::sc_time* delay = nullptr);
  uint64_t request(uint64_t addr, bool write, uint64_t issue_cycle, uint8_t* data = nullptr, uint32_t len = 0) {
    return hbm_request(*socket_.operator->(), addr, write, issue_cycle, data, len);
  }
  // Deferred fast mode (see hbm_issue / hbm_result).
  uint64_t issue(const Burst& burst, uint8_t* data = nullptr, BurstResult* info = nullptr) {
    return hbm_issue(*socket_.operator->(), burst, request_bytes_, data, info);
  }
  bool result(uint64_t handle, uint64_t watermark, BurstResult* out) {
    return hbm_result(*socket_.operator->(), handle, watermark, request_bytes_, out);
  }

 private:
  tlm::tlm_initiator_socket<>& socket_;
  HbmAccessMode mode_;
  uint32_t request_bytes_;
  sc_core::sc_time period_;
};

}  // namespace stepsim
