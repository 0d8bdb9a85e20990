// The `fixed` HBM model (hbm.model: fixed): channels with a fixed latency and initiation
// interval over explicit cycle timestamps (no SystemC time, no events), the reference
// simulator's HBM node. Implements HbmModel (hw/memory/hbm_model.h: the calls, their units
// and contract). Its code, by seam:
//   hbm_fixed.cpp             state, statistics, time order, the pending bursts (fold / evaluate)
//   hbm_fixed_request.cpp     the request path (serve_request)
//   hbm_fixed_tile.cpp        the tile path (serve_burst, issue_burst / try_result, uncontended)
//   hbm_fixed_channel.cpp     one channel's FIFO: a burst's run in closed form, the merge of
//                             bursts on a channel (AddressInterleave)
//   hbm_fixed_round_robin.cpp the merge of bursts under RoundRobin, window by window
//
// Request-level rules (P = HbmParams; all times in cycles):
//   A request issued by an initiator at cycle t reaches the memory at   a = t + link_latency.
//   FIFO order of the memory: by arrival cycle; requests arriving in the same cycle by
//   initiator (Burst::initiator / serve_request's initiator; lower first), then by call
//   (a burst's requests count as issued by its issue_burst/serve_burst call), then by
//   request index. With every initiator 0 (the default) that is plain call order.
//   Its channel c: RoundRobin = the global request counter (requests in FIFO order) mod
//   channels, i.e. concurrent bursts' requests are dealt interleaved, cycle by cycle, as
//   they reach the memory; AddressInterleave = (addr / request_bytes) % channels.
//   Each channel serves its requests in that FIFO order, one per II:
//     s = max(a, free[c]);  free[c] = s + II.
//   Response leaves the channel at   r = s + latency + (pays_startup ? startup : 0)
//     pays_startup = startup_every_request                      (reference quirk)
//                 || channel c never served a request
//                 || a > free_before[c] + cold_after             (the channel had gone cold)
//   The initiator sees the response at   completion = r + link_latency.
// So an isolated request costs link + startup + latency + link = 18 cycles (defaults), and a
// channel streams one request per II: peak = channels * request_bytes / II B/cycle.
// (The reference HBM node takes one bundle per reader/writer per cycle in registration
// order: give bursts their initiator index to reproduce that same-cycle order.)
//
// Tiles (Burst): rows x ceil(row_bytes / request_bytes) requests (partially used requests
// count in full: reference rule), in row-major order j = 0..N-1; request (r, q) has address
// base + r*row_pitch + q*request_bytes and is issued at issue_cycle + floor(j / par_dispatch)
// (bundles of par_dispatch requests per cycle, as the reference's address generators do).
//
// Tile path = the request-level rules above, computed per burst instead of per request.
// Pending requests (those that a later call could still precede) are kept as bursts and
// folded into the channel states once final; a result is evaluated on copies.
//  * Cost of the deferred path in the simulator's common case (RoundRobin, tiles of at
//    most a few requests per channel, e.g. 16 x 64-B requests on 32 channels, a load and a
//    store overlapping a little): issue_burst is O(1) (per-channel request counts are
//    derived in stats(), no fold, no allocation: pending bursts are trivially copyable and
//    kept in reused storage); try_result folds up to its watermark, and a fold of at most
//    two bursts and 4 x channels requests is served request by request with the windows
//    (alone / shared / alone) found directly: ~12 instructions per request plus ~100-250
//    per call. Measured through TLM (callgrind, 1 GiB-stream example, 32768 tiles of 16 x
//    32 B read and written): ~1.8k instructions of HbmFixed per tile (two bursts, four
//    calls, 32 requests), ~2.5k with the four b_transport calls.
//  * Longer folds go window by window (below); windows of at most 4 x channels requests
//    are served request by request, longer ones in closed form.
//  * A burst alone on the memory costs O(channels) for a long burst, independent of its
//    size. Per channel its arrivals are linear plus a periodic term, so the last service
//    start is
//      s_last = max(free[c] + (n-1)*II,  max_k a_k + (n-1-k)*II)
//    with the inner max attained within one period (<= par_dispatch / gcd(channels,
//    par_dispatch) terms) at one end.
//  * Overlapping bursts, RoundRobin: time is cut into windows in which every active burst
//    issues a constant bundle per cycle (a window ends when a burst starts, reaches its
//    last bundle or ends). Within a window the memory sees S = sum of bundles requests per
//    cycle dealt to consecutive channels from the counter: one virtual burst with
//    par_dispatch S, so channel states follow the closed form above. Attributing responses
//    to bursts is per request only for the window's last channels/gcd(channels, S) cycles
//    (<= lcm(channels, S) requests, where each burst's last request on every channel it
//    uses lies) plus each channel's first (possibly cold) request; the bulk before that is
//    closed form. Cost per window O(channels * S / gcd + lcm(channels, S)), independent of
//    its length; short windows, and windows in which a request could find its channel cold
//    (no quirk, arrival gaps > II + cold_after), are served request by request.
//  * Overlapping bursts, AddressInterleave: per channel, the bursts' requests are merged
//    FIFO segment by segment (O(requests) where bursts interleave on a channel); bursts
//    whose rows do not walk the channels consecutively use a per-request loop.
//  * Agreement with serve_request for every request, in FIFO order (randomized tests in
//    testbench/memory/hbm_fixed_test.cpp: 2 x 120 mixed multi-initiator workloads per run,
//    checked at 2 x 3000, 200 two-client small-tile workloads (checked at 3000) incl. small
//    memories whose channels queue, plus overlapping-burst and sequential-burst suites;
//    random channel counts, II, latencies, quirk/cold settings, both same-cycle orders):
//      - deferred path (issue_burst / try_result): EXACT, every burst's completion, the
//        channel states, counter and statistics, for both mappings;
//      - serve_burst (immediate) alone on the memory: exact;
//      - serve_burst under contention: non-anticipating. Its result cannot include bursts
//        issued after it (they can still delay its tail in a FIFO, and under RoundRobin
//        change the channels its later requests are dealt). The channel states it leaves
//        are exact; the completions it returns are not. Measured on the mixed workloads:
//        makespan within 3.3 % of the request level (mean ~1 % over random workloads,
//        worst random case ~30 %); use the deferred path where agreement matters.
//  * Cold requests (startup_every_request = false) are exact in all of the above.
//
// PRECONDITION (time order): calls arrive in non-decreasing (issue cycle, initiator) order
// (a burst counts with the issue cycle of its first request; try_result's watermark counts
// as a call, see there). The simulator serialises initiators conservatively to guarantee
// this; it is asserted in debug builds. Violations are not fatal in release builds, they
// just make the later call queue behind work that was issued after it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "hw/memory/hbm_model.h"
#include "hw/presets/hbm_params.h"

