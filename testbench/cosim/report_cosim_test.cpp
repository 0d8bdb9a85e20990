// The run report under co-simulation (sim/report/report.h, docs/user-guide.md "The JSON report"): every
// key means what it means in an approximate run. A node on a unit takes its firings, FLOPs and
// on-chip bytes from the approximate twin; its cycles, busy cycles and trace are the unit's.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "hw/presets/hardware.h"
#include "sim/cosim/cosim.h"
#include "sim/engine/simulation.h"
#include "sim/graph/loader.h"
#include "sim/report/report.h"
#include "testbench/cosim/cosim_util.h"

namespace stepsim {
namespace {

const std::string kGraph = std::string(STEPSIM_SOURCE_DIR) + "/graphs/examples/cosim_units.yaml";

struct Cosim {
  Graph graph;
  SimOptions options;
  CosimReport report;
};

// cosim_units.yaml with prod (Map mul) and sum (Accum add) kept approximate, the rest on units.
Cosim run_mixed(bool functional) {
  Cosim c;
  c.graph = load_graph(kGraph, {});
  for (NodeSpec& n : c.graph.nodes)
    if (n.name == "prod" || n.name == "sum") n.impl = "approx";
  c.options.hw = load_preset("step-artifact");
  c.options.functional = functional;
  c.options.trace = true;
  CosimOptions co;
  co.impl = "hls";
  c.report = cosimulate(c.graph, c.options, co);
  return c;
}

std::map<std::string, const NodeResult*> by_name(const SimResult& r) {
  std::map<std::string, const NodeResult*> m;
  for (const NodeResult& n : r.nodes) m[n.name] = &n;
  return m;
}

TEST(CosimReport, BridgedNodesCountLikeTheirApproximateTwins) {
  for (bool functional : {false, true}) {
    const Cosim c = run_mixed(functional);
    ASSERT_TRUE(c.report.approx.ok && c.report.cosim.ok) << c.report.approx.error << c.report.cosim.error;
    ASSERT_TRUE(c.report.equivalent);
    const auto approx = by_name(c.report.approx);
    uint64_t flops = 0;
    size_t bridged = 0;
    for (const NodeResult& n : c.report.cosim.nodes) {
      const NodeResult& t = *approx.at(n.name);
      flops += n.flops;
      if (n.impl == "approx") {
        EXPECT_FALSE(n.counts_from_twin) << n.name;
        continue;
      }
      ++bridged;
      EXPECT_TRUE(n.counts_from_twin) << n.name;
      EXPECT_EQ(n.firings, t.firings) << n.name;
      EXPECT_EQ(n.flops, t.flops) << n.name;
      EXPECT_EQ(n.onchip_peak_bytes, t.onchip_peak_bytes) << n.name;
      EXPECT_EQ(n.onchip_requirement_bytes, t.onchip_requirement_bytes) << n.name;
      EXPECT_EQ(n.memory_units, t.memory_units) << n.name;
    }
    EXPECT_EQ(bridged, 19u);
    // The approximate nodes counted their own FLOPs in the co-simulated run.
    EXPECT_EQ(c.report.cosim.nodes.size(), c.report.approx.nodes.size());
    EXPECT_EQ(by_name(c.report.cosim).at("prod")->flops, 128u);
    EXPECT_EQ(by_name(c.report.cosim).at("sum")->flops, 128u);
    // So the totals equal the approximate run's (576 FLOPs: mul, add, max, row_sum, add).
    const Report rep = make_report(c.graph, c.options, c.report);
    const Report twin = make_report(c.graph, c.options, c.report.approx);
    EXPECT_EQ(rep.json["compute"]["flops"], 576);
    EXPECT_EQ(rep.json["compute"]["flops"], twin.json["compute"]["flops"]);
    EXPECT_EQ(rep.json["onchip"]["measured_peak_bytes"], twin.json["onchip"]["measured_peak_bytes"]);
    EXPECT_EQ(rep.json["onchip"]["requirement_bytes"], twin.json["onchip"]["requirement_bytes"]);
    EXPECT_EQ(rep.json["fabric"]["memory_units"], twin.json["fabric"]["memory_units"]);
    EXPECT_EQ(rep.json["cycles"], c.report.cosim.cycles);
  }
}

TEST(CosimReport, CosimSectionSummaryAndBottleneck) {
  const Cosim c = run_mixed(true);
  ASSERT_TRUE(c.report.cosim.ok) << c.report.cosim.error;
  const Report rep = make_report(c.graph, c.options, c.report);
  const auto& s = rep.json["cosim"];
  EXPECT_EQ(s["impl"], "hls");
  EXPECT_EQ(s["bridged_nodes"], 19);
  EXPECT_EQ(s["approx_cycles"], c.report.approx.cycles);
  EXPECT_EQ(s["equivalent"], true);
  EXPECT_EQ(s["unit_clocks"], c.report.unit_clocks);
  EXPECT_EQ(s["from_approximate_run"],
            nlohmann::json::array({"nodes[].firings", "nodes[].flops", "nodes[].memory_units",
                                   "nodes[].onchip_requirement_bytes", "nodes[].onchip_peak_bytes",
                                   "nodes[].actions.mac", "nodes[].actions.exp", "nodes[].actions.vector_op",
                                   "nodes[].actions.sram_read", "nodes[].actions.sram_write"}));
  for (const auto& n : rep.json["nodes"])
    EXPECT_EQ(n["impl"], n["name"] == "prod" || n["name"] == "sum" || n["op"] == "LinearOffChipLoad" ||
                                 n["op"] == "Source" || n["op"] == "Sink"
                             ? "approx"
                             : "hls")
        << n["name"];
  EXPECT_NE(rep.json["bottleneck"]["resource"], "none");
  std::ostringstream out;
  print_summary(rep, out);
  EXPECT_NE(out.str().find("\n  cycles                     " + std::to_string(c.report.cosim.cycles) + " cycles\n"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("\n  co-simulation              19 nodes on hls units ("), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("the all-approximate run took " + std::to_string(c.report.approx.cycles) + " cycles"),
            std::string::npos);
  EXPECT_NE(out.str().find("\n  bottleneck                 node "), std::string::npos);
}

// The timeline has events for every node that worked: firings of the approximate nodes, busy
// spans of the units (runs of cycles in which a beat moved on a pin), whose lengths add up to
// the unit's busy cycles.
TEST(CosimReport, TraceHasTheUnitsBusySpans) {
  const Cosim c = run_mixed(false);
  ASSERT_TRUE(c.report.cosim.ok) << c.report.cosim.error;
  const SimResult& r = c.report.cosim;
  std::vector<uint64_t> span_cycles(r.nodes.size(), 0), events(r.nodes.size(), 0);
  uint64_t last_end = 0;
  std::vector<uint64_t> end_of(r.nodes.size(), 0);
  for (const TraceEvent& e : r.trace) {
    span_cycles[size_t(e.op)] += e.dur;
    ++events[size_t(e.op)];
    // Spans of one unit do not overlap and are not adjacent (adjacent cycles make one span).
    if (r.nodes[size_t(e.op)].impl != "approx") {
      EXPECT_TRUE(events[size_t(e.op)] == 1 || e.start > end_of[size_t(e.op)]) << r.nodes[size_t(e.op)].name;
      end_of[size_t(e.op)] = e.start + e.dur;
    }
    last_end = std::max(last_end, e.start + e.dur);
  }
  for (size_t k = 0; k < r.nodes.size(); ++k) {
    const NodeResult& n = r.nodes[k];
    if (n.impl == "approx") continue;
    EXPECT_GT(events[k], 0u) << n.name;
    EXPECT_EQ(span_cycles[k], n.busy_cycles) << n.name;
  }
  EXPECT_LE(last_end, r.cycles);
}

TEST(CosimReport, CosimFolderThatIsAFileIsAClearError) {
  const std::string file = testing::TempDir() + "stepsim_cosim_dir_is_a_file";
  { std::ofstream(file) << "x"; }
  CosimOptions co;
  co.impl = "hls";
  co.dir = file;
  SimOptions o;
  o.hw = load_preset("step-artifact");
  try {
    cosimulate(load_graph(kGraph, {}), o, co);
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot create the co-simulation folder '" + file + "': Not a directory");
  }
  std::remove(file.c_str());
}

}  // namespace
}  // namespace stepsim
