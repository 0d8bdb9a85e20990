// The `dram` HBM model (hbm.model: dram): channels of pseudo-channels, bank groups, banks, rows
// and columns, with the command timing of the standard, an FR-FCFS scheduler per pseudo-channel,
// open- or closed-page policy and all-bank refresh. Implements HbmModel (hw/memory/hbm_model.h:
// the calls, their units and contract); docs/hbm-dram.md describes it. Its code, by seam:
//   hbm_dram.cpp            parameters, address mapping, the interface calls, statistics
//   hbm_dram_bank.cpp       one pseudo-channel's command timing: PRE, ACT, RD/WR, REF
//   hbm_dram_scheduler.cpp  FR-FCFS: the decision of each pseudo-channel
//   hbm_dram_queue.*        the pending requests of a pseudo-channel, in arrival order
//
// Units: the DRAM runs on its own clock. The timings are parameters in DRAM clock cycles (tCK,
// as JEDEC and Ramulator 2 give them) and the model keeps its time in tCK; the interface's
// times are accelerator cycles, converted at the boundary with R = HbmParams::dram_clock_ratio
// (accelerator cycles per tCK: clock_ghz x hbm.dram.tCK_ps / 1000): a request reaching the controller at accelerator cycle c is
// there at tCK ceil(c / R); a command or data end at tCK k is seen at cycle ceil(k R). So the
// data bus moves exactly request_bytes per tBURST tCK whatever R (no per-parameter rounding).
// (1 GHz accelerator, HBM2 at 2 Gb/s per pin: tCK = 1 ns, R = 1, and both clocks coincide.)
//
// Request-level rules (times in tCK unless said; P = HbmParams):
//  * A request issued at cycle t reaches the controller at cycle a = t + link_latency. Its address
//    is cut into the fields of P.mapping_order (most significant first; Ro row, Ba bank, Ra
//    pseudo-channel, Co column, Ch channel) after dividing by request_bytes: one request is one
//    column access (RD or WR) of tBURST cycles on its pseudo-channel's data bus. Bank b is in
//    bank group b % bank_groups.
//  * Each pseudo-channel keeps its requests in arrival order (same-cycle order: initiator, then
//    call, then request index). The scheduler decides at D = max(arrival of the oldest pending
//    request, the cycle its data bus frees); the refreshes due by D happen first; the
//    candidates are the first queue_depth pending requests that arrived by D. It picks the
//    oldest row hit; without one, the candidate whose column command can issue first, the
//    oldest of those (first ready, as Ramulator 2's FR-FCFS prefers a request whose next
//    command is ready: a read to an idle bank does not wait behind one to a busy bank).
//    hbm.write_policy drain (Ramulator 2's generic controller): the candidates are the reads;
//    writes are drained (the candidates are the writes) from when the pending writes exceed
//    write_high_watermark x queue_depth, or no read is pending, until they fall below
//    write_low_watermark x queue_depth while a read is pending, or none is left. If no
//    candidate of the direction served has arrived, the oldest request is served.
//  * The chosen request's commands: PRE if another row is open, ACT if the bank is closed, then
//    RD or WR, each at the earliest cycle >= its arrival that the timing constraints allow
//    (tRCD, tRP, tRAS, tRC, tRRD_S/L, tFAW, tCCD_S/L, tBURST, tWTR_S/L, read-to-write, tRTP,
//    tWR, refresh). Row commands may therefore precede the column commands of requests chosen
//    before (bank parallelism); column commands follow the scheduling order. Closed page:
//    each access precharges its bank at the earliest legal cycle.
//  * Response: a read's data ends at RD + tCL + tBURST, a write's at WR + tCWL + tBURST; the
//    initiator sees it link_latency cycles after that tCK's cycle. An idle read costs link + tRCD + tCL + tBURST + link
//    = 20 cycles with the defaults (a row hit: 13; a row conflict: 27).
//  * Refresh (hbm.refresh): all_bank, every tREFI per pseudo-channel: at decision cycle D, each
//    refresh due by D precharges the open banks and blocks activates for tRFC after it.
//    per_bank: one bank every tREFI / banks, in turn (REFsb): that bank precharges and waits
//    tRFCsb; activates of the others wait tRREFD after it, refreshes tRREFD apart. Refreshes due
//    during idle time cost nothing more.
//
// Non-anticipation (the interface hands out results before the future is known): a request is
// scheduled when its result is asked for (serve_request, serve_burst, try_result) or when a
// request asked for needs the pseudo-channel's earlier decisions; the requests known then are
// the candidates. Requests issued later cannot overtake a request already scheduled, although
// FR-FCFS in a controller that saw them could have preferred them (a later row hit). Results
// are therefore exact for the model as stated, and deterministic (the calls decide them).
//
// Not modelled yet (docs/hbm-dram.md, "Status"): the one-command-per-cycle command bus, column
// commands issued out of picking order, a row-hit cap.
#pragma once

