// The case count and the seed of the lock-step tests, from the environment (the longer run,
// scripts/units_long.sh, sets them): `var` (STEPSIM_UNIT_CASES unless said) overrides the
// test's default count; the seed is STEPSIM_UNIT_SEED (default 1) * 1000 + the test's salt.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace stepsim::unit_test {

inline size_t env_cases(size_t dflt, const char* var = "STEPSIM_UNIT_CASES") {
  const char* e = std::getenv(var);
  return e ? size_t(std::strtoull(e, nullptr, 10)) : dflt;
}

inline uint64_t env_seed(uint64_t salt) {
  const char* e = std::getenv("STEPSIM_UNIT_SEED");
  return (e ? std::strtoull(e, nullptr, 10) : 1) * 1000 + salt;
}

}  // namespace stepsim::unit_test
