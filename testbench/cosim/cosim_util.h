// Shared by the co-simulation tests: whether the Verilated units are built (and registered), and
// the pin waveforms of two implementations compared.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hw/bridge/unit_bridge.h"

namespace stepsim {

// True when the build has the Verilated units (STEPSIM_RTL); registers their bridges once.
inline bool have_rtl() {
#ifdef STEPSIM_HAVE_RTL
  static bool once = [] {
    bridge::register_rtl_units();
    return true;
  }();
  return once;
#else
  return false;
#endif
}

// A waveform without its first line (the comment naming the implementation).
inline std::string waveform_body(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::string first;
  std::getline(f, first);
  std::stringstream rest;
  rest << f.rdbuf();
  return rest.str();
}

// Every pin of each node's unit, cycle by cycle, is the same in the waveforms of two runs written
// to dir/<impl> (CosimOptions::vcd).
inline void expect_same_waveforms(const std::filesystem::path& dir, const std::string& a, const std::string& b,
                                  const std::vector<std::string>& nodes) {
  for (const std::string& node : nodes) {
    const std::string wa = waveform_body(dir / a / (node + "." + a + ".vcd"));
    const std::string wb = waveform_body(dir / b / (node + "." + b + ".vcd"));
    EXPECT_GT(wa.size(), 1000u) << node << ": no waveform from " << a;
    EXPECT_TRUE(wa == wb) << node << ": the waveforms of " << a << " and " << b << " differ";
  }
}

}  // namespace stepsim