namespace stepsim {

class HbmFixed final : public HbmModel {
 public:
  explicit HbmFixed(const HbmParams& params = HbmParams());

  const HbmParams& params() const override { return p_; }
  // Forget all channel state and statistics (optionally with new parameters).
  void reset();
  void reset(const HbmParams& params);

  // Request-level path: one request of request_bytes at addr, issued at issue_cycle (by
  // `initiator`, for the same-cycle order against pending bursts; default 0).
  Completion serve_request(uint64_t addr, bool write, uint64_t issue_cycle);
  Completion serve_request(uint64_t addr, bool write, uint64_t issue_cycle, uint32_t initiator) override;
  // Tile-level path; see the header comment for cost and exactness.
  BurstResult serve_burst(const Burst& burst) override;

  // Uncontended operation. `window_arrivals` bounds the requests that reach the memory in
  // any init_interval consecutive cycles, all initiators together (the callers promise it).
  // Under RoundRobin mapping with startup_every_request, a bound <= channels means that no
  // request ever waits for its channel: requests m and m + channels of the FIFO order reach
  // the memory at least init_interval cycles apart (otherwise channels + 1 requests would
  // arrive within init_interval cycles), so by induction every request is served at its
  // arrival. Then each request completes at issue + idle_latency() whatever the other
  // requests are, and serve_burst gives the request level's result exactly, in O(1), with
  // calls in any order (the per-channel counts follow from the request total as before;
  // every request pays startup). Returns whether the bound gives that regime, which is then
  // on until reset(); call it before any request. While it is on, no channel state is kept:
  // issue_burst / try_result / serve_request throw std::logic_error.
  bool set_arrival_bound(uint64_t window_arrivals) override;
  bool uncontended() const override { return uncontended_; }

