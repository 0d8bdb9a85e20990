// Stage 6 of a simulation (sim/engine/simulation.h): the diagnosis. Why a run did not end with every
// operator finished (the first operator error, or the deadlock: who waits for whom), and whether
// what the run needed fits the fabric.
#pragma once

#include <string>

#include "hw/presets/hardware.h"
#include "sim/engine/elaborate.h"
#include "sim/engine/simulation.h"

namespace stepsim {

// "" when every operator finished; otherwise the first operator error, or a description of the
// deadlock: the blocked operators, most telling first, and a wait-for cycle if there is one.
std::string diagnose_run(const Elaboration& e);

// Units the run took beyond the fabric's ("28 memory units > 10"), "" when it fits. The static
// allocation rejects a graph before its run; buffers that grow during the run can still take
// more memory units than the fabric has.
std::string fabric_excess(const SimResult& r, const HardwareParams& hw);

}  // namespace stepsim
