// The HBM model's interface: the calls the off-chip path (hw/memory/offchip.*) and the TLM-2.0
// target (hw/memory/hbm_target.*) make on a timing model of the off-chip memory, and the
// registry of the implementations by name (the preset key hbm.model).
//
// Units: every time is a cycle of the accelerator's clock (an explicit timestamp, no SystemC
// time); every size is a byte. A memory is cut into HbmParams::request_bytes requests: a tile
// of rows x row_bytes costs rows x ceil(row_bytes / request_bytes) requests, and traffic is
// counted in whole requests (requests x request_bytes bytes).
//
// Contract of every model:
//  * Time order: calls arrive in non-decreasing (issue cycle, initiator) order (a burst
//    counts with the issue cycle of its first request; try_result's watermark counts as a
//    call). The simulator serialises its initiators to guarantee it.
//  * Same-cycle order: requests reaching the memory in the same cycle are taken initiator by
//    initiator (Burst::initiator, lower first), then in call order, then by request index.
//  * Determinism: the same calls give the same cycles, whatever the host.
//
// Implementations (make_hbm_model, hbm_model_registry):
//   fixed - hw/memory/hbm_fixed.h: channels with a fixed latency and initiation interval
//           (the reference simulator's HBM node), tiles timed in closed form.
//   dram  - hw/memory/hbm_dram.h: channels, pseudo-channels, bank groups, banks and rows with
//           the standard's command timing, refresh and an FR-FCFS scheduler (docs/hbm-dram.md).
// docs/architecture.md, "The HBM model: interface and registry", says how to add one.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw/presets/hbm_params.h"

namespace stepsim {

// Result of one request.
struct Completion {
  uint64_t issue_cycle = 0;       // as given by the caller
  uint64_t start_cycle = 0;       // service start at the channel
  uint64_t completion_cycle = 0;  // response visible at the initiator
  uint32_t channel = 0;
  bool paid_startup = false;
};

// One tile transfer (a strided 2-D block).
struct Burst {
  uint64_t base = 0;  // byte address of row 0
  uint32_t rows = 1;
  uint64_t row_bytes = 0;  // bytes used per row
  uint64_t row_pitch = 0;  // bytes between row starts (full tensor row); 0 means row_bytes
  bool write = false;
  uint64_t issue_cycle = 0;   // cycle the first request is issued
  uint32_t par_dispatch = 1;  // requests issued per cycle (0 is treated as 1)
  // Same-cycle order: requests reaching the memory in the same cycle are taken initiator by
  // initiator (lower first), then in call order (see the header comment). 0 for all
  // bursts = call order.
  uint32_t initiator = 0;

  uint64_t pitch() const { return row_pitch ? row_pitch : row_bytes; }
  uint32_t dispatch() const { return par_dispatch ? par_dispatch : 1; }
  uint64_t requests_per_row(uint32_t request_bytes) const { return (row_bytes + request_bytes - 1) / request_bytes; }
  uint64_t requests(uint32_t request_bytes) const { return uint64_t(rows) * requests_per_row(request_bytes); }
  // Address of request q of row r.
  uint64_t request_addr(uint64_t r, uint64_t q, uint32_t request_bytes) const {
    return base + r * pitch() + q * request_bytes;
  }
  // Issue cycle of the j-th request (row-major).
  uint64_t request_issue_cycle(uint64_t j) const { return issue_cycle + j / dispatch(); }
};

struct BurstResult {
  uint64_t completion_cycle = 0;  // last response visible at the initiator (= issue_cycle if empty)
  uint64_t requests = 0;
  uint64_t bytes = 0;             // requests * request_bytes
  uint64_t last_issue_cycle = 0;  // cycle the last request was issued (= issue_cycle if empty)
};

// What a model with banks and a controller observed (hbm.model: dram).
struct HbmDramStats {
  uint64_t row_hits = 0;       // the bank had the request's row open
  uint64_t row_misses = 0;     // the bank was closed: ACT
  uint64_t row_conflicts = 0;  // another row was open: PRE + ACT
  uint64_t activates = 0;
  uint64_t refreshes = 0;             // refresh commands, summed over pseudo-channels
  uint64_t refresh_stall_cycles = 0;  // cycles activates waited for a refresh to end, summed
  uint32_t queue_depth = 0;           // the controller's window (hbm.dram.queue_depth)
  uint64_t decisions = 0;             // scheduling decisions (one per request served)
  uint64_t queued_sum = 0;            // sum over decisions of min(pending, queue_depth)
  uint64_t queue_full_decisions = 0;  // decisions with pending >= queue_depth
  uint64_t max_pending = 0;           // most requests pending on one pseudo-channel at a decision