  // Deferred tile path, for a simulator that knows a time-order watermark w. issue_burst
  // registers the burst and returns a handle; try_result(h, w) gives its final result (the
  // request level's, exactly) once w >= the burst's last issue cycle L, counting the
  // interference of every burst issued since; false (no effect) while w < L. The caller
  // promises that no later call is issued before cycle w and, if w == L, that no later
  // call at cycle L comes from an initiator ordered before the burst's (with initiator 0
  // everywhere: just "no later call before w"). serve_burst is issue + result at once
  // (non-anticipating, see the header comment). Each handle's result is taken once.
  // *info (optional): requests, bytes and last_issue_cycle (completion = issue cycle).
  uint64_t issue_burst(const Burst& burst, BurstResult* info = nullptr) override;
  bool try_result(uint64_t handle, uint64_t watermark, BurstResult* out) override;

  // Statistics. Per-channel counts are final at issue (RoundRobin: the counter deals
  // consecutively, so the counts depend only on how many requests were issued; they are
  // filled in by this call, so a reference kept across later calls shows them as of the
  // call); startup_paid counts folded requests (drain() first for the final figure).
  const HbmStats& stats() const override;
  // Cycle from which channel c can start its next request, counting only folded requests
  // (call drain() first for the state after everything served so far).
  uint64_t channel_free_cycle(uint32_t c) const { return ch_[c].free; }
  // Folds all pending requests into the channel states (end of simulation / before
  // inspecting channel_free_cycle and startup_paid). Later calls must not be issued
  // before the latest request already issued.
  void drain();
  // Bursts not yet completely folded into the channel states, or whose deferred result
  // has not been taken yet.
  size_t pending_bursts() const { return flows_.size(); }
  // Channel the next request would use under RoundRobin mapping.
  uint32_t round_robin_next() const { return uint32_t(mod_c(folded_total_)); }
  // Issue cycle of the latest call (the time-order watermark), and its initiator.
  uint64_t last_issue_cycle() const override { return last_call_issue_; }
  uint32_t last_issue_initiator() const override { return last_call_initiator_; }
  // Windows that needed per-request work: channel windows served by the O(requests)
  // merge/loop (AddressInterleave, cold gaps), and RoundRobin windows (or short folds)
  // shared by several bursts (committed ones only).
  uint64_t slow_path_bursts() const { return slow_bursts_; }

 private:
  // Per-channel FIFO state after all folded (committed-in-order) requests.
  struct Chan {
    uint64_t free = 0;
    bool used = false;
  };
  // A burst whose requests are not yet all folded into the channel states. Requests are
  // indexed j in issue order and arrive at t0 + j / P; on channel c they are the k-th of
  // that channel in j order.
  struct Flow {
    uint64_t seq = 0;
    uint32_t prio = 0;  // Burst::initiator
    uint64_t t0 = 0;    // arrival of request 0
    uint64_t P = 1;
    int p_shift = -1;      // log2(P) if P is a power of two
    uint64_t period = 1;   // P / gcd(C, P)
    int64_t delta = 0;     // C / gcd(C, P) - period * II
    uint64_t max_gap = 1;  // ceil(C / P): largest arrival gap on one channel
    uint64_t n = 0;
    bool consecutive = true;  // channel = (m0 + j) % C
    uint32_t m0 = 0;
    uint32_t js = 0;          // !consecutive: 1 + slot in js_pool_ (request indices j per channel)
    uint64_t folded = 0;      // requests j < folded are in the channel states
    uint64_t resp_max = 0;    // latest response among folded requests
    uint64_t last_start = 0;  // service start of the latest folded request
    bool last_paid = false;
    bool held = false;   // deferred: keep until its result is taken
    BurstResult result;  // filled at issue (bytes, requests, last issue)
    uint64_t div_p(uint64_t x) const { return p_shift >= 0 ? x >> p_shift : x / P; }
    uint64_t arrival_of(uint64_t j) const { return t0 + div_p(j); }
    // Number of requests with arrival <= x.
    uint64_t upto(uint64_t x) const {
      if (x < t0) return 0;
      if (x - t0 >= n) return n;  // (x - t0 + 1) * P >= n; also avoids overflow
      return std::min<uint64_t>(n, (x - t0 + 1) * P);
    }
    // Number of requests with (arrival, prio) <= (x, x_initiator).
    uint64_t upto_key(uint64_t x, uint32_t x_initiator) const {
      if (prio <= x_initiator) return upto(x);
      return x == 0 ? 0 : upto(x - 1);
    }
    // Same-cycle order: initiator, then call order.
    bool before(const Flow& o) const { return prio != o.prio ? prio < o.prio : seq < o.seq; }
  };
  static_assert(std::is_trivially_copyable_v<Flow>, "pending flows are moved around a lot");
  struct Range {
    Flow* f;
    uint64_t k1, k2;  // channel-local request indices [k1, k2)
  };
  // Result of serving one flow's requests on one channel.
  struct RunOut {
    uint64_t done = 0;        // latest response at the memory
    uint64_t first = 0;       // response of the first request
    uint64_t start_last = 0;  // service start of the last request
    bool paid_last = false;
  };
  // RoundRobin window: flows_[i] issues b requests per cycle at positions [off, off + b)
  // of the cycle's bundle.
  struct Seg {
    size_t i;
    uint64_t b, off;
    size_t live;  // index in live_
  };
  // rr_advance: a flow with requests left and the arrival of its next request.
  struct Live {
    uint64_t a;    // arrival of its next request
    uint64_t rem;  // requests left to serve (within the cut)
    uint64_t P;
    size_t i;  // index in the flow list
    uint32_t prio;
    int p_shift;
  };
  // Constants of a dispatch width (see Flow).
  struct Dispatch {
    uint64_t P = 0;  // 0: none cached
    int p_shift = -1;
    uint64_t period = 1;
    int64_t delta = 0;
    uint64_t max_gap = 1;
  };

