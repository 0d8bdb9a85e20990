// libFuzzer entry of the 'tech' target (targets.h; run with scripts/fuzz.sh).
#include <cstdio>
#include <cstdlib>

#include "testbench/fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string finding = stepsim::fuzz::outcome(stepsim::fuzz::tech, data, size);
  if (!finding.empty()) {
    std::fprintf(stderr, "stepsim fuzz finding (tech): %s\n", finding.c_str());
    std::abort();  // libFuzzer saves the input as a crash
  }
  return 0;
}
