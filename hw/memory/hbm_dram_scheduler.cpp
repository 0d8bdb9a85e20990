// The `dram` HBM model's scheduler: FR-FCFS over the pending requests of a pseudo-channel
// (hw/memory/hbm_dram.h states the rules; hbm_dram_queue.h keeps the requests in order).
#include <algorithm>

#include "hw/memory/hbm_dram.h"

namespace stepsim {

uint64_t HbmDram::decide_one(uint32_t pc_id) {
  PseudoChannel& pc = pcs_[pc_id];
  // The controller picks when its data bus frees, or when the oldest request arrives.
  const uint64_t decision = std::max(pc.data_free, pc.queue.oldest().arrival);
  // FR-FCFS over the requests in the queue at that cycle: the oldest row hit, else the oldest.
  const auto row_hit = [&pc](uint32_t bank, uint32_t row) {
    const Bank& b = pc.banks[bank];
    return b.open && b.row == row;
  };
  const DramRequest r = pc.queue.take(pc.queue.pick(decision, p_.dram_queue_depth, row_hit));
  const Timed t = time_request(pc, r, decision);
  account_served(r, pc_id, t);
  return r.owner;
}

}  // namespace stepsim