  uint32_t mapping_channel(uint64_t addr);
  void check_order(uint64_t issue_cycle, uint32_t initiator);
  void require_ordered(const char* call) const;  // throws in uncontended operation
  BurstResult serve_uncontended(const Burst& b);
  void note_call(uint64_t issue_cycle, uint32_t initiator);
  void account(bool write, uint64_t requests, uint64_t issue_cycle, uint64_t completion);
  // a > free + cold_after, without overflow for cold_after = kNeverCold.
  static bool went_cold(uint64_t arrival, uint64_t free, uint64_t cold_after) {
    return arrival > free && arrival - free > cold_after;
  }
  // Where a flow's requests fall on channel c (the per-request helpers of the channel and
  // round-robin files; inline, they run in their loops). Consecutive flows: request j is on
  // channel (m0 + j) % C, so channel c holds j0, j0 + C, ...
  uint64_t j0_of(const Flow& f, uint32_t c) const { return mod_c(uint64_t(c) + p_.channels - f.m0); }
  uint64_t kcount(const Flow& f, uint32_t c, uint64_t J) const {  // #k on c with j < J
    if (!f.consecutive) {
      const std::vector<uint64_t>& js = js_of(f, c);
      return uint64_t(std::lower_bound(js.begin(), js.end(), J) - js.begin());
    }
    const uint64_t j0 = j0_of(f, c);
    return J > j0 ? div_c(J - j0 - 1) + 1 : 0;
  }
  uint64_t j_of(const Flow& f, uint32_t c, uint64_t k) const {
    return f.consecutive ? j0_of(f, c) + k * p_.channels : js_of(f, c)[k];
  }
  uint64_t arrival(const Flow& f, uint32_t c, uint64_t k) const { return f.arrival_of(j_of(f, c, k)); }
  uint64_t step(Chan& st, uint64_t arrival, bool commit, bool* paid);
  // Serves f's requests k in [k1, k2) on channel c in order (closed form when possible).
  // commit: real channel state (statistics).
  RunOut serve_range(Chan& st, const Flow& f, uint32_t c, uint64_t k1, uint64_t k2, bool commit);
  // serve_range plus the flow bookkeeping when committing; returns the latest response.
  uint64_t run_one(Chan& st, uint32_t c, const Range& r, bool commit);
  // Serves the requests of several flows on one channel in FIFO order (arrival, flow seq,
  // k), cutting them into single-flow segments; returns the latest response of `target`.
  uint64_t run_channel(Chan& st, uint32_t c, std::vector<Range>& ranges, const Flow* target, bool commit);
  // Commits every pending request with (arrival, initiator) <= (cut, cut_initiator) to the
  // channel states.
  void fold(uint64_t cut, uint32_t cut_initiator);
  void fold_ai(uint64_t cut, uint32_t cut_initiator);
  // Latest response of flows_[i]'s requests not yet folded, FIFO-merged with the pending
  // requests of the other flows that precede them (on a copy of the channel states).
  uint64_t evaluate(size_t i);
  uint64_t evaluate_ai(const Flow& f);
  // RoundRobin: serve all pending requests of `flows` with (arrival, initiator) <=
  // (cut, cut_initiator) on `ch` from counter position `counter`, window by window.
  void rr_advance(std::vector<Flow>& flows, Chan* ch, uint64_t& counter, uint64_t cut, uint32_t cut_initiator,
                  bool commit);
  void rr_window(std::vector<Flow>& flows, Chan* ch, const Seg* segs, size_t ns, uint64_t counter, uint64_t t,
                 uint64_t L, uint64_t S, bool commit);
  void rr_requests(std::vector<Flow>& flows, Chan* ch, const Seg* segs, size_t ns, uint32_t c, uint64_t t1, uint64_t t2,
                   bool commit);
  // A flow's bookkeeping while its requests are served (Flow::resp_max, last_start,
  // last_paid), kept in registers.
  struct Acc {
    uint64_t resp_max = 0, last_start = 0;
    bool last_paid = false;
    Acc() = default;
    explicit Acc(const Flow& f) : resp_max(f.resp_max), last_start(f.last_start), last_paid(f.last_paid) {}
    void store(Flow& f) const {
      f.resp_max = resp_max;
      f.last_start = last_start;
      f.last_paid = last_paid;
    }
  };
  template <bool kEvery>
  struct Stepper;
  template <bool kEvery>
  uint64_t rr_requests_impl(std::vector<Flow>& flows, Chan* ch, const Seg* segs, size_t ns, uint32_t c, uint64_t t1,
                            uint64_t t2) const;
  template <bool kEvery>
  uint64_t rr_short_impl(std::vector<Flow>& flows, Chan* ch, const Live* live, size_t nl, uint32_t c,
                         bool* shared) const;
  // RoundRobin windows (and folds of at most two bursts) of at most kShortWindow *
  // channels requests are served request by request: a step costs ~12 instructions, a
  // channel's closed form ~100.
  static constexpr uint64_t kShortWindow = 4;
  Flow virtual_flow(uint64_t t, uint64_t S, uint64_t counter, uint64_t n) const;
  void set_dispatch(Flow& f, uint64_t P) const;
  Flow& push_flow(const Burst& b);
  size_t index_of(uint64_t handle) const;
  void retire();

