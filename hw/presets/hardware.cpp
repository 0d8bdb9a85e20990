#include "hw/presets/hardware.h"

#include "hw/presets/input_file.h"
#include "hw/presets/strict_yaml.h"
#include "hw/stream/number_text.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <type_traits>

namespace stepsim {

namespace {

struct Field {
  HardwareParams::FieldDoc doc;
  std::function<void(HardwareParams&, const std::string&)> set;
  std::function<std::string(const HardwareParams&)> get;
};

// A whole decimal number in min..max (no sign, no fraction, nothing cut to the field's width).
uint64_t to_u64(const std::string& key, const std::string& v, uint64_t min, uint64_t max) {
  int64_t x = 0;
  if (!parse_int64(v, x) || x < 0 || uint64_t(x) < min || uint64_t(x) > max)
    throw std::invalid_argument("hardware parameter '" + key + "': expected an integer in " + std::to_string(min) +
                                ".." + std::to_string(max) + ", got '" + v + "'");
  return uint64_t(x);
}
double to_f64(const std::string& key, const std::string& v) {
  try {
    size_t pos = 0;
    double x = std::stod(v, &pos);
    if (pos != v.size() || !(x > 0) || !(x <= 1e6)) throw std::invalid_argument("");
    return x;
  } catch (const std::exception&) {
    throw std::invalid_argument("hardware parameter '" + key + "': expected a number in (0, 1e6], got '" + v + "'");
  }
}
bool to_bool(const std::string& key, const std::string& v) {
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  throw std::invalid_argument("hardware parameter '" + key + "': expected true or false, got '" + v + "'");
}

template <typename T>
Field uint_field(const char* key, const char* unit, const char* doc, T HardwareParams::*m, uint64_t min, uint64_t max) {
  static_assert(std::is_unsigned_v<T>);
  if (max > std::numeric_limits<T>::max()) throw std::logic_error(std::string(key) + ": range exceeds its type");
  return Field{{key, unit, doc, min, max},
               [=](HardwareParams& h, const std::string& v) { h.*m = T(to_u64(key, v, min, max)); },
               [=](const HardwareParams& h) { return std::to_string(h.*m); }};
}
template <typename T>
Field hbm_uint(const char* key, const char* unit, const char* doc, T HbmParams::*m, uint64_t min, uint64_t max) {
  static_assert(std::is_unsigned_v<T>);
  if (max > std::numeric_limits<T>::max()) throw std::logic_error(std::string(key) + ": range exceeds its type");
  return Field{{key, unit, doc, min, max},
               [=](HardwareParams& h, const std::string& v) { h.hbm.*m = T(to_u64(key, v, min, max)); },
               [=](const HardwareParams& h) { return std::to_string(h.hbm.*m); }};
}

const std::vector<Field>& field_table() {
  static const std::vector<Field> t = {
      {{"name", "-", "preset name"},
       [](HardwareParams& h, const std::string& v) { h.name = v; },
       [](const HardwareParams& h) { return h.name; }},
      {{"clock_ghz", "GHz", "clock used only to convert cycles to seconds in reports"},
       [](HardwareParams& h, const std::string& v) { h.clock_ghz = to_f64("clock_ghz", v); },
       [](const HardwareParams& h) { return std::to_string(h.clock_ghz); }},
      uint_field("onchip_bw", "B/cycle", "bandwidth of one on-chip memory unit (roofline memory terms)",
                 &HardwareParams::onchip_bw, 1, kMaxBandwidth),
      uint_field("compute_bw", "FLOPs/cycle", "default compute bandwidth of a higher-order node",
                 &HardwareParams::compute_bw, 1, kMaxBandwidth),
      uint_field("pcu_flops", "FLOPs/cycle", "compute bandwidth of one compute unit (PCU)", &HardwareParams::pcu_flops,
                 1, kMaxBandwidth),
      uint_field("pmu_capacity", "B", "capacity of one on-chip memory unit (PMU)", &HardwareParams::pmu_capacity, 1,
                 kMaxBandwidth),
      uint_field("num_pcus", "units", "compute units on the fabric", &HardwareParams::num_pcus, 0, kMaxUnits),
      uint_field("num_pmus", "units", "memory units on the fabric", &HardwareParams::num_pmus, 0, kMaxUnits),
      uint_field("fifo_depth", "beats", "default depth of every channel", &HardwareParams::fifo_depth, 1,
                 kMaxFifoDepth),
      uint_field("send_latency", "cycles", "cycles from send to visibility on a channel", &HardwareParams::send_latency,
                 0, kMaxCycles),
      uint_field("response_latency", "cycles", "cycles before a dequeued slot can be refilled",
                 &HardwareParams::response_latency, 0, kMaxCycles),
      uint_field("shape_op_latency", "cycles", "cycles a shape operator spends per beat",
                 &HardwareParams::shape_op_latency, 0, kMaxCycles),
      uint_field("routing_switch_cycles", "cycles", "cycles a routing operator spends to switch port",
                 &HardwareParams::routing_switch_cycles, 0, kMaxCycles),
      uint_field("par_dispatch", "requests/cycle", "off-chip requests one load/store issues per cycle",
                 &HardwareParams::par_dispatch, 1, kMaxParDispatch),
      {{"offchip_one_tile_in_flight", "bool",
        "reference quirk: an off-chip load/store issues its next tile only after the previous one completed; "
        "false pipelines the address generator (next tile issued the cycle after the last request)"},
       [](HardwareParams& h, const std::string& v) {
         h.offchip_one_tile_in_flight = to_bool("offchip_one_tile_in_flight", v);
       },
       [](const HardwareParams& h) { return std::string(h.offchip_one_tile_in_flight ? "true" : "false"); }},
      uint_field("ag_max_outstanding", "requests",
                 "requests one off-chip load/store keeps in flight when offchip_one_tile_in_flight is false: a "
                 "store waits for its oldest writes beyond it, and a load's tiles in flight wait in its address "
                 "generator (floor(ag_max_outstanding / requests per tile) of them) instead of in its output "
                 "channel; 0 = no limit for stores, and a load's output channel holds its tiles in flight",
                 &HardwareParams::ag_max_outstanding, 0, kMaxFifoDepth),
      uint_field("load_buffer_tiles", "tiles",
                 "tiles an off-chip load's memory unit holds for its consumer: the load's output channel is "
                 "that deep (at least fifo_depth, at most pmu_capacity / tile bytes, unless the node sets "
                 "`depth`); 0 = the output channel is a FIFO of fifo_depth like any other",
                 &HardwareParams::load_buffer_tiles, 0, kMaxFifoDepth),
      uint_field("ag_load_pipeline_cycles", "cycles",
                 "cycles an off-chip load's tile takes from its last response to its output channel beyond the "
                 "memory's completion (the address generator unit's request and output registers: 2; 0: the "
                 "reference)",
                 &HardwareParams::ag_load_pipeline_cycles, 0, kMaxCycles),
      uint_field("ag_store_pipeline_cycles", "cycles",
                 "cycles an off-chip store's acknowledgement (RandomOffChipStore's ack, the end of a store) comes "
                 "after its last write completes (the address generator unit's input, request, response and "
                 "output registers: 4; 0: the reference)",
                 &HardwareParams::ag_store_pipeline_cycles, 0, kMaxCycles),
      {{"input_register", "bool",
        "an operator takes its input beats into an input register as a firing starts (Map, Accum, Scan, "
        "FlatMap, Reassemble, RandomOffChipLoad/Store), so their channel slots free then, as in the fabric's "
        "units; false frees them when the firing ends (the reference)"},
       [](HardwareParams& h, const std::string& v) { h.input_register = to_bool("input_register", v); },
       [](const HardwareParams& h) { return std::string(h.input_register ? "true" : "false"); }},
      {{"loads_sum_inputs", "bool", "n-ary Map adds its memory-unit loads instead of taking the max"},
       [](HardwareParams& h, const std::string& v) { h.loads_sum_inputs = to_bool("loads_sum_inputs", v); },
       [](const HardwareParams& h) { return std::string(h.loads_sum_inputs ? "true" : "false"); }},
      hbm_uint("hbm.channels", "channels", "independent HBM channels", &HbmParams::channels, 1, kMaxHbmChannels),
      hbm_uint("hbm.request_bytes", "B", "bytes per off-chip request", &HbmParams::request_bytes, 1, kMaxFifoDepth),
      hbm_uint("hbm.init_interval", "cycles", "cycles between requests accepted by one channel",
               &HbmParams::init_interval, 1, kMaxCycles),
      hbm_uint("hbm.latency", "cycles", "cycles from service start to response", &HbmParams::latency, 0, kMaxCycles),
      hbm_uint("hbm.startup", "cycles", "start-up cycles added before a response", &HbmParams::startup, 0, kMaxCycles),
      {{"hbm.startup_every_request", "bool", "every request pays start-up (reference quirk) or only the first"},
       [](HardwareParams& h, const std::string& v) {
         h.hbm.startup_every_request = to_bool("hbm.startup_every_request", v);
       },
       [](const HardwareParams& h) { return std::string(h.hbm.startup_every_request ? "true" : "false"); }},
      hbm_uint("hbm.link_latency", "cycles", "cycles between an initiator and the HBM, each way",
               &HbmParams::link_latency, 0, kMaxCycles),
      {{"hbm.mapping", "-", "request-to-channel mapping: round_robin or address_interleave"},
       [](HardwareParams& h, const std::string& v) {
         try {
           h.hbm.mapping = parse_hbm_mapping(v);
         } catch (const std::exception& e) {
           throw std::invalid_argument(std::string("hardware parameter 'hbm.mapping': ") + e.what());
         }
       },
       [](const HardwareParams& h) { return std::string(hbm_mapping_name(h.hbm.mapping)); }},
      {{"hbm.mode", "-", "off-chip timing path: fast (one transaction per tile) or request (per request)"},
       [](HardwareParams& h, const std::string& v) {
         if (v != "fast" && v != "request")
           throw std::invalid_argument("hardware parameter 'hbm.mode': expected fast or request, got '" + v + "'");
         h.hbm_mode = v;
       },
       [](const HardwareParams& h) { return h.hbm_mode; }},
      {{"onchip_requirement_model", "-",
        "formulas of the reported on-chip memory requirement: paper (§3.4 table) or artifact (its default "
        "mode=1); hw/fabric/onchip_requirement.h"},
       [](HardwareParams& h, const std::string& v) {
         const std::vector<std::string>& known = onchip_requirement_models();
         if (std::find(known.begin(), known.end(), v) == known.end()) {
           std::string names;
           for (const std::string& n : known) names += (names.empty() ? "" : ", ") + n;
           throw std::invalid_argument(
               "hardware parameter 'onchip_requirement_model': unknown on-chip requirement "
               "model '" +
               v + "'; known: " + names);
         }
         h.onchip_requirement_model = v;
       },
       [](const HardwareParams& h) { return h.onchip_requirement_model; }},
  };
  return t;
}

std::string known_keys() {
  std::string s;
  for (const Field& f : field_table()) s += (s.empty() ? "" : ", ") + f.doc.key;
  return s;
}

void apply_yaml(HardwareParams& h, const YAML::Node& node, const std::string& prefix, const std::string& file) {
  if (!node.IsMap())
    throw std::invalid_argument(file + ": expected a mapping" + (prefix.empty() ? "" : " under '" + prefix + "'"));
  for (auto it = node.begin(); it != node.end(); ++it) {
    std::string key = prefix + scalar(it->first, file, "parameter name");
    if (it->second.IsMap()) {
      apply_yaml(h, it->second, key + ".", file);
      continue;
    }
    try {
      h.set(key, scalar(it->second, file, "parameter '" + key + "'"));
    } catch (const std::invalid_argument& e) {
      const std::string msg = e.what();
      throw std::invalid_argument(msg.rfind(file, 0) == 0 ? msg : at(file, it->second) + ": " + msg);
    }
  }
}

std::string presets_dir() { return std::string(STEPSIM_SOURCE_DIR) + "/hw/presets"; }

}  // namespace

const std::vector<std::string>& onchip_requirement_models() {
  static const std::vector<std::string> names = {"artifact", "paper"};
  return names;
}

void HardwareParams::set(const std::string& key, const std::string& value) {
  for (const Field& f : field_table())
    if (f.doc.key == key) {
      f.set(*this, value);
      return;
    }
  throw std::invalid_argument("unknown hardware parameter '" + key + "'; known: " + known_keys());
}

bool HardwareParams::has_field(const std::string& key) {
  const auto& f = fields();
  return std::any_of(f.begin(), f.end(), [&](const FieldDoc& d) { return d.key == key; });
}

const std::vector<HardwareParams::FieldDoc>& HardwareParams::fields() {
  static const std::vector<FieldDoc> docs = [] {
    std::vector<FieldDoc> d;
    for (const Field& f : field_table()) d.push_back(f.doc);
    return d;
  }();
  return docs;
}

std::map<std::string, std::string> HardwareParams::to_map() const {
  std::map<std::string, std::string> m;
  for (const Field& f : field_table()) m[f.doc.key] = f.get(*this);
  return m;
}

HardwareParams load_preset(const std::string& name_or_path) {
  std::string path = name_or_path;
  if (!std::filesystem::exists(path)) path = presets_dir() + "/" + name_or_path + ".yaml";
  if (!std::filesystem::exists(path)) {
    std::string names;
    for (const std::string& n : preset_names()) names += (names.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown preset '" + name_or_path + "'; known presets: " + names);
  }
  const YAML::Node root = load_strict(read_input_file(path, "preset file", kMaxTextInputBytes), path);
  HardwareParams h;
  apply_yaml(h, root, "", path);
  return h;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  if (std::filesystem::is_directory(presets_dir()))
    for (const auto& e : std::filesystem::directory_iterator(presets_dir()))
      if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace stepsim
