// Multi-initiator tile workloads for the HBM tests, and drivers that replay them in time
// order either one tile per call (fast mode: immediate serve_burst, or deferred
// issue_burst/try_result) or one request per call (request mode).
// Each initiator keeps one tile in flight (reference OffChipLoad/Store rule): its next
// tile is issued at the completion cycle of the previous one plus the tile's idle gap.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <queue>
#include <random>
#include <tuple>
#include <vector>

#include "hw/memory/hbm_model.h"

namespace stepsim::test {

struct InitiatorWork {
  std::vector<Burst> tiles;  // issue_cycle is ignored (set by the driver)
  uint64_t start_cycle = 0;
  // Idle cycles between the completion of tile k-1 and the issue of tile k (k >= 1);
  // empty or shorter = 0.
  std::vector<uint64_t> gaps;
  uint64_t gap(size_t k) const { return k < gaps.size() ? gaps[k] : 0; }
};

struct WorkloadResult {
  uint64_t makespan = 0;                                     // last completion over all initiators
  std::vector<uint64_t> finish;                              // per initiator: completion of its last tile
  std::vector<std::vector<uint64_t>> tile_issue, tile_done;  // per initiator, per tile
  uint64_t total_tile_latency = 0;                           // sum over tiles of (completion - issue)
  uint64_t requests = 0;
  uint64_t bytes = 0;
};

// A strided tile walk over a row-major tensor: tiles of tile_rows x tile_row_bytes.
inline std::vector<Burst> tile_walk(uint64_t base, uint64_t tensor_rows, uint64_t pitch, uint32_t tile_rows,
                                    uint64_t tile_row_bytes, bool write, uint32_t par_dispatch) {
  std::vector<Burst> out;
  for (uint64_t r = 0; r + tile_rows <= tensor_rows; r += tile_rows)
    for (uint64_t c = 0; c + tile_row_bytes <= pitch; c += tile_row_bytes) {
      Burst b;
      b.base = base + r * pitch + c;
      b.rows = tile_rows;
      b.row_bytes = tile_row_bytes;
      b.row_pitch = pitch;
      b.write = write;
      b.par_dispatch = par_dispatch;
      out.push_back(b);
    }
  return out;
}

// Mixed read/write workload: `n` initiators with different tile shapes and dispatch widths.
inline std::vector<InitiatorWork> mixed_workload(int n_initiators = 6, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::vector<InitiatorWork> w(n_initiators);
  const uint64_t region = 1ull << 26;  // 64 MiB per initiator
  for (int i = 0; i < n_initiators; ++i) {
    const uint64_t base = uint64_t(i) * region;
    switch (i % 6) {
      case 0:  // bf16 weight tiles 64 x 128 from a 1024 x 1024 tensor, P=16
        w[i].tiles = tile_walk(base, 1024, 2048, 64, 256, false, 16);
        break;
      case 1:  // fp32 tiles 128 x 128 from 512 x 1024 fp32, P=8
        w[i].tiles = tile_walk(base, 512, 4096, 128, 512, false, 8);
        break;
      case 2:  // write 32 x 33 fp32 tiles (132 B rows: partially used requests), P=4
        w[i].tiles = tile_walk(base, 256, 1056, 32, 132, true, 4);
        break;
      case 3:  // full-width rows 16 x 4096 B, P=32
        w[i].tiles = tile_walk(base, 512, 4096, 16, 4096, false, 32);
        break;
      case 4:  // write 8 x 2 KiB tiles, P=2
        w[i].tiles = tile_walk(base, 256, 8192, 8, 2048, true, 2);
        break;
      case 5:  // single-row vectors of 1 KiB (KV rows), P=16
        w[i].tiles = tile_walk(base, 1024, 1024, 1, 1024, false, 16);
        break;
    }
    // Mix reads and writes within an initiator too, and shuffle tile order.
    std::shuffle(w[i].tiles.begin(), w[i].tiles.end(), rng);
    for (size_t k = 0; k < w[i].tiles.size(); ++k)
      if (rng() % 4 == 0) w[i].tiles[k].write = !w[i].tiles[k].write;
    w[i].start_cycle = rng() % 64;
  }
  return w;
}

// Random mixed workload: 2..8 initiators, each with its own dispatch width, tile shape
// (rows, partially used requests, strides), read/write mix, idle gaps between tiles and
// start cycle. Sizes are kept moderate so that the request-level replay stays fast.
inline std::vector<InitiatorWork> random_workload(uint64_t seed, uint32_t request_bytes = 64) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 1);
  auto pick = [&](std::initializer_list<uint64_t> v) { return *(v.begin() + rng() % v.size()); };
  const int n = int(2 + rng() % 7);
  std::vector<InitiatorWork> w(n);
  const uint64_t rb = request_bytes;
  for (int i = 0; i < n; ++i) {
    InitiatorWork& in = w[i];
    const uint32_t P = uint32_t(pick({1, 2, 3, 4, 4, 5, 8, 8, 16, 16, 24, 32, 64}));
    const uint32_t rows = uint32_t(pick({1, 1, 2, 4, 8, 16, 32, 64}));
    uint64_t row_bytes = pick({64, 128, 132, 256, 512, 1000, 1024, 2048, 4096});
    if (rng() % 4 == 0) row_bytes = 1 + rng() % 3000;
    while (uint64_t(rows) * ((row_bytes + rb - 1) / rb) > 2048) row_bytes = row_bytes / 2 + 1;
    const uint64_t pitch = pick({0, 1, 2, 3}) == 0 ? 0 : (rng() % 2 ? row_bytes * 4 : row_bytes + rng() % 5000);
    const int tiles = int(3 + rng() % 40);
    const int write_pct = int(pick({0, 10, 50, 90, 100}));
    const int gap_pct = int(pick({0, 0, 20, 50, 100}));
    const uint64_t gap_max = pick({4, 30, 300});
    const uint64_t region = uint64_t(i) << 28;
    for (int k = 0; k < tiles; ++k) {
      Burst b;
      b.rows = rows;
      b.row_bytes = row_bytes;
      b.row_pitch = pitch;
      b.base = region + uint64_t(k) * rows * std::max(pitch, row_bytes) + (rng() % 2 ? 0 : rng() % rb);
      b.write = int(rng() % 100) < write_pct;
      b.par_dispatch = P;
      in.tiles.push_back(b);
      in.gaps.push_back(int(rng() % 100) < gap_pct ? rng() % (gap_max + 1) : 0);
    }
    in.start_cycle = rng() % 2 ? 0 : rng() % 200;
  }
  return w;
}

