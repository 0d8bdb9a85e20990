// stepsim command line: run | ops | eval | presets.
#include <iostream>

#include "sim/cli.h"

#include <cstdlib>

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);  // keep stdout for the tool's own output
  return stepsim::cli_main(argc, argv, std::cout, std::cerr);
}
