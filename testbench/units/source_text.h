// The source tree as text, for the tests that read it (the unit manifest, the subset rules).
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace stepsim::testing_util {

inline const std::filesystem::path kSourceRoot = STEPSIM_SOURCE_DIR;

// The whole file (empty when it cannot be read: the tests then fail on what they look for).
inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace stepsim::testing_util