using ServeBurst = std::function<BurstResult(const Burst&)>;
// (addr, write, issue_cycle) -> completion cycle
using ServeRequest = std::function<uint64_t(uint64_t, bool, uint64_t)>;
// Deferred tile path: issue -> handle; (handle, watermark, out) -> result ready?
using IssueBurst = std::function<uint64_t(const Burst&)>;
using TryResult = std::function<bool(uint64_t, uint64_t, BurstResult*)>;

// Order of requests that reach the memory in the same cycle (HbmModel's tie rule):
//   CallOrder - the tile issued first goes first (Burst::initiator = 0 everywhere);
//   Initiator - initiator by initiator (Burst::initiator = initiator index), as the
//               reference HBM node takes one bundle per reader/writer per cycle in
//               registration order, and as a turn-ordered simulator issues its requests.
enum class SameCycle { CallOrder, Initiator };

inline void init_result(WorkloadResult& res, const std::vector<InitiatorWork>& w) {
  res.finish.assign(w.size(), 0);
  res.tile_issue.resize(w.size());
  res.tile_done.resize(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    res.tile_issue[i].assign(w[i].tiles.size(), 0);
    res.tile_done[i].assign(w[i].tiles.size(), 0);
  }
}

inline void record(WorkloadResult& res, size_t i, size_t k, uint64_t issue, uint64_t done) {
  res.total_tile_latency += done - issue;
  res.finish[i] = done;
  res.tile_issue[i][k] = issue;
  res.tile_done[i][k] = done;
  res.makespan = std::max(res.makespan, done);
}

inline Burst tile_at(const std::vector<InitiatorWork>& w, size_t i, size_t k, uint64_t issue, SameCycle order) {
  Burst b = w[i].tiles[k];
  b.issue_cycle = issue;
  b.initiator = order == SameCycle::Initiator ? uint32_t(i) : 0;
  return b;
}

// Fast mode (immediate): one call per tile, tiles of all initiators in issue order (ties:
// initiator id).
inline WorkloadResult run_fast(const std::vector<InitiatorWork>& w, const ServeBurst& serve,
                               SameCycle order = SameCycle::CallOrder) {
  WorkloadResult res;
  init_result(res, w);
  using Item = std::tuple<uint64_t, size_t, size_t>;  // (issue, initiator, tile)
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> pq;
  for (size_t i = 0; i < w.size(); ++i)
    if (!w[i].tiles.empty()) pq.emplace(w[i].start_cycle, i, 0);
  while (!pq.empty()) {
    auto [t, i, k] = pq.top();
    pq.pop();
    const BurstResult r = serve(tile_at(w, i, k, t, order));
    res.requests += r.requests;
    res.bytes += r.bytes;
    record(res, i, k, t, r.completion_cycle);
    if (k + 1 < w[i].tiles.size()) pq.emplace(r.completion_cycle + w[i].gap(k + 1), i, k + 1);
  }
  return res;
}

