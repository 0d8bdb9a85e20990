// The unit manifest, rtl/units.list (docs/architecture.md, Add a unit): what rtl/units.cmake
// generates from it must be consistent, and the bridges take the operator from it only:
//  * every module line has its rtl/<module>.sv; a configuration line (`of:M`) follows M's line;
//  * every unit (`unit:NAME`) has an HLS type (`hls:Class<...>`) whose header hw/units exists,
//    and is used by a bridge kind; every bridge kind names only defined units;
//  * every route names a registered operator;
//  * rtl/files.sh (lint, synthesis) lists exactly the module lines;
//  * no source of hw/bridge compares text with a routed operator's name.
#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "hw/bridge/unit_bridge.h"
#include "hw/ops/op.h"

#include "testbench/units/source_text.h"

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = stepsim::testing_util::kSourceRoot;
using stepsim::testing_util::read_text;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> v;
  std::string w;
  std::istringstream in(s);
  while (std::getline(in, w, sep))
    if (!w.empty()) v.push_back(w);
  return v;
}

struct Manifest {
  std::vector<std::string> modules;                            // module lines, in order
  std::vector<std::pair<std::string, std::string>> configs;    // configuration lines: name, of
  std::map<std::string, std::string> unit_hls;                 // unit -> hls type
  std::map<std::string, std::vector<std::string>> kind_units;  // bridge kind -> units
  std::vector<std::string> routes;                             // OP[/FN][=MODE]
};

Manifest read_manifest() {
  Manifest m;
  std::istringstream in(read_text(kRoot / "rtl/units.list"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ws(line);
    std::vector<std::string> words;
    for (std::string w; ws >> w;) words.push_back(w);
    if (words.empty() || words[0][0] == '#') continue;
    if (words[0].rfind("bridge:", 0) == 0) {
      const std::string kind = words[0].substr(7);
      m.kind_units[kind];
      for (const std::string& w : words) {
        if (w.rfind("units:", 0) == 0) m.kind_units[kind] = split(w.substr(6), ',');
        if (w.rfind("ops:", 0) == 0)
          for (const std::string& r : split(w.substr(4), ',')) m.routes.push_back(r);
      }
      continue;
    }
    std::string of, unit, hls;
    for (const std::string& w : words) {
      if (w.rfind("of:", 0) == 0) of = w.substr(3);
      if (w.rfind("unit:", 0) == 0) unit = w.substr(5);
      if (w.rfind("hls:", 0) == 0) hls = w.substr(4);
    }
    if (of.empty())
      m.modules.push_back(words[0]);
    else
      m.configs.push_back({words[0], of});
    if (!unit.empty()) m.unit_hls[unit] = hls;
  }
  return m;
}

// ShapeZip<kZipN,kW> -> shape_zip (the rule of rtl/units.cmake).
std::string header_of(const std::string& hls) {
  const std::string cls = hls.substr(0, hls.find('<'));
  std::string h;
  for (size_t i = 0; i < cls.size(); ++i) {
    const char c = cls[i];
    if (std::isupper(static_cast<unsigned char>(c)) && i > 0) h += '_';
    h += char(std::tolower(static_cast<unsigned char>(c)));
  }
  return h;
}

TEST(UnitManifest, ModulesAndConfigurations) {
  const Manifest m = read_manifest();
  EXPECT_GE(m.modules.size(), 30u);
  std::set<std::string> seen;
  for (const std::string& mod : m.modules) {
    EXPECT_TRUE(fs::exists(kRoot / "rtl" / (mod + ".sv"))) << "rtl/" << mod << ".sv missing";
    EXPECT_TRUE(seen.insert(mod).second) << mod << " listed twice";
  }
  for (const auto& [name, of] : m.configs) {
    EXPECT_TRUE(seen.count(of)) << name << ": of:" << of << " is not a module line before it";
    EXPECT_TRUE(seen.insert(name).second) << name << " listed twice";
  }
}

TEST(UnitManifest, UnitsAndBridgeKinds) {
  const Manifest m = read_manifest();
  std::set<std::string> used;
  for (const auto& [kind, units] : m.kind_units)
    for (const std::string& u : units) {
      EXPECT_TRUE(m.unit_hls.count(u)) << "bridge:" << kind << " names unit " << u << ", which no line has";
      used.insert(u);
    }
  for (const auto& [unit, hls] : m.unit_hls) {
    EXPECT_FALSE(hls.empty()) << "unit:" << unit << " without hls:";
    EXPECT_TRUE(fs::exists(kRoot / "hw/units" / (header_of(hls) + ".h"))) << unit << ": hls:" << hls;
    EXPECT_TRUE(used.count(unit)) << "unit:" << unit << " is used by no bridge kind";
  }
}

TEST(UnitManifest, RoutesNameOperators) {
  const Manifest m = read_manifest();
  EXPECT_GE(m.routes.size(), 20u);
  const std::regex route("([A-Za-z0-9_]+)(/[A-Za-z0-9_]+)?(=[A-Za-z0-9_]+)?");
  for (const std::string& r : m.routes) {
    std::smatch g;
    ASSERT_TRUE(std::regex_match(r, g, route)) << r;
    EXPECT_TRUE(stepsim::OpRegistry::instance().has(g[1].str())) << r << ": no such operator";
  }
}

// Every route of the manifest is a unit on its operator's descriptor (OpInfo::units), with its
// support check and factory: the descriptor says which units run an operator.
TEST(UnitManifest, EveryRouteIsAUnitOnItsOperatorsDescriptor) {
  ASSERT_NE(stepsim::bridge::find_unit_impl("hls"), nullptr);
  const Manifest m = read_manifest();
  const std::regex route("([A-Za-z0-9_]+)(/([A-Za-z0-9_]+))?(=[A-Za-z0-9_]+)?");
  for (const std::string& r : m.routes) {
    std::smatch g;
    ASSERT_TRUE(std::regex_match(r, g, route)) << r;
    const stepsim::OpInfo& op = stepsim::OpRegistry::instance().find(g[1].str());
    bool found = false;
    for (const stepsim::UnitRunner& u : op.units)
      found = found || (u.impl == "hls" && u.fn == g[3].str() && u.unsupported && u.create);
    EXPECT_TRUE(found) << r << ": no hls unit on " << op.name << "'s descriptor";
  }
  EXPECT_TRUE(stepsim::OpRegistry::instance().find(stepsim::OpKind::kSource).units.empty());
}

TEST(UnitManifest, LintAndSynthesisListTheModules) {
  const std::string cmd = "bash -c 'source \"" + (kRoot / "rtl/files.sh").string() + "\" && rtl_tops'";
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  ASSERT_TRUE(p);
  std::string out;
  std::array<char, 256> buf;
  while (fgets(buf.data(), int(buf.size()), p.get())) out += buf.data();
  EXPECT_EQ(split(out, '\n'), read_manifest().modules);
}

// The bridges read the operator from their route (OpMode), not from its name.
TEST(UnitManifest, BridgesDoNotCompareOperatorNames) {
  std::set<std::string> ops;
  for (const std::string& r : read_manifest().routes) ops.insert(r.substr(0, r.find_first_of("/=")));
  for (const auto& e : fs::recursive_directory_iterator(kRoot / "hw/bridge")) {
    if (!e.is_regular_file()) continue;
    const std::string text = read_text(e.path());
    for (const std::string& op : ops)
      EXPECT_EQ(text.find("== \"" + op + "\""), std::string::npos)
          << e.path().filename() << " compares with \"" << op << "\"";
  }
}

}  // namespace
