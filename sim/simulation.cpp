#include "sim/simulation.h"

#include <chrono>

#include "sim/collect.h"
#include "sim/diagnose.h"
#include "sim/elaborate.h"
#include "sim/graph/host_limits.h"
#include "sim/graph/tensors.h"
#include "sim/impl_policy.h"
#include "sim/plan.h"
#include "sim/run.h"
#include "sim/sc_kernel.h"
#include "sim/validate.h"

namespace stepsim {

SimResult simulate(const Graph& graph, const SimOptions& options) {
  const auto wall0 = std::chrono::steady_clock::now();
  check_host_memory(graph, options.hw, options.functional);  // before anything is allocated
  std::shared_ptr<const StaticCheck> checked;
  if (options.static_check) checked = check_before_run(graph);  // what `stepsim analyze` checks
  if (options.functional && !options.output_dir.empty()) prepare_output_dir(options.output_dir);
  const Plan plan = plan_graph(graph, options.hw);
  SimResult r;
  {
    ScKernel kernel;
    Elaboration e(kernel);  // goes before the kernel (or both stay, when units ran)
    elaborate_environment(e, graph, plan, options);
    const ImplPolicy policy(plan, !options.default_impl.empty() ? options.default_impl : graph.impl);
    elaborate_graph(e, plan, policy, options);
    run_elaboration(e, options);
    r = collect_results(e, plan, options.hw);
    r.static_check = checked;
    r.error = diagnose_run(e);
    r.ok = r.error.empty();
    if (r.ok) store_tensors(graph, *e.memory, options, r);
  }
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return r;
}

}  // namespace stepsim
