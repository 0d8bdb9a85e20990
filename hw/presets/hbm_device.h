// The HBM device files that `hbm.device` names: hw/presets/hbm/NAME.yaml, each the device keys of
// one HBM standard and speed grade (organisation, timings in tCK and the clock period tCK_ps), one
// `key: value` line each, the key without its "hbm.dram." prefix and the value's source in a
// comment. A device key is every hbm.dram.* parameter but the controller's queue_depth; a device
// file gives each exactly once. HardwareParams::set applies a device's values to the device keys
// not set explicitly (hardware.h); docs/hbm-dram.md tabulates the files and their sources.
#pragma once

#include <string>
#include <vector>

namespace stepsim {

// True for the dotted keys a device file gives ("hbm.dram.tCL"; not "hbm.dram.queue_depth").
bool is_hbm_device_key(const std::string& key);
// The device keys, dotted, in the order of their rows (hbm_params.def).
const std::vector<std::string>& hbm_device_keys();

// The shipped devices: the names of hw/presets/hbm/*.yaml, sorted.
std::vector<std::string> hbm_device_names();
// The file of a device: `name_or_path` itself when it exists, else hw/presets/hbm/NAME.yaml. Throws
// std::invalid_argument "unknown HBM device 'NAME'; known HBM devices: A, B, C" otherwise.
std::string hbm_device_file(const std::string& name_or_path);
// The check of the hbm.device row: the name resolves to a file (throws as hbm_device_file).
void check_hbm_device(const std::string& name_or_path);

// One value of a device file: the dotted key, its value as text and "FILE:LINE:COL" of the value.
struct HbmDeviceEntry {
  std::string key, value, where;
};
// The values of a device file, read strictly: a mapping that gives every device key once and
// nothing else. Throws std::invalid_argument naming the file (and line and key) otherwise.
std::vector<HbmDeviceEntry> read_hbm_device(const std::string& name_or_path);

}  // namespace stepsim
