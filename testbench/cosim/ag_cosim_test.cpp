// Co-simulation of LinearOffChipLoad / LinearOffChipStore (and, below, RandomOffChipLoad /
// RandomOffChipStore) on the address generator unit
// (hw/bridge/ag_bridge.h, docs/cosim.md): loads (the whole tensor, and a strided rank-3 view
// with re-reads) -> a Map silu on the tile unit -> stores (row-major and a transposed view),
// [4 x 4] bf16 tiles, every request through the TLM HBM model. All-hls and all-rtl against the
// approximate run: payload streams identical, the stored tensors identical byte for byte, the
// cycle error reported.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "hw/bridge/unit_bridge.h"
#include "hw/memory/hbm_fixed.h"
#include "hw/presets/hardware.h"
#include "sim/cosim/cosim.h"
#include "sim/engine/simulation.h"
#include "sim/graph/loader.h"
#include "testbench/cosim/cosim_util.h"

namespace stepsim {
namespace {

namespace fs = std::filesystem;

// The unit issues the next tile's requests while the previous tile's responses are on their way
// (up to 64 requests in flight): the approximate loads and stores are timed the same way
// (offchip_one_tile_in_flight off; the step-artifact preset's reference quirk waits for every
// response of a tile before the next one, which the unit does not model).
SimOptions options(bool functional = true, bool one_tile = false, const std::string& hbm_model = "fixed") {
  SimOptions o;
  o.hw = load_preset("step-artifact");
  o.hw.set("hbm.model", hbm_model);
  o.hw.offchip_one_tile_in_flight = one_tile;
  o.functional = functional;
  return o;
}

const char* kAgGraph = R"(name: cosim_ag
tensors:
  x: {shape: [16, 16], dtype: bf16, init: random, seed: 31}
  y: {shape: [16, 16], dtype: bf16, init: output}
  z: {shape: [16, 16], dtype: bf16, init: output}
nodes:
  - {name: ld, op: LinearOffChipLoad, params: {tensor: x, tile: [4, 4]}}
  - {name: act, op: Map, params: {fn: silu}, inputs: {in0: ld}}
  - {name: st, op: LinearOffChipStore, params: {tensor: y, tile: [4, 4]}, inputs: {in: act}}
  - {name: lv, op: LinearOffChipLoad, params: {tensor: x, tile: [4, 4], out_shape: [2, 3, 2], stride: [4, 1, 0], offset: 5}}
  - {name: sv, op: Sink, inputs: {in: lv}}
  - {name: lt, op: LinearOffChipLoad, params: {tensor: x, tile: [4, 4]}}
  - {name: stt, op: LinearOffChipStore, params: {tensor: z, tile: [4, 4], out_shape: [4, 4], stride: [1, 4]}, inputs: {in: lt}}
)";

CosimReport run(const std::string& impl, bool functional = true, bool one_tile = false,
                const std::string& vcd_dir = "", const std::string& hbm_model = "fixed") {
  CosimOptions co;
  co.impl = impl;
  co.dir = vcd_dir;
  co.vcd = !vcd_dir.empty();
  return cosimulate(parse_graph(kAgGraph, "cosim_ag", ".", {}), options(functional, one_tile, hbm_model), co);
}

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The stored tensors of a run (impl as the graph default), as .npy bytes.
std::map<std::string, std::string> stored(const std::string& impl) {
  Graph g = parse_graph(kAgGraph, "cosim_ag", ".", {});
  SimOptions o = options();
  o.default_impl = impl;
  o.output_dir = (std::filesystem::temp_directory_path() / ("stepsim_ag_cosim_" + impl)).string();
  SimResult r = simulate(g, o);
  EXPECT_TRUE(r.ok) << r.error;
  std::map<std::string, std::string> m;
  for (const std::string& f : r.written_files) m[std::filesystem::path(f).filename().string()] = slurp(f);
  return m;
}

void expect_good(const CosimReport& r, const std::string& impl) {
  ASSERT_TRUE(r.approx.ok) << r.approx.error;
  ASSERT_TRUE(r.cosim.ok) << r.cosim.error;
  std::ostringstream rep;
  print_cosim_report(r, rep);
  EXPECT_TRUE(r.identical) << rep.str();
  EXPECT_EQ(r.bridged_nodes, 6u) << rep.str();  // 3 loads, 2 stores, the Map
  for (const CosimNodeRow& n : r.nodes)
    if (n.op == "LinearOffChipLoad" || n.op == "LinearOffChipStore") {
      EXPECT_EQ(n.impl, impl) << n.name;
      EXPECT_GT(n.unit_clocks, 0u) << n.name;
    }
  EXPECT_EQ(r.cosim.recorded.at("sv").size(), 12u);
  const double err = (double(r.cosim.cycles) - double(r.approx.cycles)) / double(r.approx.cycles);
  std::cout << "AG co-simulation (" << impl << "): " << r.approx.cycles << " cycles approximate, " << r.cosim.cycles
            << " co-simulated (" << (err >= 0 ? "+" : "") << 100.0 * err << " %)\n";
  for (const CosimNodeRow& n : r.nodes)
    std::cout << "  " << n.name << " (" << n.op << ", " << n.impl << "): " << n.approx_cycles << " -> "
              << n.cosim_cycles << "\n";
  EXPECT_LT(std::abs(err), 0.5) << rep.str();
}

TEST(CosimAg, LoadsAndStoresOnHlsMatchApprox) {
  expect_good(run("hls"), "hls");
  const auto approx = stored("approx"), hls = stored("hls");
  ASSERT_EQ(approx.size(), 2u);
  EXPECT_TRUE(approx == hls) << "the stored tensors differ";
  CosimReport t = run("hls", false);  // timing mode: shape-only tiles
  ASSERT_TRUE(t.cosim.ok) << t.cosim.error;
  EXPECT_TRUE(t.identical);
  // Against the step-artifact preset as it is (one tile in flight): same payloads, the unit faster.
  CosimReport q = run("hls", true, true);
  ASSERT_TRUE(q.cosim.ok) << q.cosim.error;
  EXPECT_TRUE(q.identical);
  EXPECT_LT(q.cosim.cycles, q.approx.cycles);
  std::cout << "AG co-simulation (hls) against one tile in flight: " << q.approx.cycles << " cycles approximate, "
            << q.cosim.cycles << " co-simulated\n";
}

// The Verilated units run without SystemC signals (rtl/units.list, `direct`), the HLS units
// through signals: every pin of the address generators and the tile Map, cycle by cycle, is the
// same in both waveforms.
TEST(CosimAg, LoadsAndStoresOnRtlMatchApproxAndHls) {
  if (!have_rtl()) GTEST_SKIP() << "built without Verilator";
  const fs::path dir = fs::temp_directory_path() / "stepsim_cosim_ag_vcd";
  fs::remove_all(dir);
  CosimReport h = run("hls", true, false, (dir / "hls").string()), r = run("rtl", true, false, (dir / "rtl").string());
  expect_good(r, "rtl");
  EXPECT_TRUE(stored("approx") == stored("rtl")) << "the stored tensors differ";
  ASSERT_EQ(h.nodes.size(), r.nodes.size());
  for (size_t k = 0; k < h.nodes.size(); ++k) {
    EXPECT_EQ(h.nodes[k].cosim_cycles, r.nodes[k].cosim_cycles) << h.nodes[k].name;
    EXPECT_EQ(h.nodes[k].unit_clocks, r.nodes[k].unit_clocks) << h.nodes[k].name;
  }
  expect_same_waveforms(dir, "hls", "rtl", {"ld", "act", "st", "lv", "lt", "stt"});
  fs::remove_all(dir);
}

// The address generator against the DRAM-level HBM (hbm.model: dram) through the same TLM-2.0
// target: the same payloads and stored bytes as the approximate run on that model, every request
// of the unit timed by the banks, and the HLS and RTL units cycle for cycle the same.
TEST(CosimAg, LoadsAndStoresAgainstTheDramModel) {
  const CosimReport d = run("hls", true, false, "", "dram");
  expect_good(d, "hls");
  ASSERT_TRUE(d.approx.offchip_dram && d.cosim.offchip_dram);
  // The unit's requests went through the banks: every one a hit, a miss or a conflict.
  EXPECT_EQ(d.cosim.offchip_dram->requests(), d.cosim.offchip_requests);
  EXPECT_GT(d.cosim.offchip_dram->activates, 0u);
  // The banks change the timing (row hits 13 cycles, misses 20, against 18 for every request).
  const CosimReport f = run("hls");
  EXPECT_NE(d.cosim.cycles, f.cosim.cycles);
  EXPECT_NE(d.approx.cycles, f.approx.cycles);
  if (!have_rtl()) return;
  const CosimReport r = run("rtl", true, false, "", "dram");
  expect_good(r, "rtl");
  ASSERT_EQ(d.nodes.size(), r.nodes.size());
  for (size_t k = 0; k < d.nodes.size(); ++k) EXPECT_EQ(d.nodes[k].cosim_cycles, r.nodes[k].cosim_cycles);
  EXPECT_EQ(d.cosim.cycles, r.cosim.cycles);
}

TEST(CosimAg, NodesOutsideTheUnitsLimits) {
  // Under a default, a load of [1 x 8] tiles stays approximate; named, it is an error.
  Graph g = parse_graph(R"(name: ag_limits
tensors:
  x: {shape: [4, 16], dtype: bf16, init: random, seed: 1}
nodes:
  - {name: ld, op: LinearOffChipLoad, params: {tensor: x, tile: [1, 8]}}
  - {name: s, op: Sink, inputs: {in: ld}}
)",
                        "ag_limits", ".", {});
  SimOptions o = options();
  o.default_impl = "hls";
  SimResult r = simulate(g, o);
  ASSERT_TRUE(r.ok) << r.error;
  for (const NodeResult& n : r.nodes)
    if (n.name == "ld") {
      EXPECT_EQ(n.impl, "approx");
      EXPECT_NE(n.impl_note.find("[r x 4] bf16 tiles"), std::string::npos) << n.impl_note;
    }
  g.nodes[0].impl = "hls";
  o.default_impl = "";
  std::string e;
  try {
    SimResult x = simulate(g, o);
    e = x.error;
  } catch (const std::exception& ex) {
    e = ex.what();
  }
  EXPECT_NE(e.find("node 'ld' (LinearOffChipLoad): impl: hls: the address generator moves [r x 4] bf16 tiles"),
            std::string::npos)
      << e;
}

