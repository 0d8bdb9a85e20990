// Fabric allocation (compute/memory units against the preset) and the on-chip memory requirement:
// the paper's formulas (step-paper-notes §3.4, §8 items 2 and 5), the artifact's variant, and the
// measured per-node peaks. Every expected value is computed here from the shapes involved.
#include <gtest/gtest.h>

#include <sstream>

#include "hw/fabric/allocation.h"
#include "hw/fabric/onchip_requirement.h"
#include "hw/presets/hardware.h"
#include "sim/engine/simulation.h"
#include "sim/report/report.h"

namespace stepsim {
namespace {

constexpr uint64_t kBf16 = 2;

HardwareParams artifact_hw() { return load_preset("step-artifact"); }

struct GraphBuilder {
  Graph g;
  GraphBuilder() { g.name = "fabric_test"; }
  // A Source node playing `text`.
  GraphBuilder& source(const std::string& name, const std::string& text) {
    g.streams[name] = to_beats(parse_tokens(text));
    g.nodes.push_back(node_spec(name, "Source", {{"stream", name}}));
    return *this;
  }
  GraphBuilder& node(const std::string& name, const std::string& op, std::map<std::string, std::string> params,
                     std::map<std::string, std::string> inputs, std::optional<uint64_t> compute_bw = {}) {
    g.nodes.push_back(node_spec(name, op, std::move(params), std::move(inputs), compute_bw));
    return *this;
  }
  GraphBuilder& sink(const std::string& name, const std::string& from) {
    return node(name, "Sink", {}, {{"in", from}});
  }
};

SimResult run(const Graph& g, const HardwareParams& hw, uint64_t shuffle = 0) {
  SimOptions opt;
  opt.hw = hw;
  opt.shuffle_seed = shuffle;
  return simulate(g, opt);
}

const NodeResult& node(const SimResult& r, const std::string& name) {
  for (const NodeResult& n : r.nodes)
    if (n.name == name) return n;
  throw std::runtime_error("no node " + name);
}

// An [N, R, C] stream of `tile` elements: N groups of R rows of C tiles.
std::string nrc(int n, int r, int c, const std::string& tile) {
  std::string s;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < r; ++j) {
      for (int k = 0; k < c; ++k) s += tile + " ";
      s += j + 1 == r ? "S2 " : "S1 ";
    }
  return s + "D";
}

// Two Maps with per-node compute bandwidth and a Bufferize.
Graph small_compute_graph() {
  GraphBuilder b;
  b.source("a", "T[16x16] T[16x16] S1 D")
      .node("big", "Map", {{"fn", "exp"}}, {{"in0", "a.out0"}}, 6400)
      .node("small", "Map", {{"fn", "exp"}}, {{"in0", "big"}})
      .node("buf", "Bufferize", {{"rank", "1"}}, {{"in", "small"}})
      .sink("out", "buf");
  return b.g;
}

// ---------------------------------------------------------------------------------------------
// Allocation

TEST(Allocation, ComputeUnitsAreComputeBandwidthOverPcuFlopsRoundedUp) {
  SimResult r = run(small_compute_graph(), artifact_hw());
  ASSERT_TRUE(r.ok) << r.error;
  // 6400 FLOPs/cycle on PCUs of 4096: ceil(6400 / 4096) = 2; the default 4096: 1.
  EXPECT_EQ(node(r, "big").compute_units, 2u);
  EXPECT_EQ(node(r, "small").compute_units, 1u);
  EXPECT_EQ(node(r, "buf").compute_units, 0u);
  EXPECT_EQ(r.compute_units, 3u);
  // One memory unit for the Bufferize (static); its two 16x16 bf16 tiles fit in it.
  EXPECT_EQ(r.memory_units_static, 1u);
  EXPECT_EQ(node(r, "buf").memory_units, 1u);
  EXPECT_EQ(node(r, "big").memory_units, 0u);  // an elementwise Map holds nothing
  EXPECT_EQ(r.memory_units, 1u);
}

TEST(Allocation, UnitCountsFollowThePresetSizes) {
  HardwareParams hw = artifact_hw();
  hw.set("pcu_flops", "1000");
  const OpInfo& map = OpRegistry::instance().find("Map");
  const OpInfo& buf = OpRegistry::instance().find("Bufferize");
  const OpInfo& flatten = OpRegistry::instance().find("Flatten");
  FabricAllocation a = allocate_fabric({{"m", &map, 6400}, {"b", &buf, 0}, {"f", &flatten, 0}}, hw);
  EXPECT_EQ(a.nodes[0].compute_units, 7u);  // ceil(6400 / 1000)
  EXPECT_EQ(a.nodes[1].memory_units, 1u);
  EXPECT_EQ(a.nodes[2].compute_units + a.nodes[2].memory_units, 0u);
  EXPECT_EQ(a.compute_units, 7u);
  EXPECT_EQ(a.memory_units, 1u);
  // The Bufferize's own unit plus every unit no node holds statically.
  EXPECT_EQ(a.buffer_pmu_limit, 1u + (hw.num_pmus - 1u));
  EXPECT_EQ(memory_units_for(hw.pmu_capacity + 1, hw), 2u);
}

TEST(Allocation, GraphNeedingMoreComputeUnitsThanTheFabricIsRejectedBeforeRunning) {
  HardwareParams hw = artifact_hw();
  hw.set("num_pcus", "2");
  try {
    run(small_compute_graph(), hw);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("graph needs 3 compute units (PCU, 4096 FLOPs/cycle each) but the fabric has 2"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("largest users: node 'big' (Map) 2 units, node 'small' (Map) 1 unit"), std::string::npos) << m;
  }
}

TEST(Allocation, GraphNeedingMoreMemoryUnitsThanTheFabricIsRejected) {
  HardwareParams hw = artifact_hw();
  hw.set("num_pmus", "1");
  GraphBuilder b;
  b.source("a", "T[16x16] S1 D")
      .source("c", "T[16x16] S1 D")
      .node("buf_a", "Bufferize", {{"rank", "1"}}, {{"in", "a.out0"}})
      .node("buf_c", "Bufferize", {{"rank", "1"}}, {{"in", "c.out0"}})
      .sink("sa", "buf_a")
      .sink("sc", "buf_c");
  try {
    run(b.g, hw);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("graph needs 2 memory units (PMU, 512 KiB each"), std::string::npos) << m;
    EXPECT_NE(m.find("but the fabric has 1 (num_pmus)"), std::string::npos) << m;
    EXPECT_NE(m.find("node 'buf_a' (Bufferize) 1 unit"), std::string::npos) << m;
  }
}

