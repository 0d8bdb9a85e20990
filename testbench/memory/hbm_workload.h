// Multi-initiator tile workloads for the HBM tests, and drivers that replay them in time
// order either one tile per call (fast mode) or one request per call (request mode).
// Each initiator keeps one tile in flight (reference OffChipLoad/Store rule): its next
// tile is issued at the completion cycle of the previous one.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <queue>
#include <random>
#include <tuple>
#include <vector>

#include "hw/memory/hbm_timing.h"

namespace stepsim::test {

struct InitiatorWork {
  std::vector<Burst> tiles;  // issue_cycle is ignored (set by the driver)
  uint64_t start_cycle = 0;
};

struct WorkloadResult {
  uint64_t makespan = 0;                     // last completion over all initiators
  std::vector<uint64_t> finish;              // per initiator: completion of its last tile
  uint64_t total_tile_latency = 0;           // sum over tiles of (completion - issue)
  uint64_t requests = 0;
  uint64_t bytes = 0;
};

// A strided tile walk over a row-major tensor: tiles of tile_rows x tile_row_bytes.
inline std::vector<Burst> tile_walk(uint64_t base, uint64_t tensor_rows, uint64_t pitch,
                                    uint32_t tile_rows, uint64_t tile_row_bytes, bool write,
                                    uint32_t par_dispatch) {
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

using ServeBurst = std::function<BurstResult(const Burst&)>;
// (addr, write, issue_cycle) -> completion cycle
using ServeRequest = std::function<uint64_t(uint64_t, bool, uint64_t)>;

// Fast mode: one call per tile, tiles of all initiators in issue order (ties: initiator id).
inline WorkloadResult run_fast(const std::vector<InitiatorWork>& w, const ServeBurst& serve) {
  WorkloadResult res;
  res.finish.assign(w.size(), 0);
  using Item = std::tuple<uint64_t, size_t, size_t>;  // (issue, initiator, tile)
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> pq;
  for (size_t i = 0; i < w.size(); ++i)
    if (!w[i].tiles.empty()) pq.emplace(w[i].start_cycle, i, 0);
  while (!pq.empty()) {
    auto [t, i, k] = pq.top();
    pq.pop();
    Burst b = w[i].tiles[k];
    b.issue_cycle = t;
    const BurstResult r = serve(b);
    res.total_tile_latency += r.completion_cycle - t;
    res.requests += r.requests;
    res.bytes += r.bytes;
    res.finish[i] = r.completion_cycle;
    res.makespan = std::max(res.makespan, r.completion_cycle);
    if (k + 1 < w[i].tiles.size()) pq.emplace(r.completion_cycle, i, k + 1);
  }
  return res;
}

// Request mode: one call per request, requests of all initiators interleaved in issue
// order; ties go to the tile issued first (the FIFO tie rule HbmTiming uses between
// bursts), then request order.
inline WorkloadResult run_requests(const std::vector<InitiatorWork>& w, uint32_t request_bytes,
                                   const ServeRequest& serve) {
  WorkloadResult res;
  res.finish.assign(w.size(), 0);
  struct Cur {
    size_t tile = 0;
    uint64_t j = 0, issue = 0, done = 0, seq = 0;
  };
  uint64_t next_seq = 0;
  std::vector<Cur> cur(w.size());
  // (request issue cycle, tile seq, initiator); a tile's seq is assigned when its first
  // request is served, in (issue cycle, initiator) order.
  using Item = std::tuple<uint64_t, uint64_t, size_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> pq;
  constexpr uint64_t kNew = UINT64_MAX;
  for (size_t i = 0; i < w.size(); ++i)
    if (!w[i].tiles.empty()) {
      cur[i].issue = cur[i].done = w[i].start_cycle;
      pq.emplace(w[i].start_cycle, kNew, i);
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
    if (n == 0) continue;
    const uint64_t addr = b.request_addr(c.j / per_row, c.j % per_row, request_bytes);
    c.done = std::max(c.done, serve(addr, b.write, t));
    ++res.requests;
    res.bytes += request_bytes;
    if (++c.j < n) {
      pq.emplace(c.issue + c.j / b.dispatch(), c.seq, i);
      continue;
    }
    res.total_tile_latency += c.done - c.issue;
    res.finish[i] = c.done;
    res.makespan = std::max(res.makespan, c.done);
    if (++c.tile < w[i].tiles.size()) {
      c.j = 0;
      c.issue = c.done;
      pq.emplace(c.issue, kNew, i);
    }
  }
  return res;
}

// Deferred fast mode (HbmTiming::issue_burst / try_result): one call per tile; a tile's
// result is taken once the watermark (lowest cycle any initiator can still issue at) has
// reached its last issue cycle. Waiting initiators can issue again no earlier than their
// tile's last issue + 1.
inline WorkloadResult run_deferred(const std::vector<InitiatorWork>& w, HbmTiming& h) {
  WorkloadResult res;
  res.finish.assign(w.size(), 0);
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
      wm = std::min(wm, st[i].waiting ? st[i].last_issue + 1 : st[i].ready);
    }
    if (wm == UINT64_MAX) break;
    for (size_t i = 0; i < w.size(); ++i) {
      St& s = st[i];
      if (!s.waiting || s.last_issue > wm) continue;
      BurstResult r;
      if (!h.try_result(s.handle, wm, &r)) continue;
      res.total_tile_latency += r.completion_cycle - s.issue;
      res.requests += r.requests;
      res.bytes += r.bytes;
      res.finish[i] = r.completion_cycle;
      res.makespan = std::max(res.makespan, r.completion_cycle);
      s.waiting = false;
      s.ready = std::max(r.completion_cycle, wm);
      ++s.tile;
    }
    for (size_t i = 0; i < w.size(); ++i) {
      St& s = st[i];
      if (s.waiting || s.tile >= w[i].tiles.size() || s.ready != wm) continue;
      Burst b = w[i].tiles[s.tile];
      b.issue_cycle = wm;
      s.handle = h.issue_burst(b);
      s.issue = wm;
      s.last_issue = wm + (b.requests(h.params().request_bytes) - 1) / b.dispatch();
      s.waiting = true;
    }
  }
  return res;
}

}  // namespace stepsim::test
