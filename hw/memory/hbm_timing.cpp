#include "hw/memory/hbm_timing.h"

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <numeric>
#include <stdexcept>
#include <string>

namespace stepsim {

uint64_t HbmStats::busy_cycles() const {
  return std::accumulate(busy_cycles_per_channel.begin(), busy_cycles_per_channel.end(), uint64_t(0));
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
  dispatch_ = Dispatch();
  flows_.clear();
  loose_ = 0;
  js_pool_.clear();
  js_free_.clear();
  next_seq_ = 0;
  folded_total_ = 0;
  issued_total_ = 0;
  rr_counted_ = 0;
  last_call_issue_ = 0;
  last_call_initiator_ = 0;
  slow_bursts_ = 0;
  uncontended_ = false;
  stats_ = HbmStats();
  stats_.requests_per_channel.assign(p_.channels, 0);
  stats_.busy_cycles_per_channel.assign(p_.channels, 0);
}

void HbmTiming::check_order(uint64_t issue_cycle, uint32_t initiator) {
  // Precondition: calls in non-decreasing (issue cycle, initiator) order (see header).
  assert((issue_cycle > last_call_issue_ || (issue_cycle == last_call_issue_ && initiator >= last_call_initiator_)) &&
         "HbmTiming: calls must arrive in (issue cycle, initiator) order");
  note_call(issue_cycle, initiator);
}

void HbmTiming::note_call(uint64_t issue_cycle, uint32_t initiator) {
  if (issue_cycle > last_call_issue_ || (issue_cycle == last_call_issue_ && initiator > last_call_initiator_)) {
    last_call_issue_ = issue_cycle;
    last_call_initiator_ = initiator;
  }
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

uint64_t HbmTiming::Flow::upto_key(uint64_t x, uint32_t x_initiator) const {
  if (prio <= x_initiator) return upto(x);
  return x == 0 ? 0 : upto(x - 1);
}

uint64_t HbmTiming::Flow::upto(uint64_t x) const {
  if (x < t0) return 0;
  if (x - t0 >= n) return n;  // (x - t0 + 1) * P >= n; also avoids overflow
  return std::min<uint64_t>(n, (x - t0 + 1) * P);
}

uint64_t HbmTiming::j0_of(const Flow& f, uint32_t c) const { return mod_c(uint64_t(c) + p_.channels - f.m0); }

uint64_t HbmTiming::kcount(const Flow& f, uint32_t c, uint64_t J) const {
  if (!f.consecutive) {
    const std::vector<uint64_t>& js = js_of(f, c);
    return uint64_t(std::lower_bound(js.begin(), js.end(), J) - js.begin());
  }
  const uint64_t j0 = j0_of(f, c);
  return J > j0 ? div_c(J - j0 - 1) + 1 : 0;
}

uint64_t HbmTiming::j_of(const Flow& f, uint32_t c, uint64_t k) const {
  return f.consecutive ? j0_of(f, c) + k * p_.channels : js_of(f, c)[k];
}

uint64_t HbmTiming::step(Chan& st, uint64_t arrival, bool commit, bool* paid) {
  const bool pay = p_.startup_every_request || !st.used || went_cold(arrival, st.free, p_.cold_after);
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
HbmTiming::RunOut HbmTiming::serve_range(Chan& st, const Flow& f, uint32_t c, uint64_t k1, uint64_t k2, bool commit) {
  RunOut o;
  const uint64_t n = k2 - k1;
  if (n == 0) return o;
  const uint64_t C = p_.channels, II = p_.init_interval;
  const uint64_t max_gap = f.max_gap;  // ceil(C / P)
  const bool no_cold_inside = p_.startup_every_request || max_gap <= II || max_gap - II <= p_.cold_after;
  if (!f.consecutive || (!no_cold_inside && n > 1)) {
    if (n > 1) ++slow_bursts_;
    for (uint64_t k = k1; k < k2; ++k) {
      const uint64_t a = arrival(f, c, k);
      o.start_last = std::max(a, st.free);
      const uint64_t resp = step(st, a, commit, &o.paid_last);
      if (k == k1) o.first = resp;
      o.done = std::max(o.done, resp);
    }
    return o;
  }
  const uint64_t j0 = j0_of(f, c);
  auto a = [&](uint64_t k) { return f.t0 + f.div_p(j0 + k * C); };
  const uint64_t F = st.free;
  const uint64_t a1 = a(k1);
  const bool cold0 = p_.startup_every_request || !st.used || went_cold(a1, F, p_.cold_after);
  const uint64_t s0 = std::max(a1, F);
  uint64_t s_last = s0;
  if (n > 1) {
    const uint64_t period = f.period;
    uint64_t kb, ke;
    if (f.delta > 0) {
      kb = n > period ? k2 - period : k1;
      ke = k2;
    } else {
      kb = k1;
      ke = k1 + std::min(n, period);
    }
    uint64_t m = 0;
    for (uint64_t k = kb; k < ke; ++k) m = std::max(m, a(k) + (k2 - 1 - k) * II);
    s_last = std::max(F + (n - 1) * II, m);
  }
  o.first = s0 + p_.latency + (cold0 ? p_.startup : 0);
  if (p_.startup_every_request) {
    o.done = s_last + p_.latency + p_.startup;
    if (commit) stats_.startup_paid += n;
  } else {
    o.done = std::max(s_last + p_.latency, o.first);
    if (commit) stats_.startup_paid += cold0;
  }
  st.free = s_last + II;
  st.used = true;
  o.start_last = s_last;
  o.paid_last = n == 1 ? cold0 : p_.startup_every_request;
  return o;
}

uint64_t HbmTiming::run_one(Chan& st, uint32_t c, const Range& r, bool commit) {
  const RunOut o = serve_range(st, *r.f, c, r.k1, r.k2, commit);
  if (commit && r.k1 < r.k2) {
    r.f->resp_max = std::max(r.f->resp_max, o.done);
    r.f->last_start = o.start_last;
    r.f->last_paid = o.paid_last;
  }
  return o.done;
}

uint64_t HbmTiming::run_channel(Chan& st, uint32_t c, std::vector<Range>& ranges, const Flow* target, bool commit) {
  uint64_t done = 0;
  size_t segments = 0, live = 0;
  for (const Range& r : ranges) live += r.k1 < r.k2;
  const size_t n_ranges = live;
  while (live > 0) {
    // The range whose head comes first in FIFO order, and the first head after it.
    // Order: arrival, then Flow::before (initiator, then call order).
    Range* best = nullptr;
    const Flow* next = nullptr;
    uint64_t best_a = 0, next_a = UINT64_MAX;
    for (Range& r : ranges) {
      if (r.k1 >= r.k2) continue;
      const uint64_t ar = arrival(*r.f, c, r.k1);
      if (!best || ar < best_a || (ar == best_a && r.f->before(*best->f))) {
        if (best && (!next || best_a < next_a || (best_a == next_a && best->f->before(*next)))) {
          next_a = best_a;
          next = best->f;
        }
        best = &r;
        best_a = ar;
      } else if (!next || ar < next_a || (ar == next_a && r.f->before(*next))) {
        next_a = ar;
        next = r.f;
      }
    }
    // best's requests that precede every other head: arrival < next_a, or == next_a and
    // best comes first.
    uint64_t k_end = best->k2;
    if (next) {
      const uint64_t J = best->f->before(*next) ? best->f->upto(next_a) : (next_a ? best->f->upto(next_a - 1) : 0);
      k_end = std::min(k_end, std::max(best->k1 + 1, kcount(*best->f, c, J)));
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

void HbmTiming::fold_ai(uint64_t cut, uint32_t cut_initiator) {
  const uint32_t C = p_.channels;
  bool any = false, all_channels = false;
  mark_.assign(C, 0);
  new_folded_.resize(flows_.size());
  for (size_t i = 0; i < flows_.size(); ++i) {
    const Flow& f = flows_[i];
    new_folded_[i] = std::max(f.folded, f.upto_key(cut, cut_initiator));
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

uint64_t HbmTiming::evaluate_ai(const Flow& b) {
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
      // Flows before b precede it on ties, later ones follow it.
      const uint64_t J = (&f == &b || f.before(b)) ? f.upto(a_last) : (a_last ? f.upto(a_last - 1) : 0);
      const uint64_t k1 = kcount(f, c, f.folded), k2 = kcount(f, c, J);
      if (k1 < k2) ranges_.push_back({&f, k1, k2});
    }
    Chan st = ch_[c];
    done = std::max(done, run_channel(st, c, ranges_, &b, false));
  }
  return done;
}

// ---- RoundRobin: the memory sees one request stream dealt channel after channel ----
//
// The request level deals channel = (global counter) mod C in FIFO order (arrival cycle,
// then initiator, then call order = flow seq, then request index). Cut time into windows
// in which every active flow issues a constant bundle b_f per cycle: the memory then sees
// S = sum b_f requests per cycle dealt to consecutive channels, i.e. the requests of ONE
// virtual flow with par_dispatch S starting at the counter. Channel states therefore
// follow the single-flow closed form whatever the number of flows; only attributing
// responses to flows needs more when several flows share the window (rr_window).

void HbmTiming::set_dispatch(Flow& f, uint64_t P) const {
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

HbmTiming::Flow HbmTiming::virtual_flow(uint64_t t, uint64_t S, uint64_t counter, uint64_t n) const {
  Flow v;
  v.t0 = t;
  set_dispatch(v, S);
  v.n = n;
  v.m0 = uint32_t(mod_c(counter));
  return v;
}

const HbmStats& HbmTiming::stats() const {
  // RoundRobin deals the counter consecutively from 0, so after `issued` requests have
  // reached the memory channel c holds issued/C (+1 if c < issued % C) of them, whatever
  // the interleaving: the per-channel counts are filled in here, O(channels) per look
  // instead of per burst.
  if (p_.mapping == HbmMapping::RoundRobin && rr_counted_ != issued_total_) {
    const uint64_t full = div_c(issued_total_), rest = mod_c(issued_total_);
    for (uint32_t c = 0; c < p_.channels; ++c) {
      const uint64_t nc = full + (c < rest);
      stats_.requests_per_channel[c] = nc;
      stats_.busy_cycles_per_channel[c] = nc * p_.init_interval;
    }
    rr_counted_ = issued_total_;
  }
  return stats_;
}

// The window [t, t + L) with the flows of segs[0..ns) (same-cycle order, bundle b each
// cycle), counter K at its start: S = sum b requests per cycle, virtual index
// J = (cycle - t) * S + position, channel (K + J) mod C, owner = the segment holding J mod S.
// For long windows (rr_advance serves short ones request by request).
void HbmTiming::rr_window(std::vector<Flow>& flows, Chan* ch, const Seg* segs, size_t ns, uint64_t K, uint64_t t,
                          uint64_t L, uint64_t S, bool commit) {
  const uint64_t C = p_.channels, II = p_.init_interval, N = L * S;
  if (ns == 1) {  // a flow alone: the O(channels) closed form
    Flow& f = flows[segs[0].i];
    const Flow v = virtual_flow(t, S, K, N);
    const uint32_t c_last = uint32_t(mod_c(K + N - 1));
    for (uint32_t c = 0; c < C; ++c) {
      const uint64_t kc = kcount(v, c, N);
      if (kc == 0) continue;
      const RunOut o = serve_range(ch[c], v, c, 0, kc, commit);
      f.resp_max = std::max(f.resp_max, o.done);
      if (c == c_last) {
        f.last_start = o.start_last;
        f.last_paid = o.paid_last;
      }
    }
    return;
  }
  // Several flows. The channel states still follow the closed form of the virtual flow;
  // a flow's latest response on a channel is that of its last request there (service
  // starts grow along a channel's FIFO, and every response is start + a constant except
  // for cold requests). A flow's channel set repeats every m = C / gcd(C, S) cycles, so
  // its last request on every channel it uses lies in the window's last m cycles: serve the
  // bulk before them in closed form (attributing only each channel's first response, the
  // one that can be cold) and the last m cycles request by request. If a request inside
  // the window can find its channel cold (no quirk, arrival gaps > II + cold_after), every
  // request is served one by one.
  if (commit) ++slow_bursts_;
  const uint64_t g = std::gcd(C, S), m = C / g;
  const uint64_t max_gap = (C + S - 1) / S;
  const bool cold_inside = !p_.startup_every_request && max_gap > II && max_gap - II > p_.cold_after;
  uint64_t Lb = 0;
  if (!cold_inside && L > m) {
    Lb = L - m;
    if (Lb * S < C * (S / g + 4)) Lb = 0;  // the closed form would not save work
  }
  if (Lb > 0) {
    const uint64_t Nb = Lb * S;
    const Flow v = virtual_flow(t, S, K, Nb);
    for (uint32_t c = 0; c < C; ++c) {
      const uint64_t kc = kcount(v, c, Nb);
      if (kc == 0) continue;
      const RunOut o = serve_range(ch[c], v, c, 0, kc, commit);
      const uint64_t pos = j0_of(v, c) % S;
      for (size_t k = 0; k < ns; ++k)
        if (pos >= segs[k].off && pos < segs[k].off + segs[k].b) {
          Flow& f = flows[segs[k].i];
          f.resp_max = std::max(f.resp_max, o.first);
          break;
        }
    }
  }
  rr_requests(flows, ch, segs, ns, uint32_t(mod_c(K + Lb * S)), t + Lb, t + L, commit);
}

// step() for requests one after another, with the parameters in registers. kEvery = the
// startup quirk (every request pays; Chan::used, read only without it, is left alone).
template <bool kEvery>
struct HbmTiming::Stepper {
  Chan* ch;
  uint32_t C, c;  // channel count, the next request's channel (round robin)
  uint64_t II, lat, startup, cold_after;
  uint64_t paid = 0;  // requests that paid startup

  Stepper(const HbmParams& p, Chan* channels, uint32_t first)
      : ch(channels),
        C(p.channels),
        c(first),
        II(p.init_interval),
        lat(p.latency),
        startup(p.startup),
        cold_after(p.cold_after) {}
  // One request arriving at a on channel st, of the flow whose bookkeeping is acc (with
  // the quirk, the callers count `paid` and set acc.last_paid).
  void serve(Acc& acc, Chan& st, uint64_t a) {
    const uint64_t s = std::max(a, st.free);
    if (kEvery) {
      acc.resp_max = std::max(acc.resp_max, s + lat + startup);
    } else {
      const bool pay = !st.used || went_cold(a, st.free, cold_after);
      st.used = true;
      paid += pay;
      acc.resp_max = std::max(acc.resp_max, s + lat + (pay ? startup : 0));
      acc.last_paid = pay;
    }
    st.free = s + II;
    acc.last_start = s;
  }
  // b requests arriving at a, on the next channels.
  void deal(Acc& acc, uint64_t a, uint64_t b = 1) {
    if (kEvery && b > 0) {
      paid += b;
      acc.last_paid = true;
    }
    for (; b > 0; --b) {
      serve(acc, ch[c], a);
      if (++c == C) c = 0;
    }
  }
  // n requests arriving at a, a + 1, ... (one per cycle): runs of consecutive channels.
  void deal_one_per_cycle(Acc& acc, uint64_t a, uint64_t n) {
    if (kEvery && n > 0) {
      paid += n;
      acc.last_paid = true;
    }
    // The bookkeeping in a local: stores into the channels cannot alias it, so it stays in
    // registers (the stepping loop is the innermost loop of the off-chip tile path).
    Acc local = acc;
    while (n > 0) {
      const uint64_t run = std::min<uint64_t>(n, C - c);
      Chan* const st = ch + c;
      for (uint64_t j = 0; j < run; ++j) serve(local, st[j], a + j);
      a += run;
      n -= run;
      c += uint32_t(run);
      if (c == C) c = 0;
    }
    acc = local;
  }
  // n cycles from a in which x and y each issue one request per cycle (x's first): the
  // shared cycles of two one-per-cycle flows; the bookkeeping and the channel in locals.
  void deal_pairs(Acc& x, Acc& y, uint64_t a, uint64_t n) {
    if (kEvery && n > 0) {
      paid += 2 * n;
      x.last_paid = y.last_paid = true;
    }
    Acc lx = x, ly = y;
    uint32_t cc = c;
    for (const uint64_t e = a + n; a < e; ++a) {
      serve(lx, ch[cc], a);
      if (++cc == C) cc = 0;
      serve(ly, ch[cc], a);
      if (++cc == C) cc = 0;
    }
    c = cc;
    x = lx;
    y = ly;
  }
};

// Cycles [t1, t2) of a window, request by request, in FIFO order: each cycle deals the
// segments' bundles, in order, to consecutive channels from c.
void HbmTiming::rr_requests(std::vector<Flow>& flows, Chan* ch, const Seg* segs, size_t ns, uint32_t c, uint64_t t1,
                            uint64_t t2, bool commit) {
  const uint64_t paid = p_.startup_every_request ? rr_requests_impl<true>(flows, ch, segs, ns, c, t1, t2)
                                                 : rr_requests_impl<false>(flows, ch, segs, ns, c, t1, t2);
  if (commit) stats_.startup_paid += paid;
}

template <bool kEvery>
uint64_t HbmTiming::rr_requests_impl(std::vector<Flow>& flows, Chan* ch, const Seg* segs, size_t ns, uint32_t c,
                                     uint64_t t1, uint64_t t2) const {
  Stepper<kEvery> st(p_, ch, c);
  if (ns == 1) {  // one flow (the common case): its bookkeeping in registers
    Flow& f = flows[segs[0].i];
    Acc a(f);
    const uint64_t b = segs[0].b;
    if (b == 1) {
      st.deal_one_per_cycle(a, t1, t2 - t1);
    } else {
      for (uint64_t tt = t1; tt < t2; ++tt) st.deal(a, tt, b);
    }
    a.store(f);
  } else {
    for (uint64_t tt = t1; tt < t2; ++tt)
      for (size_t k = 0; k < ns; ++k) {
        Flow& f = flows[segs[k].i];
        Acc a(f);
        st.deal(a, tt, segs[k].b);
        a.store(f);
      }
  }
  return st.paid;
}

// All requests of live[0..nl) (nl = 1 or 2, in same-cycle order; Live::rem each from
// Live::a on, P per cycle), request by request, from channel c; the windows are found
// directly: the flow that starts first runs alone until the other starts, both share the
// cycles in which both arrive (each cycle: live[0]'s bundle, then live[1]'s), the one left
// runs alone. Updates the flows (folded, bookkeeping); returns the number of requests that
// paid startup, and in *shared whether any cycle was shared.
template <bool kEvery>
uint64_t HbmTiming::rr_short_impl(std::vector<Flow>& flows, Chan* ch, const Live* live, size_t nl, uint32_t c,
                                  bool* shared) const {
  Stepper<kEvery> st(p_, ch, c);
  if (live[0].P == 1 && (nl == 1 || live[1].P == 1)) {
    // One request per cycle each (the common case): the same windows as below, without the
    // general bundle bookkeeping.
    Flow& f0 = flows[live[0].i];
    Acc a0(f0);
    uint64_t t0 = live[0].a, r0 = live[0].rem;
    *shared = false;
    if (nl == 1) {
      st.deal_one_per_cycle(a0, t0, r0);
    } else {
      Flow& f1 = flows[live[1].i];
      Acc a1(f1);
      uint64_t t1 = live[1].a, r1 = live[1].rem;
      if (t0 < t1) {  // the one that starts first runs alone until the other starts
        const uint64_t n = std::min(r0, t1 - t0);
        st.deal_one_per_cycle(a0, t0, n);
        t0 += n;
        r0 -= n;
      } else if (t1 < t0) {
        const uint64_t n = std::min(r1, t0 - t1);
        st.deal_one_per_cycle(a1, t1, n);
        t1 += n;
        r1 -= n;
      }
      if (r0 > 0 && r1 > 0) {  // now t0 == t1: the shared cycles
        *shared = true;
        const uint64_t n = std::min(r0, r1);
        st.deal_pairs(a0, a1, t0, n);
        t0 += n;
        t1 += n;
        r0 -= n;
        r1 -= n;
      }
      st.deal_one_per_cycle(a0, t0, r0);  // the one left
      st.deal_one_per_cycle(a1, t1, r1);
      f1.folded += live[1].rem;
      a1.store(f1);
    }
    f0.folded += live[0].rem;
    a0.store(f0);
    return st.paid;
  }
  struct Run {           // a flow being served
    uint64_t t, rem, P;  // next arrival, requests left, requests per cycle
    Acc acc;
    uint64_t end() const { return t + rem / P + (rem % P != 0); }  // after its last bundle
  };
  // r alone for the cycles before `until` (or to its end).
  auto alone = [&](Run& r, uint64_t until) {
    if (r.rem == 0 || until <= r.t) return;
    if (r.P == 1) {
      const uint64_t n = std::min(r.rem, until - r.t);
      st.deal_one_per_cycle(r.acc, r.t, n);
      r.t += n;
      r.rem -= n;
      return;
    }
    for (; r.t < until && r.rem > 0; ++r.t) {
      const uint64_t b = std::min(r.P, r.rem);
      st.deal(r.acc, r.t, b);
      r.rem -= b;
    }
  };
  Run run[2];
  for (size_t k = 0; k < nl; ++k) run[k] = Run{live[k].a, live[k].rem, live[k].P, Acc(flows[live[k].i])};
  *shared = false;
  if (nl == 1) {
    alone(run[0], UINT64_MAX);
  } else {
    Run& A = run[0];
    Run& B = run[1];
    alone(A, B.t);  // whichever starts first
    alone(B, A.t);
    if (A.rem > 0 && B.rem > 0) {  // now A.t == B.t: the shared cycles
      *shared = true;
      const uint64_t until = std::min(A.end(), B.end());
      if (A.P == 1 && B.P == 1) {
        for (uint64_t tt = A.t; tt < until; ++tt) {
          st.deal(A.acc, tt);
          st.deal(B.acc, tt);
        }
        A.rem -= until - A.t;
        B.rem -= until - A.t;
      } else {
        for (uint64_t tt = A.t; tt < until; ++tt) {
          const uint64_t a = std::min(A.P, A.rem), b = std::min(B.P, B.rem);
          st.deal(A.acc, tt, a);
          st.deal(B.acc, tt, b);
          A.rem -= a;
          B.rem -= b;
        }
      }
      A.t = B.t = until;
    }
    alone(A, UINT64_MAX);  // the one left
    alone(B, UINT64_MAX);
  }
  for (size_t k = 0; k < nl; ++k) {
    Flow& f = flows[live[k].i];
    f.folded += live[k].rem;
    run[k].acc.store(f);
  }
  return st.paid;
}

// Serves every pending request with (arrival, initiator) <= (cut, cut_initiator), window
// by window.
void HbmTiming::rr_advance(std::vector<Flow>& flows, Chan* ch, uint64_t& counter, uint64_t cut, uint32_t cut_initiator,
                           bool commit) {
  // The flows with requests to serve, in same-cycle order (initiator, then call order =
  // seq), with their next arrival and how many of their requests the cut admits (whole
  // cycles: a multiple of P, or all that are left). Few flows are pending: keep them at
  // hand instead of rescanning `flows` for every window.
  if (live_.size() < flows.size()) live_.resize(flows.size());
  Live* const live = live_.data();
  size_t nl = 0;
  for (size_t i = 0; i < flows.size(); ++i) {
    const Flow& f = flows[i];
    const uint64_t upto = f.upto_key(cut, cut_initiator);
    if (upto <= f.folded) continue;
    size_t k = nl++;
    for (; k > 0 && live[k - 1].prio > f.prio; --k)
      live[k] = live[k - 1];  // insertion sort: stable, flows are in seq order
    live[k] = {f.arrival_of(f.folded), upto - f.folded, f.P, i, f.prio, f.p_shift};
  }
  if (nl == 0) return;
  if (nl <= 2) {
    // One or two flows with few requests (the common case: tiles of a few requests per
    // channel, a load and a store overlapping): request by request, with the windows
    // (alone / shared / alone) found directly.
    const uint64_t total = nl == 1 ? live[0].rem : live[0].rem + live[1].rem;
    if (total <= kShortWindow * p_.channels) {
      const uint32_t c = uint32_t(mod_c(counter));
      bool shared;
      const uint64_t paid = p_.startup_every_request ? rr_short_impl<true>(flows, ch, live, nl, c, &shared)
                                                     : rr_short_impl<false>(flows, ch, live, nl, c, &shared);
      if (commit) {
        stats_.startup_paid += paid;
        slow_bursts_ += shared;
      }
      counter += total;
      return;
    }
  }
  if (segs_.size() < nl) segs_.resize(nl);
  // Local pointers: the stores into flows and channels below cannot move them.
  Seg* const segs = segs_.data();
  const uint64_t short_window = kShortWindow * p_.channels;
  while (nl > 0) {
    uint64_t t = UINT64_MAX;
    for (size_t k = 0; k < nl; ++k) t = std::min(t, live[k].a);
    // Active flows (next arrival == t, in same-cycle order) and the end of the window: the
    // next flow to start, or an active flow's last full bundle / partial last bundle
    // (within the cut).
    uint64_t end = UINT64_MAX, S = 0;
    size_t ns = 0;
    for (size_t k = 0; k < nl; ++k) {
      const Live& l = live[k];
      if (l.a != t) {
        end = std::min(end, l.a);
        continue;
      }
      uint64_t b;
      if (l.rem >= l.P) {
        b = l.P;
        end = std::min(end, t + (l.p_shift >= 0 ? l.rem >> l.p_shift : l.rem / l.P));
      } else {
        b = l.rem;
        end = std::min(end, t + 1);
      }
      segs[ns++] = {l.i, b, S, k};
      S += b;
    }
    const uint64_t L = end - t;
    if (L * S <= short_window) {
      // Short window (the common case for tiles of a few requests per channel): the
      // request level itself, O(L * S) cheap steps, beats the O(channels) closed forms.
      if (ns > 1 && commit) ++slow_bursts_;
      rr_requests(flows, ch, segs, ns, uint32_t(mod_c(counter)), t, end, commit);
    } else {
      rr_window(flows, ch, segs, ns, counter, t, L, S, commit);
    }
    counter += L * S;
    // The active flows advanced by L cycles (their next request arrives at `end`).
    bool finished = false;
    for (size_t k = 0; k < ns; ++k) {
      const uint64_t served = L * segs[k].b;
      flows[segs[k].i].folded += served;
      Live& l = live[segs[k].live];
      l.rem -= served;
      l.a = end;
      finished |= l.rem == 0;
    }
    if (finished) nl = size_t(std::remove_if(live, live + nl, [](const Live& l) { return l.rem == 0; }) - live);
  }
}

void HbmTiming::fold(uint64_t cut, uint32_t cut_initiator) {
  if (flows_.empty()) return;
  if (p_.mapping == HbmMapping::RoundRobin)
    rr_advance(flows_, ch_.data(), folded_total_, cut, cut_initiator, true);
  else
    fold_ai(cut, cut_initiator);
}

uint64_t HbmTiming::evaluate(size_t i) {
  const Flow& f = flows_[i];
  if (f.folded >= f.n) return 0;
  if (p_.mapping != HbmMapping::RoundRobin) return evaluate_ai(f);
  // Serve every pending request up to f's last arrival on copies (no later call assumed).
  eval_flows_ = flows_;
  eval_ch_ = ch_;
  uint64_t counter = folded_total_;
  rr_advance(eval_flows_, eval_ch_.data(), counter, f.arrival_of(f.n - 1), UINT32_MAX, false);
  return eval_flows_[i].resp_max;
}

size_t HbmTiming::index_of(uint64_t handle) const {
  auto it = std::lower_bound(flows_.begin(), flows_.end(), handle, [](const Flow& f, uint64_t h) { return f.seq < h; });
  return (it != flows_.end() && it->seq == handle) ? size_t(it - flows_.begin()) : SIZE_MAX;
}

uint32_t HbmTiming::take_js_slot() {
  uint32_t slot;
  if (js_free_.empty()) {
    js_pool_.emplace_back();
    slot = uint32_t(js_pool_.size());
  } else {
    slot = js_free_.back() + 1;
    js_free_.pop_back();
  }
  ChannelLists& js = js_pool_[slot - 1];
  js.resize(p_.channels);
  for (auto& v : js) v.clear();  // keeps the capacity
  return slot;
}

// Drops the flows that are completely folded and whose result was taken (in place: few
// flows are pending, usually the finished one is in front).
void HbmTiming::retire() {
  size_t w = 0;
  for (size_t r = 0; r < flows_.size(); ++r) {
    const Flow& f = flows_[r];
    if (f.folded >= f.n && !f.held) {
      if (f.js) js_free_.push_back(f.js - 1);
      --loose_;
      continue;
    }
    if (w != r) flows_[w] = f;
    ++w;
  }
  flows_.resize(w);
}

void HbmTiming::drain() {
  fold(UINT64_MAX, UINT32_MAX);
  retire();
}

void HbmTiming::account(bool write, uint64_t requests, uint64_t issue_cycle, uint64_t completion) {
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
  return serve_request(addr, write, issue_cycle, 0);
}

Completion HbmTiming::serve_request(uint64_t addr, bool write, uint64_t issue_cycle, uint32_t initiator) {
  require_ordered("serve_request");
  check_order(issue_cycle, initiator);
  Completion out;
  out.issue_cycle = issue_cycle;
  const uint64_t arrival = issue_cycle + p_.link_latency;
  if (!flows_.empty()) fold(arrival, initiator);
  out.channel = mapping_channel(addr);
  uint64_t resp;
  if (p_.mapping == HbmMapping::RoundRobin) {
    ++issued_total_;  // per-channel counts: see stats()
  } else {
    stats_.requests_per_channel[out.channel] += 1;
    stats_.busy_cycles_per_channel[out.channel] += p_.init_interval;
  }
  if (flows_.empty()) {  // pure request-level traffic: one FIFO step
    Chan& st = ch_[out.channel];
    out.start_cycle = std::max(arrival, st.free);
    resp = step(st, arrival, true, &out.paid_startup);
    ++folded_total_;
  } else {
    // Among pending bursts: a one-request flow, folded at once (everything that precedes
    // it is known; what follows it cannot delay it).
    Flow f;
    f.seq = next_seq_++;
    f.prio = initiator;
    f.t0 = arrival;
    f.n = 1;
    f.m0 = out.channel;
    set_dispatch(f, 1);
    flows_.push_back(f);
    ++loose_;
    fold(arrival, initiator);
    const Flow& g = flows_.back();
    resp = g.resp_max;
    out.start_cycle = g.last_start;
    out.paid_startup = g.last_paid;
    retire();
  }
  out.completion_cycle = resp + p_.link_latency;
  account(write, 1, issue_cycle, out.completion_cycle);
  return out;
}

// Appends burst b's flow to flows_ (built in place: a Flow is large) and counts it in the
// per-channel statistics.
HbmTiming::Flow& HbmTiming::push_flow(const Burst& b) {
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

uint64_t HbmTiming::issue_burst(const Burst& b, BurstResult* info) {
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

bool HbmTiming::try_result(uint64_t handle, uint64_t watermark, BurstResult* out) {
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

bool HbmTiming::set_arrival_bound(uint64_t window_arrivals) {
  if (issued_total_ || !flows_.empty() || stats_.requests())
    throw std::logic_error("HbmTiming::set_arrival_bound after requests were served");
  uncontended_ = p_.mapping == HbmMapping::RoundRobin && p_.startup_every_request && window_arrivals <= p_.channels;
  return uncontended_;
}

void HbmTiming::require_ordered(const char* call) const {
  if (uncontended_)
    throw std::logic_error(std::string("HbmTiming::") + call +
                           " in uncontended operation (set_arrival_bound): only serve_burst is available");
}

BurstResult HbmTiming::serve_burst(const Burst& b) {
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
BurstResult HbmTiming::serve_uncontended(const Burst& b) {
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
