// Technology descriptions (hw/presets/tech.h): the built-in table has every row of
// tech_entries.def with a source; the strict reading refuses each kind of bad file with a message
// naming the file and the key; a hand-made table round-trips to the exact values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <unistd.h>
#include <stdexcept>

#include "hw/presets/tech.h"

namespace stepsim {
namespace {

namespace fs = std::filesystem;

// A complete, valid technology file whose every value is 1 and every source "s"; `replace`
// rewrites one line of it (by regex) to make a bad file.
std::string valid_text() {
  std::string text = "name: hand\ndescription: by hand\nnode_nm: 7\n";
  std::string section;
  for (const Technology::EntryDoc& d : Technology::entries()) {
    if (d.section != section) text += d.section + ":\n";
    section = d.section;
    text += "  " + d.key + ": {value: 1, source: s}\n";
  }
  return text;
}

std::string error_of(const std::string& text) {
  try {
    parse_technology(text, "bad-tech.yaml");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

std::string with(const std::string& from, const std::string& to) {
  return std::regex_replace(valid_text(), std::regex(from), to, std::regex_constants::format_first_only);
}

TEST(Tech, BuiltInLiteratureTableHasEveryEntryWithASource) {
  const std::vector<std::string> names = technology_names();
  ASSERT_NE(std::find(names.begin(), names.end(), "tech-7nm-literature"), names.end());
  const Technology t = load_technology("tech-7nm-literature");
  EXPECT_EQ(t.name, "tech-7nm-literature");
  EXPECT_EQ(t.node_nm, 7);
  EXPECT_EQ(t.bf16_fma.value, 0.1368);  // docs/energy.md: (1.1 + 0.9) pJ x 0.06842
  EXPECT_EQ(t.sram_area_kib.value, 0.001301);
  for (const Technology::EntryDoc& d : Technology::entries()) {
    EXPECT_FALSE(t.entry(d.dotted()).source.empty()) << d.dotted();
    EXPECT_GE(t.entry(d.dotted()).value, 0) << d.dotted();
  }
  // Every number of the table is derived in docs/energy.md: the entries are listed there.
  std::ifstream doc(fs::path(STEPSIM_SOURCE_DIR) / "docs/energy.md");
  const std::string text((std::istreambuf_iterator<char>(doc)), std::istreambuf_iterator<char>());
  for (const Technology::EntryDoc& d : Technology::entries())
    EXPECT_NE(text.find("`" + d.dotted() + "`"), std::string::npos) << d.dotted() << " not in docs/energy.md";
}

// Every table in hw/presets/tech/ (the literature one, the two derived from our RTL by
// scripts/rtl_power.sh) loads strictly, under its own name, with a source for every entry.
TEST(Tech, EveryBuiltInTableLoadsWithEverySource) {
  const std::vector<std::string> names = technology_names();
  for (const char* want : {"tech-7nm-literature", "tech-7nm-rtl", "tech-180nm-rtl"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  for (const std::string& name : names) {
    const Technology t = load_technology(name);
    EXPECT_EQ(t.name, name);
    for (const Technology::EntryDoc& d : Technology::entries())
      EXPECT_FALSE(t.entry(d.dotted()).source.empty()) << name << ": " << d.dotted();
  }
}

// The scaling arithmetic of docs/energy.md redone from its inputs: a typo in a derived value of
// the table (4 significant digits) is caught here.
TEST(Tech, LiteratureTableFollowsItsScalingArithmetic) {
  // Stillmaker & Baas 2017, E(V) = a V^2 + b V + c: HP45 at 0.9 V (Horowitz), HP7 at 0.7 V.
  const double e45 = 1.018 * 0.9 * 0.9 - 0.3107 * 0.9 + 0.1539;
  const double e7 = 0.1776 * 0.7 * 0.7 - 0.09097 * 0.7 + 0.02447;
  const double energy = e7 / e45, area = 1.0 / 17, area_from_32nm = 1.0 / 7.8;
  const double leak_mw_per_mm2 = 20;  // the project's leakage assumption
  const Technology t = load_technology("tech-7nm-literature");
  const auto near = [](double table, double derived) { return std::abs(table - derived) <= 5e-4 * derived; };
  EXPECT_TRUE(near(t.bf16_fma.value, (1.1 + 0.9) * energy)) << t.bf16_fma.value;
  EXPECT_TRUE(near(t.fp32_add.value, 0.9 * energy)) << t.fp32_add.value;
  EXPECT_TRUE(near(t.exp.value, 4 * (3.7 + 0.9) * energy)) << t.exp.value;
  EXPECT_TRUE(near(t.sram_read_byte.value, 20 * std::pow(5.0, 0.8) / 8 * energy)) << t.sram_read_byte.value;
  EXPECT_TRUE(near(t.fifo_push_byte.value, 10.0 / 8 * energy)) << t.fifo_push_byte.value;
  EXPECT_TRUE(near(t.pcu_area.value, 2048 * (1640 + 4184) * 1e-6 * area)) << t.pcu_area.value;
  EXPECT_TRUE(near(t.sram_area_kib.value, 42.64 / (256 * 1024 / 8))) << t.sram_area_kib.value;
  EXPECT_TRUE(near(t.noc_byte_hop.value, 0.1 * 8 * 0.3)) << t.noc_byte_hop.value;
  EXPECT_TRUE(near(t.hbm_read_byte.value, 3.9 * 8)) << t.hbm_read_byte.value;
  // OpenPiton: NoC1 router 0.98% of a tile, at most 36 mm2 / 25 tiles, 64-bit; ours 512-bit.
  EXPECT_TRUE(near(t.router_area.value, 0.0098 * 36.0 / 25 * (512.0 / 64) * area_from_32nm)) << t.router_area.value;
  // The entries the table takes equal to another one.
  EXPECT_EQ(t.sram_write_byte.value, t.sram_read_byte.value);
  EXPECT_EQ(t.fifo_pop_byte.value, t.fifo_push_byte.value);
  EXPECT_EQ(t.hbm_write_byte.value, t.hbm_read_byte.value);
  // Every leakage entry is the assumed density times the unit's area.
  EXPECT_TRUE(near(t.pcu_leak.value, leak_mw_per_mm2 * t.pcu_area.value)) << t.pcu_leak.value;
  EXPECT_TRUE(near(t.pmu_leak.value, leak_mw_per_mm2 * (t.pmu_logic_area.value + 512 * t.sram_area_kib.value)))
      << t.pmu_leak.value;
  EXPECT_TRUE(near(t.router_leak.value, leak_mw_per_mm2 * t.router_area.value)) << t.router_leak.value;
  EXPECT_TRUE(near(t.ag_leak.value, leak_mw_per_mm2 * t.ag_area.value)) << t.ag_leak.value;
  EXPECT_TRUE(near(t.hbm_phy_leak.value, leak_mw_per_mm2 * t.hbm_phy_area.value)) << t.hbm_phy_leak.value;
}

TEST(Tech, EveryEntryIsDeclaredOnceAndReachable) {
  std::set<std::string> seen;
  Technology t;
  for (const Technology::EntryDoc& d : Technology::entries()) {
    EXPECT_TRUE(seen.insert(d.dotted()).second) << d.dotted();
    t.entry(d.dotted()).value = double(seen.size());
  }
  EXPECT_EQ(t.bf16_fma.value, 1);  // the first row
  EXPECT_THROW(t.entry("energy_pj.nope"), std::invalid_argument);
}

TEST(Tech, ValidHandMadeFileReads) {
  const Technology t = parse_technology(valid_text(), "hand.yaml");
  EXPECT_EQ(t.hbm_phy_leak.value, 1);
  EXPECT_EQ(t.hbm_phy_leak.source, "s");
  EXPECT_EQ(t.clock_ghz, 0);
}

TEST(Tech, StrictErrorsNameTheFileAndTheKey) {
  EXPECT_EQ(error_of(with("  exp: \\{value: 1, source: s\\}\n", "  exp: {value: 1, source: s}\n  expp: {value: 1, source: s}\n")),
            "bad-tech.yaml:8:3: unknown key 'expp' in energy_pj (expected bf16_fma, fp32_add, exp, sram_read_byte, "
            "sram_write_byte, fifo_push_byte, fifo_pop_byte, noc_byte_hop, hbm_read_byte, hbm_write_byte)")
      ;
  EXPECT_EQ(error_of(with("exp: \\{value: 1, source: s\\}", "exp: {value: 1}")),
            "bad-tech.yaml:7:8: energy_pj.exp has no source (cite where it comes from)");
  EXPECT_EQ(error_of(with("exp: \\{value: 1,", "exp: {value: -0.5,")),
            "bad-tech.yaml:7:16: energy_pj.exp.value must be >= 0, got '-0.5'");
  EXPECT_EQ(error_of(with("exp: \\{value: 1,", "exp: {value: .nan,")),
            "bad-tech.yaml:7:16: energy_pj.exp.value must be a finite number, got '.nan'");
  EXPECT_EQ(error_of(with("exp: \\{value: 1,", "exp: {value: nan,")),
            "bad-tech.yaml:7:16: energy_pj.exp.value must be a finite number, got 'nan'");
  EXPECT_EQ(error_of(with("  exp: \\{value: 1, source: s\\}\n", "  exp: {value: 1, source: s}\n  exp: {value: 2, source: s}\n")),
            "bad-tech.yaml:8:3: duplicate key 'exp' (first given at line 7)");
  EXPECT_EQ(error_of(with("  exp: \\{value: 1, source: s\\}\n", "")),
            "bad-tech.yaml:5:3: missing entry 'energy_pj.exp'");
  EXPECT_EQ(error_of(with("  exp: \\{value: 1, source: s\\}", "  exp: 3")),
            "bad-tech.yaml:7:8: energy_pj.exp must be a mapping, got '3'");
  EXPECT_EQ(error_of("- a\n- b\n"), "bad-tech.yaml:1:1: technology file must be a mapping, got a list");
  EXPECT_EQ(error_of(with("node_nm: 7", "node_nm: 0")), "bad-tech.yaml:3:10: node_nm must be > 0, got '0'");
  EXPECT_EQ(error_of(with("node_nm: 7\n", "")), "bad-tech.yaml: missing 'node_nm'");
  EXPECT_EQ(error_of(with("name: hand\n", "name: hand\ncolor: red\n")).rfind("bad-tech.yaml:2:1: unknown key 'color'", 0),
            0u);
  EXPECT_THROW(load_technology("no-such-tech"), std::invalid_argument);
}

TEST(Tech, FileRoundTripGivesTheExactValues) {
  Technology t;
  t.name = "round-trip-tech";
  t.description = "hand-made: values chosen to need all 17 digits";
  t.node_nm = 5;
  t.clock_ghz = 1.4;
  double v = 0.1;
  for (const Technology::EntryDoc& d : Technology::entries()) {
    t.entry(d.dotted()) = {v, "source of " + d.dotted() + ": \"quoted\", colon"};
    v = v * 3.7 + 1.0 / 3;
  }
  const fs::path path = fs::temp_directory_path() / ("round-trip-tech-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(path) << technology_to_yaml(t);
  const Technology back = load_technology(path.string());
  fs::remove(path);
  EXPECT_EQ(back.name, t.name);
  EXPECT_EQ(back.description, t.description);
  EXPECT_EQ(back.node_nm, 5);
  EXPECT_EQ(back.clock_ghz, 1.4);
  for (const Technology::EntryDoc& d : Technology::entries()) {
    EXPECT_EQ(back.entry(d.dotted()).value, t.entry(d.dotted()).value) << d.dotted();
    EXPECT_EQ(back.entry(d.dotted()).source, t.entry(d.dotted()).source) << d.dotted();
  }
}

}  // namespace
}  // namespace stepsim