// Blocked tensors: [2 x 4] blocks tile a [4 x 4] tile in two block rows of whole tile rows, so
// the unit takes them (the tile steps and burst from OffChipTensor::tile_burst) and stores what
// the approximate run stores; [16 x 16] blocks put a [4 x 4] tile inside one block, which the
// unit's linear tile addressing cannot follow: that load stays approximate and says why.
TEST(CosimAg, BlockedTensorsOnTheUnitOrNamedWhyNot) {
  const Graph g = parse_graph(R"(name: ag_blocked
tensors:
  x: {shape: [16, 16], dtype: bf16, init: random, seed: 31, block: [2, 4]}
  y: {shape: [16, 16], dtype: bf16, init: output, block: [2, 4]}
  w: {shape: [16, 16], dtype: bf16, init: random, seed: 32, block: [16, 16]}
nodes:
  - {name: ld, op: LinearOffChipLoad, params: {tensor: x, tile: [4, 4], out_shape: [4, 4], stride: [1, 4]}}
  - {name: st, op: LinearOffChipStore, params: {tensor: y, tile: [4, 4]}, inputs: {in: ld}}
  - {name: lw, op: LinearOffChipLoad, params: {tensor: w, tile: [4, 4]}}
  - {name: sw, op: Sink, inputs: {in: lw}}
)",
                              "ag_blocked", ".", {});
  CosimOptions co;
  co.impl = "hls";
  const CosimReport r = cosimulate(g, options(), co);
  ASSERT_TRUE(r.cosim.ok) << r.cosim.error;
  std::ostringstream rep;
  print_cosim_report(r, rep);
  EXPECT_TRUE(r.identical) << rep.str();
  EXPECT_TRUE(r.equivalent) << rep.str();
  ASSERT_EQ(r.tensors.size(), 1u);
  EXPECT_EQ(r.tensors[0].differing, 0u);
  for (const CosimNodeRow& n : r.nodes) {
    if (n.name == "ld" || n.name == "st") {
      EXPECT_EQ(n.impl, "hls") << n.name;
    }
    if (n.name == "lw") {
      EXPECT_EQ(n.impl, "approx");
      EXPECT_NE(n.note.find("stored in [16 x 16] blocks"), std::string::npos) << n.note;
    }
  }
}

