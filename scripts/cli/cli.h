#pragma once
#include <ostream>

namespace stepsim {
// Entry point of the `stepsim` tool; returns the process exit code.
int cli_main(int argc, char** argv, std::ostream& out, std::ostream& err);
}  // namespace stepsim
