// The bottleneck line (sim/report/report.h, find_bottleneck): small graphs whose bottleneck is known by
// construction, with the busy cycles derived from the timing rules (docs/timing-model.md), the
// step-artifact preset (send and response latency 1, fifo_depth 2, onchip_bw 64 B/cycle, an
// isolated HBM request 18 cycles), and the walk on a hand-made result.
#include <gtest/gtest.h>

#include <sstream>

#include "hw/presets/hardware.h"
#include "sim/engine/simulation.h"
#include "sim/graph/loader.h"
#include "sim/report/report.h"

namespace stepsim {
namespace {

struct Outcome {
  SimResult result;
  Bottleneck bottleneck;
  HardwareParams hw;
};

Outcome run(const std::string& yaml, const std::vector<std::pair<std::string, std::string>>& sets = {}) {
  Outcome r;
  r.hw = load_preset("step-artifact");
  for (const auto& [k, v] : sets) r.hw.set(k, v);
  SimOptions opt;
  opt.hw = r.hw;
  r.result = simulate(parse_graph(yaml, "test", ".", {}), opt);
  EXPECT_TRUE(r.result.ok) << r.result.error;
  r.bottleneck = find_bottleneck(r.result, r.hw);
  return r;
}

// Map matmul of literal [16x64] x [64x64] tiles (not in a memory unit: compute only) at
// compute_bw 1024: 2*16*64*64 / 1024 = 128 cycles per tile. Tile 0 is visible at 1, the four
// firings end at 1 + 4*128 = 513, the sink sees the last tile at 514.
const char* kComputeBound = R"(name: compute_bound
streams:
  x: 'T[16x64] T[16x64] T[16x64] T[16x64] D'
  w: 'T[64x64] T[64x64] T[64x64] T[64x64] D'
nodes:
  - {name: xs, op: Source, params: {stream: x}}
  - {name: ws, op: Source, params: {stream: w}}
  - {name: mm, op: Map, params: {fn: matmul}, inputs: {in0: xs, in1: ws}, compute_bw: 1024}
  - {name: out, op: Sink, inputs: {in: mm}}
)";

TEST(Bottleneck, ComputeBoundMap) {
  const Outcome r = run(kComputeBound);
  EXPECT_EQ(r.result.cycles, 514u);
  EXPECT_EQ(r.bottleneck.node, "mm");
  EXPECT_EQ(r.bottleneck.resource, "compute");
  EXPECT_EQ(r.bottleneck.cycles, 512u);
  EXPECT_DOUBLE_EQ(r.bottleneck.fraction, 512.0 / 514.0);
  // The sink waited on mm; mm waited 1 cycle for its first x tile (w was there by then).
  EXPECT_EQ(r.bottleneck.critical_path, (std::vector<std::string>{"out", "mm", "xs"}));
  EXPECT_EQ(r.bottleneck.text, "node mm (Map), compute (compute_bw=1024 FLOPs/cycle): busy 99.6 % of 514 cycles");
}

// Four [16x64] bf16 tiles: 16 rows x ceil(128 / 64) = 32 requests each, one per cycle. With one
// tile in flight a tile takes 31 + 18 = 49 cycles (its last request back), 4 x 49 = 196 busy;
// the sink sees the last tile at 197. Overlapped, the load issues 4 x 32 = 128 requests on 128
// cycles and the last is back at 127 + 18 = 145, visible at 146.
const char* kOffChipBound = R"(name: offchip_bound
tensors:
  a: {shape: [64, 64], dtype: bf16, init: random, seed: 1}
nodes:
  - {name: load, op: LinearOffChipLoad, params: {tensor: a, tile: [16, 64], out_shape: [4]}}
  - {name: out, op: Sink, inputs: {in: load}}
)";

