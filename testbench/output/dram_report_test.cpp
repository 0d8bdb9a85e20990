// The DRAM section of the report (sim/report/dram_report.h): what the banks and the controller of
// `hbm.model: dram` did, in the JSON report, the summary and the bottleneck line, with counts
// derived from the address mapping; and nothing of it under the fixed-latency model.
#include <gtest/gtest.h>

#include <sstream>

#include "hw/presets/hardware.h"
#include "sim/engine/simulation.h"
#include "sim/graph/loader.h"
#include "sim/report/metrics.h"
#include "sim/report/report.h"

namespace stepsim {
namespace {

// Four [16x64] bf16 tiles of a contiguous [64, 64] tensor: 64 rows of 128 B = 128 requests of
// 64 B at consecutive addresses. RoBaRaCoCh with 32 channels: request j is on channel j % 32,
// column j / 32 of row 0 of bank 0 of pseudo-channel 0. So each channel takes 4 requests to one
// row: the first opens it (a miss: the bank is closed), the other 3 hit it. The run is shorter
// than tREFI (3900 cycles): no refresh.
const char* kLoad = R"(name: load
tensors:
  a: {shape: [64, 64], dtype: bf16, init: random, seed: 1}
nodes:
  - {name: load, op: LinearOffChipLoad, params: {tensor: a, tile: [16, 64], out_shape: [4]}}
  - {name: out, op: Sink, inputs: {in: load}}
)";

struct DramRun {
  SimResult result;
  Report report;
  std::string summary;
};

DramRun run(const std::vector<std::pair<std::string, std::string>>& sets) {
  SimOptions opt;
  opt.hw = load_preset("step-artifact");
  for (const auto& [k, v] : sets) opt.hw.set(k, v);
  const Graph g = parse_graph(kLoad, "test", ".", {});
  DramRun r;
  r.result = simulate(g, opt);
  EXPECT_TRUE(r.result.ok) << r.result.error;
  r.report = make_report(g, opt, r.result);
  std::ostringstream s;
  print_summary(r.report, s);
  r.summary = s.str();
  return r;
}

TEST(DramReport, CountsTheRowsOfEveryRequestAndEachChannelsShare) {
  const DramRun r = run({{"hbm.model", "dram"}});
  const nlohmann::json& d = r.report.json["offchip"]["dram"];
  EXPECT_EQ(d["requests"], 128u);
  EXPECT_EQ(d["row_misses"], 32u);
  EXPECT_EQ(d["row_hits"], 96u);
  EXPECT_EQ(d["row_conflicts"], 0u);
  EXPECT_EQ(d["row_hit_rate"], 0.75);
  EXPECT_EQ(metric_value("offchip_row_hit_rate", r.report.json), 0.75);  // the DSE's metric
  EXPECT_EQ(d["activates"], 32u);
  EXPECT_EQ(d["refreshes"], 0u);
  EXPECT_EQ(d["refresh_stall_cycles"], 0u);
  EXPECT_EQ(d["mapping_order"], "RoBaRaCoCh");
  EXPECT_EQ(d["queue"]["depth"], 32u);
  ASSERT_EQ(d["channels"].size(), 32u);
  for (const nlohmann::json& c : d["channels"]) {
    EXPECT_EQ(c["requests"], 4u);
    EXPECT_EQ(c["bytes"], 256u);
    EXPECT_DOUBLE_EQ(c["bytes_per_cycle"].get<double>(), 256.0 / double(r.result.cycles));
  }
  EXPECT_NE(r.summary.find("  off-chip rows              hits 75.0 %, misses 25.0 %, conflicts 0.0 % of 128 requests "
                           "(RoBaRaCoCh, open page); 32 activates, 0 refreshes stalling activates 0 cycles\n"),
            std::string::npos)
      << r.summary;
  EXPECT_NE(r.summary.find("  off-chip controller        queue of 32: "), std::string::npos) << r.summary;
  // Three requests in four hit their row: the data buses, not the rows, bound the load.
  EXPECT_EQ(find_bottleneck(r.result, load_preset("step-artifact")).resource, "offchip");
}

TEST(DramReport, ClosedPageMakesRowMissesTheBottleneck) {
  const DramRun r = run({{"hbm.model", "dram"}, {"hbm.page_policy", "closed"}});
  const nlohmann::json& d = r.report.json["offchip"]["dram"];
  EXPECT_EQ(d["row_misses"], 128u);  // every access closes its row
  EXPECT_EQ(d["row_hits"], 0u);
  const nlohmann::json& b = r.report.json["bottleneck"];
  EXPECT_EQ(b["resource"], "offchip_row_misses");
  EXPECT_NE(b["text"].get<std::string>().find("node load (LinearOffChipLoad), off-chip row misses: 100.0 % of the "
                                              "requests opened a row (hbm.mapping_order=RoBaRaCoCh, "
                                              "hbm.page_policy=closed); off-chip requests with one tile in flight"),
            std::string::npos)
      << b["text"];
}

TEST(DramReport, TheFixedLatencyModelHasNoDramSection) {
  const DramRun r = run({});
  EXPECT_FALSE(r.report.json["offchip"].contains("dram"));
  EXPECT_EQ(r.summary.find("off-chip rows"), std::string::npos);
  EXPECT_EQ(r.report.json["bottleneck"]["resource"], "offchip");
  EXPECT_TRUE(metric_value("offchip_row_hit_rate", r.report.json).is_null());
}

}  // namespace
}  // namespace stepsim
