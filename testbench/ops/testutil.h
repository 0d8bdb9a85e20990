#pragma once
#include <gtest/gtest.h>

#include "hw/presets/hardware.h"
#include "sim/eval.h"

namespace stepsim::test {

inline HardwareParams artifact() { return load_preset("step-artifact"); }

// Runs `op` and returns port -> token text; fails the test on a simulation error.
inline std::map<std::string, std::string> run(const std::string& op, const std::map<std::string, std::string>& params,
                                              const std::vector<std::pair<std::string, std::string>>& inputs,
                                              size_t outputs = 0) {
  EvalResult r = eval_op(op, params, inputs, artifact(), outputs);
  EXPECT_TRUE(r.sim.ok) << r.sim.error;
  return r.text;
}

}  // namespace stepsim::test
