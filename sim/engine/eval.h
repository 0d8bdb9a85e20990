// Runs one operator on literal token streams (`stepsim eval` and the operator tests).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "hw/presets/hardware.h"
#include "sim/engine/simulation.h"

namespace stepsim {

struct EvalResult {
  SimResult sim;
  std::vector<std::string> ports;            // output ports in order
  std::map<std::string, std::string> text;   // port -> token text
  std::map<std::string, std::string> shape;  // port -> observed shape
};

// `inputs`: (port or "" for the next positional port, token text). Numbered outputs default to
// the largest selector index seen + 1 (at least 2) unless `outputs` is given.
EvalResult eval_op(const std::string& op, const std::map<std::string, std::string>& params,
                   const std::vector<std::pair<std::string, std::string>>& inputs, const HardwareParams& hw,
                   size_t outputs = 0);

}  // namespace stepsim
