// Stage 5 of a simulation (sim/engine/simulation.h): collecting the results. Each operator reports its
// own (its context's clock and counts, its on-chip figures, Op::take_report: a Sink's stream, a
// unit's implementation and clock edges), each channel its statistics, the memory its traffic;
// here they become a SimResult in an order that does not depend on the elaboration order.
#pragma once

#include "sim/engine/elaborate.h"
#include "sim/engine/plan.h"
#include "sim/engine/simulation.h"
#include "sim/graph/graph.h"

namespace stepsim {

// Everything but ok, error, the stored tensors and the wall time. Call once, after the run.
SimResult collect_results(Elaboration& e, const Plan& plan, const HardwareParams& hw);

// The run's fabric and on-chip totals: the sums over its nodes.
void sum_node_totals(SimResult& r);

// Functional mode, after a run that ended well: every tensor a store wrote (and every declared
// output) as OUTPUT_DIR/NAME.npy, and with SimOptions::keep_stored in r.stored. A run whose
// outputs could not all be written failed (r.ok false, r.error why): none of them is left behind.
void store_tensors(const Graph& graph, OffChipMemory& memory, const SimOptions& options, SimResult& r);

}  // namespace stepsim