#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "hw/memory/hbm_dram_queue.h"
#include "hw/memory/hbm_model.h"
#include "hw/presets/hbm_params.h"

namespace stepsim {

// The DRAM timings in tCK (HbmParams' dram_t*), and the one derived from them.
struct DramTiming {
  uint64_t burst = 0, cl = 0, cwl = 0, rcd = 0, rp = 0, ras = 0, rc = 0, wr = 0, rtp = 0;
  uint64_t ccd_s = 0, ccd_l = 0, rrd_s = 0, rrd_l = 0, wtr_s = 0, wtr_l = 0, faw = 0, rfc = 0, refi = 0;
  uint64_t rfcsb = 0, rrefd = 0;
  // Read command to write command: tCL + tBURST + 2 tCK (bus turnaround) - tCWL, as Ramulator 2
  // times HBM2 (JESD235: the read data, then the bus turns, then the write data).
  uint64_t rtw = 0;
  static DramTiming from(const HbmParams& p);
};

// Where a request lands.
struct DramAddress {
  uint32_t channel = 0;
  uint32_t pseudo_channel = 0;  // within the channel
  uint32_t bank = 0;            // within the pseudo-channel (bank group = bank % bank_groups)
  uint32_t row = 0;
  uint32_t column = 0;  // request index within the row
};

class HbmDram final : public HbmModel {
 public:
  // Throws std::invalid_argument for parameters the model cannot use (see validate_dram).
  explicit HbmDram(const HbmParams& params = HbmParams());

  const HbmParams& params() const override { return p_; }
  // No uncontended regime: every request meets the banks. Throws std::logic_error once
  // requests were served.
  bool set_arrival_bound(uint64_t window_arrivals) override;
  bool uncontended() const override { return false; }

  Completion serve_request(uint64_t addr, bool write, uint64_t issue_cycle, uint32_t initiator) override;
  // issue_burst + try_result at once.
  BurstResult serve_burst(const Burst& burst) override;
  uint64_t issue_burst(const Burst& burst, BurstResult* info) override;
  bool try_result(uint64_t handle, uint64_t watermark, BurstResult* out) override;

  uint64_t last_issue_cycle() const override { return last_issue_; }
  uint32_t last_issue_initiator() const override { return last_initiator_; }
  const HbmStats& stats() const override;

  // What the banks and the controller did so far (refresh stalls in tCK until stats()).
  const HbmDramStats& dram_stats() const { return dram_stats_; }
  // The DRAM timings, in tCK.
  const DramTiming& timing() const { return t_; }
  // Accelerator cycle c on the DRAM clock (the first tCK at or after it), and back.
  uint64_t to_tck(uint64_t cycle) const;
  uint64_t to_cycle(uint64_t tck) const;
  // The fields of a byte address under hbm.mapping_order.
  DramAddress decode(uint64_t addr) const;

 private:
  struct Bank {
    bool open = false;
    uint32_t row = 0;
    uint64_t act_ok = 0;  // earliest ACT (tRC, tRP, refresh)
    uint64_t pre_ok = 0;  // earliest PRE (tRAS, tRTP, tWR)
    uint64_t col_ok = 0;  // earliest RD/WR (tRCD)
    uint64_t refresh_end = 0;  // per-bank refresh: activates wait until then (tRFCsb)
  };
  struct PseudoChannel {
    std::vector<Bank> banks;
    std::vector<uint64_t> group_act_ok, group_rd_ok, group_wr_ok;  // tRRD_L, tCCD_L, tWTR_L
    uint64_t act_ok = 0, rd_ok = 0, wr_ok = 0;                      // tRRD_S, tCCD_S/tBURST, turnarounds
    std::array<uint64_t, 4> last_acts{};  // the last four ACTs (tFAW), a ring
    uint64_t acts = 0;                    // ACTs issued (position in the ring)
    uint64_t data_free = 0;               // the data bus frees (scheduler decision cycle)
    uint64_t next_refresh = 0;            // due cycle of the next refresh (UINT64_MAX: none)
    uint64_t refresh_end = 0;             // activates wait for the last all-bank refresh until then
    uint32_t refresh_bank = 0;            // per-bank refresh: the bank refreshed next
    uint64_t act_after_refresh = 0;       // per-bank refresh: the last one's start + tRREFD
    bool write_mode = false;              // write_policy drain: draining writes
    DramQueue queue;  // the pending requests (hbm_dram_queue.h)
  };
  // The commands of one request, each at its earliest legal cycle (kNone: not needed).
  struct Commands {
    static constexpr uint64_t kNone = UINT64_MAX;
    uint64_t pre = kNone, act = kNone, col = 0;
    uint64_t refresh_wait = 0;  // how much later the ACT is because of a refresh
  };
  // The cycles of one scheduled request.
  struct Timed {
    uint64_t first_command = 0;
    uint64_t data_end = 0;
  };
  // A call's requests: how many are still pending, per pseudo-channel, and the result so far.
  struct Owner {
    BurstResult result;
    uint64_t left = 0;
    uint32_t initiator = 0;
    std::vector<uint32_t> pcs;   // pseudo-channels holding its requests (no repeats)
    std::vector<uint64_t> left_in;  // its requests still pending in pcs[i]
    Completion first;           // serve_request: the request's cycles
  };

