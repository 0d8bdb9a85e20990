// The `fixed` HBM model, one channel's FIFO (hw/memory/hbm_fixed.h): a request's service
// (step), a flow's run of requests on a channel in closed form (serve_range), and the merge of
// several flows on a channel in FIFO order, segment by segment (run_channel), with which the
// AddressInterleave mapping folds and evaluates its pending flows.
#include "hw/memory/hbm_fixed.h"

#include <algorithm>
#include <vector>

namespace stepsim {

uint64_t HbmFixed::step(Chan& st, uint64_t arrival, bool commit, bool* paid) {
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
HbmFixed::RunOut HbmFixed::serve_range(Chan& st, const Flow& f, uint32_t c, uint64_t k1, uint64_t k2, bool commit) {
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

uint64_t HbmFixed::run_one(Chan& st, uint32_t c, const Range& r, bool commit) {
  const RunOut o = serve_range(st, *r.f, c, r.k1, r.k2, commit);
  if (commit && r.k1 < r.k2) {
    r.f->resp_max = std::max(r.f->resp_max, o.done);
    r.f->last_start = o.start_last;
    r.f->last_paid = o.paid_last;
  }
  return o.done;
}

uint64_t HbmFixed::run_channel(Chan& st, uint32_t c, std::vector<Range>& ranges, const Flow* target, bool commit) {
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

void HbmFixed::fold_ai(uint64_t cut, uint32_t cut_initiator) {
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

uint64_t HbmFixed::evaluate_ai(const Flow& b) {
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

}  // namespace stepsim
