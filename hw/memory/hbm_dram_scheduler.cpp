// The `dram` HBM model's scheduler: FR-FCFS over the pending requests of a pseudo-channel
// (hw/memory/hbm_dram.h states the rules; hbm_dram_queue.h keeps the requests in order).
#include <algorithm>

#include "hw/memory/hbm_dram.h"

namespace stepsim {

uint64_t HbmDram::decide_one(uint32_t pc_id) {
  PseudoChannel& pc = pcs_[pc_id];
  // The controller picks when its data bus frees, or when the oldest request arrives.
  const uint64_t decision = std::max(pc.data_free, pc.queue.oldest().arrival);
  // Refreshes due by then close the rows first.
  refresh_due(pc, decision);
  // FR-FCFS over the requests in the queue at that cycle: the oldest row hit, else the
  // request whose column command can issue first (first ready), else the oldest.
  const auto row_hit = [&pc](uint32_t bank, uint32_t row) {
    const Bank& b = pc.banks[bank];
    return b.open && b.row == row;
  };
  // Without a row hit, the candidates of one bank and direction differ only in arrival, and a
  // request's commands are non-decreasing in its arrival: only the oldest of them can be first.
  ++ready_scan_;
  const auto ready = [this, &pc](const DramRequest& q) {
    uint64_t& seen = ready_seen_[2 * q.bank + q.write];
    if (seen == ready_scan_) return UINT64_MAX;
    seen = ready_scan_;
    return plan(pc, q).col;
  };
  const DramRequest r = pc.queue.take(pc.queue.pick(decision, p_.dram_queue_depth, row_hit, ready, ready_floor(pc)));
  const Timed t = time_request(pc, r);
  account_served(r, pc_id, t);
  return r.owner;
}

}  // namespace stepsim