TEST(Bottleneck, OffChipLoadWithOneTileInFlight) {
  for (const char* channels : {"32", "64"}) {
    const Outcome r = run(kOffChipBound, {{"hbm.channels", channels}});
    EXPECT_EQ(r.result.cycles, 197u) << channels;
    EXPECT_EQ(r.bottleneck.node, "load");
    EXPECT_EQ(r.bottleneck.resource, "offchip");
    EXPECT_EQ(r.bottleneck.cycles, 196u);
    EXPECT_EQ(r.bottleneck.critical_path, (std::vector<std::string>{"out", "load"}));
    // More channels change nothing, and the line says why.
    EXPECT_EQ(r.bottleneck.text,
              "node load (LinearOffChipLoad), off-chip requests with one tile in flight per load/store "
              "(offchip_one_tile_in_flight=true); no request could wait for an HBM channel (offchip.uncontended), "
              "so more hbm.channels cannot help: busy 99.5 % of 197 cycles");
  }
}

TEST(Bottleneck, OffChipLoadWithTilesOverlapping) {
  const Outcome r = run(kOffChipBound, {{"offchip_one_tile_in_flight", "false"}});
  EXPECT_EQ(r.result.cycles, 146u);
  EXPECT_EQ(r.bottleneck.resource, "offchip");
  EXPECT_EQ(r.bottleneck.cycles, 128u);
  EXPECT_NE(r.bottleneck.text.find("issued at par_dispatch per cycle (preset par_dispatch=1; tiles overlap: "
                                   "offchip_one_tile_in_flight=false)"),
            std::string::npos)
      << r.bottleneck.text;
  // Several tiles in flight: the memory cannot rule out queueing.
  EXPECT_NE(r.bottleneck.text.find("requests may queue on the hbm.channels=32 HBM channels"), std::string::npos);
}

// Map add of two loaded [64x64] bf16 tiles (both in the loads' memory units): per firing
// max(8192/64 + 8192/64 = 256 cycles of reads, ceil(2*4096/4096)... ) = 256 cycles; 4 firings =
// 1024 busy, of which ceil(flops / compute_bw) = ceil(16384 / 4096) = 4 count as compute and
// 1020 as on-chip bandwidth. The first tile is visible at 127 + 18 + 1 = 146, the sink sees the
// last sum at 146 + 1024 + 1 = 1171.
const char* kOnChipBound = R"(name: onchip_bound
tensors:
  a: {shape: [256, 64], dtype: bf16, init: random, seed: 1}
  b: {shape: [256, 64], dtype: bf16, init: random, seed: 2}
nodes:
  - {name: la, op: LinearOffChipLoad, params: {tensor: a, tile: [64, 64], out_shape: [4]}}
  - {name: lb, op: LinearOffChipLoad, params: {tensor: b, tile: [64, 64], out_shape: [4]}}
  - {name: add, op: Map, params: {fn: add}, inputs: {in0: la, in1: lb}}
  - {name: out, op: Sink, inputs: {in: add}}
)";

TEST(Bottleneck, OnChipBandwidthBoundMap) {
  const Outcome r = run(kOnChipBound);
  EXPECT_EQ(r.result.cycles, 1171u);
  EXPECT_EQ(r.bottleneck.node, "add");
  EXPECT_EQ(r.bottleneck.resource, "onchip_bandwidth");
  EXPECT_EQ(r.bottleneck.cycles, 1020u);
  EXPECT_EQ(r.bottleneck.text,
            "node add (Map), on-chip bandwidth (tile reads and writes in memory units at onchip_bw=64 B/cycle): busy "
            "87.1 % of 1171 cycles");
}

// Ten scalars from a Source with interval 0 through a depth-1 channel into a 0-cycle Flatten:
// beat k is sent at 2k (visible at 2k + 1, taken and dequeued then, slot free at 2k + 2), so the
// source waits 2 cycles for each of beats 1..9, 18 cycles, while its consumer neither works nor
// waits on its own output. The last beat is sent at 18, passes Flatten at 19 and reaches the
// sink at 20.
const char* kFifoBound = R"(name: fifo_bound
streams:
  s: '1 2 3 4 5 6 7 8 9 10 D'
