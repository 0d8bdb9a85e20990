// Stage 4 of a simulation (sim/engine/simulation.h): the run. Starts the kernel of an elaboration
// (sim/engine/elaborate.h) and returns when nothing can run any more: every operator finished, a
// deadlock, or an operator error (sim/engine/diagnose.h tells which).
#pragma once

#include "sim/engine/elaborate.h"
#include "sim/engine/simulation.h"

namespace stepsim {

// Calls SimOptions::progress while it runs.
void run_elaboration(Elaboration& e, const SimOptions& options);

}  // namespace stepsim
