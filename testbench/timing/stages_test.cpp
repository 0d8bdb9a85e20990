// The stages of a simulation (sim/engine/simulation.h) one by one: what each hands the next, the
// results the operators report themselves, and the kernel's lifetime (sim/engine/sc_kernel.h).
#include <gtest/gtest.h>

#include <systemc>

#include "sim/engine/collect.h"
#include "sim/engine/diagnose.h"
#include "sim/engine/elaborate.h"
#include "sim/engine/impl_policy.h"
#include "sim/engine/plan.h"
#include "sim/engine/run.h"
#include "sim/engine/sc_kernel.h"
#include "testbench/timing/graph_builder.h"

namespace stepsim {
namespace {

// src -> sink_a and src -> sink_b: the source's port is read twice.
Graph fan_out() {
  Graph g;
  g.name = g.source = "fan_out";
  g.streams["s"] = to_beats(parse_tokens("1 2 S1 D"));
  g.nodes.push_back(node_spec("src", "Source", {{"stream", "s"}}));
  g.nodes.push_back(node_spec("sink_a", "Sink", {}, {{"in", "src"}}));
  g.nodes.push_back(node_spec("sink_b", "Sink", {}, {{"in", "src.out0"}}));
  return g;
}

TEST(Stages, ThePlanGivesAPortReadTwiceABroadcast) {
  const Plan plan = plan_graph(fan_out(), test::artifact());
  ASSERT_EQ(plan.nodes.size(), 4u);
  const NodeSpec& b = plan.nodes.back();
  EXPECT_EQ(b.name, "src.out0.broadcast");
  EXPECT_EQ(b.op, "Broadcast");
  EXPECT_EQ(plan.ports.at(b.name).out_numbered, 2u);  // out0, out1
  EXPECT_EQ(plan.num_outputs(b), 2u);
  EXPECT_EQ(plan.ports.at("src").out_numbered, 1u);
  for (const Edge& e : plan.edges)
    if (e.to == "sink_a" || e.to == "sink_b") {
      EXPECT_EQ(e.from, b.name);
    }
}

TEST(Stages, ThePlanRejectsAReferenceToAnUnknownNode) {
  Graph g = fan_out();
  g.nodes[1].inputs["in"] = "nowhere";
  EXPECT_THROW(plan_graph(g, test::artifact()), std::invalid_argument);
}

TEST(Stages, ThePolicyKeepsANodeWithoutAUnitApproximateUnderADefault) {
  const Graph g = fan_out();
  const Plan plan = plan_graph(g, test::artifact());
  const ImplPolicy policy(plan, "hls");
  OpConfig cfg;
  cfg.name = "sink_a";
  cfg.info = &OpRegistry::instance().find("Sink");
  const ImplChoice c = policy.choose(plan.node("sink_a"), cfg);
  EXPECT_EQ(c.impl, "approx");
  EXPECT_EQ(c.unit, nullptr);
  EXPECT_FALSE(c.note.empty());
  // The node's own impl: is honoured or an error.
  NodeSpec own = plan.node("sink_a");
  own.impl = "hls";
  EXPECT_THROW(policy.choose(own, cfg), std::invalid_argument);
  own.impl = "verilog";
  EXPECT_THROW(policy.choose(own, cfg), std::invalid_argument);
}

TEST(Stages, CosimImplAndAllApproximate) {
  Graph g = fan_out();
  EXPECT_EQ(cosim_impl(g, ""), "");
  g.nodes[1].impl = "hls";
  EXPECT_EQ(cosim_impl(g, ""), "hls");
  EXPECT_EQ(cosim_impl(g, "approx"), "");
  const Graph a = all_approximate(g);
  EXPECT_EQ(cosim_impl(a, ""), "");
  EXPECT_EQ(a.nodes.size(), g.nodes.size());
}

TEST(Stages, SinksReportTheirStreamsAndTheKernelGoesWithTheRun) {
  const Graph g = fan_out();
  SimOptions options;
  options.hw = test::artifact();
  const Plan plan = plan_graph(g, options.hw);
  SimResult r;
  {
    ScKernel kernel;
    EXPECT_NE(sc_core::sc_curr_simcontext, nullptr);
    Elaboration e(kernel);
    elaborate_environment(e, g, plan, options);
    elaborate_graph(e, plan, ImplPolicy(plan, ""), options);
    EXPECT_EQ(e.ops.size(), 4u);
    EXPECT_EQ(e.channels.size(), 3u);
    EXPECT_FALSE(e.has_units);
    run_elaboration(e, options);
    r = collect_results(e, plan, options.hw);
    EXPECT_EQ(diagnose_run(e), "");
  }
  EXPECT_EQ(sc_core::sc_curr_simcontext, nullptr);  // deleted: no unit ran
  ASSERT_EQ(r.recorded.size(), 2u);                 // one stream per Sink, none for the others
  EXPECT_EQ(format_beats(r.recorded.at("sink_a")), "1 2 S1 D");
  EXPECT_EQ(format_beats(r.recorded.at("sink_b")), "1 2 S1 D");
  EXPECT_EQ(r.recorded_times.at("sink_a").size(), 2u);
  ASSERT_EQ(r.nodes.size(), 4u);
  EXPECT_EQ(r.nodes[0].name, "sink_a");  // sorted by name
  for (const NodeResult& n : r.nodes) EXPECT_EQ(n.impl, "approx");
}

TEST(Stages, TheDiagnosisNamesTheOperatorError) {
  Graph g = fan_out();
  g.nodes[0].params["stream"] = "missing";
  SimOptions options;
  options.hw = test::artifact();
  options.static_check = false;  // the operator's own error, not the static check's
  const SimResult r = simulate(g, options);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "node 'src' (Source): no stream named 'missing' was provided");
}

TEST(Stages, FabricExcessNamesTheUnitsBeyondTheFabric) {
  HardwareParams hw = test::artifact();
  SimResult r;
  r.compute_units = hw.num_pcus;
  r.memory_units = hw.num_pmus;
  EXPECT_EQ(fabric_excess(r, hw), "");
  r.memory_units = hw.num_pmus + 1;
  EXPECT_EQ(fabric_excess(r, hw), std::to_string(hw.num_pmus + 1) + " memory units > " + std::to_string(hw.num_pmus));
}

}  // namespace
}  // namespace stepsim