nodes:
  - {name: src, op: Source, params: {stream: s, interval: 0}, depth: 1}
  - {name: f, op: Flatten, params: {min: 0, max: 0}, inputs: {in: src}}
  - {name: out, op: Sink, inputs: {in: f}}
)";

TEST(Bottleneck, FullFifoChain) {
  const Outcome r = run(kFifoBound);
  EXPECT_EQ(r.result.cycles, 20u);
  EXPECT_EQ(r.bottleneck.node, "src");
  EXPECT_EQ(r.bottleneck.resource, "fifo");
  EXPECT_EQ(r.bottleneck.channel, "src.out0->f.in");
  EXPECT_EQ(r.bottleneck.cycles, 18u);
  EXPECT_EQ(r.bottleneck.critical_path, (std::vector<std::string>{"out", "f", "src"}));
  EXPECT_EQ(r.bottleneck.text,
            "node src (Source), a full FIFO: waiting for space on 'src.out0->f.in' beyond its consumer's own work "
            "(depth 1): blocked 90.0 % of 20 cycles");
  // Two slots: beats 2k and 2k + 1 go at 2k, so the source waits 2 cycles 4 times and finishes at
  // 8; the last two beats pass Flatten at 9 and reach the sink at 10. Twice the rate, still the
  // FIFO: a 0-cycle source is bound by its channel's depth and round trip at any depth.
  std::string two = kFifoBound;
  two.replace(two.find("depth: 1"), 8, "depth: 2");
  const Outcome deep = run(two);
  EXPECT_EQ(deep.result.cycles, 10u);
  EXPECT_EQ(deep.bottleneck.resource, "fifo");
  EXPECT_EQ(deep.bottleneck.cycles, 8u);
  EXPECT_NE(deep.bottleneck.text.find("(depth 2): blocked 80.0 % of 10 cycles"), std::string::npos)
      << deep.bottleneck.text;
}

TEST(Bottleneck, ReportKeyAndSummaryLine) {
  SimOptions opt;
  opt.hw = load_preset("step-artifact");
  const Graph g = parse_graph(kComputeBound, "test", ".", {});
  const SimResult res = simulate(g, opt);
  ASSERT_TRUE(res.ok) << res.error;
  const Report rep = make_report(g, opt, res);
  const auto& b = rep.json["bottleneck"];
  EXPECT_EQ(b["node"], "mm");
  EXPECT_EQ(b["op"], "Map");
  EXPECT_EQ(b["resource"], "compute");
  EXPECT_EQ(b["channel"], "");
  EXPECT_EQ(b["cycles"], 512);
  EXPECT_DOUBLE_EQ(b["fraction"].get<double>(), 512.0 / 514.0);
  EXPECT_EQ(b["critical_path"], nlohmann::json::array({"out", "mm", "xs"}));
  std::ostringstream out;
  print_summary(rep, out);
  EXPECT_NE(out.str().find("\n  bottleneck                 node mm (Map), compute (compute_bw=1024 FLOPs/cycle): busy "
                           "99.6 % of 514 cycles\n  critical path              out <- mm <- xs\n"),
            std::string::npos)
      << out.str();
}

// ---- the walk, on a hand-made result

NodeResult node(const std::string& name, const std::string& op, uint64_t finish, uint64_t busy, uint64_t flops = 0,
                uint64_t compute_bw = 0) {
  NodeResult n;
  n.name = name;
  n.op = op;
  n.finish_cycle = finish;
  n.busy_cycles = busy;
  n.flops = flops;
  n.compute_bw = compute_bw;
  return n;
}

ChannelResult channel(const std::string& from, const std::string& to, uint64_t stall, uint64_t starve) {
  ChannelResult c;
  c.name = from + ".out->" + to + ".in";
  c.producer = from;
  c.consumer = to;
  c.params.depth = 2;
  c.stats.producer_stall_cycles = stall;
  c.stats.consumer_starve_cycles = starve;
  return c;
}

