#include "hw/memory/hbm_timing.h"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace stepsim {

uint64_t HbmStats::busy_cycles() const {
  return std::accumulate(busy_cycles_per_channel.begin(), busy_cycles_per_channel.end(),
                         uint64_t(0));
}

double HbmStats::achieved_bytes_per_cycle() const {
  if (requests() == 0 || last_completion_cycle <= first_issue_cycle) return 0.0;
  return double(bytes()) / double(last_completion_cycle - first_issue_cycle);
}

HbmTiming::HbmTiming(const HbmParams& params) { reset(params); }

void HbmTiming::reset() { reset(p_); }

void HbmTiming::reset(const HbmParams& params) {
  params.validate();
  p_ = params;
  c_shift_ = (p_.channels & (p_.channels - 1)) == 0 ? __builtin_ctz(p_.channels) : -1;
  ch_.assign(p_.channels, Chan());
  flows_.clear();
  next_seq_ = 0;
  folded_total_ = 0;
  last_call_issue_ = 0;
  slow_bursts_ = 0;
  stats_ = HbmStats();
  stats_.requests_per_channel.assign(p_.channels, 0);
  stats_.busy_cycles_per_channel.assign(p_.channels, 0);
}

void HbmTiming::check_order(uint64_t issue_cycle) {
  // Precondition: calls in non-decreasing issue order (see header).
  assert(issue_cycle >= last_call_issue_ && "HbmTiming: calls must arrive in time order");
  last_call_issue_ = std::max(last_call_issue_, issue_cycle);
}

// Round robin: the global request counter in FIFO order (requests folded so far). Callers
// fold up to the new request's arrival first.
uint32_t HbmTiming::mapping_channel(uint64_t addr) {
  if (p_.mapping == HbmMapping::RoundRobin) return uint32_t(mod_c(folded_total_));
  return uint32_t((addr / p_.request_bytes) % p_.channels);
}

// a > free + cold_after, without overflow for cold_after = kNeverCold.
static inline bool went_cold(uint64_t arrival, uint64_t free, uint64_t cold_after) {
  return arrival > free && arrival - free > cold_after;
}

uint64_t HbmTiming::Flow::upto(uint64_t x) const {
  if (x < t0) return 0;
  if (x - t0 >= n) return n;  // (x - t0 + 1) * P >= n; also avoids overflow
  return std::min<uint64_t>(n, (x - t0 + 1) * P);
}

uint64_t HbmTiming::j0_of(const Flow& f, uint32_t c) const {
  return mod_c(uint64_t(c) + p_.channels - f.m0);
}

uint64_t HbmTiming::kcount(const Flow& f, uint32_t c, uint64_t J) const {
  if (!f.consecutive)
    return uint64_t(std::lower_bound(f.js[c].begin(), f.js[c].end(), J) - f.js[c].begin());
  const uint64_t j0 = j0_of(f, c);
  return J > j0 ? div_c(J - j0 - 1) + 1 : 0;
}

uint64_t HbmTiming::j_of(const Flow& f, uint32_t c, uint64_t k) const {
  return f.consecutive ? j0_of(f, c) + k * p_.channels : f.js[c][k];
}

uint64_t HbmTiming::step(Chan& st, uint64_t arrival, bool commit, bool* paid) {
  const bool pay =
      p_.startup_every_request || !st.used || went_cold(arrival, st.free, p_.cold_after);
  const uint64_t s = std::max(arrival, st.free);
  st.free = s + p_.init_interval;
  st.used = true;
  if (commit) stats_.startup_paid += pay;
  if (paid) *paid = pay;
  return s + p_.latency + (pay ? p_.startup : 0);
}

