#include "hw/presets/hardware.h"

#include "hw/presets/hbm_device.h"
#include "hw/presets/input_file.h"
#include "hw/presets/strict_yaml.h"
#include "hw/stream/number_text.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
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

// The codecs of the kinds of param_kinds.h: parse(text) -> value (throws std::invalid_argument
// saying what was expected; the field names the parameter) and print(value) -> text. kMin..kMax
// is the documented range of an integer kind, 0..0 for the others.

// A whole decimal number in min..max (no sign, no fraction, nothing cut to the field's width).
uint64_t to_u64(const std::string& v, uint64_t min, uint64_t max) {
  int64_t x = 0;
  if (!parse_int64(v, x) || x < 0 || uint64_t(x) < min || uint64_t(x) > max)
    throw std::invalid_argument("expected an integer in " + std::to_string(min) + ".." + std::to_string(max) +
                                ", got '" + v + "'");
  return uint64_t(x);
}

template <typename T, uint64_t Min, uint64_t Max>
struct UIntCodec {
  static_assert(std::is_unsigned_v<T> && Max <= std::numeric_limits<T>::max(), "a parameter's range exceeds its type");
  static constexpr uint64_t kMin = Min, kMax = Max;
  T parse(const std::string& v) const { return T(to_u64(v, Min, Max)); }
  std::string print(T x) const { return std::to_string(x); }
};

struct RealCodec {
  static constexpr uint64_t kMin = 0, kMax = 0;
  double parse(const std::string& v) const {
    try {
      size_t pos = 0;
      double x = std::stod(v, &pos);
      if (pos == v.size() && x > 0 && x <= 1e6) return x;
    } catch (const std::exception&) {  // not a number, or out of double's range
    }
    throw std::invalid_argument("expected a number in (0, 1e6], got '" + v + "'");
  }
  std::string print(double x) const { return std::to_string(x); }
};

struct BoolCodec {
  static constexpr uint64_t kMin = 0, kMax = 0;
  bool parse(const std::string& v) const {
    if (v == "true" || v == "1") return true;
    if (v == "false" || v == "0") return false;
    throw std::invalid_argument("expected true or false, got '" + v + "'");
  }
  std::string print(bool x) const { return x ? "true" : "false"; }
};

struct TextCodec {
  static constexpr uint64_t kMin = 0, kMax = 0;
  std::string parse(const std::string& v) const { return v; }
  std::string print(const std::string& x) const { return x; }
};

// Text that `check` accepts (it throws otherwise).
struct WordCodec {
  static constexpr uint64_t kMin = 0, kMax = 0;
  explicit WordCodec(void (*c)(const std::string&)) : check(c) {}
  std::string parse(const std::string& v) const {
    check(v);
    return v;
  }
  std::string print(const std::string& x) const { return x; }
  void (*check)(const std::string&);
};

template <typename T>
struct EnumCodec {
  static constexpr uint64_t kMin = 0, kMax = 0;
  EnumCodec(T (*p)(const std::string&), const char* (*n)(T)) : from_text(p), name(n) {}
  T parse(const std::string& v) const { return from_text(v); }
  std::string print(T x) const { return name(x); }
  T (*from_text)(const std::string&);
  const char* (*name)(T);
};

// The checks of the STEPSIM_WORD rows.
void check_hbm_mode(const std::string& v) {
  if (v != "fast" && v != "request") throw std::invalid_argument("expected fast or request, got '" + v + "'");
}
void check_onchip_requirement_model(const std::string& v) {
  const std::vector<std::string>& known = onchip_requirement_models();
  if (std::find(known.begin(), known.end(), v) != known.end()) return;
  std::string names;
  for (const std::string& n : known) names += (names.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown on-chip requirement model '" + v + "'; known: " + names);
}

// One row of the field table: `access(h)` is the row's member of h (const or not).
template <typename Codec, typename Access>
Field make_field(const char* key, const char* unit, const char* doc, const char* origin, Codec codec, Access access) {
  return Field{{key, unit, doc, origin, Codec::kMin, Codec::kMax},
               [=](HardwareParams& h, const std::string& v) {
                 try {
                   access(h) = codec.parse(v);
                 } catch (const std::invalid_argument& e) {
                   throw std::invalid_argument("hardware parameter '" + std::string(key) + "': " + e.what());
                 }
               },
               [=](const HardwareParams& h) { return codec.print(access(h)); }};
}

// The rows of hardware_params.def, then those of hbm_params.def.
const std::vector<Field>& field_table() {
  static const std::vector<Field> t = {
#define STEPSIM_PARAM(type, member, key, def, unit, codec, doc, origin) \
  make_field(                                                           \
      key, unit, doc, origin, codec, [](auto& h) -> auto& { return h.member; }),
#include "hw/presets/hardware_params.def"
#undef STEPSIM_PARAM
#define STEPSIM_PARAM(type, member, key, def, unit, codec, doc, origin) \
  make_field(                                                           \
      key, unit, doc, origin, codec, [](auto& h) -> auto& { return h.hbm.member; }),
#include "hw/presets/hbm_params.def"
#undef STEPSIM_PARAM
  };
  return t;
}

std::string known_keys() {
  std::string s;
  for (const Field& f : field_table()) s += (s.empty() ? "" : ", ") + f.doc.key;
  return s;
}

const Field& field(const std::string& key) {
  for (const Field& f : field_table())
    if (f.doc.key == key) return f;
  throw std::invalid_argument("unknown hardware parameter '" + key + "'; known: " + known_keys());
}

// The file of hbm.device gives the device keys that were not set by name; an error names the
// file's line.
void fill_from_device(HardwareParams& h) {
  for (const HbmDeviceEntry& e : read_hbm_device(h.hbm.device)) {
    if (h.explicit_device_keys.count(e.key)) continue;
    try {
      field(e.key).set(h, e.value);
    } catch (const std::invalid_argument& ex) {
      throw std::invalid_argument(e.where + ": " + ex.what());
    }
  }
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
  field(key).set(*this, value);
  if (is_hbm_device_key(key)) explicit_device_keys.insert(key);
  if (key == "hbm.device") fill_from_device(*this);
  hbm.set_accelerator_clock(clock_ghz);
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
  const std::string path = named_yaml_file(name_or_path, presets_dir(), "preset", "presets", preset_names);
  const YAML::Node root = load_strict(read_input_file(path, "preset file", kMaxTextInputBytes), path);
  HardwareParams h;
  apply_yaml(h, root, "", path);
  return h;
}

std::vector<std::string> preset_names() { return yaml_file_names(presets_dir()); }

}  // namespace stepsim
