// Big graphs (issue 33, item 9): loading is linear in the nodes, and a run that would not fit the
// host (its fiber stacks and objects counted, and the memory mappings the stacks take) is
// refused before anything is elaborated, naming the file and the limit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "hw/channel/context.h"
#include "sim/engine/plan.h"
#include "sim/engine/simulation.h"
#include "sim/engine/validate.h"
#include "sim/graph/host_limits.h"
#include "sim/graph/loader.h"
#include "sim/graph/node_index.h"

namespace stepsim {
namespace {

// A load, n - 2 Maps and a sink in a chain (scripts/bench/big_graph.py), listed consumers first
// when `reverse`.
std::string chain_yaml(size_t n, bool reverse) {
  std::vector<std::string> nodes{"  - {name: k0, op: LinearOffChipLoad, params: {tensor: x, tile: [1, 64], "
                                 "out_shape: [4]}}\n"};
  for (size_t k = 1; k + 1 < n; ++k)
    nodes.push_back("  - {name: k" + std::to_string(k) + ", op: Map, params: {fn: exp}, inputs: {in0: k" +
                    std::to_string(k - 1) + "}}\n");
  nodes.push_back("  - {name: k" + std::to_string(n - 1) + ", op: Sink, inputs: {in: k" + std::to_string(n - 2) +
                  "}}\n");
  std::string yaml = "tensors:\n  x: {shape: [4, 64], dtype: bf16, init: random, seed: 1}\nnodes:\n";
  for (size_t k = 0; k < n; ++k) yaml += nodes[reverse ? n - 1 - k : k];
  return yaml;
}

// Steps (nodes indexed, lookups by name, nodes taken in typing order) of everything that reads a
// loaded graph before a run: the static check, the host-memory estimate and the plan.
uint64_t load_steps(const Graph& g) {
  HardwareParams hw;
  hw.num_pcus = g.nodes.size();
  graph_pass_steps = 0;
  shape::SymbolTable syms;
  validate_graph(g, syms);
  estimate_host_memory(g, hw, false);
  plan_graph(g, hw);
  return graph_pass_steps;
}

TEST(BigGraphs, CheckingAGraphTakesStepsLinearInItsNodes) {
  // Each pass looked every producer up by a scan of the nodes, and inference went over the file
  // once per node it could type: 36-55 s at 10^5 nodes, 106 s at 10^4 listed consumers first.
  // Now a lookup is one step, each pass indexes the nodes once and inference takes each node
  // once: about ten steps per node here, the same in any file order.
  for (const bool reverse : {false, true}) {
    const uint64_t small = load_steps(parse_graph(chain_yaml(500, reverse), "g.yaml", ".", {}));
    const uint64_t big = load_steps(parse_graph(chain_yaml(4000, reverse), "g.yaml", ".", {}));
    EXPECT_LE(small, 16u * 500) << "reverse " << reverse;
    EXPECT_LE(big, 16u * 4000) << "reverse " << reverse;
    EXPECT_LE(big, 9 * small) << "reverse " << reverse << ": " << small << " -> " << big;  // 8x the nodes, not 64x
  }
}

TEST(BigGraphs, AReversedChainIsTypedInTheSameOrderAsAForwardOne) {
  const Graph forward = parse_graph(chain_yaml(300, false), "g.yaml", ".", {});
  const Graph reverse = parse_graph(chain_yaml(300, true), "g.yaml", ".", {});
  shape::SymbolTable a, b;
  const shape::GraphTypes ta = validate_graph(forward, a), tb = validate_graph(reverse, b);
  EXPECT_EQ(ta.order, tb.order);  // dependency order: k0, k1, ...
  EXPECT_EQ(tb.order.front(), "k0");
  EXPECT_EQ(tb.nodes.at("k299").inputs.at("in").str(), "[1, 4] of T[1x64:bf16]");
}

TEST(BigGraphs, ANodeIndexFindsTheFirstNodeOfANameAndNamesADuplicate) {
  Graph g;
  g.nodes = {node_spec("a", OpKind::kSink), node_spec("b", OpKind::kSink), node_spec("a", OpKind::kSource)};
  const NodeIndex index(g);
  EXPECT_EQ(index.find("a"), &g.nodes[0]);
  EXPECT_EQ(index.position("b"), 1u);
  EXPECT_EQ(index.find("c"), nullptr);
  ASSERT_NE(index.duplicate(), nullptr);
  EXPECT_EQ(*index.duplicate(), "a");
  shape::SymbolTable syms;
  EXPECT_THROW(shape::infer_types(g, syms), shape::ShapeError);  // was an endless search for an order
}

// The message of the refusal of `g`, or "accepted".
std::string refusal(const Graph& g, bool functional = false) {
  try {
    check_host_memory(g, HardwareParams{}, functional);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

TEST(BigGraphs, EveryNodesFiberStackAndObjectsCountInTheEstimate) {
  // A 10^5-node run ended after 80 s in "node 'k16355' (Sink): std::bad_alloc": each fiber's stack
  // (64 KiB and a guard page) was not in the estimate, which counted channels, streams, tensors.
  const Graph g = parse_graph(chain_yaml(1000, false), "big.yaml", ".", {});
  const HostMemoryEstimate e = estimate_host_memory(g, HardwareParams{}, false);
  EXPECT_EQ(e.fibers, 1000u);
  EXPECT_GE(fiber_reservation_bytes(), kFiberStackBytes + 4096);
  EXPECT_GE(e.node_bytes, 1000 * fiber_reservation_bytes());
  EXPECT_EQ(e.total(), e.channel_bytes + e.stream_bytes + e.node_bytes + e.tensor_bytes);
  // A port read twice gets a Broadcast (sim/engine/plan.h): one fiber more.
  const Graph fan = parse_graph(
      "streams:\n  s: '1 2 D'\nnodes:\n  - {name: a, op: Source, params: {stream: s}}\n"
      "  - {name: b, op: Sink, inputs: {in: a}}\n  - {name: c, op: Sink, inputs: {in: a}}\n",
      "g.yaml", ".", {});
  EXPECT_EQ(estimate_host_memory(fan, HardwareParams{}, false).fibers, 4u);

  ::setenv("STEPSIM_HOST_MEMORY_LIMIT", "32M", 1);
  const std::string why = refusal(g);
  EXPECT_EQ(why.rfind("big.yaml: the run would need ", 0), 0u) << why;
  EXPECT_NE(why.find("(1000 fibers)"), std::string::npos) << why;
  EXPECT_NE(why.find("more than the limit of 32 MiB (set STEPSIM_HOST_MEMORY_LIMIT"), std::string::npos) << why;
  // simulate() refuses it first thing, before the plan (which would need 998 compute units here).
  try {
    simulate(g, SimOptions{});
    ADD_FAILURE() << "a run above the limit was not refused";
  } catch (const std::invalid_argument& err) {
    EXPECT_EQ(std::string(err.what()), why);
  }
  ::setenv("STEPSIM_HOST_MEMORY_LIMIT", "1G", 1);
  EXPECT_EQ(refusal(g), "accepted");
  ::unsetenv("STEPSIM_HOST_MEMORY_LIMIT");
}

TEST(BigGraphs, FibersPastTheKernelsMappingBudgetRunOnHeapStacks) {
  // A guarded stack is two memory mappings; vm.max_map_count (65530 by default) allows about
  // 3·10^4 of them. Past that Boost's mmap failed (std::bad_alloc in the middle of elaboration)
  // or its guard page was silently lost. Past the budget, stacks now come from the heap.
  const uint64_t budget = guarded_fiber_budget();
  EXPECT_GT(budget, 1000u);
  HardwareParams hw;
  hw.num_pcus = 40;
  SimOptions options;
  options.hw = hw;
  const Graph g = parse_graph(chain_yaml(40, false), "g.yaml", ".", {});
  const SimResult all_guarded = simulate(g, options);
  set_guarded_fiber_budget(10);
  const SimResult some_guarded = simulate(g, options);
  set_guarded_fiber_budget(budget);
  ASSERT_TRUE(all_guarded.ok) << all_guarded.error;
  ASSERT_TRUE(some_guarded.ok) << some_guarded.error;
  EXPECT_EQ(some_guarded.cycles, all_guarded.cycles);
  EXPECT_EQ(guarded_fibers(), 0u);  // every stack went back (the count is not leaked)
}

}  // namespace
}  // namespace stepsim