// ---- [16 x 16] tiles: the T = 16 unit with 4 request lanes under the hdl-validation preset
// (par_dispatch 4, 256 B/cycle HBM). A row-major tensor loaded whole and stored into a tensor of
// [16 x 16] blocks, and a blocked tensor loaded transposed and stored row-major: a row-major
// tile is 16 requests of 32 bytes (4 bundles), a blocked one 8 requests of 64 bytes (2 bundles).
// One tile in flight off, as above (the unit overlaps tiles).
const char* kAg16Graph = R"(name: cosim_ag16
tensors:
  x: {shape: [64, 64], dtype: bf16, init: random, seed: 41}
  xb: {shape: [64, 64], dtype: bf16, init: random, seed: 42, block: [16, 16]}
  y: {shape: [64, 64], dtype: bf16, init: output}
  yb: {shape: [64, 64], dtype: bf16, init: output, block: [16, 16]}
nodes:
  - {name: ld, op: LinearOffChipLoad, params: {tensor: x, tile: [16, 16]}}
  - {name: st, op: LinearOffChipStore, params: {tensor: yb, tile: [16, 16]}, inputs: {in: ld}}
  - {name: lb, op: LinearOffChipLoad, params: {tensor: xb, tile: [16, 16], out_shape: [4, 4], stride: [1, 4]}}
  - {name: sb, op: LinearOffChipStore, params: {tensor: y, tile: [16, 16]}, inputs: {in: lb}}
)";

