#include "sim/engine/simulation.h"

#include <chrono>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "sim/engine/collect.h"
#include "sim/engine/diagnose.h"
#include "sim/engine/elaborate.h"
#include "sim/engine/impl_policy.h"
#include "sim/engine/plan.h"
#include "sim/engine/run.h"
#include "sim/engine/sc_kernel.h"
#include "sim/engine/validate.h"
#include "sim/graph/host_limits.h"
#include "sim/graph/tensors.h"

namespace stepsim {

namespace {

// A functional run makes and drops tiles of up to megabytes all the time (a [4096 x 64] weight
// tile holds 1 MiB of values). glibc serves blocks of 128 KiB and more by mmap and gives the
// heap's top back to the system, so each such tile cost a fresh mapping: page faults and the
// kernel zeroing every page (a tenth of the Mixtral MoE layer's run). Keep them in the heap.
void keep_large_tiles_in_the_heap() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);   // the largest glibc accepts
  mallopt(M_TRIM_THRESHOLD, 256 << 20);  // free memory the heap may keep
#endif
}

}  // namespace

SimResult simulate(const Graph& graph, const SimOptions& options) {
  const auto wall0 = std::chrono::steady_clock::now();
  check_host_memory(graph, options.hw, options.functional);  // before anything is allocated
  std::shared_ptr<const StaticCheck> checked;
  if (options.static_check) checked = check_before_run(graph);  // what `stepsim analyze` checks
  if (options.functional && !options.output_dir.empty()) prepare_output_dir(options.output_dir);
  if (options.functional) keep_large_tiles_in_the_heap();
  const Plan plan = plan_graph(graph, options.hw);
  SimResult r;
  {
    ScKernel kernel;
    Elaboration e(kernel);  // goes before the kernel (or both stay, when units ran)
    elaborate_environment(e, graph, plan, options);
    const ImplPolicy policy(plan, !options.default_impl.empty() ? options.default_impl : graph.impl, checked.get());
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
