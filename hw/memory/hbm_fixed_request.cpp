// The `fixed` HBM model's request path (hw/memory/hbm_fixed.h): one request at a time,
// dealt its channel and served in the channel's FIFO behind everything that precedes it
// (pending bursts are folded up to its arrival first).
#include "hw/memory/hbm_fixed.h"

#include <algorithm>

namespace stepsim {

// Round robin: the global request counter in FIFO order (requests folded so far). Callers
// fold up to the new request's arrival first.
uint32_t HbmFixed::mapping_channel(uint64_t addr) {
  if (p_.mapping == HbmMapping::RoundRobin) return uint32_t(mod_c(folded_total_));
  return uint32_t((addr / p_.request_bytes) % p_.channels);
}

Completion HbmFixed::serve_request(uint64_t addr, bool write, uint64_t issue_cycle) {
  return serve_request(addr, write, issue_cycle, 0);
}

Completion HbmFixed::serve_request(uint64_t addr, bool write, uint64_t issue_cycle, uint32_t initiator) {
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

}  // namespace stepsim