SimOptions options16(bool one_tile = false) {
  SimOptions o;
  o.hw = load_preset("hdl-validation");
  o.hw.offchip_one_tile_in_flight = one_tile;
  o.functional = true;
  return o;
}

CosimReport run16(const std::string& impl, bool one_tile = false, const std::string& vcd_dir = "") {
  CosimOptions co;
  co.impl = impl;
  co.dir = vcd_dir;
  co.vcd = !vcd_dir.empty();
  return cosimulate(parse_graph(kAg16Graph, "cosim_ag16", ".", {}), options16(one_tile), co);
}

void expect_good16(const CosimReport& r, const std::string& impl) {
  ASSERT_TRUE(r.approx.ok) << r.approx.error;
  ASSERT_TRUE(r.cosim.ok) << r.cosim.error;
  std::ostringstream rep;
  print_cosim_report(r, rep);
  EXPECT_TRUE(r.identical) << rep.str();
  EXPECT_EQ(r.bridged_nodes, 4u) << rep.str();
  for (const CosimNodeRow& n : r.nodes) {
    EXPECT_EQ(n.impl, impl) << n.name;
    EXPECT_GT(n.unit_clocks, 0u) << n.name;
  }
  ASSERT_EQ(r.tensors.size(), 2u) << rep.str();
  for (const auto& t : r.tensors) EXPECT_EQ(t.differing, 0u) << rep.str();
  const double err = (double(r.cosim.cycles) - double(r.approx.cycles)) / double(r.approx.cycles);
  std::cout << "AG [16 x 16] co-simulation (" << impl << ", hdl-validation): " << r.approx.cycles
            << " cycles approximate, " << r.cosim.cycles << " co-simulated (" << (err >= 0 ? "+" : "") << 100.0 * err
            << " %)\n";
  for (const CosimNodeRow& n : r.nodes)
    std::cout << "  " << n.name << " (" << n.op << ", " << n.impl << "): " << n.approx_cycles << " -> "
              << n.cosim_cycles << " cycles\n";
  EXPECT_LT(std::abs(err), 0.5) << rep.str();
}

