// The `dram` HBM model: parameters, address mapping, the interface calls and the statistics
// (hw/memory/hbm_dram.h).
#include "hw/memory/hbm_dram.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace stepsim {

namespace {

// Field ids of hbm.mapping_order.
enum Field : uint8_t { kRow, kBank, kRank, kColumn, kChannel };

// ceil(x), with a tolerance that keeps an exact product or quotient (7 x 1.5, 10 / 0.625)
// from rounding up through floating-point error.
uint64_t ceil_tolerant(double x) { return uint64_t(std::ceil(x - 1e-9)); }

void validate_dram(const HbmParams& p) {
  p.validate();
  check_hbm_mapping_order(p.mapping_order);
  check_hbm_page_policy(p.page_policy);
  check_hbm_refresh(p.refresh);
  check_hbm_write_policy(p.write_policy);
  if (!(p.write_low_watermark >= 0 && p.write_low_watermark <= p.write_high_watermark &&
        p.write_high_watermark <= 1))
    throw std::invalid_argument("the write watermarks need 0 <= hbm.write_low_watermark (" +
                                std::to_string(p.write_low_watermark) + ") <= hbm.write_high_watermark (" +
                                std::to_string(p.write_high_watermark) + ") <= 1");
  if (p.dram_row_bytes < p.request_bytes || p.dram_row_bytes % p.request_bytes != 0)
    throw std::invalid_argument("hbm.dram.row_bytes (" + std::to_string(p.dram_row_bytes) +
                                ") must be a multiple of hbm.request_bytes (" + std::to_string(p.request_bytes) + ")");
  if (p.dram_pseudo_channels == 0 || p.dram_bank_groups == 0 || p.dram_banks_per_group == 0 || p.dram_rows == 0 ||
      p.dram_queue_depth == 0)
    throw std::invalid_argument("the dram model needs >= 1 pseudo-channel, bank group, bank, row and queue entry");
  if (!(p.dram_clock_ratio > 0)) throw std::invalid_argument("the DRAM clock ratio clock_ghz x hbm.dram.tCK_ps / 1000 must be > 0");
  if (p.dram_tBURST == 0) throw std::invalid_argument("hbm.dram.tBURST must be >= 1");
}

}  // namespace

DramTiming DramTiming::from(const HbmParams& p) {
  DramTiming t;
  t.burst = p.dram_tBURST;
  t.cl = p.dram_tCL;
  t.cwl = p.dram_tCWL;
  t.rcd = p.dram_tRCD;
  t.rp = p.dram_tRP;
  t.ras = p.dram_tRAS;
  t.rc = p.dram_tRC;
  t.wr = p.dram_tWR;
  t.rtp = p.dram_tRTP;
  t.ccd_s = p.dram_tCCD_S;
  t.ccd_l = p.dram_tCCD_L;
  t.rrd_s = p.dram_tRRD_S;
  t.rrd_l = p.dram_tRRD_L;
  t.wtr_s = p.dram_tWTR_S;
  t.wtr_l = p.dram_tWTR_L;
  t.faw = p.dram_tFAW;
  t.rfc = p.dram_tRFC;
  t.refi = p.dram_tREFI;
  t.rfcsb = p.dram_tRFCsb;
  t.rrefd = p.dram_tRREFD;
  const uint64_t turnaround = t.cl + t.burst + 2;
  t.rtw = turnaround > t.cwl ? turnaround - t.cwl : 0;
  return t;
}

