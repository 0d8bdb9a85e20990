// The hardware parameters, declared one row each in hw/presets/hardware_params.def and
// hbm_params.def: every row reaches the field table in order, defaults, print/parse round trips,
// the error texts of `--set` and of a preset file (out of range, unknown key, duplicate key).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "hw/presets/hardware.h"

namespace stepsim {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The keys of the rows of a .def file, in order: the first string of each STEPSIM_<KIND>( row
// (the arguments before it are a type and a member name).
std::vector<std::string> declared_keys(const std::string& def) {
  const std::string text = read_file(fs::path(STEPSIM_SOURCE_DIR) / "hw/presets" / def);
  EXPECT_FALSE(text.empty()) << def;
  const std::regex row(R"re(\nSTEPSIM_(UINT|REAL|BOOL|TEXT|WORD|ENUM)\([^"]*"([^"]*)")re");
  std::vector<std::string> keys;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), row); it != std::sregex_iterator(); ++it)
    keys.push_back((*it)[2]);
  return keys;
}

std::string set_error(const std::string& key, const std::string& value) {
  HardwareParams h;
  try {
    h.set(key, value);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(PresetParameters, EveryDeclaredRowIsInTheFieldTableInOrder) {
  std::vector<std::string> want = declared_keys("hardware_params.def");
  const std::vector<std::string> hbm = declared_keys("hbm_params.def");
  ASSERT_FALSE(want.empty());
  ASSERT_FALSE(hbm.empty());
  EXPECT_EQ(want.front(), "name");
  EXPECT_EQ(hbm.back(), "hbm.model");
  want.insert(want.end(), hbm.begin(), hbm.end());
  std::vector<std::string> have;
  for (const auto& f : HardwareParams::fields()) have.push_back(f.key);
  EXPECT_EQ(have, want);
  EXPECT_EQ(std::set<std::string>(have.begin(), have.end()).size(), have.size()) << "a key is declared twice";
}

TEST(PresetParameters, EveryRowHasUnitDocAndOrigin) {
  for (const auto& f : HardwareParams::fields()) {
    EXPECT_FALSE(f.unit.empty()) << f.key;
    EXPECT_FALSE(f.doc.empty()) << f.key;
    EXPECT_FALSE(f.origin.empty()) << f.key;
    EXPECT_LE(f.min, f.max) << f.key;
  }
}

TEST(PresetParameters, DefaultsAreTheDeclaredOnes) {
  const HardwareParams h;
  const std::map<std::string, std::string> m = h.to_map();
  EXPECT_EQ(m.size(), HardwareParams::fields().size());
  const std::map<std::string, std::string> some = {{"name", "step-artifact"},   {"clock_ghz", "1.000000"},
                                                   {"pmu_capacity", "524288"},  {"num_pcus", "1024"},
                                                   {"fifo_depth", "2"},         {"offchip_one_tile_in_flight", "true"},
                                                   {"input_register", "false"}, {"onchip_requirement_model", "paper"},
                                                   {"hbm.mode", "fast"},        {"hbm.channels", "32"},
                                                   {"hbm.startup", "14"},       {"hbm.mapping", "round_robin"},
                                                   {"hbm.model", "fixed"}};
  for (const auto& [key, value] : some) EXPECT_EQ(m.at(key), value) << key;
  // The same values in the struct members the rows declare.
  EXPECT_EQ(h.hbm_mode, "fast");
  EXPECT_EQ(h.hbm.model, "fixed");
  EXPECT_EQ(h.hbm.mapping, HbmMapping::RoundRobin);
  EXPECT_EQ(h.hbm.idle_latency(), 18u);
  EXPECT_EQ(h.hbm.cold_after, 0u);  // hand-written, not a preset parameter
}

TEST(PresetParameters, EveryRowReadsBackWhatItPrints) {
  const HardwareParams defaults;
  for (const auto& f : HardwareParams::fields()) {
    HardwareParams h;
    const std::string v = h.to_map().at(f.key);
    ASSERT_NO_THROW(h.set(f.key, v)) << f.key << " = " << v;
    EXPECT_EQ(h.to_map(), defaults.to_map()) << f.key;
  }
}

TEST(PresetParameters, SetSetsTheDeclaredMember) {
  HardwareParams h;
  h.set("fifo_depth", "7");
  h.set("clock_ghz", "1.5");
  h.set("input_register", "1");
  h.set("hbm.channels", "8");
  h.set("hbm.mapping", "address_interleave");
  h.set("hbm.mode", "request");
  h.set("onchip_requirement_model", "artifact");
  EXPECT_EQ(h.fifo_depth, 7u);
  EXPECT_EQ(h.clock_ghz, 1.5);
  EXPECT_TRUE(h.input_register);
  EXPECT_EQ(h.hbm.channels, 8u);
  EXPECT_EQ(h.hbm.mapping, HbmMapping::AddressInterleave);
  EXPECT_EQ(h.hbm_mode, "request");
  EXPECT_EQ(h.onchip_requirement_model, "artifact");
}

TEST(PresetParameters, TheHbmModelIsANameThatOnlyTheMemoryLayerChecks) {
  HardwareParams h;
  h.set("hbm.model", "dram");
  EXPECT_EQ(h.hbm.model, "dram");
  EXPECT_EQ(h.to_map().at("hbm.model"), "dram");
  EXPECT_EQ(h.hbm.channels, 32u);  // nothing else changed
  for (const auto& f : HardwareParams::fields())
    if (f.key == "hbm.model") {
      EXPECT_EQ(f.unit, "-");
      EXPECT_EQ(f.doc, "the HBM timing model, by name (hw/memory registry: fixed, dram)");
      EXPECT_EQ(f.origin, "this project");
      EXPECT_EQ(f.max, 0u);  // not an integer
    }
}

TEST(PresetParameters, BadValuesGetTheKindsErrorTexts) {
  EXPECT_EQ(set_error("fifo_depth", "0"),
            "hardware parameter 'fifo_depth': expected an integer in 1..1048576, got '0'");
  EXPECT_EQ(set_error("num_pcus", "-1"), "hardware parameter 'num_pcus': expected an integer in 0..1048576, got '-1'");
  EXPECT_EQ(set_error("hbm.latency", "2.5"),
            "hardware parameter 'hbm.latency': expected an integer in 0..1073741824, got '2.5'");
  EXPECT_EQ(set_error("clock_ghz", "0"), "hardware parameter 'clock_ghz': expected a number in (0, 1e6], got '0'");
  EXPECT_EQ(set_error("clock_ghz", "1e400"),
            "hardware parameter 'clock_ghz': expected a number in (0, 1e6], got '1e400'");
  EXPECT_EQ(set_error("clock_ghz", "1x"), "hardware parameter 'clock_ghz': expected a number in (0, 1e6], got '1x'");
  EXPECT_EQ(set_error("input_register", "yes"),
            "hardware parameter 'input_register': expected true or false, got 'yes'");
  EXPECT_EQ(set_error("hbm.mapping", "diagonal"),
            "hardware parameter 'hbm.mapping': unknown HBM mapping 'diagonal' (expected round_robin or "
            "address_interleave)");
  EXPECT_EQ(set_error("hbm.mode", "slow"), "hardware parameter 'hbm.mode': expected fast or request, got 'slow'");
  EXPECT_EQ(set_error("onchip_requirement_model", "mine"),
            "hardware parameter 'onchip_requirement_model': unknown on-chip requirement model 'mine'; known: "
            "artifact, paper");
  const std::string unknown = set_error("hbm.chanels", "4");
  EXPECT_EQ(unknown.rfind("unknown hardware parameter 'hbm.chanels'; known: name, clock_ghz, onchip_bw, ", 0), 0u)
      << unknown;
  EXPECT_NE(unknown.find(", hbm.mapping, hbm.model"), std::string::npos) << unknown;
}

// A preset file, path_, in a temporary folder of the test's own.
class PresetFile : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path dir = fs::path(::testing::TempDir()) /
                         ("presets." + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::create_directories(dir);
    path_ = (dir / "mine.yaml").string();
  }
  std::string write(const std::string& text) {
    std::ofstream(path_) << text;
    return path_;
  }
  std::string load_error(const std::string& text) {
    try {
      load_preset(write(text));
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(loaded)";
  }
  std::string path_;
};

TEST_F(PresetFile, AnOutOfRangeValueIsNamedWithItsPlace) {
  EXPECT_EQ(load_error("name: x\nfifo_depth: 0\n"),
            path_ + ":2:13: hardware parameter 'fifo_depth': expected an integer in 1..1048576, got '0'");
  EXPECT_EQ(load_error("name: x\nhbm:\n  channels: 5000\n"),
            path_ + ":3:13: hardware parameter 'hbm.channels': expected an integer in 1..4096, got '5000'");
  EXPECT_EQ(load_error("name: x\nhbm: {mode: slow}\n"),
            path_ + ":2:13: hardware parameter 'hbm.mode': expected fast or request, got 'slow'");
}

TEST_F(PresetFile, AnUnknownKeyIsNamedWithTheKnownOnes) {
  const std::string e = load_error("name: x\nhbm:\n  chanels: 4\n");
  EXPECT_EQ(e.rfind(path_ + ":3:12: unknown hardware parameter 'hbm.chanels'; known: name, ", 0), 0u) << e;
}

TEST_F(PresetFile, ADuplicateKeyIsAnError) {
  EXPECT_EQ(load_error("name: x\nfifo_depth: 2\nfifo_depth: 3\n"),
            path_ + ":3:1: duplicate key 'fifo_depth' (first given at line 2)");
}

TEST_F(PresetFile, AFileSetsTheHbmModelUnderHbm) {
  const HardwareParams h = load_preset(write("name: x\nhbm:\n  model: dram\n  channels: 4\n"));
  EXPECT_EQ(h.hbm.model, "dram");
  EXPECT_EQ(h.hbm.channels, 4u);
}

TEST(ShippedPresets, LoadAndNameTheFixedHbmModel) {
  const std::vector<std::string> names = preset_names();
  ASSERT_NE(std::find(names.begin(), names.end(), "step-artifact"), names.end());
  for (const std::string& n : names) {
    const HardwareParams h = load_preset(n);
    EXPECT_EQ(h.name, n);
    EXPECT_EQ(h.hbm.model, "fixed") << n;
  }
}

}  // namespace
}  // namespace stepsim