TEST(CosimAg, Tiles16OnHlsMatchApprox) { expect_good16(run16("hls"), "hls"); }

TEST(CosimAg, Tiles16OnRtlMatchApproxAndHls) {
  if (!have_rtl()) GTEST_SKIP() << "built without Verilator";
  const CosimReport h = run16("hls"), r = run16("rtl");
  expect_good16(r, "rtl");
  ASSERT_EQ(h.nodes.size(), r.nodes.size());
  for (size_t k = 0; k < h.nodes.size(); ++k) {
    EXPECT_EQ(h.nodes[k].cosim_cycles, r.nodes[k].cosim_cycles) << h.nodes[k].name;
    EXPECT_EQ(h.nodes[k].unit_clocks, r.nodes[k].unit_clocks) << h.nodes[k].name;
  }
}

// The Verilated [16 x 16] unit is driven without SystemC signals (rtl/units.list, `direct`; the HLS
// unit through signals): its stream pins and its 4-lane memory port are the same, cycle by cycle.
TEST(CosimAg, Tiles16PinsOfRtlEqualHlsCycleByCycle) {
  if (!have_rtl()) GTEST_SKIP() << "built without Verilator";
  const fs::path dir = fs::temp_directory_path() / "stepsim_cosim_ag16_vcd";
  fs::remove_all(dir);
  ASSERT_TRUE(run16("hls", false, (dir / "hls").string()).cosim.ok);
  ASSERT_TRUE(run16("rtl", false, (dir / "rtl").string()).cosim.ok);
  expect_same_waveforms(dir, "hls", "rtl", {"ld", "st", "lb", "sb"});
  fs::remove_all(dir);
}

// Under a preset whose par_dispatch is not 4, a [16 x 16] load stays approximate and says why.
TEST(CosimAg, Tiles16NeedFourLanes) {
  Graph g = parse_graph(kAg16Graph, "cosim_ag16", ".", {});
  SimOptions o = options16();
  o.hw.par_dispatch = 2;
  o.default_impl = "hls";
  SimResult r = simulate(g, o);
  ASSERT_TRUE(r.ok) << r.error;
  for (const NodeResult& n : r.nodes) {
    EXPECT_EQ(n.impl, "approx") << n.name;
    EXPECT_NE(n.impl_note.find("issues 4 requests per cycle; the node has par_dispatch 2"), std::string::npos)
        << n.impl_note;
  }
}

// Random access on the address generator (cfg_random_i): a gather of the 16 [4 x 4] tiles of x
// in the order 5 k mod 16 (RandomOffChipLoad, index stops S1 / S2 kept), broadcast to a sink and
// to a scatter that writes them to tiles 0..15 of g (RandomOffChipStore, one acknowledgement per
// write). Every node but the two index sources on a unit; payloads (tiles, acknowledgements)
// identical, g identical byte for byte (x's tiles permuted), the cycle error reported.
const char* kRandomGraph = R"(name: cosim_ag_random
tensors:
  x: {shape: [16, 16], dtype: bf16, init: random, seed: 37}
  g: {shape: [16, 16], dtype: bf16, init: output}
streams:
  raddr: '5 10 15 4 S1 9 14 3 8 S2 13 2 7 12 S1 1 6 11 0 S2 D'
  waddr: '0 1 2 3 4 5 6 7 S1 8 9 10 11 12 13 14 15 S1 D'
nodes:
  - {name: raddr, op: Source, params: {stream: raddr}}
  - {name: gather, op: RandomOffChipLoad, params: {tensor: x, tile: [4, 4], par_dispatch: 1}, inputs: {raddr: raddr}}
  - {name: fork, op: Broadcast, inputs: {in: gather}}
  - {name: gs, op: Sink, inputs: {in: fork.out0}}
  - {name: waddr, op: Source, params: {stream: waddr}}
  - {name: scatter, op: RandomOffChipStore, params: {tensor: g, tile: [4, 4], par_dispatch: 1},
     inputs: {waddr: waddr, wdata: fork.out1}}
  - {name: acks, op: Sink, inputs: {in: scatter}}
)";