// A buffer's size is dynamic: checked at run time against its unit plus the unallocated pool.
TEST(Allocation, BufferLargerThanTheAvailableMemoryUnitsIsARuntimeError) {
  const uint64_t tile = 16 * 16 * kBf16;  // 512 B
  GraphBuilder b;
  b.source("a", "T[16x16] T[16x16] T[16x16] S1 D")
      .node("buf", "Bufferize", {{"rank", "1"}}, {{"in", "a.out0"}})
      .sink("s", "buf");
  HardwareParams hw = artifact_hw();
  hw.set("pmu_capacity", "1024");
  hw.set("num_pmus", "1");  // the Bufferize's own unit, no pool: at most 1024 B per buffer
  SimResult r = run(b.g, hw);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("node 'buf' (Bufferize)"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("buffer of shape [3] (3 elements, " + std::to_string(3 * tile) + " B)"), std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("needs 2 memory units (PMU, 1024 B each) but at most 1 are available to one buffer (1024 B)"),
            std::string::npos)
      << r.error;

  hw.set("num_pmus", "2");  // one unit in the pool: the 1536 B buffer fits in two units
  r = run(b.g, hw);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(node(r, "buf").memory_units, 2u);  // ceil(1536 / 1024), from the measured peak
  EXPECT_EQ(r.memory_units_static, 1u);
}

// ---------------------------------------------------------------------------------------------
// On-chip requirement: the paper's formulas evaluated on observed shapes

