// The `fixed` HBM model's tile path (hw/memory/hbm_fixed.h): a burst becomes a pending flow
// (push_flow) and is timed immediately (serve_burst), deferred until the caller's watermark
// makes it final (issue_burst / try_result), or in O(1) when the memory is uncontended
// (set_arrival_bound, serve_uncontended).
#include "hw/memory/hbm_fixed.h"

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <numeric>
#include <stdexcept>

namespace stepsim {

// A flow's dispatch constants (see Flow) for P requests per cycle.
void HbmFixed::set_dispatch(Flow& f, uint64_t P) const {
  if (P != dispatch_.P) {  // one-entry cache: bursts mostly share their dispatch width
    const uint32_t C = p_.channels;
    Dispatch& d = dispatch_;
    d.P = P;
    d.p_shift = (P & (P - 1)) == 0 ? __builtin_ctzll(P) : -1;
    const uint64_t g = std::gcd(uint64_t(C), P);
    d.period = P / g;
    d.delta = int64_t(C / g) - int64_t(d.period * p_.init_interval);
    d.max_gap = (C + P - 1) / P;
  }
  f.P = P;
  f.p_shift = dispatch_.p_shift;
  f.period = dispatch_.period;
  f.delta = dispatch_.delta;
  f.max_gap = dispatch_.max_gap;
}

// Appends burst b's flow to flows_ (built in place: a Flow is large) and counts it in the
// per-channel statistics.
HbmFixed::Flow& HbmFixed::push_flow(const Burst& b) {
  const uint64_t rb = p_.request_bytes;
  const uint64_t per_row = requests_per_row(b);
  const uint64_t n = uint64_t(b.rows) * per_row;
  const uint32_t C = p_.channels;
  Flow& f = flows_.emplace_back();
  f.seq = next_seq_++;
  f.prio = b.initiator;
  f.t0 = b.issue_cycle + p_.link_latency;
  set_dispatch(f, b.dispatch());
  f.n = n;
  f.result.requests = n;
  f.result.bytes = n * rb;
  f.result.last_issue_cycle = b.issue_cycle + (n ? f.div_p(n - 1) : 0);
  f.result.completion_cycle = b.issue_cycle;
  if (n == 0) return f;
  if (p_.mapping == HbmMapping::RoundRobin) {
    // Channels are dealt when the requests are folded (rr_advance); per-channel counts:
    // see stats().
    issued_total_ += n;
    return f;
  }
  // Consecutive channels across rows iff every row starts where the previous row's
  // requests left off, modulo the channel count.
  const uint64_t pitch = b.pitch();
  f.consecutive = b.rows == 1 || (pitch % rb == 0 && ((pitch / rb) % C + C - per_row % C) % C == 0);
  if (f.consecutive) {
    f.m0 = uint32_t((b.base / rb) % C);
  } else {
    f.js = take_js_slot();
    ChannelLists& js = js_pool_[f.js - 1];
    uint64_t j = 0;
    for (uint64_t r = 0; r < b.rows; ++r)
      for (uint64_t q = 0; q < per_row; ++q, ++j) js[(b.request_addr(r, q, p_.request_bytes) / rb) % C].push_back(j);
  }
  for (uint32_t c = 0; c < C; ++c) {
    const uint64_t nc = kcount(f, c, n);
    stats_.requests_per_channel[c] += nc;
    stats_.busy_cycles_per_channel[c] += nc * p_.init_interval;
  }
  return f;
}

uint64_t HbmFixed::issue_burst(const Burst& b, BurstResult* info) {
  require_ordered("issue_burst");
  check_order(b.issue_cycle, b.initiator);
  if (p_.mapping != HbmMapping::RoundRobin) fold(b.issue_cycle + p_.link_latency, b.initiator);
  Flow& f = push_flow(b);
  f.held = true;
  const uint64_t h = f.seq, n = f.n;
  if (info) *info = f.result;
  if (b.write) {
    stats_.write_requests += n;
    stats_.bytes_written += n * p_.request_bytes;
  } else {
    stats_.read_requests += n;
    stats_.bytes_read += n * p_.request_bytes;
  }
  stats_.first_issue_cycle = std::min(stats_.first_issue_cycle, b.issue_cycle);
  // AddressInterleave folds the first bundle now (no later call can precede it).
  // RoundRobin folds nothing here: the next fold serves the pending flows window by window
  // anyway, and fewer, longer windows are cheaper.
  if (p_.mapping != HbmMapping::RoundRobin) fold(b.issue_cycle + p_.link_latency, b.initiator);
  return h;
}

bool HbmFixed::try_result(uint64_t handle, uint64_t watermark, BurstResult* out) {
  require_ordered("try_result");
  const size_t i = index_of(handle);
  if (i == SIZE_MAX || !flows_[i].held) return false;
  const uint64_t last = flows_[i].result.last_issue_cycle;
  if (watermark < last) return false;
  // The watermark promises that no later call issues before it (nor, if it is the burst's
  // last issue cycle, at it from an initiator ordered before the burst's): fold what it
  // makes final. The cut is at or after the burst's last arrival, so that is all of it.
  const uint32_t wi = watermark == last ? flows_[i].prio : 0;
  note_call(watermark, wi);
  fold(watermark + p_.link_latency, wi);  // (folding keeps flows_ as it is)
  Flow& f = flows_[i];
  assert(f.folded == f.n);
  BurstResult r = f.result;
  if (f.n > 0) {
    r.completion_cycle = f.resp_max + p_.link_latency;
    stats_.last_completion_cycle = std::max(stats_.last_completion_cycle, r.completion_cycle);
  }
  if (loose_ == 0) {  // every other pending flow is held: drop just this one
    if (f.js) js_free_.push_back(f.js - 1);
    flows_.erase(flows_.begin() + std::ptrdiff_t(i));
  } else {
    f.held = false;
    ++loose_;
    retire();
  }
  if (out) *out = r;
  return true;
}

bool HbmFixed::set_arrival_bound(uint64_t window_arrivals) {
  if (issued_total_ || !flows_.empty() || stats_.requests())
    throw std::logic_error("HbmFixed::set_arrival_bound after requests were served");
  uncontended_ = p_.mapping == HbmMapping::RoundRobin && p_.startup_every_request && window_arrivals <= p_.channels;
  return uncontended_;
}

BurstResult HbmFixed::serve_burst(const Burst& b) {
  if (uncontended_) return serve_uncontended(b);
  check_order(b.issue_cycle, b.initiator);
  fold(b.issue_cycle + p_.link_latency, b.initiator);
  const Flow& f = push_flow(b);
  BurstResult res = f.result;
  const uint64_t n = f.n;
  if (n == 0) {
    flows_.pop_back();
    return res;
  }
  ++loose_;
  if (p_.mapping != HbmMapping::RoundRobin) fold(b.issue_cycle + p_.link_latency, b.initiator);
  const Flow& g = flows_.back();
  res.completion_cycle = std::max(g.resp_max, evaluate(flows_.size() - 1)) + p_.link_latency;
  retire();
  account(b.write, n, b.issue_cycle, res.completion_cycle);
  return res;
}

// The closed form of uncontended operation (set_arrival_bound): every request is served as it
// arrives and pays startup, so the last one completes last, idle_latency() after its issue.
BurstResult HbmFixed::serve_uncontended(const Burst& b) {
  const uint64_t n = uint64_t(b.rows) * requests_per_row(b);
  BurstResult r;
  r.requests = n;
  r.bytes = n * p_.request_bytes;
  r.last_issue_cycle = b.issue_cycle;
  r.completion_cycle = b.issue_cycle;
  if (n == 0) return r;
  const uint64_t P = b.dispatch();
  r.last_issue_cycle += P == 1 ? n - 1 : (n - 1) / P;
  r.completion_cycle = r.last_issue_cycle + p_.idle_latency();
  issued_total_ += n;
  stats_.startup_paid += n;
  account(b.write, n, b.issue_cycle, r.completion_cycle);
  return r;
}

}  // namespace stepsim
