// The DRAM section of a run's report (sim/report/dram_report.h).
#include "sim/report/dram_report.h"

#include "sim/report/text.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace stepsim {

using nlohmann::json;

namespace {

double share(uint64_t part, uint64_t whole) { return whole ? double(part) / double(whole) : 0.0; }

json channel_json(uint64_t requests, uint64_t busy_cycles, uint64_t cycles, uint32_t request_bytes) {
  json c;
  c["requests"] = requests;
  c["bytes"] = requests * request_bytes;
  c["bytes_per_cycle"] = share(requests * request_bytes, cycles);
  c["busy_fraction"] = share(busy_cycles, cycles);  // data bus busy, over the run
  return c;
}

}  // namespace

void add_dram_report(json& j, const SimResult& r, const HardwareParams& hw) {
  if (!r.offchip_dram) return;
  const HbmDramStats& d = *r.offchip_dram;
  json& o = j["offchip"]["dram"];
  o["requests"] = d.requests();
  o["row_hits"] = d.row_hits;
  o["row_misses"] = d.row_misses;
  o["row_conflicts"] = d.row_conflicts;
  o["row_hit_rate"] = d.row_hit_rate();
  o["activates"] = d.activates;
  o["refreshes"] = d.refreshes;
  o["refresh_stall_cycles"] = d.refresh_stall_cycles;
  o["mapping_order"] = hw.hbm.mapping_order;
  o["page_policy"] = hw.hbm.page_policy;
  json& q = o["queue"];
  q["depth"] = d.queue_depth;
  q["mean_occupancy"] = d.mean_queue_occupancy();
  q["full_fraction"] = share(d.queue_full_decisions, d.decisions);
  q["max_pending"] = d.max_pending;
  json channels = json::array();
  for (size_t c = 0; c < r.offchip_requests_per_channel.size(); ++c)
    channels.push_back(channel_json(r.offchip_requests_per_channel[c], r.offchip_busy_cycles_per_channel.at(c),
                                    r.cycles, hw.hbm.request_bytes));
  o["channels"] = std::move(channels);
}

void print_dram_summary(const json& j, std::ostream& out) {
  if (!j["offchip"].contains("dram")) return;
  const json& d = j["offchip"]["dram"];
  const uint64_t n = d["requests"].get<uint64_t>();
  out << "  off-chip rows              hits " << percent_text(share(d["row_hits"].get<uint64_t>(), n)) << ", misses "
      << percent_text(share(d["row_misses"].get<uint64_t>(), n)) << ", conflicts "
      << percent_text(share(d["row_conflicts"].get<uint64_t>(), n)) << " of " << n << " requests ("
      << d["mapping_order"].get<std::string>() << ", " << d["page_policy"].get<std::string>() << " page); "
      << d["activates"].get<uint64_t>() << " activates, " << d["refreshes"].get<uint64_t>()
      << " refreshes stalling activates " << d["refresh_stall_cycles"].get<uint64_t>() << " cycles\n";
  const json& q = d["queue"];
  double lo = 0, hi = 0;
  bool first = true;
  for (const json& c : d["channels"]) {
    const double b = c["bytes_per_cycle"].get<double>();
    lo = first ? b : std::min(lo, b);
    hi = first ? b : std::max(hi, b);
    first = false;
  }
  // Formatted apart, so that the caller's stream keeps its own precision.
  std::ostringstream line;
  line << std::fixed << std::setprecision(1) << "  off-chip controller        queue of " << q["depth"].get<uint64_t>()
       << ": " << q["mean_occupancy"].get<double>() << " requests on average, full at "
       << percent_text(q["full_fraction"].get<double>()) << " of decisions; channels " << lo << " to " << hi
       << " B/cycle\n";
  out << line.str();
}

bool row_miss_bound(const SimResult& r) {
  return r.offchip_dram && r.offchip_dram->requests() > 0 &&
         r.offchip_dram->row_opening_rate() >= kRowMissBottleneckShare;
}

std::string row_miss_text(const SimResult& r, const HardwareParams& hw) {
  std::ostringstream s;
  s << "off-chip row misses: " << percent_text(r.offchip_dram ? r.offchip_dram->row_opening_rate() : 0.0)
    << " of the requests opened a row (hbm.mapping_order=" << hw.hbm.mapping_order
    << ", hbm.page_policy=" << hw.hbm.page_policy << ")";
  return s.str();
}

}  // namespace stepsim