HbmDram::HbmDram(const HbmParams& params) : p_(params) {
  validate_dram(p_);
  t_ = DramTiming::from(p_);
  closed_page_ = p_.page_policy == "closed";
  per_bank_refresh_ = p_.refresh == "per_bank";
  drain_writes_ = p_.write_policy == "drain";
  same_clock_ = p_.dram_clock_ratio == 1.0;
  sizes_[kRow] = p_.dram_rows;
  sizes_[kBank] = uint64_t(p_.dram_bank_groups) * p_.dram_banks_per_group;
  sizes_[kRank] = p_.dram_pseudo_channels;
  sizes_[kColumn] = p_.dram_row_bytes / p_.request_bytes;
  sizes_[kChannel] = p_.channels;
  static const char* const kNames[] = {"Ro", "Ba", "Ra", "Co", "Ch"};
  for (size_t i = 0; i < 5; ++i) {  // order lists most significant first; fields_ least first
    const std::string name = p_.mapping_order.substr(2 * (4 - i), 2);
    for (uint8_t f = 0; f < 5; ++f)
      if (name == kNames[f]) fields_[i] = f;
  }
  power_of_two_fields_ = true;
  for (uint8_t f = 0; f < 5; ++f) {
    power_of_two_fields_ = power_of_two_fields_ && (sizes_[f] & (sizes_[f] - 1)) == 0;
    while ((uint64_t(1) << shifts_[f]) < sizes_[f]) ++shifts_[f];
  }
  // Per-bank refresh spreads the tREFI of every bank over its banks (at least a tCK apart).
  refresh_interval_ = per_bank_refresh_ && t_.refi ? std::max<uint64_t>(1, t_.refi / sizes_[kBank]) : t_.refi;
  pcs_.resize(size_t(p_.channels) * p_.dram_pseudo_channels);
  for (PseudoChannel& pc : pcs_) {
    pc.banks.resize(sizes_[kBank]);
    pc.group_act_ok.assign(p_.dram_bank_groups, 0);
    pc.group_rd_ok.assign(p_.dram_bank_groups, 0);
    pc.group_wr_ok.assign(p_.dram_bank_groups, 0);
    pc.next_refresh = refresh_interval_ ? refresh_interval_ : UINT64_MAX;
  }
  slot_of_.assign(pcs_.size(), -1);
  dram_stats_.queue_depth = p_.dram_queue_depth;
  ready_seen_.assign(2 * sizes_[kBank], 0);
  stats_.requests_per_channel.assign(p_.channels, 0);
  stats_.busy_cycles_per_channel.assign(p_.channels, 0);
  busy_tck_per_channel_.assign(p_.channels, 0);
}

uint64_t HbmDram::to_tck(uint64_t cycle) const {
  return same_clock_ ? cycle : ceil_tolerant(double(cycle) / p_.dram_clock_ratio);
}

uint64_t HbmDram::to_cycle(uint64_t tck) const {
  return same_clock_ ? tck : ceil_tolerant(double(tck) * p_.dram_clock_ratio);
}

const HbmStats& HbmDram::stats() const {
  for (size_t c = 0; c < busy_tck_per_channel_.size(); ++c)
    stats_.busy_cycles_per_channel[c] = to_cycle(busy_tck_per_channel_[c]);
  stats_.dram = dram_stats_;
  stats_.dram->refresh_stall_cycles = to_cycle(dram_stats_.refresh_stall_cycles);
  return stats_;
}

DramAddress HbmDram::decode(uint64_t addr) const {
  uint64_t x = addr / p_.request_bytes;
  uint64_t v[5] = {};
  if (power_of_two_fields_) {  // the usual organisations: shifts instead of divisions
    for (uint8_t f : fields_) {
      v[f] = x & (sizes_[f] - 1);
      x >>= shifts_[f];
    }
  } else {
    for (uint8_t f : fields_) {  // least significant first; the top field wraps (aliasing)
      v[f] = x % sizes_[f];
      x /= sizes_[f];
    }
  }
  DramAddress a;
  a.channel = uint32_t(v[kChannel]);
  a.pseudo_channel = uint32_t(v[kRank]);
  a.bank = uint32_t(v[kBank]);
  a.row = uint32_t(v[kRow]);
  a.column = uint32_t(v[kColumn]);
  return a;
}

bool HbmDram::set_arrival_bound(uint64_t) {
  if (stats_.requests() > 0) throw std::logic_error("set_arrival_bound after requests were served");
  return false;
}

void HbmDram::note_call(uint64_t issue_cycle, uint32_t initiator) {
  if (issue_cycle > last_issue_ || (issue_cycle == last_issue_ && initiator > last_initiator_)) {
    last_issue_ = issue_cycle;
    last_initiator_ = initiator;
  }
}

