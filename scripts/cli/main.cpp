// stepsim: the command-line tool (subcommands and options in scripts/cli/cli.cpp).
#include <iostream>

#include "scripts/cli/cli.h"
#ifdef STEPSIM_HAVE_RTL
#include "hw/bridge/unit_bridge.h"
#endif

#include <csignal>
#include <cstdlib>

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  // Past a file-size limit a write fails with EFBIG, which OutputFile reports, instead of the
  // process dying with a core dump and a half-written file.
  std::signal(SIGXFSZ, SIG_IGN);
  // A reader that goes away (a FIFO, a pipe into `head`) makes a write fail with EPIPE, which is
  // reported, instead of killing the process without a word.
  std::signal(SIGPIPE, SIG_IGN);
#ifdef STEPSIM_HAVE_RTL
  stepsim::bridge::register_rtl_units();  // impl: rtl (the Verilated units)
#endif                                    // keep stdout for the tool's own output
  return stepsim::cli_main(argc, argv, std::cout, std::cerr);
}
