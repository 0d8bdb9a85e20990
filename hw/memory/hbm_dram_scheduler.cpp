// The `dram` HBM model's scheduler: FR-FCFS over the pending requests of a pseudo-channel
// (hw/memory/hbm_dram.h states the rules; hbm_dram_queue.h keeps the requests in order).
#include <algorithm>

#include "hw/memory/hbm_dram.h"

namespace stepsim {

uint64_t HbmDram::decide_one(uint32_t pc_id) {
  PseudoChannel& pc = pcs_[pc_id];
  // The controller picks when its data bus frees, or when the oldest request arrives.
  const uint64_t decision = std::max(pc.data_free, pc.queue.oldest().arrival);
  note_queue(pc.queue.size());
  // Refreshes due by then close the rows first.
  refresh_due(pc, decision);
  // FR-FCFS over the requests in the queue at that cycle: the oldest row hit, else the
  // request whose column command can issue first (first ready), else the oldest.
  // The direction served (write_policy drain); fcfs serves both.
  const bool drain = drain_writes_, writes = drain && serve_writes(pc);
  const auto row_hit = [&pc, drain, writes](uint32_t bank, uint32_t row, bool write) {
    const Bank& b = pc.banks[bank];
    return b.open && b.row == row && (!drain || write == writes);
  };
  // Without a row hit, the candidates of one bank and direction differ only in arrival, and a
  // request's commands are non-decreasing in its arrival: only the oldest of them can be first.
  ++ready_scan_;
  const auto ready = [this, &pc, drain, writes](const DramRequest& q) {
    if (drain && q.write != writes) return UINT64_MAX;
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

bool HbmDram::serve_writes(PseudoChannel& pc) {
  const uint64_t writes = pc.queue.writes(), reads = pc.queue.size() - writes;
  const double depth = p_.dram_queue_depth;
  const bool before = pc.write_mode;
  if (!pc.write_mode && (double(writes) > p_.write_high_watermark * depth || (reads == 0 && writes > 0)))
    pc.write_mode = true;
  else if (pc.write_mode && (writes == 0 || (double(writes) < p_.write_low_watermark * depth && reads > 0)))
    pc.write_mode = false;
  if (pc.write_mode != before) pc.queue.candidates_changed();
  return pc.write_mode;
}

void HbmDram::note_queue(uint64_t pending) {
  HbmDramStats& d = dram_stats_;
  ++d.decisions;
  d.queued_sum += std::min<uint64_t>(pending, p_.dram_queue_depth);
  if (pending >= p_.dram_queue_depth) ++d.queue_full_decisions;
  d.max_pending = std::max(d.max_pending, pending);
}

}  // namespace stepsim
