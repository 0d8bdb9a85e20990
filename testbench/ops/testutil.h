#pragma once
#include <gtest/gtest.h>

#include "hw/presets/hardware.h"
#include "sim/engine/eval.h"

namespace stepsim::test {

// SUITE.TEST of the running test, to name its own temporary files: CTest runs the tests of a file
// as parallel processes (ctest -j), which must not share a path.
inline std::string test_file_name() {
  const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string(t->test_suite_name()) + "." + t->name();
}

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
