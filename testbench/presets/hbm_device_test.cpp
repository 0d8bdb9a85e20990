// The HBM device files behind `hbm.device` (hw/presets/hbm_device.h, hw/presets/hbm/*.yaml): every
// shipped file loads and sets its own numbers, the default device is the rows' defaults, a device
// file is read strictly, a device key set by name (preset file or --set, i.e. HardwareParams::set)
// wins over the device's value in either order, and the dram model's clock ratio follows clock_ghz
// and tCK_ps.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "hw/presets/hardware.h"
#include "hw/presets/hbm_device.h"

namespace stepsim {
namespace {

namespace fs = std::filesystem;

const std::string kShipped = "HBM2E_3.2Gbps, HBM2_2Gbps, HBM3_6.4Gbps";

HardwareParams with_device(const std::string& name) {
  HardwareParams h;
  h.set("hbm.device", name);
  return h;
}

std::string set_error(HardwareParams& h, const std::string& key, const std::string& value) {
  try {
    h.set(key, value);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

// Files of the test's own, in a temporary folder named after the test.
class DeviceFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("hbm_device." + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::create_directories(dir_);
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  // The lines of the default device file, with `line` put in place of the line starting `replace`
  // (or added when `replace` is empty).
  std::string default_device_with(const std::string& replace, const std::string& line) {
    std::ifstream in(hbm_device_file("HBM2_2Gbps"));
    std::string text, l;
    while (std::getline(in, l)) text += (!replace.empty() && l.rfind(replace, 0) == 0 ? line : l) + "\n";
    return replace.empty() ? text + line + "\n" : text;
  }
  fs::path dir_;
};

TEST(HbmDevice, TheShippedDevicesAreTheThreeFiles) {
  std::string names;
  for (const std::string& n : hbm_device_names()) names += (names.empty() ? "" : ", ") + n;
  EXPECT_EQ(names, kShipped);
}

TEST(HbmDevice, TheDeviceKeysAreTheDramRowsButTheQueue) {
  const std::vector<std::string>& keys = hbm_device_keys();
  ASSERT_EQ(keys.size(), 26u);
  EXPECT_EQ(keys.front(), "hbm.dram.pseudo_channels");
  EXPECT_EQ(keys.back(), "hbm.dram.tRREFD");
  EXPECT_TRUE(is_hbm_device_key("hbm.dram.tCK_ps"));
  EXPECT_FALSE(is_hbm_device_key("hbm.dram.queue_depth"));
  EXPECT_FALSE(is_hbm_device_key("hbm.dram.tXYZ"));
  EXPECT_FALSE(is_hbm_device_key("hbm.channels"));
}

TEST(HbmDevice, EveryFileLoadsAndSetsItsOwnNumbers) {
  for (const std::string& name : hbm_device_names()) {
    const HardwareParams h = with_device(name);
    EXPECT_EQ(h.hbm.device, name);
    EXPECT_TRUE(h.explicit_device_keys.empty()) << name;  // a device's values are not "explicit"
    const std::vector<HbmDeviceEntry> entries = read_hbm_device(name);
    EXPECT_EQ(entries.size(), hbm_device_keys().size()) << name;
    const std::map<std::string, std::string> m = h.to_map();
    for (const HbmDeviceEntry& e : entries) EXPECT_EQ(m.at(e.key), e.value) << name << " " << e.key;
  }
}

TEST(HbmDevice, TheRowDefaultsAreTheDefaultDevice) {
  const HardwareParams defaults;
  EXPECT_EQ(defaults.hbm.device, "HBM2_2Gbps");
  const std::map<std::string, std::string> m = defaults.to_map();
  for (const HbmDeviceEntry& e : read_hbm_device(defaults.hbm.device)) EXPECT_EQ(m.at(e.key), e.value) << e.key;
  EXPECT_EQ(with_device("HBM2_2Gbps").to_map(), m);
}

TEST(HbmDevice, EachDeviceHasTheNumbersOfItsSources) {
  const HbmParams hbm2 = with_device("HBM2_2Gbps").hbm;  // Ramulator 2 HBM2_2Gb / HBM2_2Gbps
  EXPECT_EQ(hbm2.dram_tCK_ps, 1000u);
  EXPECT_EQ(hbm2.dram_banks_per_group, 2u);
  EXPECT_EQ(hbm2.dram_tCL, 7u);
  EXPECT_EQ(hbm2.dram_tRC, 19u);
  EXPECT_EQ(hbm2.dram_tRFC, 160u);
  const HbmParams hbm2e = with_device("HBM2E_3.2Gbps").hbm;  // DRAMsim3 HBM2 ns at 625 ps
  EXPECT_EQ(hbm2e.dram_tCK_ps, 625u);
  EXPECT_EQ(hbm2e.dram_banks_per_group, 4u);
  EXPECT_EQ(hbm2e.dram_rows, 32768u);
  EXPECT_EQ(hbm2e.dram_tRCD, 23u);                         // ceil(14 / 0.625)
  EXPECT_EQ(hbm2e.dram_tRRD_S, 7u);                        // ceil(4 / 0.625)
  EXPECT_EQ(hbm2e.dram_tRFC, 416u);                        // 260 / 0.625
  EXPECT_EQ(hbm2e.dram_tCCD_L, 8u);                        // 2 x ceil(2 / 0.625)
  const HbmParams hbm3 = with_device("HBM3_6.4Gbps").hbm;  // AttAcc HBM3_6.4Gbps / HBM3_8Gb_1R
  EXPECT_EQ(hbm3.dram_tCK_ps, 625u);
  EXPECT_EQ(hbm3.dram_tBURST, 4u);
  EXPECT_EQ(hbm3.dram_tRAS, 55u);
  EXPECT_EQ(hbm3.dram_tRRD_S, 2u);
  EXPECT_EQ(hbm3.dram_tCCD_S, 4u);  // 2 x nCCDS 2
  EXPECT_EQ(hbm3.dram_tRFC, 560u);  // 350 ns / 0.625
  EXPECT_EQ(hbm3.dram_tREFI, 6240u);
  // The peaks of docs/hbm-dram.md: request_bytes / tBURST B/tCK x 1000 / tCK_ps GB/s per pseudo-channel.
  auto gb_per_s = [](const HbmParams& p) { return double(p.request_bytes) / p.dram_tBURST * 1000.0 / p.dram_tCK_ps; };
  EXPECT_DOUBLE_EQ(gb_per_s(hbm2), 16.0);
  EXPECT_DOUBLE_EQ(gb_per_s(hbm2e), 25.6);
  EXPECT_DOUBLE_EQ(gb_per_s(hbm3), 25.6);
}

TEST(HbmDevice, AnUnknownDeviceListsTheKnownOnes) {
  HardwareParams h;
  EXPECT_EQ(set_error(h, "hbm.device", "HBM4_8Gbps"),
            "hardware parameter 'hbm.device': unknown HBM device 'HBM4_8Gbps'; known HBM devices: " + kShipped);
  EXPECT_EQ(h.hbm.device, "HBM2_2Gbps");  // unchanged
}

TEST(HbmDevice, AKeySetByNameWinsOverTheDeviceEitherWay) {
  HardwareParams before;  // --set hbm.dram.tCL=30 --set hbm.device=HBM3_6.4Gbps
  before.set("hbm.dram.tCL", "30");
  before.set("hbm.device", "HBM3_6.4Gbps");
  HardwareParams after;  // --set hbm.device=HBM3_6.4Gbps --set hbm.dram.tCL=30
  after.set("hbm.device", "HBM3_6.4Gbps");
  after.set("hbm.dram.tCL", "30");
  for (const HardwareParams* h : {&before, &after}) {
    EXPECT_EQ(h->hbm.dram_tCL, 30u);
    EXPECT_EQ(h->hbm.dram_tRCD, 23u);  // the device's
    EXPECT_EQ(h->hbm.dram_tCK_ps, 625u);
  }
  EXPECT_EQ(before.to_map(), after.to_map());
  // A later device keeps the key too.
  before.set("hbm.device", "HBM2_2Gbps");
  EXPECT_EQ(before.hbm.dram_tCL, 30u);
  EXPECT_EQ(before.hbm.dram_tRCD, 7u);
}

TEST_F(DeviceFiles, APresetFilesKeyWinsOverItsDeviceAndOverASetDevice) {
  // The key before the device in the file, and after it.
  for (const std::string& text : {std::string("name: x\nhbm:\n  dram:\n    tCL: 30\n  device: HBM3_6.4Gbps\n"),
                                  std::string("name: x\nhbm:\n  device: HBM3_6.4Gbps\n  dram: {tCL: 30}\n")}) {
    HardwareParams h = load_preset(write("mine.yaml", text));
    EXPECT_EQ(h.hbm.dram_tCL, 30u) << text;
    EXPECT_EQ(h.hbm.dram_tRCD, 23u) << text;
    h.set("hbm.device", "HBM2E_3.2Gbps");  // --set hbm.device=... after the preset
    EXPECT_EQ(h.hbm.dram_tCL, 30u) << text;
    EXPECT_EQ(h.hbm.dram_tRRD_S, 7u) << text;
  }
  const std::string path = write("bad.yaml", "name: x\nhbm:\n  device: HBM9\n");
  try {
    load_preset(path);
    FAIL() << "loaded an unknown device";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), path +
                                         ":3:11: hardware parameter 'hbm.device': unknown HBM device 'HBM9'; "
                                         "known HBM devices: " +
                                         kShipped);
  }
}

TEST_F(DeviceFiles, ADeviceFileByPathIsReadStrictly) {
  HardwareParams h;
  const std::string mine = write("mine.yaml", default_device_with("tCL:", "tCL: 11"));
  h.set("hbm.device", mine);
  EXPECT_EQ(h.hbm.dram_tCL, 11u);
  EXPECT_EQ(h.hbm.device, mine);

  const std::string unknown = write("unknown.yaml", default_device_with("", "tXYZ: 3"));
  const std::string e = set_error(h, "hbm.device", unknown);
  EXPECT_EQ(
      e.rfind(unknown + ":36:1: unknown device key 'tXYZ'; a device file gives pseudo_channels, bank_groups, ", 0), 0u)
      << e;
  EXPECT_NE(e.find(", tRFC, tREFI, tRFCsb, tRREFD"), std::string::npos) << e;
  EXPECT_EQ(e.find("queue_depth"), std::string::npos) << e;

  const std::string queue = write("queue.yaml", default_device_with("", "queue_depth: 8"));
  EXPECT_EQ(set_error(h, "hbm.device", queue).rfind(queue + ":36:1: unknown device key 'queue_depth'", 0), 0u);

  const std::string lacking = write("lacking.yaml", default_device_with("tREFI:", "# none"));
  EXPECT_EQ(set_error(h, "hbm.device", lacking), lacking + ": the device file lacks tREFI");

  const std::string bad = write("bad.yaml", default_device_with("tCL:", "tCL: 2.5"));
  EXPECT_EQ(set_error(h, "hbm.device", bad),
            bad + ":17:6: hardware parameter 'hbm.dram.tCL': expected an integer in 0..1073741824, got '2.5'");

  const std::string twice = write("twice.yaml", default_device_with("", "tCL: 9"));
  EXPECT_EQ(set_error(h, "hbm.device", twice), twice + ":36:1: duplicate key 'tCL' (first given at line 17)");

  const std::string list = write("list.yaml", "- 1\n");
  EXPECT_EQ(
      set_error(h, "hbm.device", list).rfind(list + ": expected a mapping of the device keys (pseudo_channels, ", 0),
      0u);
}

TEST(HbmDevice, TheDramClockRatioFollowsTheClockAndTheDevice) {
  EXPECT_EQ(HbmParams{}.dram_clock_ratio, 1.0);  // built alone: a 1 GHz accelerator, 1000-ps tCK
  HardwareParams h;
  EXPECT_EQ(h.hbm.dram_clock_ratio, 1.0);
  h.set("clock_ghz", "1.5");
  EXPECT_EQ(h.hbm.dram_clock_ratio, 1.5);
  h.set("hbm.device", "HBM3_6.4Gbps");
  EXPECT_EQ(h.hbm.dram_clock_ratio, 0.9375);  // 1.5 GHz x 625 ps
  h.set("clock_ghz", "2");
  EXPECT_EQ(h.hbm.dram_clock_ratio, 1.25);
  h.set("hbm.dram.tCK_ps", "1250");
  EXPECT_EQ(h.hbm.dram_clock_ratio, 2.5);
  EXPECT_EQ(load_preset("hdl-validation").hbm.dram_clock_ratio, 1.0);
}

}  // namespace
}  // namespace stepsim