// Request mode: one call per request, requests of all initiators interleaved in issue
// order. Same cycle: CallOrder - the tile issued first (tiles issued in the same cycle:
// lower initiator), then request order; Initiator - lower initiator first, then request
// order. (A zero round trip, where a tile can complete in its own issue cycle, is not
// supported.)
inline WorkloadResult run_requests(const std::vector<InitiatorWork>& w, uint32_t request_bytes,
                                   const ServeRequest& serve, SameCycle order = SameCycle::CallOrder) {
  WorkloadResult res;
  init_result(res, w);
  struct Cur {
    size_t tile = 0;
    uint64_t j = 0, issue = 0, done = 0, seq = 0;
  };
  uint64_t next_seq = 0;
  std::vector<Cur> cur(w.size());
  // (request issue cycle, tile seq, initiator). CallOrder: a tile's seq is assigned when
  // its first request is served, in (issue cycle, initiator) order. Initiator: seq = 0.
  using Item = std::tuple<uint64_t, uint64_t, size_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> pq;
  const bool by_init = order == SameCycle::Initiator;
  constexpr uint64_t kNew = UINT64_MAX;
  const uint64_t first_key = by_init ? 0 : kNew;
  for (size_t i = 0; i < w.size(); ++i)
    if (!w[i].tiles.empty()) {
      cur[i].issue = cur[i].done = w[i].start_cycle;
      pq.emplace(w[i].start_cycle, first_key, i);
    }
  while (!pq.empty()) {
    auto [t, sq, i] = pq.top();
    pq.pop();
    Cur& c = cur[i];
    if (sq == kNew) {  // a new tile: take a seq, then order among same-cycle tiles by it
      c.seq = next_seq++;
      pq.emplace(t, c.seq, i);
      continue;
    }
    const Burst& b = w[i].tiles[c.tile];
    const uint64_t per_row = b.requests_per_row(request_bytes);
    const uint64_t n = b.rows * per_row;
    if (n > 0) {  // an empty tile completes at its issue cycle
      const uint64_t addr = b.request_addr(c.j / per_row, c.j % per_row, request_bytes);
      c.done = std::max(c.done, serve(addr, b.write, t));
      ++res.requests;
      res.bytes += request_bytes;
      if (++c.j < n) {
        pq.emplace(c.issue + c.j / b.dispatch(), c.seq, i);
        continue;
      }
    }
    record(res, i, c.tile, c.issue, c.done);
    if (++c.tile < w[i].tiles.size()) {
      c.j = 0;
      c.issue = c.done = c.done + w[i].gap(c.tile);
      c.seq = 0;
      pq.emplace(c.issue, first_key, i);
    }
  }
  return res;
}

// Deferred fast mode (HbmModel::issue_burst / try_result, or the TLM equivalents): one
// call per tile; a tile's result is taken once the watermark (lowest cycle any initiator
// can still issue at) has reached its last issue cycle (passed it, for SameCycle::Initiator:
// an initiator ordered before this one may still issue at that cycle). A waiting initiator
// can issue again no earlier than its tile's last issue + the shortest round trip
// (min_round_trip = 2 * link_latency + latency; at least 1).
inline WorkloadResult run_deferred(const std::vector<InitiatorWork>& w, uint32_t request_bytes, uint64_t min_round_trip,
                                   const IssueBurst& issue, const TryResult& result,
                                   SameCycle order = SameCycle::CallOrder) {
  WorkloadResult res;
  init_result(res, w);
  const uint64_t rt = std::max<uint64_t>(1, min_round_trip);
  const uint64_t lag = order == SameCycle::Initiator ? 1 : 0;
  struct St {
    size_t tile = 0;
    bool waiting = false;
    uint64_t ready = 0, handle = 0, issue = 0, last_issue = 0;
  };
  std::vector<St> st(w.size());
  for (size_t i = 0; i < w.size(); ++i) st[i].ready = w[i].start_cycle;
  for (;;) {
    uint64_t wm = UINT64_MAX;
    for (size_t i = 0; i < w.size(); ++i) {
      if (st[i].tile >= w[i].tiles.size()) continue;
      wm = std::min(wm, st[i].waiting ? st[i].last_issue + rt : st[i].ready);
    }
    if (wm == UINT64_MAX) break;
    for (size_t i = 0; i < w.size(); ++i) {
      St& s = st[i];
      if (!s.waiting || s.last_issue + lag > wm) continue;
      BurstResult r;
      if (!result(s.handle, wm, &r)) continue;
      res.requests += r.requests;
      res.bytes += r.bytes;
      record(res, i, s.tile, s.issue, r.completion_cycle);
      s.waiting = false;
      ++s.tile;
      s.ready = std::max(r.completion_cycle + w[i].gap(s.tile), wm);
    }
    for (size_t i = 0; i < w.size(); ++i) {
      St& s = st[i];
      if (s.waiting || s.tile >= w[i].tiles.size() || s.ready != wm) continue;
      const Burst b = tile_at(w, i, s.tile, wm, order);
      s.handle = issue(b);
      s.issue = wm;
      const uint64_t n = b.requests(request_bytes);
      s.last_issue = wm + (n ? (n - 1) / b.dispatch() : 0);
      s.waiting = true;
    }
  }
  return res;
}

inline WorkloadResult run_deferred(const std::vector<InitiatorWork>& w, HbmModel& h,
                                   SameCycle order = SameCycle::CallOrder) {
  const HbmParams& p = h.params();
  return run_deferred(
      w, p.request_bytes, 2ull * p.link_latency + p.latency, [&](const Burst& b) { return h.issue_burst(b, nullptr); },
      [&](uint64_t hd, uint64_t wm, BurstResult* r) { return h.try_result(hd, wm, r); }, order);
}

}  // namespace stepsim::test