// step-paper-notes §8 item 5: Bufferize rank 2 over [N,R,C] -> N buffers of [R,C];
// requirement |tile| + R*C*|tile|*2.
TEST(OnChipRequirement, BufferizeStreamifyRoundTripMatchesThePaperFormula) {
  const int N = 2, R = 2, C = 3;
  const uint64_t tile = 16 * 64 * kBf16;  // T[16x64] bf16
  GraphBuilder b;
  b.source("a", nrc(N, R, C, "T[16x64]"))
      .node("buf", "Bufferize", {{"rank", "2"}}, {{"in", "a.out0"}})
      .node("str", "Streamify", {{"repeat", "[1]"}}, {{"in", "buf"}})
      .sink("s", "str");
  SimResult r = run(b.g, artifact_hw());
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.onchip_model, "paper");
  const uint64_t bufferize = tile + uint64_t(R * C) * tile * 2;
  EXPECT_EQ(bufferize, 26624u);
  EXPECT_EQ(node(r, "buf").onchip_requirement_bytes, bufferize);
  EXPECT_EQ(node(r, "str").onchip_requirement_bytes, 0u);  // streamed
  EXPECT_EQ(node(r, "a").onchip_requirement_bytes + node(r, "s").onchip_requirement_bytes, 0u);
  EXPECT_EQ(r.onchip_requirement_bytes, bufferize);

  // The artifact's mode=1 also counts the Streamify: card(buffer) x |tile| + |tile|.
  HardwareParams hw = artifact_hw();
  hw.set("onchip_requirement_model", "artifact");
  SimResult a = run(b.g, hw);
  ASSERT_TRUE(a.ok) << a.error;
  EXPECT_EQ(a.onchip_model, "artifact");
  EXPECT_EQ(node(a, "buf").onchip_requirement_bytes, bufferize);
  EXPECT_EQ(node(a, "str").onchip_requirement_bytes, uint64_t(R * C) * tile + tile);
  EXPECT_EQ(a.onchip_requirement_bytes, bufferize + uint64_t(R * C) * tile + tile);
}

// Map whose function is a matmul: 16 x in_tile_col (in bytes) + weight tile.
TEST(OnChipRequirement, MatmulMapIsSixteenInputRowsPlusTheWeightTile) {
  GraphBuilder b;
  b.source("x", "T[32x64] T[32x64] S1 D")
      .source("w", "T[64x16] T[64x16] S1 D")
      .node("mm", "Map", {{"fn", "matmul"}}, {{"in0", "x.out0"}, {"in1", "w.out0"}})
      .node("act", "Map", {{"fn", "exp"}}, {{"in0", "mm"}})
      .sink("s", "act");
  SimResult r = run(b.g, artifact_hw());
  ASSERT_TRUE(r.ok) << r.error;
  const uint64_t in_tile = 32 * 64 * kBf16, weight = 64 * 16 * kBf16;
  EXPECT_EQ(node(r, "mm").onchip_requirement_bytes, 16 * 64 * kBf16 + weight);  // 2048 + 2048
  EXPECT_EQ(node(r, "act").onchip_requirement_bytes, 0u);                       // not a matmul: streamed
  // Measured: the inner-product matmul holds both whole operand tiles while it computes.
  EXPECT_EQ(node(r, "mm").onchip_peak_bytes, in_tile + weight);
  EXPECT_EQ(node(r, "act").onchip_peak_bytes, 0u);

  HardwareParams hw = artifact_hw();
  hw.set("onchip_requirement_model", "artifact");
  SimResult a = run(b.g, hw);
  ASSERT_TRUE(a.ok) << a.error;
  EXPECT_EQ(node(a, "mm").onchip_requirement_bytes, 0u);  // BinaryMap counts nothing in mode=1
}

TEST(OnChipRequirement, AccumCountsItsOutputAndAMatmulAccumAlsoItsOperands) {
  GraphBuilder b;
  b.source("x", "T[8x16] T[8x16] S1 T[8x16] S1 D")
      .node("sum", "Accum", {{"fn", "add"}, {"rank", "1"}}, {{"in0", "x.out0"}})
      .sink("s1", "sum")
      .source("a", "T[16x32] T[16x32] S1 D")
      .source("w", "T[32x8] T[32x8] S1 D")
      .node("mma", "Accum", {{"fn", "matmul_acc"}, {"rank", "1"}}, {{"in0", "a.out0"}, {"in1", "w.out0"}})
      .sink("s2", "mma");
  SimResult r = run(b.g, artifact_hw());
  ASSERT_TRUE(r.ok) << r.error;
  // add: the output element, T[8x16] bf16; the accumulator itself is fp32.
  EXPECT_EQ(node(r, "sum").onchip_requirement_bytes, 8 * 16 * kBf16);
  EXPECT_EQ(node(r, "sum").onchip_peak_bytes, 8 * 16 * 4u);
  // matmul_acc: 16 x in_tile_col x 2 B + weight tile + output tile.
  const uint64_t in_tile = 16 * 32 * kBf16, weight = 32 * 8 * kBf16, out = 16 * 8 * kBf16;
  EXPECT_EQ(node(r, "mma").onchip_requirement_bytes, 16 * 32 * kBf16 + weight + out);  // 1792
  EXPECT_EQ(node(r, "mma").onchip_peak_bytes, in_tile + weight + 16 * 8 * 4u);         // operands + fp32 acc

  HardwareParams hw = artifact_hw();
  hw.set("onchip_requirement_model", "artifact");
  SimResult a = run(b.g, hw);
  ASSERT_TRUE(a.ok) << a.error;
  EXPECT_EQ(node(a, "sum").onchip_requirement_bytes, 8 * 16 * kBf16);  // as the paper
  EXPECT_EQ(node(a, "mma").onchip_requirement_bytes, out);             // BinaryMapAccum: output tile only
}