// Under hdl-validation (options16: the address generator's registers and the units' input
// registers in the model, docs/timing-model.md); par_dispatch 1: the [r x 4] unit's one lane.
void expect_random_good(const std::string& impl) {
  const Graph g = parse_graph(kRandomGraph, "cosim_ag_random", ".", {});
  CosimOptions co;
  co.impl = impl;
  const CosimReport r = cosimulate(g, options16(), co);
  ASSERT_TRUE(r.approx.ok) << r.approx.error;
  ASSERT_TRUE(r.cosim.ok) << r.cosim.error;
  std::ostringstream rep;
  print_cosim_report(r, rep);
  EXPECT_TRUE(r.identical) << rep.str();
  EXPECT_EQ(r.bridged_nodes, 3u) << rep.str();  // gather, fork, scatter
  for (const CosimNodeRow& n : r.nodes)
    if (n.op == "RandomOffChipLoad" || n.op == "RandomOffChipStore") {
      EXPECT_EQ(n.impl, impl) << n.name;
    }
  EXPECT_EQ(r.cosim.recorded.at("gs").size(), 16u);  // 16 tiles (the stops and the done ride on them)
  const double err = (double(r.cosim.cycles) - double(r.approx.cycles)) / double(r.approx.cycles);
  std::cout << "AG random access co-simulation (" << impl << "): " << r.approx.cycles << " cycles approximate, "
            << r.cosim.cycles << " co-simulated (" << (err >= 0 ? "+" : "") << 100.0 * err << " %)\n";
  EXPECT_LT(std::abs(err), 0.03) << rep.str();
  // The scattered tensor (x's tiles permuted), compared bit for bit by the report.
  ASSERT_EQ(r.tensors.size(), 1u);
  EXPECT_EQ(r.tensors[0].name, "g");
  EXPECT_EQ(r.tensors[0].elements, 16u * 16u);
  EXPECT_EQ(r.tensors[0].differing, 0u);
}
TEST(CosimAg, RandomAccessOnHlsMatchesApprox) { expect_random_good("hls"); }
TEST(CosimAg, RandomAccessOnRtlMatchesApprox) {
  if (!have_rtl()) GTEST_SKIP() << "built without Verilator";
  expect_random_good("rtl");
}

// The gather and scatter on [16 x 16] tiles (the T = 16 unit, 4 request lanes): x and g of 4 x 4
// tiles. The pins of the Verilated unit (driven directly) equal the HLS unit's, cycle by cycle,
// and g is x's tiles permuted on both.
TEST(CosimAg, RandomAccess16PinsOfRtlEqualHls) {
  if (!have_rtl()) GTEST_SKIP() << "built without Verilator";
  std::string text = kRandomGraph;
  for (const char* from : {"[16, 16], dtype: bf16, init: random", "[16, 16], dtype: bf16, init: output"}) {
    std::string to = from;
    to.replace(1, 6, "64, 64");
    text.replace(text.find(from), std::string(from).size(), to);
  }
  for (int k = 0; k < 2; ++k) text.replace(text.find("tile: [4, 4], par_dispatch: 1"), 29, "tile: [16, 16], par_dispatch: 4");
  const fs::path dir = fs::temp_directory_path() / "stepsim_cosim_ag_random16_vcd";
  fs::remove_all(dir);
  for (const char* impl : {"hls", "rtl"}) {
    CosimOptions co;
    co.impl = impl;
    co.dir = (dir / impl).string();
    co.vcd = true;
    const CosimReport r = cosimulate(parse_graph(text, "cosim_ag_random16", ".", {}), options16(), co);
    ASSERT_TRUE(r.cosim.ok) << impl << ": " << r.cosim.error;
    std::ostringstream rep;
    print_cosim_report(r, rep);
    EXPECT_TRUE(r.identical) << rep.str();
    EXPECT_EQ(r.bridged_nodes, 3u) << rep.str();
    ASSERT_EQ(r.tensors.size(), 1u);
    EXPECT_EQ(r.tensors[0].elements, 64u * 64u);
    EXPECT_EQ(r.tensors[0].differing, 0u);
  }
  expect_same_waveforms(dir, "hls", "rtl", {"gather", "scatter"});
  fs::remove_all(dir);
}