// Registers the burst's requests in their pseudo-channels' queues; returns its handle.
uint64_t HbmDram::enqueue(const Burst& b, BurstResult* info) {
  note_call(b.issue_cycle, b.initiator);
  const uint64_t handle = next_handle_++;
  Owner& o = owners_[handle];
  const uint64_t per_row = b.requests_per_row(p_.request_bytes), n = b.requests(p_.request_bytes);
  o.result.requests = n;
  o.result.bytes = n * p_.request_bytes;
  o.result.completion_cycle = b.issue_cycle;
  o.result.last_issue_cycle = n ? b.request_issue_cycle(n - 1) : b.issue_cycle;
  o.left = n;
  o.initiator = b.initiator;
  // Row-major walk; the counters stand for j / per_row, j % per_row and j / dispatch.
  uint64_t row = 0, in_row = 0, arrival = b.issue_cycle + p_.link_latency, in_cycle = 0;
  for (uint64_t j = 0; j < n; ++j) {
    const DramAddress a = decode(b.request_addr(row, in_row, p_.request_bytes));
    if (++in_row == per_row) in_row = 0, ++row;
    DramRequest r;
    r.arrival = to_tck(arrival);
    if (++in_cycle == b.dispatch()) in_cycle = 0, ++arrival;
    r.initiator = b.initiator;
    r.owner = handle;
    r.index = j;
    r.bank = a.bank;
    r.row = a.row;
    r.write = b.write;
    const uint32_t pc = pc_index(a);
    if (slot_of_[pc] < 0) {
      slot_of_[pc] = int32_t(o.pcs.size());
      o.pcs.push_back(pc);
      o.left_in.push_back(0);
    }
    r.slot = uint32_t(slot_of_[pc]);
    ++o.left_in[r.slot];
    pcs_[pc].queue.push(r);
    ++stats_.requests_per_channel[a.channel];
  }
  for (uint32_t pc : o.pcs) slot_of_[pc] = -1;
  (b.write ? stats_.write_requests : stats_.read_requests) += n;
  (b.write ? stats_.bytes_written : stats_.bytes_read) += n * p_.request_bytes;
  if (n) stats_.first_issue_cycle = std::min(stats_.first_issue_cycle, b.issue_cycle);
  if (info) *info = o.result;
  return handle;
}

void HbmDram::settle(uint64_t handle) {
  Owner& o = owners_.at(handle);
  // Pseudo-channels are independent: finish the call's requests one pseudo-channel at a time.
  for (size_t i = 0; i < o.pcs.size(); ++i)
    while (o.left_in[i] > 0) decide_one(o.pcs[i]);
}

void HbmDram::account_served(const DramRequest& r, uint32_t pc, const Timed& t) {
  const uint64_t completion = to_cycle(t.data_end) + p_.link_latency;
  busy_tck_per_channel_[pc / p_.dram_pseudo_channels] += t_.burst;
  stats_.last_completion_cycle = std::max(stats_.last_completion_cycle, completion);
  auto it = owners_.find(r.owner);
  if (it == owners_.end()) return;
  Owner& o = it->second;
  o.result.completion_cycle = std::max(o.result.completion_cycle, completion);
  --o.left;
  --o.left_in[r.slot];
  if (r.index == 0) {
    o.first.start_cycle = to_cycle(t.first_command);
    o.first.completion_cycle = completion;
    o.first.channel = pc / p_.dram_pseudo_channels;
  }
}

Completion HbmDram::serve_request(uint64_t addr, bool write, uint64_t issue_cycle, uint32_t initiator) {
  Burst b;
  b.base = addr;
  b.row_bytes = p_.request_bytes;
  b.write = write;
  b.issue_cycle = issue_cycle;
  b.initiator = initiator;
  const uint64_t h = enqueue(b, nullptr);
  settle(h);
  Completion c = owners_.at(h).first;
  c.issue_cycle = issue_cycle;
  owners_.erase(h);
  return c;
}

BurstResult HbmDram::serve_burst(const Burst& burst) {
  const uint64_t h = enqueue(burst, nullptr);
  settle(h);
  const BurstResult r = owners_.at(h).result;
  owners_.erase(h);
  return r;
}

uint64_t HbmDram::issue_burst(const Burst& burst, BurstResult* info) { return enqueue(burst, info); }

bool HbmDram::try_result(uint64_t handle, uint64_t watermark, BurstResult* out) {
  auto it = owners_.find(handle);
  if (it == owners_.end()) return false;  // unknown, or its result was taken
  const uint64_t last = it->second.result.last_issue_cycle;
  if (watermark < last) return false;
  note_call(watermark, watermark == last ? it->second.initiator : 0);
  settle(handle);
  if (out) *out = owners_.at(handle).result;
  owners_.erase(handle);
  return true;
}

}  // namespace stepsim