TEST(OnChipRequirement, ExpandCountsItsOutputElement) {
  GraphBuilder b;
  b.source("d", "T[4x8] S1 T[4x8] S1 D")
      .source("ref", "0 0 0 S1 0 S1 D")
      .node("ex", "Expand", {{"rank", "1"}}, {{"in", "d.out0"}, {"ref", "ref.out0"}})
      .sink("s", "ex");
  SimResult r = run(b.g, artifact_hw());
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(node(r, "ex").onchip_requirement_bytes, 4 * 8 * kBf16);
  EXPECT_EQ(node(r, "ex").onchip_peak_bytes, 4 * 8 * kBf16);
}

// The off-chip formulas on an observation (the off-chip operators report through the same
// TileStat records): step-paper-notes §8 item 2, a [64,64] bf16 tile -> 2 x 8192 = 16384 B.
TEST(OnChipRequirement, OffChipOpsCountTheirStagingTile) {
  NodeObservation load;
  load.name = "ld";
  load.info = &OpRegistry::instance().find(OpKind::kLinearOffChipLoad);
  load.outputs.resize(1);
  load.outputs[0].add(Element(shape_tile(64, 64)));
  EXPECT_EQ(onchip_requirement_model("paper").requirement(load), 16384u);
  EXPECT_EQ(onchip_requirement_model("artifact").requirement(load), 8192u);

  NodeObservation store;
  store.info = &OpRegistry::instance().find(OpKind::kRandomOffChipStore);
  store.inputs.resize(2);
  store.inputs[0].add(Element(shape_tile(16, 64)));  // the written data
  store.inputs[1].add(Element(Scalar{5}));           // addresses are not staged
  store.outputs.resize(1);
  store.outputs[0].add(Element(Scalar{1}));
  EXPECT_EQ(onchip_requirement_model("paper").requirement(store), 2 * 16 * 64 * kBf16);
  EXPECT_EQ(onchip_requirement_model("artifact").requirement(store), 16 * 64 * kBf16);
}

