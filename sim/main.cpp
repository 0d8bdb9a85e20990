// stepsim command line: run | ops | eval | presets.
#include <iostream>

#include "sim/cli.h"
#ifdef STEPSIM_HAVE_RTL
#include "hw/bridge/unit_bridge.h"
#endif

#include <cstdlib>

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
#ifdef STEPSIM_HAVE_RTL
  stepsim::bridge::register_rtl_units();  // impl: rtl (the Verilated units)
#endif  // keep stdout for the tool's own output
  return stepsim::cli_main(argc, argv, std::cout, std::cerr);
}
