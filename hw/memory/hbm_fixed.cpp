// The `fixed` HBM model (hw/memory/hbm_fixed.h): its state and statistics, the time-order
// checks, and the pending bursts it keeps (Flow): fold them into the channel states once they
// are final, evaluate one on copies, retire the finished ones. The request path, the tile
// path and the two merges are in the hbm_fixed_*.cpp files (see the header).
#include "hw/memory/hbm_fixed.h"

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace stepsim {

HbmFixed::HbmFixed(const HbmParams& params) { reset(params); }

void HbmFixed::reset() { reset(p_); }

void HbmFixed::reset(const HbmParams& params) {
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

void HbmFixed::check_order(uint64_t issue_cycle, uint32_t initiator) {
  // Precondition: calls in non-decreasing (issue cycle, initiator) order (see header).
  assert((issue_cycle > last_call_issue_ || (issue_cycle == last_call_issue_ && initiator >= last_call_initiator_)) &&
         "HbmFixed: calls must arrive in (issue cycle, initiator) order");
  note_call(issue_cycle, initiator);
}

void HbmFixed::note_call(uint64_t issue_cycle, uint32_t initiator) {
  if (issue_cycle > last_call_issue_ || (issue_cycle == last_call_issue_ && initiator > last_call_initiator_)) {
    last_call_issue_ = issue_cycle;
    last_call_initiator_ = initiator;
  }
}

const HbmStats& HbmFixed::stats() const {
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

void HbmFixed::fold(uint64_t cut, uint32_t cut_initiator) {
  if (flows_.empty()) return;
  if (p_.mapping == HbmMapping::RoundRobin)
    rr_advance(flows_, ch_.data(), folded_total_, cut, cut_initiator, true);
  else
    fold_ai(cut, cut_initiator);
}

uint64_t HbmFixed::evaluate(size_t i) {
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

size_t HbmFixed::index_of(uint64_t handle) const {
  auto it = std::lower_bound(flows_.begin(), flows_.end(), handle, [](const Flow& f, uint64_t h) { return f.seq < h; });
  return (it != flows_.end() && it->seq == handle) ? size_t(it - flows_.begin()) : SIZE_MAX;
}

uint32_t HbmFixed::take_js_slot() {
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
void HbmFixed::retire() {
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

void HbmFixed::drain() {
  fold(UINT64_MAX, UINT32_MAX);
  retire();
}

void HbmFixed::account(bool write, uint64_t requests, uint64_t issue_cycle, uint64_t completion) {
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

void HbmFixed::require_ordered(const char* call) const {
  if (uncontended_)
    throw std::logic_error(std::string("HbmFixed::") + call +
                           " in uncontended operation (set_arrival_bound): only serve_burst is available");
}

}  // namespace stepsim
