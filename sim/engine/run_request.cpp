#include "sim/engine/run_request.h"

#include <stdexcept>

namespace stepsim {

namespace {
const std::string kTechPrefix = "tech.";  // --set tech.SECTION.KEY=VALUE
}  // namespace

std::pair<SimOptions, KeyValueList> prepare_run(const RunRequest& request) {
  if (request.mode != "timing" && request.mode != "functional")
    throw std::invalid_argument("--mode must be timing or functional, got '" + request.mode + "'");
  const std::string& impl = request.impl;
  if (!impl.empty() && impl != "approx" && impl != "hls" && impl != "rtl")
    throw std::invalid_argument("--impl must be approx, hls or rtl, got '" + impl + "'");
  SimOptions opt;
  opt.hw = load_preset(request.preset);
  opt.functional = request.mode == "functional";
  opt.shuffle_seed = request.shuffle_seed;
  opt.tech = load_technology(request.tech);
  KeyValueList graph_sets;
  for (const auto& [k, v] : request.sets) {
    if (HardwareParams::has_field(k))
      opt.hw.set(k, v);
    else if (k.rfind(kTechPrefix, 0) == 0)
      set_tech_entry(opt.tech, k.substr(kTechPrefix.size()), v);
    else
      graph_sets.push_back({k, v});
  }
  return {std::move(opt), std::move(graph_sets)};
}

}  // namespace stepsim
