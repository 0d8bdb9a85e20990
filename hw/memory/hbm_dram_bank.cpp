// The `dram` HBM model's command timing on one pseudo-channel: the earliest legal cycle of each
// command of a request and the constraints each command leaves behind (hw/memory/hbm_dram.h).
// The state holds, per command kind and scope (bank, bank group, pseudo-channel), the earliest
// cycle the next such command may issue; issuing a command raises them.
#include <algorithm>

#include "hw/memory/hbm_dram.h"

namespace stepsim {

HbmDram::Commands HbmDram::plan(const PseudoChannel& pc, const DramRequest& r) const {
  const Bank& b = pc.banks[r.bank];
  Commands c;
  if (!(b.open && b.row == r.row)) {
    uint64_t act_from = r.arrival;
    if (b.open) {  // row conflict: close the other row first
      c.pre = std::max(r.arrival, b.pre_ok);
      act_from = c.pre + t_.rp;
    }
    c.act = std::max(earliest_act(pc, r.bank, r.arrival), act_from);
    c.refresh_wait = c.act - std::max(earliest_act(pc, r.bank, r.arrival, false), act_from);
  }
  c.col = earliest_column(pc, r.bank, r.write, r.arrival);
  if (c.act != Commands::kNone) c.col = std::max(c.col, c.act + t_.rcd);
  return c;
}

uint64_t HbmDram::ready_floor(const PseudoChannel& pc) const {
  // Any activate waits for tRRD_S and tFAW; its column command tRCD more; and a column
  // command waits for the data bus of its direction.
  uint64_t act = pc.act_ok;
  if (pc.acts >= 4) act = std::max(act, pc.last_acts[pc.acts % 4] + t_.faw);
  return std::max(act + t_.rcd, std::min(pc.rd_ok, pc.wr_ok));
}

HbmDram::Timed HbmDram::time_request(PseudoChannel& pc, const DramRequest& r) {
  const Commands c = plan(pc, r);
  Bank& b = pc.banks[r.bank];
  if (c.pre != Commands::kNone) {
    precharge(b, c.pre);
    ++dram_stats_.row_conflicts;
  } else if (c.act != Commands::kNone) {
    ++dram_stats_.row_misses;
  } else {
    ++dram_stats_.row_hits;
  }
  if (c.act != Commands::kNone) activate(pc, r.bank, r.row, c.act);
  dram_stats_.refresh_stall_cycles += c.refresh_wait;  // tCK here; cycles at stats()
  column(pc, r.bank, r.write, c.col);
  Timed t;
  t.first_command = std::min({c.pre, c.act, c.col});
  t.data_end = c.col + (r.write ? t_.cwl : t_.cl) + t_.burst;
  if (closed_page_) precharge(b, b.pre_ok);  // auto-precharge at the first legal cycle
  return t;
}

uint64_t HbmDram::earliest_act(const PseudoChannel& pc, uint32_t bank, uint64_t from, bool refresh) const {
  uint64_t t = std::max({from, pc.banks[bank].act_ok, pc.act_ok, pc.group_act_ok[group_of(bank)]});
  if (pc.acts >= 4) t = std::max(t, pc.last_acts[pc.acts % 4] + t_.faw);  // the 4th-last ACT
  return refresh ? std::max({t, pc.refresh_end, pc.banks[bank].refresh_end, pc.act_after_refresh}) : t;
}

void HbmDram::activate(PseudoChannel& pc, uint32_t bank, uint32_t row, uint64_t cycle) {
  Bank& b = pc.banks[bank];
  b.open = true;
  b.row = row;
  b.act_ok = std::max(b.act_ok, cycle + t_.rc);
  b.pre_ok = std::max(b.pre_ok, cycle + t_.ras);
  b.col_ok = cycle + t_.rcd;
  pc.act_ok = std::max(pc.act_ok, cycle + t_.rrd_s);
  uint64_t& g = pc.group_act_ok[group_of(bank)];
  g = std::max(g, cycle + t_.rrd_l);
  pc.last_acts[pc.acts % 4] = cycle;
  ++pc.acts;
  ++dram_stats_.activates;
  pc.queue.row_opened(bank, row);
}

void HbmDram::precharge(Bank& b, uint64_t cycle) {
  b.open = false;
  b.act_ok = std::max(b.act_ok, cycle + t_.rp);
}

uint64_t HbmDram::earliest_column(const PseudoChannel& pc, uint32_t bank, bool write, uint64_t from) const {
  const uint32_t g = group_of(bank);
  const uint64_t scope = write ? std::max(pc.wr_ok, pc.group_wr_ok[g]) : std::max(pc.rd_ok, pc.group_rd_ok[g]);
  return std::max({from, pc.banks[bank].col_ok, scope});
}

void HbmDram::column(PseudoChannel& pc, uint32_t bank, bool write, uint64_t cycle) {
  Bank& b = pc.banks[bank];
  const uint32_t g = group_of(bank);
  auto raise = [](uint64_t& v, uint64_t to) { v = std::max(v, to); };
  // Same direction: the data bus (tBURST) and the column-to-column gaps (tCCD).
  uint64_t& same = write ? pc.wr_ok : pc.rd_ok;
  raise(same, cycle + std::max(t_.ccd_s, t_.burst));
  raise(write ? pc.group_wr_ok[g] : pc.group_rd_ok[g], cycle + std::max(t_.ccd_l, t_.burst));
  if (write) {
    // Write to read: the write data, then tWTR (longer within the bank group).
    const uint64_t data_end = cycle + t_.cwl + t_.burst;
    raise(pc.rd_ok, data_end + t_.wtr_s);
    raise(pc.group_rd_ok[g], data_end + t_.wtr_l);
    raise(b.pre_ok, data_end + t_.wr);
  } else {
    raise(pc.wr_ok, cycle + t_.rtw);
    raise(b.pre_ok, cycle + t_.rtp);
  }
  raise(pc.data_free, cycle + t_.burst);
}

void HbmDram::refresh_due(PseudoChannel& pc, uint64_t cycle) {
  if (per_bank_refresh_) {
    refresh_banks_due(pc, cycle);
    return;
  }
  while (pc.next_refresh <= cycle) {
    refresh_at(pc, pc.next_refresh);
    pc.next_refresh += t_.refi;
    // A long idle stretch: the refreshes in it find the banks closed and idle, and each one
    // only delays activates until its end; count them at once.
    if (pc.next_refresh + t_.refi <= cycle && t_.rfc < t_.refi) {
      const uint64_t skip = (cycle - pc.next_refresh) / t_.refi;  // leaves the last due one
      if (skip == 0) continue;
      const uint64_t last = pc.next_refresh + (skip - 1) * t_.refi;
      pc.refresh_end = std::max(pc.refresh_end, last + t_.rfc);
      dram_stats_.refreshes += skip;
      pc.next_refresh = last + t_.refi;
    }
  }
}

void HbmDram::refresh_at(PseudoChannel& pc, uint64_t due) {
  uint64_t start = std::max(due, pc.refresh_end);
  for (Bank& b : pc.banks) {
    if (b.open) precharge(b, std::max(due, b.pre_ok));
    start = std::max(start, b.act_ok);  // tRP after a precharge, tRC after an activate
  }
  pc.refresh_end = start + t_.rfc;  // all banks
  ++dram_stats_.refreshes;
}

void HbmDram::refresh_banks_due(PseudoChannel& pc, uint64_t cycle) {
  const uint64_t banks = pc.banks.size(), round = banks * refresh_interval_;
  while (pc.next_refresh <= cycle) {
    // A long idle stretch: after one round every bank is closed; the rounds before the last
    // one due only leave ends (tRFCsb, tRREFD) that the last round's supersede. Count them.
    const uint64_t due_count = (cycle - pc.next_refresh) / refresh_interval_ + 1;
    if (pc.refresh_bank == 0 && due_count >= 3 * banks && t_.rfcsb < round && t_.rrefd <= refresh_interval_) {
      for (uint64_t k = 0; k < banks; ++k, pc.next_refresh += refresh_interval_) refresh_bank_at(pc, pc.next_refresh);
      const uint64_t skipped = (due_count - 2 * banks) / banks * banks;
      dram_stats_.refreshes += skipped;
      pc.next_refresh += skipped * refresh_interval_;
      continue;
    }
    refresh_bank_at(pc, pc.next_refresh);
    pc.next_refresh += refresh_interval_;
  }
}

void HbmDram::refresh_bank_at(PseudoChannel& pc, uint64_t due) {
  Bank& b = pc.banks[pc.refresh_bank];
  if (b.open) precharge(b, std::max(due, b.pre_ok));
  // After tRP (a precharge) or tRC (an activate), its last refresh, and tRREFD after the last
  // refresh of another bank.
  const uint64_t start = std::max({due, b.act_ok, b.refresh_end, pc.act_after_refresh});
  b.refresh_end = start + t_.rfcsb;
  pc.act_after_refresh = start + t_.rrefd;
  pc.refresh_bank = uint32_t((pc.refresh_bank + 1) % pc.banks.size());
  ++dram_stats_.refreshes;
}

}  // namespace stepsim