// One flow alone on the channel for k in [k1, k2). Arrivals a_k = t0 + floor((j0 + k*C)/P);
// the FIFO recursion s_k = max(a_k, s_{k-1} + II) from F = st.free unrolls to
//   s_last = max(F + (n-1)*II, max_k a_k + (k2-1-k)*II).
// h(k) = a_k - k*II is linear plus a term periodic in k with period p = P / gcd(C, P), and
// h(k + p) = h(k) + (C/g - p*II): the max lies in the last period if that increment is
// positive, else in the first one. <= p terms.
uint64_t HbmTiming::run_one(Chan& st, uint32_t c, const Range& r, bool commit) {
  Flow& f = *r.f;
  const uint64_t n = r.k2 - r.k1;
  if (n == 0) return 0;
  const uint64_t C = p_.channels, II = p_.init_interval;
  const uint64_t max_gap = f.max_gap;  // ceil(C / P)
  const bool no_cold_inside =
      p_.startup_every_request || max_gap <= II || max_gap - II <= p_.cold_after;
  uint64_t done = 0, start_last = 0;
  bool paid_last = false;
  if (!f.consecutive || (!no_cold_inside && n > 1)) {
    if (n > 1) ++slow_bursts_;
    for (uint64_t k = r.k1; k < r.k2; ++k) {
      const uint64_t a = arrival(f, c, k);
      start_last = std::max(a, st.free);
      const uint64_t resp = step(st, a, commit, &paid_last);
      done = std::max(done, resp);
    }
  } else {
    const uint64_t j0 = j0_of(f, c);
    auto a = [&](uint64_t k) { return f.t0 + f.div_p(j0 + k * C); };
    const uint64_t F = st.free;
    const uint64_t a1 = a(r.k1);
    const bool cold0 = p_.startup_every_request || !st.used || went_cold(a1, F, p_.cold_after);
    const uint64_t s0 = std::max(a1, F);
    uint64_t s_last = s0;
    if (n > 1) {
      const uint64_t period = f.period;
      const int64_t delta = f.delta;
      uint64_t kb, ke;
      if (delta > 0) {
        kb = n > period ? r.k2 - period : r.k1;
        ke = r.k2;
      } else {
        kb = r.k1;
        ke = r.k1 + std::min(n, period);
      }
      uint64_t m = 0;
      for (uint64_t k = kb; k < ke; ++k) m = std::max(m, a(k) + (r.k2 - 1 - k) * II);
      s_last = std::max(F + (n - 1) * II, m);
    }
    if (p_.startup_every_request) {
      done = s_last + p_.latency + p_.startup;
      if (commit) stats_.startup_paid += n;
    } else {
      done = s_last + p_.latency;
      if (cold0) done = std::max(done, s0 + p_.latency + p_.startup);
      if (commit) stats_.startup_paid += cold0;
    }
    st.free = s_last + II;
    st.used = true;
    start_last = s_last;
    paid_last = n == 1 ? cold0 : p_.startup_every_request;
  }
  if (commit) {
    f.resp_max = std::max(f.resp_max, done);
    f.last_start = start_last;
    f.last_paid = paid_last;
  }
  return done;
}

uint64_t HbmTiming::run_channel(Chan& st, uint32_t c, std::vector<Range>& ranges,
                                const Flow* target, bool commit) {
  uint64_t done = 0;
  size_t segments = 0, live = 0;
  for (const Range& r : ranges) live += r.k1 < r.k2;
  const size_t n_ranges = live;
  while (live > 0) {
    // The range whose head comes first in FIFO order, and the first head after it.
    Range* best = nullptr;
    uint64_t best_a = 0, next_a = UINT64_MAX, next_seq = UINT64_MAX;
    for (Range& r : ranges) {
      if (r.k1 >= r.k2) continue;
      const uint64_t ar = arrival(*r.f, c, r.k1);
      if (!best || ar < best_a || (ar == best_a && r.f->seq < best->f->seq)) {
        if (best && (best_a < next_a || (best_a == next_a && best->f->seq < next_seq))) {
          next_a = best_a;
          next_seq = best->f->seq;
        }
        best = &r;
        best_a = ar;
      } else if (ar < next_a || (ar == next_a && r.f->seq < next_seq)) {
        next_a = ar;
        next_seq = r.f->seq;
      }
    }
    // best's requests that precede every other head: arrival < next_a, or == next_a with a
    // smaller seq.
    uint64_t k_end = best->k2;
    if (next_a != UINT64_MAX) {
      const uint64_t lim = best->f->seq < next_seq ? next_a : next_a - 1;
      k_end = std::min(k_end, std::max(best->k1 + 1, kcount(*best->f, c, best->f->upto(lim))));
    }
    const uint64_t resp = run_one(st, c, Range{best->f, best->k1, k_end}, commit);
    if (best->f == target) done = std::max(done, resp);
    best->k1 = k_end;
    if (best->k1 >= best->k2) --live;
    ++segments;
  }
  if (segments > n_ranges) ++slow_bursts_;  // flows interleaved on this channel
  return done;
}