SimResult result(std::vector<NodeResult> nodes, std::vector<ChannelResult> channels, uint64_t cycles) {
  SimResult r;
  r.ok = true;
  r.cycles = cycles;
  std::sort(nodes.begin(), nodes.end(), [](const NodeResult& a, const NodeResult& b) { return a.name < b.name; });
  std::sort(channels.begin(), channels.end(),
            [](const ChannelResult& a, const ChannelResult& b) { return a.name < b.name; });
  r.nodes = std::move(nodes);
  r.channels = std::move(channels);
  return r;
}

// A broadcast feeds a slow branch and a fast one; the fast branch's sink finishes last, held up
// by the broadcast, which waits for space towards the slow Map: the walk goes back to the
// broadcast and then forward, through the full channel, to the Map.
TEST(Bottleneck, WalkFollowsTheLongestWaitIncludingFullOutputs) {
  const SimResult r =
      result({node("src", "Source", 10, 5), node("bc", "Broadcast", 990, 0), node("slow", "Map", 950, 900, 900, 1),
              node("sink_a", "Sink", 951, 0), node("fast", "Flatten", 995, 0), node("sink_b", "Sink", 1000, 0)},
             {channel("src", "bc", 0, 5), channel("bc", "slow", 950, 40), channel("slow", "sink_a", 0, 51),
              channel("bc", "fast", 0, 980), channel("fast", "sink_b", 0, 990)},
             1000);
  const Bottleneck b = find_bottleneck(r, load_preset("step-artifact"));
  EXPECT_EQ(b.critical_path, (std::vector<std::string>{"sink_b", "fast", "bc", "slow"}));
  EXPECT_EQ(b.node, "slow");
  EXPECT_EQ(b.resource, "compute");
  EXPECT_EQ(b.cycles, 900u);
  // The broadcast's 950 cycles of waiting for space are the Map's 900 busy cycles plus 50 the
  // channel's own: a full FIFO of 50 cycles, less than the Map's compute.
}

TEST(Bottleneck, FullFifoCountsOnlyWaitsItsConsumerDoesNotExplain) {
  // p waits 100 cycles on q, which worked 30 and waited 20 on its own output: 50 are the FIFO's.
  const SimResult r = result({node("p", "Source", 100, 0), node("q", "Flatten", 150, 30), node("s", "Sink", 160, 0)},
                             {channel("p", "q", 100, 0), channel("q", "s", 20, 0)}, 160);
  const Bottleneck b = find_bottleneck(r, load_preset("step-artifact"));
  // s finished last but waited on nothing: the path is s alone, and s was never busy.
  EXPECT_EQ(b.critical_path, std::vector<std::string>{"s"});
  EXPECT_EQ(b.resource, "none");
  EXPECT_EQ(b.text, "none: no node on the critical path was busy or blocked");
  SimResult waited = r;
  for (ChannelResult& c : waited.channels) c.stats.consumer_starve_cycles = c.consumer == "s" ? 140 : 0;
  for (ChannelResult& c : waited.channels) c.stats.consumer_starve_cycles += c.consumer == "q" ? 1 : 0;
  const Bottleneck w = find_bottleneck(waited, load_preset("step-artifact"));
  EXPECT_EQ(w.critical_path, (std::vector<std::string>{"s", "q", "p"}));
  EXPECT_EQ(w.node, "p");
  EXPECT_EQ(w.resource, "fifo");
  EXPECT_EQ(w.channel, "p.out->q.in");
  EXPECT_EQ(w.cycles, 50u);
}

TEST(Bottleneck, EmptyRunHasNone) {
  const Bottleneck b = find_bottleneck(SimResult{}, load_preset("step-artifact"));
  EXPECT_EQ(b.resource, "none");
  EXPECT_TRUE(b.critical_path.empty());
  EXPECT_EQ(b.fraction, 0.0);
}

}  // namespace
}  // namespace stepsim
