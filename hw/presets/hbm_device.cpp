#include "hw/presets/hbm_device.h"

#include "hw/presets/hardware.h"
#include "hw/presets/input_file.h"
#include "hw/presets/strict_yaml.h"

#include <algorithm>
#include <stdexcept>

namespace stepsim {

namespace {

const std::string kDevicePrefix = "hbm.dram.";
// The controller's, not the device's: the scheduler's window belongs to the memory controller.
const std::string kControllerKey = "hbm.dram.queue_depth";

std::string devices_dir() { return std::string(STEPSIM_SOURCE_DIR) + "/hw/presets/hbm"; }

// "pseudo_channels, bank_groups, ..., tREFI": the keys as a device file writes them.
std::string device_key_list() {
  std::string s;
  for (const std::string& k : hbm_device_keys()) s += (s.empty() ? "" : ", ") + k.substr(kDevicePrefix.size());
  return s;
}

}  // namespace

bool is_hbm_device_key(const std::string& key) {
  return key.rfind(kDevicePrefix, 0) == 0 && key != kControllerKey && HardwareParams::has_field(key);
}

const std::vector<std::string>& hbm_device_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (const HardwareParams::FieldDoc& f : HardwareParams::fields())
      if (is_hbm_device_key(f.key)) k.push_back(f.key);
    return k;
  }();
  return keys;
}

std::vector<std::string> hbm_device_names() { return yaml_file_names(devices_dir()); }

std::string hbm_device_file(const std::string& name_or_path) {
  return named_yaml_file(name_or_path, devices_dir(), "HBM device", "HBM devices", hbm_device_names);
}

void check_hbm_device(const std::string& name_or_path) { hbm_device_file(name_or_path); }

std::vector<HbmDeviceEntry> read_hbm_device(const std::string& name_or_path) {
  const std::string path = hbm_device_file(name_or_path);
  const YAML::Node root = load_strict(read_input_file(path, "HBM device file", kMaxTextInputBytes), path);
  if (!root.IsMap())
    throw std::invalid_argument(path + ": expected a mapping of the device keys (" + device_key_list() + ")");
  std::vector<HbmDeviceEntry> entries;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string name = scalar(it->first, path, "device key");
    if (!is_hbm_device_key(kDevicePrefix + name))
      throw std::invalid_argument(at(path, it->first) + ": unknown device key '" + name + "'; a device file gives " +
                                  device_key_list());
    entries.push_back(
        {kDevicePrefix + name, scalar(it->second, path, "device key '" + name + "'"), at(path, it->second)});
  }
  std::string missing;
  for (const std::string& k : hbm_device_keys())
    if (std::none_of(entries.begin(), entries.end(), [&](const HbmDeviceEntry& e) { return e.key == k; }))
      missing += (missing.empty() ? "" : ", ") + k.substr(kDevicePrefix.size());
  if (!missing.empty()) throw std::invalid_argument(path + ": the device file lacks " + missing);
  return entries;
}

}  // namespace stepsim
