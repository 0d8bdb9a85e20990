// A run as the command line (`stepsim run`) and the Python module (`Graph.run`) ask for one: a
// preset, KEY=VALUE settings, a mode and an implementation. What both make of them is here, once,
// so the same request gives the same run and the same errors from either.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine/simulation.h"

namespace stepsim {

using KeyValueList = std::vector<std::pair<std::string, std::string>>;

struct RunRequest {
  std::string preset = "step-artifact";  // a preset name or a preset YAML file
  KeyValueList sets;                     // hardware parameters, else graph parameters or NODE.PARAM
  std::string mode = "timing";           // timing | functional
  std::string impl;                      // "" (the graph's), approx, hls or rtl
  uint64_t shuffle_seed = 0;
  std::string tech = kDefaultTechnology;  // a technology name or YAML file (hw/presets/tech.h)
};

// Checks the mode and the implementation, loads the preset and the technology and applies the
// settings that name a hardware parameter or a technology entry (tech.SECTION.KEY); returns the options and the settings left for the graph (graph parameters
// and NODE.PARAM, in order). Throws std::invalid_argument with the command line's wording.
std::pair<SimOptions, KeyValueList> prepare_run(const RunRequest& request);

}  // namespace stepsim
