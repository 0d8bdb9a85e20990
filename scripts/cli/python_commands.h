// Commands of the `stepsim` tool that run in the Python package (scripts/python/stepsim/cli.py):
// `stepsim dse`, and `stepsim sweep` spread over workers (--workers, --slurm). The search drives
// the simulator through the package, so the tool hands the whole command line to
// `python3 -m stepsim` (Debian's interpreter, the package of this build).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace stepsim {

// True for the command lines that run in Python (args without the program name).
bool runs_in_python(const std::vector<std::string>& args);

// Replaces this process with `python3 -m stepsim ARGS...`; returns only on failure (a build
// without the package, an interpreter that cannot be started), with the error printed.
int run_in_python(const std::vector<std::string>& args, std::ostream& err);

}  // namespace stepsim
