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
  std::deque<Pending>& q = pcs_[pc].queue;
  // Calls come in time order, so a request mostly goes last; a long burst issued earlier can
  // still have requests arriving after it.
  if (q.empty() || !r.before(q.back())) {
    q.push_back(r);
    return;
  }
  q.insert(std::upper_bound(q.begin(), q.end(), r, [](const Pending& a, const Pending& b) { return a.before(b); }), r);
}

uint64_t HbmDram::decide_one(uint32_t pc_id) {
  PseudoChannel& pc = pcs_[pc_id];
  std::deque<Pending>& q = pc.queue;
  // The controller picks when its data bus frees, or when the oldest request arrives.
  const uint64_t decision = std::max(pc.data_free, q.front().arrival);
  // FR-FCFS over the requests in the queue at that cycle: the oldest row hit, else the oldest.
  size_t pick = 0;
  const size_t window = std::min<size_t>(q.size(), p_.dram_queue_depth);
  for (size_t i = 0; i < window && q[i].arrival <= decision; ++i) {
    const Bank& b = pc.banks[q[i].bank];
    if (b.open && b.row == q[i].row) {
      pick = i;
      break;
    }
  }
  const Pending r = q[pick];
  q.erase(q.begin() + std::ptrdiff_t(pick));
  const Timed t = time_request(pc, r, decision);
  account_served(r, pc_id, t);
  return r.owner;
}

}  // namespace stepsim
