// Stage 4 of a simulation (sim/simulation.h): the run. Starts the kernel of an elaboration
// (sim/elaborate.h) and returns when nothing can run any more: every operator finished, a
// deadlock, or an operator error (sim/diagnose.h tells which).
#pragma once

#include "sim/elaborate.h"
#include "sim/simulation.h"

namespace stepsim {

// Calls SimOptions::progress while it runs.
void run_elaboration(Elaboration& e, const SimOptions& options);

}  // namespace stepsim