void HbmTiming::fold(uint64_t cut) {
  const uint32_t C = p_.channels;
  bool any = false, all_channels = false;
  mark_.assign(C, 0);
  new_folded_.resize(flows_.size());
  for (size_t i = 0; i < flows_.size(); ++i) {
    const Flow& f = flows_[i];
    new_folded_[i] = std::max(f.folded, f.upto(cut));
    if (new_folded_[i] == f.folded) continue;
    any = true;
    if (!f.consecutive || new_folded_[i] - f.folded >= C) {
      all_channels = true;
    } else {
      for (uint64_t j = f.folded; j < new_folded_[i]; ++j) mark_[mod_c(f.m0 + j)] = 1;
    }
  }
  if (!any) return;
  for (uint32_t c = 0; c < C; ++c) {
    if (!all_channels && !mark_[c]) continue;
    ranges_.clear();
    for (size_t i = 0; i < flows_.size(); ++i) {
      Flow& f = flows_[i];
      if (new_folded_[i] == f.folded) continue;
      ranges_.push_back({&f, kcount(f, c, f.folded), kcount(f, c, new_folded_[i])});
    }
    run_channel(ch_[c], c, ranges_, nullptr, true);
  }
  for (size_t i = 0; i < flows_.size(); ++i) {
    folded_total_ += new_folded_[i] - flows_[i].folded;
    flows_[i].folded = new_folded_[i];
  }
}

uint64_t HbmTiming::evaluate(const Flow& b) {
  const uint32_t C = p_.channels;
  uint64_t done = 0;
  if (b.folded >= b.n) return 0;
  const bool all = !b.consecutive || b.n - b.folded >= C;
  for (uint32_t c = 0; c < C; ++c) {
    if (!all && (b.folded + mod_c(j0_of(b, c) + C - mod_c(b.folded))) >= b.n) continue;
    const uint64_t kb1 = kcount(b, c, b.folded), kb2 = kcount(b, c, b.n);
    if (kb1 >= kb2) continue;
    const uint64_t a_last = arrival(b, c, kb2 - 1);
    ranges_.clear();
    for (Flow& f : flows_) {
      // Earlier flows precede b on ties, later ones follow it.
      const uint64_t lim = f.seq <= b.seq ? a_last : a_last - 1;
      const uint64_t k1 = kcount(f, c, f.folded), k2 = kcount(f, c, f.upto(lim));
      if (k1 < k2) ranges_.push_back({&f, k1, k2});
    }
    Chan st = ch_[c];
    done = std::max(done, run_channel(st, c, ranges_, &b, false));
  }
  return done;
}

size_t HbmTiming::index_of(uint64_t handle) const {
  auto it = std::lower_bound(flows_.begin(), flows_.end(), handle,
                             [](const Flow& f, uint64_t h) { return f.seq < h; });
  return (it != flows_.end() && it->seq == handle) ? size_t(it - flows_.begin()) : SIZE_MAX;
}

void HbmTiming::retire() {
  flows_.erase(std::remove_if(flows_.begin(), flows_.end(),
                              [](const Flow& f) { return f.folded >= f.n && !f.held; }),
               flows_.end());
}

void HbmTiming::drain() {
  fold(UINT64_MAX);
  retire();
}

void HbmTiming::account(bool write, uint64_t requests, uint64_t issue_cycle,
                        uint64_t completion) {
  if (write) {
    stats_.write_requests += requests;
    stats_.bytes_written += requests * p_.request_bytes;
  } else {
    stats_.read_requests += requests;
    stats_.bytes_read += requests * p_.request_bytes;
  }
  stats_.first_issue_cycle = std::min(stats_.first_issue_cycle, issue_cycle);
  stats_.last_completion_cycle = std::max(stats_.last_completion_cycle, completion);
}

Completion HbmTiming::serve_request(uint64_t addr, bool write, uint64_t issue_cycle) {
  check_order(issue_cycle);
  Completion out;
  out.issue_cycle = issue_cycle;
  const uint64_t arrival = issue_cycle + p_.link_latency;
  if (!flows_.empty()) fold(arrival);
  out.channel = mapping_channel(addr);
  uint64_t resp;
  if (flows_.empty()) {  // pure request-level traffic: one FIFO step
    Chan& st = ch_[out.channel];
    out.start_cycle = std::max(arrival, st.free);
    resp = step(st, arrival, true, &out.paid_startup);
    ++folded_total_;
  } else {
    // Behind pending bursts: a one-request flow, folded at once (its arrival is the cut).
    Flow f;
    f.seq = next_seq_++;
    f.t0 = arrival;
    f.n = 1;
    f.m0 = out.channel;
    f.p_shift = 0;
    flows_.push_back(std::move(f));
    fold(arrival);
    const Flow& g = flows_.back();
    resp = g.resp_max;
    out.start_cycle = g.last_start;
    out.paid_startup = g.last_paid;
    retire();
  }
  stats_.requests_per_channel[out.channel] += 1;
  stats_.busy_cycles_per_channel[out.channel] += p_.init_interval;
  out.completion_cycle = resp + p_.link_latency;
  account(write, 1, issue_cycle, out.completion_cycle);
  return out;
}