// A tile index outside the tensor fails the co-simulated run as it fails the approximate one.
TEST(CosimAg, RandomIndexOutsideTheTensorFails) {
  const Graph g = parse_graph(R"(name: ag_bad_index
tensors:
  x: {shape: [16, 16], dtype: bf16, init: random, seed: 1}
streams:
  raddr: '1 16 D'
nodes:
  - {name: raddr, op: Source, params: {stream: raddr}}
  - {name: gather, op: RandomOffChipLoad, params: {tensor: x, tile: [4, 4]}, inputs: {raddr: raddr}}
  - {name: s, op: Sink, inputs: {in: gather}}
)",
                              "ag_bad_index", ".", {});
  for (const char* impl : {"approx", "hls"}) {
    SimOptions o = options();
    o.default_impl = impl;
    std::string e;
    try {
      e = simulate(g, o).error;
    } catch (const std::exception& ex) {
      e = ex.what();
    }
    EXPECT_NE(e.find("tile index 16"), std::string::npos) << impl << ": " << e;
    EXPECT_NE(e.find("outside tensor 'x'"), std::string::npos) << impl << ": " << e;
  }
}

// The HBM timing the unit sees against the approximate operator's: the unit's bridge issues each
// request lane as one request (HbmFixed::serve_request, the request path of OffChipMemory),
// request j of a tile at t0 + j / 4; the approximate LinearOffChipLoad with par_dispatch 4
// issues the tile as one burst (the burst path: issue_burst / try_result, hbm_mode fast) from
// t0, 4 requests per cycle, and the next tile the cycle after its last bundle. Under the
// hdl-validation HBM the two give the same completion for every tile, row-major and blocked.
TEST(CosimAg, Tiles16RequestPathTimesAsTheBurstPath) {
  const HardwareParams hw = load_preset("hdl-validation");
  ASSERT_EQ(hw.par_dispatch, 4u);
  struct Geo {
    const char* name;
    uint32_t rows;
    uint64_t row_bytes, pitch, tile_step;
  };
  const Geo geos[] = {{"row-major [64 x 64]", 16, 32, 128, 32}, {"[16 x 16] blocks", 1, 512, 512, 512}};
  for (const Geo& g : geos) {
    HbmFixed burst_path(hw.hbm), request_path(hw.hbm);
    uint64_t t0 = 10;
    for (int k = 0; k < 16; ++k) {
      Burst b;
      b.base = 4096 + uint64_t(k % 4) * g.tile_step + uint64_t(k / 4) * (g.rows == 1 ? 4 * 512 : 16 * 128);
      b.rows = g.rows;
      b.row_bytes = g.row_bytes;
      b.row_pitch = g.pitch;
      b.par_dispatch = 4;
      b.issue_cycle = t0;
      BurstResult info;
      const uint64_t h = burst_path.issue_burst(b, &info);
      BurstResult res;
      ASSERT_TRUE(burst_path.try_result(h, info.last_issue_cycle, &res)) << g.name;
      uint64_t done = 0, j = 0;
      for (uint64_t r = 0; r < b.rows; ++r)
        for (uint64_t q = 0; q < b.requests_per_row(64); ++q, ++j)
          done =
              std::max(done, request_path.serve_request(b.request_addr(r, q, 64), false, t0 + j / 4).completion_cycle);
      EXPECT_EQ(res.completion_cycle, done) << g.name << ", tile " << k;
      EXPECT_EQ(res.last_issue_cycle, t0 + (j - 1) / 4) << g.name;
      if (k == 0)
        std::cout << g.name << ": tile 0 issued at cycle " << t0 << ", " << j << " requests, complete at cycle " << done
                  << " on both paths\n";
      t0 = res.last_issue_cycle + 1;
    }
  }
}

}  // namespace
}  // namespace stepsim