TEST(OnChipRequirement, ModelIsAPresetParameter) {
  for (const std::string& p : preset_names()) EXPECT_EQ(load_preset(p).onchip_requirement_model, "paper") << p;
  HardwareParams hw = artifact_hw();
  try {
    hw.set("onchip_requirement_model", "mine");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown on-chip requirement model 'mine'; known: artifact, paper"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(hw.to_map().at("onchip_requirement_model"), "paper");
}

// ---------------------------------------------------------------------------------------------
// Measured peaks

// Buffers are held from their first write until the Streamify reading them is done (model time).
TEST(OnChipMeasured, BuffersAliveAtOnceWhenTheReaderIsSlower) {
  const int R = 2, C = 3;
  const uint64_t buffer = uint64_t(R * C) * 16 * 64 * kBf16;
  // Replaying each buffer 4 times takes 4*R*C cycles while filling one takes R*C: the Bufferize
  // runs ahead (its output FIFO holds two references), so all three buffers are alive at once.
  GraphBuilder slow;
  slow.source("a", nrc(3, R, C, "T[16x64]"))
      .node("buf", "Bufferize", {{"rank", "2"}}, {{"in", "a.out0"}})
      .node("str", "Streamify", {{"repeat", "[4]"}}, {{"in", "buf"}})
      .sink("s", "str");
  SimResult r = run(slow.g, artifact_hw());
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(node(r, "buf").onchip_peak_bytes, 3 * buffer);
  EXPECT_EQ(node(r, "str").onchip_peak_bytes, 0u);  // it reads the Bufferize's memory
  EXPECT_EQ(r.onchip_peak_bytes, 3 * buffer);
  // Deterministic: the same under another elaboration order.
  EXPECT_EQ(node(run(slow.g, artifact_hw(), 7), "buf").onchip_peak_bytes, 3 * buffer);

  // Replayed once as fast as it was filled: the second buffer starts filling (cycle ~R*C) while
  // the first is still being read (until ~2*R*C): double buffering, two alive.
  GraphBuilder fast;
  fast.source("a", nrc(2, R, C, "T[16x64]"))
      .node("buf", "Bufferize", {{"rank", "2"}}, {{"in", "a.out0"}})
      .node("str", "Streamify", {{"repeat", "[1]"}}, {{"in", "buf"}})
      .sink("s", "str");
  r = run(fast.g, artifact_hw());
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(node(r, "buf").onchip_peak_bytes, 2 * buffer);

  // A slow producer (one tile every 10 cycles): each buffer is read out (R*C cycles) long before
  // the next one's first tile arrives, so only one is ever alive although three were written.
  GraphBuilder starved;
  starved.g.streams["a"] = to_beats(parse_tokens(nrc(3, R, C, "T[16x64]")));
  starved.node("a", "Source", {{"stream", "a"}, {"interval", "10"}}, {})
      .node("buf", "Bufferize", {{"rank", "2"}}, {{"in", "a.out0"}})
      .node("str", "Streamify", {{"repeat", "[1]"}}, {{"in", "buf"}})
      .sink("s", "str");
  r = run(starved.g, artifact_hw());
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(node(r, "buf").onchip_peak_bytes, buffer);
  // The formula is blind to that: it counts the double buffer of the largest instance.
  EXPECT_EQ(node(r, "buf").onchip_requirement_bytes, 16 * 64 * kBf16 + 2 * buffer);
}

TEST(OnChipMeasured, ABufferNobodyReadsIsHeldToTheEnd) {
  GraphBuilder b;
  b.source("a", nrc(3, 1, 2, "T[16x16]"))
      .node("buf", "Bufferize", {{"rank", "2"}}, {{"in", "a.out0"}})
      .sink("s", "buf");
  SimResult r = run(b.g, artifact_hw());
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(node(r, "buf").onchip_peak_bytes, 3 * 2 * 16 * 16 * kBf16);
}

// ---------------------------------------------------------------------------------------------
// Report

TEST(FabricReport, JsonKeysAndSummaryLines) {
  Graph g = small_compute_graph();
  SimOptions opt;
  opt.hw = artifact_hw();
  SimResult r = simulate(g, opt);
  ASSERT_TRUE(r.ok) << r.error;
  Report rep = make_report(g, opt, r);
  const auto& j = rep.json;
  EXPECT_EQ(j["fabric"]["compute_units"].get<uint64_t>(), 3u);
  EXPECT_EQ(j["fabric"]["memory_units"].get<uint64_t>(), 1u);
  EXPECT_EQ(j["fabric"]["memory_units_static"].get<uint64_t>(), 1u);
  EXPECT_EQ(j["fabric"]["pcu_flops_per_cycle"].get<uint64_t>(), 4096u);
  EXPECT_EQ(j["fabric"]["pmu_capacity_bytes"].get<uint64_t>(), 524288u);
  EXPECT_TRUE(j["fabric"]["fits"].get<bool>());
  EXPECT_EQ(j["onchip"]["model"].get<std::string>(), "paper");
  // Bufferize of two 16x16 bf16 tiles: 512 + 2 * 512 * 2; held: both tiles.
  EXPECT_EQ(j["onchip"]["requirement_bytes"].get<uint64_t>(), 512u + 2 * 512 * 2);
  EXPECT_EQ(j["onchip"]["measured_peak_bytes"].get<uint64_t>(), 1024u);
  EXPECT_EQ(j["compute"]["compute_units"].get<uint64_t>(), 3u);  // the older key still works
  bool found = false;
  for (const auto& n : j["nodes"])
    if (n["name"] == "buf") {
      found = true;
      EXPECT_EQ(n["onchip_requirement_bytes"].get<uint64_t>(), 2560u);
      EXPECT_EQ(n["onchip_peak_bytes"].get<uint64_t>(), 1024u);
      EXPECT_EQ(n["memory_units"].get<uint64_t>(), 1u);
    }
  EXPECT_TRUE(found);
  std::ostringstream out;
  print_summary(rep, out);
  const std::string s = out.str();
  EXPECT_NE(s.find("3 PCU of 4096 FLOPs/cycle"), std::string::npos) << s;
  EXPECT_NE(s.find("1 PMU of 512.00 KiB"), std::string::npos) << s;
  EXPECT_NE(s.find("on-chip requirement        2.50 KiB (2560 B) (paper formulas)"), std::string::npos) << s;
  EXPECT_NE(s.find("1.00 KiB (1024 B) (sum of per-node peaks)"), std::string::npos) << s;
}

}  // namespace
}  // namespace stepsim
