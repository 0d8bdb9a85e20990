// The `fixed` HBM model under RoundRobin mapping (hw/memory/hbm_fixed.h): the merge of the
// pending flows into one request stream dealt channel after channel, window by window
// (rr_advance): long windows in closed form (rr_window, on the channel file's serve_range),
// short ones request by request (Stepper).
#include "hw/memory/hbm_fixed.h"

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

namespace stepsim {

// ---- RoundRobin: the memory sees one request stream dealt channel after channel ----
//
// The request level deals channel = (global counter) mod C in FIFO order (arrival cycle,
// then initiator, then call order = flow seq, then request index). Cut time into windows
// in which every active flow issues a constant bundle b_f per cycle: the memory then sees
// S = sum b_f requests per cycle dealt to consecutive channels, i.e. the requests of ONE
// virtual flow with par_dispatch S starting at the counter. Channel states therefore
// follow the single-flow closed form whatever the number of flows; only attributing
// responses to flows needs more when several flows share the window (rr_window).

HbmFixed::Flow HbmFixed::virtual_flow(uint64_t t, uint64_t S, uint64_t counter, uint64_t n) const {
  Flow v;
  v.t0 = t;
  set_dispatch(v, S);
  v.n = n;
  v.m0 = uint32_t(mod_c(counter));
  return v;
}

// The window [t, t + L) with the flows of segs[0..ns) (same-cycle order, bundle b each
// cycle), counter K at its start: S = sum b requests per cycle, virtual index
// J = (cycle - t) * S + position, channel (K + J) mod C, owner = the segment holding J mod S.
// For long windows (rr_advance serves short ones request by request).
void HbmFixed::rr_window(std::vector<Flow>& flows, Chan* ch, const Seg* segs, size_t ns, uint64_t K, uint64_t t,
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
struct HbmFixed::Stepper {
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
void HbmFixed::rr_requests(std::vector<Flow>& flows, Chan* ch, const Seg* segs, size_t ns, uint32_t c, uint64_t t1,
                           uint64_t t2, bool commit) {
  const uint64_t paid = p_.startup_every_request ? rr_requests_impl<true>(flows, ch, segs, ns, c, t1, t2)
                                                 : rr_requests_impl<false>(flows, ch, segs, ns, c, t1, t2);
  if (commit) stats_.startup_paid += paid;
}

template <bool kEvery>
uint64_t HbmFixed::rr_requests_impl(std::vector<Flow>& flows, Chan* ch, const Seg* segs, size_t ns, uint32_t c,
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
uint64_t HbmFixed::rr_short_impl(std::vector<Flow>& flows, Chan* ch, const Live* live, size_t nl, uint32_t c,
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
void HbmFixed::rr_advance(std::vector<Flow>& flows, Chan* ch, uint64_t& counter, uint64_t cut, uint32_t cut_initiator,
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

}  // namespace stepsim