HbmTiming::Flow HbmTiming::make_flow(const Burst& b, uint64_t* n_out) {
  const uint64_t rb = p_.request_bytes;
  const uint64_t per_row = b.requests_per_row(p_.request_bytes);
  const uint64_t n = uint64_t(b.rows) * per_row;
  const uint32_t C = p_.channels;
  *n_out = n;
  Flow f;
  f.seq = next_seq_++;
  f.t0 = b.issue_cycle + p_.link_latency;
  f.P = b.dispatch();
  f.p_shift = (f.P & (f.P - 1)) == 0 ? __builtin_ctz(f.P) : -1;
  const uint64_t g = std::gcd(uint64_t(C), uint64_t(f.P));
  f.period = f.P / g;
  f.delta = int64_t(C / g) - int64_t(f.period * p_.init_interval);
  f.max_gap = (C + f.P - 1) / f.P;
  f.n = n;
  f.result.requests = n;
  f.result.bytes = n * rb;
  f.result.last_issue_cycle = b.issue_cycle + (n ? (n - 1) / b.dispatch() : 0);
  f.result.completion_cycle = b.issue_cycle;
  if (n == 0) return f;
  if (p_.mapping == HbmMapping::RoundRobin) {
    // The global counter at the burst's first arrival (the caller has folded up to it):
    // bundles of concurrent bursts that arrive in the same cycle get distinct channels,
    // as the reference's per-cycle dispatch gives them.
    f.m0 = uint32_t(mod_c(folded_total_));
  } else {
    // Consecutive channels across rows iff every row starts where the previous row's
    // requests left off, modulo the channel count.
    const uint64_t pitch = b.pitch();
    f.consecutive =
        b.rows == 1 || (pitch % rb == 0 && ((pitch / rb) % C + C - per_row % C) % C == 0);
    if (f.consecutive) {
      f.m0 = uint32_t((b.base / rb) % C);
    } else {
      f.js.assign(C, {});
      uint64_t j = 0;
      for (uint64_t r = 0; r < b.rows; ++r)
        for (uint64_t q = 0; q < per_row; ++q, ++j)
          f.js[(b.request_addr(r, q, p_.request_bytes) / rb) % C].push_back(j);
    }
  }
  for (uint32_t c = 0; c < C; ++c) {
    const uint64_t nc = kcount(f, c, n);
    stats_.requests_per_channel[c] += nc;
    stats_.busy_cycles_per_channel[c] += nc * p_.init_interval;
  }
  return f;
}

uint64_t HbmTiming::issue_burst(const Burst& b) {
  check_order(b.issue_cycle);
  fold(b.issue_cycle + p_.link_latency);
  uint64_t n;
  Flow f = make_flow(b, &n);
  const uint64_t h = f.seq;
  f.held = true;
  if (b.write) {
    stats_.write_requests += n;
    stats_.bytes_written += n * p_.request_bytes;
  } else {
    stats_.read_requests += n;
    stats_.bytes_read += n * p_.request_bytes;
  }
  stats_.first_issue_cycle = std::min(stats_.first_issue_cycle, b.issue_cycle);
  flows_.push_back(std::move(f));
  fold(b.issue_cycle + p_.link_latency);
  return h;
}

bool HbmTiming::try_result(uint64_t handle, uint64_t watermark, BurstResult* out) {
  const size_t i = index_of(handle);
  if (i == SIZE_MAX || !flows_[i].held) return false;
  if (watermark < flows_[i].result.last_issue_cycle) return false;
  // The watermark promises no later call issues before it: fold what it makes final.
  last_call_issue_ = std::max(last_call_issue_, watermark);
  fold(watermark + p_.link_latency);
  Flow& f = flows_[index_of(handle)];
  BurstResult r = f.result;
  if (f.n > 0) {
    r.completion_cycle = std::max(f.resp_max, evaluate(f)) + p_.link_latency;
    stats_.last_completion_cycle = std::max(stats_.last_completion_cycle, r.completion_cycle);
  }
  f.held = false;
  retire();
  if (out) *out = r;
  return true;
}

BurstResult HbmTiming::serve_burst(const Burst& b) {
  check_order(b.issue_cycle);
  fold(b.issue_cycle + p_.link_latency);
  uint64_t n;
  Flow f = make_flow(b, &n);
  BurstResult res = f.result;
  if (n == 0) return res;
  flows_.push_back(std::move(f));
  fold(b.issue_cycle + p_.link_latency);
  const Flow& g = flows_.back();
  res.completion_cycle = std::max(g.resp_max, evaluate(g)) + p_.link_latency;
  retire();
  account(b.write, n, b.issue_cycle, res.completion_cycle);
  return res;
}

}  // namespace stepsim
