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
  std::set<Pending>& q = pcs_[pc].queue;
  q.insert(q.end(), r);  // the hint: calls come in time order, so a request mostly goes last
}

uint64_t HbmDram::decide_one(uint32_t pc_id) {
  PseudoChannel& pc = pcs_[pc_id];
  std::set<Pending>& q = pc.queue;
  // The controller picks when its data bus frees, or when the oldest request arrives.
  const uint64_t decision = std::max(pc.data_free, q.begin()->arrival);
  // FR-FCFS over the requests in the queue at that cycle: the oldest row hit, else the oldest.
  auto pick = q.begin();
  uint32_t seen = 0;
  for (auto it = q.begin(); it != q.end() && seen < p_.dram_queue_depth && it->arrival <= decision; ++it, ++seen) {
    const Bank& b = pc.banks[it->bank];
    if (b.open && b.row == it->row) {
      pick = it;
      break;
    }
  }
  const Pending r = *pick;
  q.erase(pick);
  const Timed t = time_request(pc, r, decision);
  account_served(r, pc_id, t);
  return r.owner;
}

}  // namespace stepsim