  // Burst::requests_per_row, by a shift when request_bytes is a power of two (the presets'
  // 64 B): a 64-bit division costs tens of cycles, and this runs for every tile.
  uint64_t requests_per_row(const Burst& b) const {
    const uint64_t rb = p_.request_bytes;
    return (rb & (rb - 1)) == 0 ? (b.row_bytes + rb - 1) >> __builtin_ctzll(rb) : b.requests_per_row(p_.request_bytes);
  }
  uint64_t div_c(uint64_t x) const { return c_shift_ >= 0 ? x >> c_shift_ : x / p_.channels; }
  uint64_t mod_c(uint64_t x) const { return c_shift_ >= 0 ? x & (p_.channels - 1) : x % p_.channels; }

  // Request indices j per channel of a flow whose channels are not consecutive (slots are
  // reused: Flow stays trivially copyable, and pending flows move around cheaply).
  using ChannelLists = std::vector<std::vector<uint64_t>>;
  const std::vector<uint64_t>& js_of(const Flow& f, uint32_t c) const { return js_pool_[f.js - 1][c]; }
  uint32_t take_js_slot();

  HbmParams p_;
  int c_shift_ = -1;  // log2(channels) if a power of two
  std::vector<Chan> ch_;
  std::vector<Flow> flows_;  // in seq order
  size_t loose_ = 0;         // flows in flows_ not held (serve_request/serve_burst, taken)
  std::vector<ChannelLists> js_pool_;
  std::vector<uint32_t> js_free_;  // free slots of js_pool_
  uint64_t next_seq_ = 0;
  uint64_t folded_total_ = 0;        // requests folded so far (round-robin counter)
  uint64_t issued_total_ = 0;        // RoundRobin: requests issued so far (statistics)
  mutable uint64_t rr_counted_ = 0;  // RoundRobin: issued_total_ the per-channel stats show
  uint64_t last_call_issue_ = 0;
  uint32_t last_call_initiator_ = 0;
  uint64_t slow_bursts_ = 0;
  bool uncontended_ = false;          // set_arrival_bound
  std::vector<uint8_t> mark_;         // scratch
  std::vector<uint64_t> new_folded_;  // scratch
  std::vector<Range> ranges_;         // scratch
  std::vector<Seg> segs_;             // scratch
  std::vector<Live> live_;            // scratch
  mutable Dispatch dispatch_;         // cache of set_dispatch
  std::vector<Flow> eval_flows_;      // scratch (RoundRobin evaluate)
  std::vector<Chan> eval_ch_;         // scratch (RoundRobin evaluate)
  mutable HbmStats stats_;            // RoundRobin per-channel counts are filled in by stats()
};

}  // namespace stepsim
