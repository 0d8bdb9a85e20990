// The `dram` HBM model's scheduler: the pending requests of a pseudo-channel, in arrival order,
// and FR-FCFS over the first queue_depth of them (hw/memory/hbm_dram.h).
#include <algorithm>

#include "hw/memory/hbm_dram.h"

namespace stepsim {

bool HbmDram::Pending::before(const Pending& o) const {
  if (arrival != o.arrival) return arrival < o.arrival;
  if (initiator != o.initiator) return initiator < o.initiator;
  if (owner != o.owner) return owner < o.owner;
  return index < o.index;
}

void HbmDram::push(uint32_t pc, const Pending& r) {
  std::vector<Stream>& streams = pcs_[pc].streams;
  // enqueue adds one call's requests at a time, so its stream is the last one.
  if (streams.empty() || streams.back().reqs.front().owner != r.owner) streams.emplace_back();
  streams.back().reqs.push_back(r);
}

uint64_t HbmDram::decide_one(uint32_t pc_id) {
  PseudoChannel& pc = pcs_[pc_id];
  std::vector<Stream>& streams = pc.streams;
  // Cursors of a merge of the streams: cur[s] = the next unserved request of stream s.
  cursor_.resize(streams.size());
  for (size_t s = 0; s < streams.size(); ++s) cursor_[s] = streams[s].head;
  auto next = [&]() -> std::pair<size_t, size_t> {  // (stream, index) of the oldest left; SIZE_MAX: none
    size_t best = SIZE_MAX;
    for (size_t s = 0; s < streams.size(); ++s) {
      size_t& c = cursor_[s];
      while (c < streams[s].reqs.size() && streams[s].reqs[c].taken) ++c;
      if (c < streams[s].reqs.size() && (best == SIZE_MAX || streams[s].reqs[c].before(streams[best].reqs[cursor_[best]])))
        best = s;
    }
    if (best == SIZE_MAX) return {SIZE_MAX, 0};
    return {best, cursor_[best]++};
  };
  const auto oldest = next();
  const Pending& front = streams[oldest.first].reqs[oldest.second];
  // The controller picks when its data bus frees, or when the oldest request arrives.
  const uint64_t decision = std::max(pc.data_free, front.arrival);
  // FR-FCFS over the requests in the queue at that cycle: the oldest row hit, else the oldest.
  auto pick = oldest;
  auto at = oldest;
  for (uint32_t seen = 0; at.first != SIZE_MAX && seen < p_.dram_queue_depth; ++seen, at = next()) {
    const Pending& q = streams[at.first].reqs[at.second];
    if (q.arrival > decision) break;
    const Bank& b = pc.banks[q.bank];
    if (b.open && b.row == q.row) {
      pick = at;
      break;
    }
  }
  Stream& st = streams[pick.first];
  const Pending r = st.reqs[pick.second];
  st.reqs[pick.second].taken = true;
  while (st.head < st.reqs.size() && st.reqs[st.head].taken) ++st.head;
  if (st.head == st.reqs.size()) streams.erase(streams.begin() + std::ptrdiff_t(pick.first));
  const Timed t = time_request(pc, r, decision);
  account_served(r, pc_id, t);
  return r.owner;
}

}  // namespace stepsim