  // hbm_dram.cpp
  void note_call(uint64_t issue_cycle, uint32_t initiator);
  uint64_t enqueue(const Burst& b, BurstResult* info);
  void settle(uint64_t handle);  // schedules every pending request of the call
  void account_served(const DramRequest& r, uint32_t pc, const Timed& t);
  uint32_t pc_index(const DramAddress& a) const { return a.channel * p_.dram_pseudo_channels + a.pseudo_channel; }

  // hbm_dram_scheduler.cpp
  // Decides one request of pseudo-channel pc (FR-FCFS), times it and accounts it; returns
  // the handle of its call.
  uint64_t decide_one(uint32_t pc);
  void note_queue(uint64_t pending);  // the queue occupancy a decision saw
  // write_policy drain: whether the pseudo-channel serves writes now (the watermarks).
  bool serve_writes(PseudoChannel& pc);

  // hbm_dram_bank.cpp
  // The request's commands given the pseudo-channel's state (nothing changes).
  Commands plan(const PseudoChannel& pc, const DramRequest& r) const;
  // No request that is not a row hit can have its column command before this cycle.
  uint64_t ready_floor(const PseudoChannel& pc) const;
  // Issues the request's commands: the state and the statistics change.
  Timed time_request(PseudoChannel& pc, const DramRequest& r);
  void refresh_due(PseudoChannel& pc, uint64_t cycle);
  void refresh_at(PseudoChannel& pc, uint64_t due);
  void refresh_banks_due(PseudoChannel& pc, uint64_t cycle);  // per_bank
  void refresh_bank_at(PseudoChannel& pc, uint64_t due);
  void activate(PseudoChannel& pc, uint32_t bank, uint32_t row, uint64_t cycle);
  void precharge(Bank& b, uint64_t cycle);
  void column(PseudoChannel& pc, uint32_t bank, bool write, uint64_t cycle);
  // The earliest ACT from `from`, with or without the refresh in progress.
  uint64_t earliest_act(const PseudoChannel& pc, uint32_t bank, uint64_t from, bool refresh = true) const;
  uint64_t earliest_column(const PseudoChannel& pc, uint32_t bank, bool write, uint64_t from) const;
  uint32_t group_of(uint32_t bank) const { return bank % p_.dram_bank_groups; }

  HbmParams p_;
  DramTiming t_;
  std::array<uint8_t, 5> fields_{};  // field ids least significant first (see decode)
  std::array<uint64_t, 5> sizes_{};  // the size of each field id
  std::array<uint8_t, 5> shifts_{};  // log2 of each size, rounded up
  bool power_of_two_fields_ = false;
  bool closed_page_ = false;
  bool per_bank_refresh_ = false;
  bool drain_writes_ = false;  // hbm.write_policy: drain
  uint64_t refresh_interval_ = 0;  // tCK between refresh commands (0: none)
  bool same_clock_ = false;  // dram_clock_ratio 1: no conversion
  std::vector<uint64_t> ready_seen_;  // decide_one's scratch: per bank and direction, the scan
  uint64_t ready_scan_ = 0;           // that last planned one of its requests
  std::vector<int32_t> slot_of_;  // enqueue's scratch: pseudo-channel -> slot in the owner (-1: none)
  std::vector<PseudoChannel> pcs_;
  std::unordered_map<uint64_t, Owner> owners_;
  uint64_t next_handle_ = 1;
  uint64_t last_issue_ = 0;
  uint32_t last_initiator_ = 0;
  mutable HbmStats stats_;                   // busy cycles converted at stats()
  std::vector<uint64_t> busy_tck_per_channel_;
  HbmDramStats dram_stats_;
};

}  // namespace stepsim
