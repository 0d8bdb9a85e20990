// Stage 3 of a simulation (sim/engine/simulation.h): elaboration. The SystemC objects of one run, made
// from the plan (sim/engine/plan.h) under the implementation policy (sim/engine/impl_policy.h): the off-chip
// memory with its initial values, one operator or unit bridge per node, one channel per edge.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hw/channel/channel.h"
#include "hw/channel/context.h"
#include "hw/fabric/onchip_requirement.h"
#include "hw/memory/offchip.h"
#include "hw/ops/op.h"
#include "sim/engine/impl_policy.h"
#include "sim/engine/plan.h"
#include "sim/engine/sc_kernel.h"
#include "sim/engine/simulation.h"
#include "sim/graph/graph.h"

namespace stepsim {

// Everything of one run, living in `kernel`. Its destructor tears it down, or, when a unit was
// elaborated (a clocked unit's thread never ends), leaves it and the kernel behind.
struct Elaboration {
  explicit Elaboration(ScKernel& kernel) : kernel(kernel) {}
  ~Elaboration();
  Elaboration(const Elaboration&) = delete;
  Elaboration& operator=(const Elaboration&) = delete;

  ScKernel& kernel;
  // Destroyed in reverse: the operators before the channels they hold, the memory and the
  // scheduler last.
  std::unique_ptr<SimEnv> env;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<OffChipMemory> memory;
  std::vector<std::unique_ptr<Channel>> channels;
  std::map<std::string, std::unique_ptr<Op>> ops;  // by node name
  std::vector<Op*> order;                          // the operators in elaboration order
  std::map<std::string, ImplChoice> impls;         // what the policy chose, by node name
  std::vector<OpLink> links;                       // the channels' ends, for the on-chip accounting
  bool has_units = false;                          // a node runs on a unit (hw/bridge)
  bool ran = false;                                // the kernel was started (run.h)
};

// The environment the operators share (SimEnv), the scheduler, and the off-chip memory holding
// the graph's tensors (functional mode: with their initial values).
void elaborate_environment(Elaboration& e, const Graph& graph, const Plan& plan, const SimOptions& options);

// The operators and channels (in a shuffled order with SimOptions::shuffle_seed). Throws
// std::invalid_argument for a bad parameter, a port the operator does not have, an input
// connected twice or not at all, and an implementation the policy rejects.
void elaborate_graph(Elaboration& e, const Plan& plan, const ImplPolicy& policy, const SimOptions& options);

}  // namespace stepsim
