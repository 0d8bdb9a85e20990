// Energy and area of a run (sim/report/energy.h): action counts derived by hand from the timing
// rules, priced by a hand-made technology table; the actions sum to the run's own totals; the
// FLOP split by kind; --set tech.X=V; the summary's lines.
#include <gtest/gtest.h>

#include <sstream>

#include "hw/functions/flops.h"
#include "hw/presets/tech.h"
#include "sim/engine/run_request.h"
#include "sim/engine/simulation.h"
#include "sim/graph/loader.h"
#include "sim/report/energy.h"
#include "sim/report/report.h"

namespace stepsim {
namespace {

using nlohmann::json;

const std::string kDir = std::string(STEPSIM_SOURCE_DIR) + "/testbench/energy/";

// Prices chosen so that every action's share is visible in the sum: pJ per action, mm2 and mW per
// unit (mac 1, exp 2, vector_op 3, sram_read 5, sram_write 7, fifo_push 11, fifo_pop 13,
// noc_transfer 17, hbm_read 19, hbm_write 23; pcu 100, pmu_logic 10, sram_per_kib 0.5, router 1,
// address generator 2, HBM PHY 3 mm2; leakage pcu 1, pmu 2, router 3, address generator 4, HBM
// PHY 5 mW).
Technology hand_table() { return load_technology(kDir + "hand_tech.yaml"); }

struct RunOutcome {
  SimResult result;
  json report;
};

RunOutcome run(const std::string& file, const Technology& tech) {
  const Graph g = load_graph(file, {});
  SimOptions opt;
  opt.hw = load_preset("step-artifact");
  opt.tech = tech;
  RunOutcome r{simulate(g, opt), {}};
  EXPECT_TRUE(r.result.ok) << r.result.error;
  r.report = make_report(g, opt, r.result).json;
  return r;
}

const json& node(const json& report, const std::string& name) {
  for (const json& n : report["nodes"])
    if (n["name"] == name) return n;
  throw std::runtime_error("no node " + name);
}

// silu.yaml: x [64x64] bf16 = one tile of 8192 B, loaded, SiLU'd, stored (step-artifact:
// request_bytes 64, hbm.channels 32, pmu_capacity 512 KiB).
//   x        128 read requests (8192 B); the tile is staged in its memory unit (a write of 8192 B)
//            and sent on its output channel (8192 B pushed, one hop);
//   act      silu = 8 FLOPs per element of which one exp_f32 (4 FLOPs): 4096 exps and 4 x 4096
//            other FLOPs; it loads its operand from the load's memory unit (8192 B read at
//            onchip_bw); its output is not written back (its consumer is no Bufferize), so it goes
//            out on its channel (8192 B pushed, one hop) after 8192 B were popped;
//   store_y  pops 8192 B and writes them in 128 requests.
TEST(Energy, KnownAnswerFromHandCountedActions) {
  const RunOutcome r = run(kDir + "silu.yaml", hand_table());
  const json& rep = r.report;
  auto counts = [](uint64_t mac, uint64_t exp, uint64_t vec, uint64_t sr, uint64_t sw, uint64_t push, uint64_t pop,
                   uint64_t noc, uint64_t hr, uint64_t hw, uint64_t req) {
    return json{{"mac", mac},          {"exp", exp},       {"vector_op", vec},   {"sram_read", sr},
                {"sram_write", sw},    {"fifo_push", push}, {"fifo_pop", pop},    {"noc_transfer", noc},
                {"hbm_read", hr},      {"hbm_write", hw},  {"hbm_request", req}};
  };
  EXPECT_EQ(node(rep, "x")["actions"], counts(0, 0, 0, 0, 8192, 8192, 0, 8192, 8192, 0, 128));
  EXPECT_EQ(node(rep, "act")["actions"], counts(0, 4096, 16384, 8192, 0, 8192, 8192, 8192, 0, 0, 0));
  EXPECT_EQ(node(rep, "store_y")["actions"], counts(0, 0, 0, 0, 0, 0, 8192, 0, 0, 8192, 128));
  // Per node: x 8192 (7 + 11 + 17 + 19); act 4096 x 2 + 16384 x 3 + 8192 (5 + 13 + 11 + 17);
  // store_y 8192 (13 + 23).
  EXPECT_DOUBLE_EQ(node(rep, "x")["energy_pj"].get<double>(), 8192.0 * 54);
  EXPECT_DOUBLE_EQ(node(rep, "act")["energy_pj"].get<double>(), 8192.0 + 49152.0 + 8192.0 * 46);
  EXPECT_DOUBLE_EQ(node(rep, "store_y")["energy_pj"].get<double>(), 8192.0 * 36);
  const json& e = rep["energy"];
  const double dynamic = 8192.0 * 54 + 8192.0 + 49152.0 + 8192.0 * 46 + 8192.0 * 36;  // 1171456 pJ
  EXPECT_DOUBLE_EQ(e["dynamic_pj"].get<double>(), dynamic);
  EXPECT_DOUBLE_EQ(e["by_action_pj"]["fifo_push"].get<double>(), 16384.0 * 11);
  EXPECT_FALSE(e["by_action_pj"].contains("hbm_request"));  // counted, not priced
  // Allocated: 1 compute unit (act), 2 memory units (the load's and the store's), a router each,
  // 2 address generators, 32 HBM channels: 1 + 2 x 2 + 3 x 3 + 2 x 4 + 32 x 5 = 182 mW.
  EXPECT_DOUBLE_EQ(e["leakage_mw"].get<double>(), 182.0);
  const double cycles = double(r.result.cycles);
  EXPECT_DOUBLE_EQ(e["static_pj"].get<double>(), 182.0 * cycles / 1.0);  // mW x ns = pJ at 1 GHz
  EXPECT_DOUBLE_EQ(e["total_pj"].get<double>(), dynamic + 182.0 * cycles);
  EXPECT_DOUBLE_EQ(e["average_power_w"].get<double>(), (dynamic + 182.0 * cycles) / cycles / 1000.0);
  EXPECT_DOUBLE_EQ(e["pj_per_flop"].get<double>(), (dynamic + 182.0 * cycles) / 32768.0);
  EXPECT_DOUBLE_EQ(e["pj_per_token"].get<double>(), (dynamic + 182.0 * cycles) / 64.0);  // tokens: 64
  // Area: 100 + 2 x (10 + 512 KiB x 0.5) + 3 x 1 + 2 x 2 + 32 x 3 = 735 mm2.
  const json& a = rep["area"];
  EXPECT_DOUBLE_EQ(a["total_mm2"].get<double>(), 735.0);
  EXPECT_DOUBLE_EQ(a["memory_units_mm2"].get<double>(), 532.0);
  EXPECT_EQ(a["units"], (json{{"compute_units", 1}, {"memory_units", 2}, {"routers", 3}, {"address_generators", 2},
                              {"hbm_channels", 32}}));
}

// The per-node counts add up to what the run measures in its own way: the memory's traffic, the
// FLOPs, the channels' bytes.
TEST(Energy, ActionsSumToTheRunsOwnTotals) {
  for (const char* file : {"graphs/examples/higher_order.yaml", "graphs/examples/moe_small.yaml"}) {
    SCOPED_TRACE(file);
    const RunOutcome r = run(std::string(STEPSIM_SOURCE_DIR) + "/" + file, default_technology());
    Actions total;
    uint64_t flops = 0;
    for (const Actions& a : node_actions(r.result)) total += a;
    for (const NodeResult& n : r.result.nodes) {
      flops += n.flops;
      EXPECT_EQ(n.arithmetic.flops(), n.flops) << n.name;
    }
    uint64_t channel_bytes = 0;
    for (const ChannelResult& c : r.result.channels) channel_bytes += c.stats.bytes;
    EXPECT_EQ(total.hbm_read_bytes, r.result.offchip_read_bytes);
    EXPECT_EQ(total.hbm_write_bytes, r.result.offchip_write_bytes);
    EXPECT_EQ(total.hbm_requests, r.result.offchip_requests);
    EXPECT_EQ(2 * total.macs + kExpFlops * total.exps + total.vector_ops, flops);
    EXPECT_EQ(total.fifo_push_bytes, channel_bytes);
    EXPECT_EQ(total.fifo_pop_bytes, channel_bytes);
    EXPECT_GT(total.macs, 0u);
    EXPECT_GT(total.sram_read_bytes, 0u);
    EXPECT_EQ(r.report["energy"]["actions"]["mac"].get<uint64_t>(), total.macs);
  }
}

// flash_attn_update on S [4x8], V [8x16]: 7 M T + 2 M T D + 8 M + 2 M D = 1408 FLOPs, of which
// M T D + M D = 576 multiply-adds and M T + M = 36 exponentials; the rest 3 M T + 4 M = 112.
TEST(Energy, AttentionSplitsItsFlopsByKind) {
  const FlopRule rule{FlopRule::Kind::kFlashAttention};
  const Arithmetic a = tile_arithmetic(rule, {4, 8, 16, 4, 16});
  EXPECT_EQ(a.macs, 576u);
  EXPECT_EQ(a.exps, 36u);
  EXPECT_EQ(a.others, 112u);
  EXPECT_EQ(a.flops(), tile_flops<uint64_t>(rule, {4, 8, 16, 4, 16}));
  const Arithmetic m = tile_arithmetic({FlopRule::Kind::kMatmul}, {4, 8, 16, 4, 16});
  EXPECT_EQ(m.macs, 4u * 8 * 16);
  EXPECT_EQ(m.others, 0u);
}

TEST(Energy, SetOverridesOneTechnologyEntry) {
  RunRequest request;
  request.sets = {{"tech.energy_pj.bf16_fma", "2.5"}, {"batch", "4"}};
  auto [opt, graph_sets] = prepare_run(request);
  EXPECT_EQ(opt.tech.name, kDefaultTechnology);
  EXPECT_EQ(opt.tech.bf16_fma.value, 2.5);
  EXPECT_NE(opt.tech.bf16_fma.source.find("tech.energy_pj.bf16_fma=2.5"), std::string::npos);
  EXPECT_EQ(graph_sets, (KeyValueList{{"batch", "4"}}));
  request.sets = {{"tech.energy_pj.fma", "1"}};
  try {
    prepare_run(request);
    FAIL() << "an unknown entry was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown technology entry 'energy_pj.fma'; known: energy_pj.bf16_fma"),
              std::string::npos)
        << e.what();
  }
  request.sets = {{"tech.area_mm2.pcu", "-1"}};
  EXPECT_THROW(prepare_run(request), std::invalid_argument);
  request.sets = {};
  request.tech = "tech-3nm-nowhere";
  EXPECT_THROW(prepare_run(request), std::invalid_argument);
}

TEST(Energy, SummaryHasALineForEachFigureAndNamesTheTable) {
  const RunOutcome r = run(kDir + "silu.yaml", hand_table());
  std::ostringstream out;
  print_summary(Report{r.report}, out);
  const std::string s = out.str();
  for (const char* line : {"  energy                     ", "  energy by action           ",
                           "  average power              ", "  area                       735.000 mm2 allocated"})
    EXPECT_NE(s.find(line), std::string::npos) << line << "\n" << s;
  EXPECT_NE(s.find("(technology hand)"), std::string::npos) << s;
  EXPECT_EQ(s.find("per token none"), std::string::npos) << s;  // silu.yaml gives tokens: 64
}

}  // namespace
}  // namespace stepsim