  uint64_t requests() const { return row_hits + row_misses + row_conflicts; }
  // Shares of the requests served; 0 if none.
  double row_hit_rate() const { return requests() ? double(row_hits) / double(requests()) : 0.0; }
  double row_opening_rate() const { return requests() ? 1.0 - row_hit_rate() : 0.0; }
  double mean_queue_occupancy() const { return decisions ? double(queued_sum) / double(decisions) : 0.0; }
};

struct HbmStats {
  uint64_t bytes_read = 0;  // requests * request_bytes
  uint64_t bytes_written = 0;
  uint64_t read_requests = 0;
  uint64_t write_requests = 0;
  uint64_t startup_paid = 0;  // requests that paid the startup latency
  std::vector<uint64_t> requests_per_channel;
  std::vector<uint64_t> busy_cycles_per_channel;  // cycles a channel was occupied by its requests
  uint64_t first_issue_cycle = UINT64_MAX;        // earliest issue seen (UINT64_MAX: none)
  uint64_t last_completion_cycle = 0;             // latest completion handed out
  std::optional<HbmDramStats> dram;               // a model with banks: what they did

  uint64_t requests() const { return read_requests + write_requests; }
  uint64_t bytes() const { return bytes_read + bytes_written; }
  uint64_t busy_cycles() const;  // summed over channels
  // bytes / (last_completion - first_issue); 0 if nothing was served.
  double achieved_bytes_per_cycle() const;
};

class HbmModel {
 public:
  virtual ~HbmModel() = default;

  // The parameters the model was made with.
  virtual const HbmParams& params() const = 0;

  // Uncontended operation, decided once before any request (OffChipMemory at the end of
  // elaboration). `window_arrivals` bounds the requests that reach the memory in any
  // init_interval consecutive cycles, all initiators together (the callers promise it).
  // Returns whether the model can then time every burst on its own, in any call order, with
  // serve_burst alone (no turns); while that is on, the other calls may throw
  // std::logic_error. A model without such a regime returns false. Throws std::logic_error
  // after requests were served.
  virtual bool set_arrival_bound(uint64_t window_arrivals) = 0;
  virtual bool uncontended() const = 0;

  // Request path: one request of request_bytes at byte address addr, issued at issue_cycle
  // by `initiator` (the same-cycle order). Returns its cycles (completion_cycle: the
  // response visible at the initiator).
  virtual Completion serve_request(uint64_t addr, bool write, uint64_t issue_cycle, uint32_t initiator) = 0;

  // Tile path, immediate: the burst's requests issued from burst.issue_cycle, par_dispatch
  // per cycle, row-major. The result cannot count bursts issued after it (it may be
  // approximate under contention, see the model); exact on an uncontended memory.
  virtual BurstResult serve_burst(const Burst& burst) = 0;

  // Tile path, deferred (exact): issue_burst registers the burst at its issue cycle and
  // returns a handle (*info, optional: requests, bytes, last_issue_cycle; completion =
  // issue cycle). try_result(handle, watermark) gives its final result once the watermark
  // has reached the burst's last issue cycle L, counting every burst issued since; false
  // (no effect) while watermark < L. The caller promises that no later call is issued
  // before cycle `watermark` and, if it equals L, that no later call at L comes from an
  // initiator ordered before the burst's. Each handle's result is taken once.
  virtual uint64_t issue_burst(const Burst& burst, BurstResult* info) = 0;
  virtual bool try_result(uint64_t handle, uint64_t watermark, BurstResult* out) = 0;

  // The time-order watermark: issue cycle of the latest call, and its initiator (the TLM
  // target issues a transaction without timing extension there).
  virtual uint64_t last_issue_cycle() const = 0;
  virtual uint32_t last_issue_initiator() const = 0;

  // Traffic and channel statistics so far (the reference stays valid; a model may fill
  // parts of it in at this call).
  virtual const HbmStats& stats() const = 0;
};

// One implementation of the registry: its name (the value of hbm.model), a one-line summary
// and its factory.
struct HbmModelEntry {
  const char* name;
  const char* summary;
  std::unique_ptr<HbmModel> (*make)(const HbmParams& params);
};

// Every implementation, in the order the docs list them.
const std::vector<HbmModelEntry>& hbm_model_registry();
// The names of hbm_model_registry(), comma-separated ("fixed").
std::string hbm_model_names();
// A new model `name` with `params` (validated). Throws std::invalid_argument for an unknown
// name, listing the known ones, or for invalid parameters.
std::unique_ptr<HbmModel> make_hbm_model(const std::string& name, const HbmParams& params);

}  // namespace stepsim
