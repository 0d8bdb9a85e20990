#include "hw/presets/hbm_params.h"

#include <sstream>
#include <stdexcept>

namespace stepsim {

const char* hbm_mapping_name(HbmMapping m) {
  switch (m) {
    case HbmMapping::RoundRobin:
      return "round_robin";
    case HbmMapping::AddressInterleave:
      return "address_interleave";
  }
  return "?";
}

HbmMapping parse_hbm_mapping(const std::string& s) {
  if (s == "round_robin") return HbmMapping::RoundRobin;
  if (s == "address_interleave") return HbmMapping::AddressInterleave;
  throw std::invalid_argument("unknown HBM mapping '" + s + "' (expected round_robin or address_interleave)");
}

void check_hbm_mapping_order(const std::string& order) {
  static const char* const kFields[] = {"Ro", "Ba", "Ra", "Co", "Ch"};
  bool ok = order.size() == 10;
  for (const char* f : kFields) {
    size_t at = order.find(f);
    ok = ok && at != std::string::npos && at % 2 == 0 && order.find(f, at + 2) == std::string::npos;
  }
  if (!ok)
    throw std::invalid_argument("expected the fields Ro, Ba, Ra, Co and Ch once each, most significant first "
                                "(e.g. RoBaRaCoCh), got '" + order + "'");
}

void check_hbm_page_policy(const std::string& policy) {
  if (policy != "open" && policy != "closed")
    throw std::invalid_argument("expected open or closed, got '" + policy + "'");
}

void check_hbm_refresh(const std::string& refresh) {
  if (refresh != "all_bank" && refresh != "per_bank")
    throw std::invalid_argument("expected all_bank or per_bank, got '" + refresh + "'");
}

void check_hbm_write_policy(const std::string& policy) {
  if (policy != "drain" && policy != "fcfs") throw std::invalid_argument("expected drain or fcfs, got '" + policy + "'");
}

void HbmParams::validate() const {
  if (channels == 0) throw std::invalid_argument("HBM channels must be >= 1");
  if (request_bytes == 0) throw std::invalid_argument("HBM request_bytes must be >= 1");
  if (init_interval == 0) throw std::invalid_argument("HBM init_interval must be >= 1 cycle");
}

double HbmParams::peak_bytes_per_cycle() const {
  if (model == "dram")
    return double(channels) * dram_pseudo_channels * request_bytes / (double(dram_tBURST) * dram_clock_ratio);
  return double(channels) * request_bytes / double(init_interval);
}

std::string HbmParams::describe() const {
  std::ostringstream os;
  os << "HBM " << channels << " ch x " << request_bytes << " B / II " << init_interval << " (peak "
     << peak_bytes_per_cycle() << " B/cycle), latency " << latency << ", startup " << startup
     << (startup_every_request ? " (every request)" : " (cold requests only)") << ", link " << link_latency
     << ", mapping " << hbm_mapping_name(mapping) << ", idle round trip " << idle_latency() << " cycles";
  return os.str();
}

}  // namespace stepsim
