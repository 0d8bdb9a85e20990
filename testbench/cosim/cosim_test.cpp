// Fabric co-simulation (docs/cosim.md): graph nodes on the cycle-accurate units (hw/bridge)
// against the approximate model. A reduced version of issue 4 item 5 for the default test run:
// graphs/examples/cosim_units.yaml ([1x8] bf16 tiles through all 13 unit kinds), all-hls and
// all-rtl, payload streams identical on every channel, cycle error reported and bounded.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hw/bridge/unit_bridge.h"
#include "hw/presets/hardware.h"
#include "sim/cosim/cosim.h"
#include "sim/engine/impl_policy.h"
#include "sim/engine/simulation.h"
#include "sim/graph/loader.h"
#include "testbench/cosim/cosim_util.h"

namespace stepsim {
namespace {

namespace fs = std::filesystem;

const std::string kGraph = std::string(STEPSIM_SOURCE_DIR) + "/graphs/examples/cosim_units.yaml";

SimOptions options(bool functional = true) {
  SimOptions o;
  o.hw = load_preset("step-artifact");
  o.functional = functional;
  return o;
}

CosimReport run(const std::string& impl, bool functional = true, const std::string& dir = "", bool vcd = false,
                uint64_t shuffle = 0) {
  CosimOptions co;
  co.impl = impl;
  co.dir = dir;
  co.vcd = vcd;
  SimOptions o = options(functional);
  o.shuffle_seed = shuffle;
  return cosimulate(load_graph(kGraph, {}), o, co);
}

double rel_error(uint64_t a, uint64_t c) { return a ? (double(c) - double(a)) / double(a) : 0.0; }

void expect_good(const CosimReport& r, const std::string& impl) {
  ASSERT_TRUE(r.approx.ok) << r.approx.error;
  ASSERT_TRUE(r.cosim.ok) << r.cosim.error;
  std::ostringstream rep;
  print_cosim_report(r, rep);
  EXPECT_TRUE(r.identical) << rep.str();
  EXPECT_EQ(r.bridged_nodes, 21u) << rep.str();  // every node but the loads, the source and the sinks
  size_t unit_kinds = 0;
  std::set<std::string> ops;
  for (const CosimNodeRow& n : r.nodes) {
    if (n.impl == impl) {
      ops.insert(n.op == "Map" || n.op == "Accum" ? n.op + ":" + n.name : n.op);
      EXPECT_GT(n.unit_clocks, 0u) << n.name;
    } else {
      EXPECT_EQ(n.impl, "approx");
      EXPECT_FALSE(n.note.empty()) << n.name;
    }
  }
  unit_kinds = ops.size();
  EXPECT_GE(unit_kinds, 13u) << rep.str();
  // The units add their register stages; the total stays within a few percent here.
  EXPECT_LT(std::abs(rel_error(r.approx.cycles, r.cosim.cycles)), 0.05) << rep.str();
  EXPECT_GT(r.cosim.cycles, 250u);
  EXPECT_EQ(r.approx.offchip_read_bytes, r.cosim.offchip_read_bytes);
}

TEST(Cosim, AllHlsMatchesApprox) { expect_good(run("hls"), "hls"); }

TEST(Cosim, AllRtlMatchesApprox) {
  if (!have_rtl()) GTEST_SKIP() << "built without Verilator (STEPSIM_RTL=OFF)";
  expect_good(run("rtl"), "rtl");
}

// The HLS unit and its RTL twin behave identically on every pin (test_units_rtl), so the two
// co-simulations agree cycle for cycle, node for node.
TEST(Cosim, HlsAndRtlAgreeOnEveryNode) {
  if (!have_rtl()) GTEST_SKIP() << "built without Verilator";
  CosimReport h = run("hls"), r = run("rtl");
  ASSERT_TRUE(h.cosim.ok && r.cosim.ok);
  ASSERT_EQ(h.nodes.size(), r.nodes.size());
  for (size_t k = 0; k < h.nodes.size(); ++k) {
    EXPECT_EQ(h.nodes[k].cosim_cycles, r.nodes[k].cosim_cycles) << h.nodes[k].name;
    EXPECT_EQ(h.nodes[k].unit_clocks, r.nodes[k].unit_clocks) << h.nodes[k].name;
  }
  for (const auto& [name, log] : h.cosim.channel_logs) {
    const auto& other = r.cosim.channel_logs.at(name);
    ASSERT_EQ(log.size(), other.size()) << name;
    for (size_t k = 0; k < log.size(); ++k) {
      EXPECT_EQ(log[k].cycle, other[k].cycle) << name << " beat " << k;
      EXPECT_TRUE(same_beat(log[k].beat, other[k].beat)) << name << " beat " << k;
    }
  }
}

// Timing mode: tiles carry no values; the compute units see zero lanes and emit shape-only tiles.
TEST(Cosim, TimingModeMatchesApprox) {
  CosimReport r = run("hls", false);
  ASSERT_TRUE(r.cosim.ok) << r.cosim.error;
  EXPECT_TRUE(r.identical);
  EXPECT_EQ(r.cosim.cycles, run("hls", true).cosim.cycles);
}

// Results do not depend on the elaboration (SystemC process) order.
TEST(Cosim, IndependentOfElaborationOrder) {
  CosimReport a = run("hls"), b = run("hls", true, "", false, 7);
  ASSERT_TRUE(a.cosim.ok && b.cosim.ok);
  for (size_t k = 0; k < a.nodes.size(); ++k)
    EXPECT_EQ(a.nodes[k].cosim_cycles, b.nodes[k].cosim_cycles) << a.nodes[k].name;
}

TEST(Cosim, WritesLogsReportAndWaveforms) {
  const fs::path dir = fs::temp_directory_path() / "stepsim_cosim_test";
  fs::remove_all(dir);
  CosimReport r = run("hls", true, dir.string(), true);
  ASSERT_TRUE(r.identical);
  ASSERT_TRUE(fs::exists(dir / "report.md"));
  const fs::path log = dir / "prod.out-_fan.in.cosim.log";
  ASSERT_TRUE(fs::exists(log));
  std::ifstream f(log);
  std::string header, first;
  std::getline(f, header);
  std::getline(f, first);
  EXPECT_EQ(header, "# cycle\tchannel\tpayload");
  EXPECT_NE(first.find("\tprod.out->fan.in\tbf16[1x8]{"), std::string::npos) << first;
  ASSERT_TRUE(fs::exists(dir / "prod.hls.vcd"));
  std::ifstream v(dir / "prod.hls.vcd");
  std::stringstream vs;
  vs << v.rdbuf();
  EXPECT_NE(vs.str().find("$var wire 128 "), std::string::npos);
  EXPECT_NE(vs.str().find("out_valid_o"), std::string::npos);
  EXPECT_NE(vs.str().find("\n#"), std::string::npos);
  fs::remove_all(dir);
}

// ---- nodes without a unit
Graph small(const std::string& node_yaml, const std::string& graph_impl = "") {
  const std::string text = std::string("name: t\n") + (graph_impl.empty() ? "" : "impl: " + graph_impl + "\n") +
                           "tensors:\n  x: {shape: [4, 8], dtype: bf16, init: random, seed: 1}\n"
                           "  z: {shape: [2, 16], dtype: bf16, init: random, seed: 2}\n"
                           "nodes:\n"
                           "  - {name: x, op: LinearOffChipLoad, params: {tensor: x, tile: [1, 8], out_shape: [4]}}\n"
                           "  - {name: z, op: LinearOffChipLoad, params: {tensor: z, tile: [1, 16], out_shape: [2]}}\n"
                           "  - {name: zs, op: Sink, inputs: {in: z}}\n" +
                           node_yaml + "  - {name: out, op: Sink, inputs: {in: f}}\n";
  return parse_graph(text, "test", ".", {});
}

// `static_check` false: no stream types before the run, so a tile the unit cannot take is found by
// the bridge at its first beat (the run-time guard behind the policy's static check).
std::string error_of(const Graph& g, bool static_check = true) {
  try {
    SimOptions o = options();
    o.static_check = static_check;
    SimResult r = simulate(g, o);
    return r.ok ? "" : r.error;
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

TEST(Cosim, ClearErrorsForNodesWithoutAUnit) {
  // An explicit impl on an operator or function no unit implements.
  std::string e = error_of(small("  - {name: f, op: Map, params: {fn: div}, inputs: {in0: x, in1: x}, impl: hls}\n"));
  // The list comes from the functions' lanes (hw/functions/unit_lanes.h), grouped by the tiles they take.
  EXPECT_NE(e.find("node 'f' (Map): impl: hls: no unit computes Map fn=div (units: add, mul on [1 x 8] or [r x 4] or "
                   "[r x 16] bf16 tiles (r <= the side); exp, matmul, matmul_t, sigmoid, silu on [r x 4] or [r x 16] "
                   "bf16 tiles (r <= the side); row_max, row_sum on [1 x 8] bf16 tiles)"),
            std::string::npos)
      << e;
  e = error_of(small("  - {name: f, op: Accum, params: {fn: retile_col, rank: 1}, inputs: {in0: x}, impl: hls}\n"));
  EXPECT_NE(e.find("node 'f' (Accum): impl: hls: no unit computes Accum fn=retile_col (units: add, max on [1 x 8] or "
                   "[r x 4] or [r x 16] bf16 tiles (r <= the side); matmul_acc, matmul_t_acc, retile_row on [r x 4] or "
                   "[r x 16] bf16 tiles (r <= the side))"),
            std::string::npos)
      << e;
  // Scan runs on the Accum units only: retile_row is not among its functions.
  e = error_of(small("  - {name: f, op: Scan, params: {fn: add_f32, rank: 1}, inputs: {in0: x}, impl: hls}\n"));
  EXPECT_NE(e.find("no unit computes Scan fn=add_f32 (units: add, max on [1 x 8] or [r x 4] or [r x 16] bf16 tiles "
                   "(r <= the side); matmul_acc, matmul_t_acc on [r x 4] or [r x 16] bf16 tiles (r <= the side))"),
            std::string::npos)
      << e;
  // An operator without units: the operators that have them.
  e = error_of(small("  - {name: f, op: Parallelize, inputs: {in: x}, impl: hls}\n"));
  EXPECT_NE(e.find("node 'f' (Parallelize): impl: hls: no cycle-accurate unit implements Parallelize (units: "
                   "Accum, Broadcast, Bufferize, "),
            std::string::npos)
      << e;
  // matmul runs on the tile units only: the static check's types say so before the run, and
  // without them the bridge at the first tile.
  const Graph mm = small("  - {name: f, op: Map, params: {fn: matmul_t}, inputs: {in0: x, in1: x}, impl: hls}\n");
  e = error_of(mm);
  EXPECT_NE(e.find("node 'f' (Map): impl: hls: tile shape: matmul_t runs on pcu_tile_map with [r x 4] or [r x 16] "
                   "bf16 tiles (r <= the side); the node has [1 x 8] bf16, [1 x 8] bf16"),
            std::string::npos)
      << e;
  e = error_of(mm, false);
  EXPECT_NE(e.find("node 'f' (Map): the tile compute unit needs [r x 4] bf16 tiles (r <= 4), got [1 x 8] bf16"),
            std::string::npos)
      << e;
  e = error_of(small("  - {name: f, op: Repeat, params: {count: 300}, inputs: {in: x}, impl: hls}\n"));
  EXPECT_NE(e.find("node 'f' (Repeat): impl: hls: count = 300 does not fit"), std::string::npos) << e;
  // A tile the compute lane cannot take: before the run, or at its first beat.
  const Graph rs = small("  - {name: f, op: Map, params: {fn: row_sum}, inputs: {in0: z}, impl: hls}\n");
  e = error_of(rs);
  EXPECT_NE(e.find("node 'f' (Map): impl: hls: tile shape: row_sum runs on pcu_reduce with [1 x 8] bf16 tiles; the "
                   "node has [1 x 16] bf16"),
            std::string::npos)
      << e;
  e = error_of(rs, false);
  EXPECT_NE(e.find("node 'f' (Map): the compute unit needs [1 x 8] bf16 tiles, got [1 x 16] bf16"), std::string::npos)
      << e;
  // Under a default the same node stays approximate, the tile shape its reason.
  {
    SimResult r =
        simulate(small("  - {name: f, op: Map, params: {fn: row_sum}, inputs: {in0: z}}\n", "hls"), options());
    ASSERT_TRUE(r.ok) << r.error;
    for (const NodeResult& n : r.nodes)
      if (n.name == "f") {
        EXPECT_EQ(n.impl, "approx");
        EXPECT_EQ(impl_note_kind(n.impl_note), "tile shape") << n.impl_note;
      }
  }
  // Under a graph-level default, a node without a unit stays approximate (and says why).
  Graph g = small("  - {name: f, op: Map, params: {fn: div}, inputs: {in0: x, in1: x}}\n", "hls");
  SimResult r = simulate(g, options());
  ASSERT_TRUE(r.ok) << r.error;
  for (const NodeResult& n : r.nodes) {
    if (n.name != "f") continue;
    EXPECT_EQ(n.impl, "approx");
    EXPECT_NE(n.impl_note.find("no unit computes Map fn=div"), std::string::npos);
  }
  if (!have_rtl()) {
    e = error_of(small("  - {name: f, op: Flatten, inputs: {in: x}, impl: rtl}\n"));
    EXPECT_NE(e.find("is not built in"), std::string::npos) << e;
  }
}

// ---- [4 x 4] bf16 tiles on the tile compute units (pcu_tile_map, pcu_tile_accum; silu too), next to a
// [1 x 8] Map mul on pcu_ew: Map mul/add and Accum add/max pick their unit by the first tile.
// The loads stay approximate (the address generator has its own test, ag_cosim_test.cpp).
const char* kTileGraph = R"(name: cosim_tiles
tensors:
  x: {shape: [8, 16], dtype: bf16, init: random, seed: 21}
  w: {shape: [8, 16], dtype: bf16, init: random, seed: 22}
  v: {shape: [3, 8], dtype: bf16, init: random, seed: 23}
nodes:
  - {name: x, op: LinearOffChipLoad, params: {tensor: x, tile: [4, 4], out_shape: [2, 4]}, impl: approx}
  - {name: w, op: LinearOffChipLoad, params: {tensor: w, tile: [4, 4], out_shape: [2, 4]}, impl: approx}
  - {name: bx, op: Broadcast, inputs: {in: x}}
  - {name: bw, op: Broadcast, inputs: {in: w}}
  - {name: mm, op: Map, params: {fn: matmul}, inputs: {in0: bx.out0, in1: bw.out0}}
  - {name: mmt, op: Map, params: {fn: matmul_t}, inputs: {in0: bx.out1, in1: bw.out1}}
  - {name: prod, op: Map, params: {fn: mul}, inputs: {in0: mm, in1: mmt}}
  - {name: both, op: Map, params: {fn: add}, inputs: {in0: bx.out2, in1: bw.out2}}
  - {name: bp, op: Broadcast, inputs: {in: prod}}
  - {name: sum, op: Accum, params: {fn: add, rank: 1}, inputs: {in0: bp.out0}}
  - {name: peak, op: Accum, params: {fn: max, rank: 1}, inputs: {in0: bp.out1}}
  - {name: down, op: Accum, params: {fn: matmul_acc, rank: 1}, inputs: {in0: bx.out3, in1: bw.out3}}
  - {name: downt, op: Accum, params: {fn: matmul_t_acc, rank: 1}, inputs: {in0: both, in1: bp.out2}}
  - {name: sums, op: Sink, inputs: {in: sum}}
  - {name: peaks, op: Sink, inputs: {in: peak}}
  - {name: downs, op: Sink, inputs: {in: down}}
  - {name: act, op: Map, params: {fn: silu}, inputs: {in0: downt}}
  - {name: downts, op: Sink, inputs: {in: act}}
  - {name: v, op: LinearOffChipLoad, params: {tensor: v, tile: [1, 8], out_shape: [3]}}
  - {name: bv, op: Broadcast, inputs: {in: v}}
  - {name: vv, op: Map, params: {fn: mul}, inputs: {in0: bv.out0, in1: bv.out1}}
  - {name: vvs, op: Sink, inputs: {in: vv}}
)";

CosimReport run_tiles(const std::string& impl, bool functional = true, const std::string& vcd_dir = "") {
  CosimOptions co;
  co.impl = impl;
  co.dir = vcd_dir;
  co.vcd = !vcd_dir.empty();
  return cosimulate(parse_graph(kTileGraph, "cosim_tiles", ".", {}), options(functional), co);
}

// Both runs succeeded, every channel is identical, every compute node ran on `impl`.
void expect_compute_on_units(const CosimReport& r, const std::string& impl) {
  ASSERT_TRUE(r.approx.ok) << r.approx.error;
  ASSERT_TRUE(r.cosim.ok) << r.cosim.error;
  std::ostringstream rep;
  print_cosim_report(r, rep);
  EXPECT_TRUE(r.identical) << rep.str();
  for (const CosimNodeRow& n : r.nodes) {
    if (n.op == "Map" || n.op == "Accum") {
      EXPECT_EQ(n.impl, impl) << n.name;
    }
  }
}

// HLS and RTL give every node the same cycles and unit clocks.
void expect_same_cycles(const CosimReport& h, const CosimReport& r) {
  ASSERT_EQ(h.nodes.size(), r.nodes.size());
  for (size_t k = 0; k < h.nodes.size(); ++k) {
    EXPECT_EQ(h.nodes[k].cosim_cycles, r.nodes[k].cosim_cycles) << h.nodes[k].name;
    EXPECT_EQ(h.nodes[k].unit_clocks, r.nodes[k].unit_clocks) << h.nodes[k].name;
  }
}

void expect_tiles_good(const CosimReport& r, const std::string& impl) {
  expect_compute_on_units(r, impl);
  std::ostringstream rep;
  print_cosim_report(r, rep);
  EXPECT_EQ(r.bridged_nodes, 14u) << rep.str();
  EXPECT_LT(std::abs(rel_error(r.approx.cycles, r.cosim.cycles)), 0.25) << rep.str();
}

TEST(Cosim, TileUnitsMatchApprox) {
  expect_tiles_good(run_tiles("hls"), "hls");
  CosimReport t = run_tiles("hls", false);  // timing mode: shape-only tiles
  ASSERT_TRUE(t.cosim.ok) << t.cosim.error;
  EXPECT_TRUE(t.identical);
  if (!have_rtl()) return;
  // The Verilated tile units run without SystemC signals (rtl/units.list, `direct`), the HLS ones
  // through signals: every pin, cycle by cycle, is the same in both waveforms.
  const fs::path dir = fs::temp_directory_path() / "stepsim_cosim_tiles_vcd";
  fs::remove_all(dir);
  CosimReport h = run_tiles("hls", true, (dir / "hls").string()), r = run_tiles("rtl", true, (dir / "rtl").string());
  expect_tiles_good(r, "rtl");
  expect_same_cycles(h, r);
  expect_same_waveforms(dir, "hls", "rtl", {"mm", "mmt", "prod", "both", "sum", "peak", "down", "downt", "act"});
  fs::remove_all(dir);
}

// ---- Scan on the Accum units (cfg_scan_i): running sums and maxima of [4 x 4] tiles (rank 1
// and 2), a running K-tiled product (matmul_acc) and a running [1 x 8] sum on the vector unit
// (the loads approximate, as in the tile graph above).
const char* kScanGraph = R"(name: cosim_scan
tensors:
  x: {shape: [8, 16], dtype: bf16, init: random, seed: 41}
  v: {shape: [6, 8], dtype: bf16, init: random, seed: 42}
nodes:
  - {name: x, op: LinearOffChipLoad, params: {tensor: x, tile: [4, 4], out_shape: [2, 4]}, impl: approx}
  - {name: bx, op: Broadcast, inputs: {in: x}}
  - {name: run, op: Scan, params: {fn: add, rank: 1}, inputs: {in0: bx.out0}}
  - {name: peak, op: Scan, params: {fn: max, rank: 2}, inputs: {in0: bx.out1}}
  - {name: mm, op: Scan, params: {fn: matmul_acc, rank: 1}, inputs: {in0: bx.out2, in1: bx.out3}}
  - {name: runs, op: Sink, inputs: {in: run}}
  - {name: peaks, op: Sink, inputs: {in: peak}}
  - {name: mms, op: Sink, inputs: {in: mm}}
  - {name: v, op: LinearOffChipLoad, params: {tensor: v, tile: [1, 8], out_shape: [2, 3]}, impl: approx}
  - {name: vs, op: Scan, params: {fn: add, rank: 1}, inputs: {in0: v}}
  - {name: vss, op: Sink, inputs: {in: vs}}
)";

void expect_scan_good(const std::string& impl) {
  CosimOptions co;
  co.impl = impl;
  const CosimReport r = cosimulate(parse_graph(kScanGraph, "cosim_scan", ".", {}), options(true), co);
  ASSERT_TRUE(r.approx.ok) << r.approx.error;
  ASSERT_TRUE(r.cosim.ok) << r.cosim.error;
  std::ostringstream rep;
  print_cosim_report(r, rep);
  EXPECT_TRUE(r.identical) << rep.str();
  int scans = 0;
  for (const CosimNodeRow& n : r.nodes)
    if (n.op == "Scan") {
      EXPECT_EQ(n.impl, impl) << n.name;
      ++scans;
    }
  EXPECT_EQ(scans, 4);
  EXPECT_EQ(r.cosim.recorded.at("runs").size(), 8u);  // one state per tile
  EXPECT_EQ(r.cosim.recorded.at("vss").size(), 6u);
  const double err = rel_error(r.approx.cycles, r.cosim.cycles);
  std::cout << "Scan co-simulation (" << impl << "): " << r.approx.cycles << " cycles approximate, " << r.cosim.cycles
            << " co-simulated (" << 100.0 * err << " %)\n";
  EXPECT_LT(std::abs(err), 0.03) << rep.str();  // the issue's target for the model against the units
}
TEST(Cosim, ScanOnTheAccumUnitsMatchesApprox) {
  expect_scan_good("hls");
  if (have_rtl()) expect_scan_good("rtl");
}

// ---- [16 x 16] bf16 tiles (the SwiGLU validation's tiles) on the T = 16 tile units: a small
// SwiGLU-like graph, gate = silu(x W1), up = x W3, h = gate * up, and a K-tiled product on Accum
// matmul_acc, all on units; the bridges pick the T = 16 units from the first tile.
const char* kTile16Graph = R"(name: cosim_tiles16
tensors:
  x: {shape: [16, 32], dtype: bf16, init: random, seed: 31}
  w1: {shape: [32, 16], dtype: bf16, init: random, seed: 32}
  w3: {shape: [32, 16], dtype: bf16, init: random, seed: 33}
nodes:
  - {name: x, op: LinearOffChipLoad, params: {tensor: x, tile: [16, 16], out_shape: [2]}}
  - {name: w1, op: LinearOffChipLoad, params: {tensor: w1, tile: [16, 16], out_shape: [2]}}
  - {name: w3, op: LinearOffChipLoad, params: {tensor: w3, tile: [16, 16], out_shape: [2]}}
  - {name: bx, op: Broadcast, inputs: {in: x}}
  - {name: g, op: Accum, params: {fn: matmul_acc, rank: 1}, inputs: {in0: bx.out0, in1: w1}}
  - {name: u, op: Accum, params: {fn: matmul_acc, rank: 1}, inputs: {in0: bx.out1, in1: w3}}
  - {name: act, op: Map, params: {fn: silu}, inputs: {in0: g}}
  - {name: h, op: Map, params: {fn: mul}, inputs: {in0: act, in1: u}}
  - {name: bh, op: Broadcast, inputs: {in: h}}
  - {name: hh, op: Map, params: {fn: matmul}, inputs: {in0: bh.out0, in1: bh.out1}}
  - {name: hs, op: Sink, inputs: {in: hh}}
)";

CosimReport run_tiles16(const std::string& impl, const std::string& vcd_dir = "") {
  CosimOptions co;
  co.impl = impl;
  co.dir = vcd_dir;
  co.vcd = !vcd_dir.empty();
  return cosimulate(parse_graph(kTile16Graph, "cosim_tiles16", ".", {}), options(true), co);
}

TEST(Cosim, Tile16UnitsMatchApprox) {
  const CosimReport h = run_tiles16("hls");
  expect_compute_on_units(h, "hls");
#ifdef STEPSIM_HAVE_RTL_T16
  if (!have_rtl()) return;
  const CosimReport r = run_tiles16("rtl");
  expect_compute_on_units(r, "rtl");
  expect_same_cycles(h, r);
#endif
}

// The Verilated T = 16 tile units are driven without SystemC signals (rtl/units.list, `direct`;
// the HLS units through signals): every pin of every unit, cycle by cycle, is the same in both
// waveforms.
TEST(Cosim, Tile16UnitPinsOfRtlEqualHlsCycleByCycle) {
#ifdef STEPSIM_HAVE_RTL_T16
  if (!have_rtl()) return;
  const fs::path dir = fs::temp_directory_path() / "stepsim_cosim_tiles16_vcd";
  fs::remove_all(dir);
  ASSERT_TRUE(run_tiles16("hls", (dir / "hls").string()).cosim.ok);
  ASSERT_TRUE(run_tiles16("rtl", (dir / "rtl").string()).cosim.ok);
  expect_same_waveforms(dir, "hls", "rtl", {"g", "u", "act", "h", "hh"});
  fs::remove_all(dir);
#endif
}

// Two streams merged in arrival order (EagerMerge), one of them through units: the units' input
// buffers let the first branch run ahead, so the merge takes the chunks in another order than
// in the approximate run. That is a legitimate difference (docs/cosim.md): the merge's outputs
// are reported as reordered (the same beats), every other channel identical.
const char* kMergeBranches = R"(
  - {name: ra, op: Repeat, params: {count: 3}, inputs: {in: la}, impl: hls}
  - {name: rb, op: Repeat, params: {count: 3}, inputs: {in: lb}, impl: approx}
  - {name: fa, op: Flatten, params: {min: 0, max: 1}, inputs: {in: ra}, impl: hls}
  - {name: fb, op: Flatten, params: {min: 0, max: 1}, inputs: {in: rb}, impl: approx}
  - {name: merge, op: EagerMerge, params: {rank: 0}, inputs: {in0: fa, in1: fb}, impl: approx}
  - {name: sels, op: Sink, inputs: {in: merge.sel}}
)";

TEST(Cosim, ArrivalOrderAtAMergeIsReorderedNotDifferent) {
  const Graph g = parse_graph(std::string(R"(
streams: {a: '1 2 3 4 5 6 7 8 D', b: '11 12 13 14 15 16 17 18 D'}
nodes:
  - {name: la, op: Source, params: {stream: a}}
  - {name: lb, op: Source, params: {stream: b}}
  - {name: sink, op: Sink, inputs: {in: merge.out}})") +
                                  kMergeBranches,
                              "merge.yaml", ".", {});
  const CosimReport r = cosimulate(g, options(false), CosimOptions{});
  ASSERT_TRUE(r.cosim.ok) << r.cosim.error;
  EXPECT_FALSE(r.identical);
  EXPECT_TRUE(r.equivalent);
  EXPECT_EQ(r.order_nodes, std::vector<std::string>{"merge"});
  for (const CosimChannelRow& c : r.channels) {
    const bool merged = c.name.rfind("merge.", 0) == 0;
    EXPECT_EQ(c.identical, !merged) << c.name;
    EXPECT_EQ(c.reordered, merged) << c.name;
  }
  std::ostringstream rep;
  print_cosim_report(r, rep);
  EXPECT_NE(rep.str().find("the same beats in another order on 2 downstream of an arrival-order decision (merge)"),
            std::string::npos)
      << rep.str();
}

// The same merge written to HBM in arrival order: the stored tensor differs, so the runs are not
// equivalent, whatever the channels say.
TEST(Cosim, StoredTensorsAreComparedBitForBit) {
  const Graph g = parse_graph(std::string(R"(
tensors:
  a: {shape: [32, 4], init: random, seed: 1}
  b: {shape: [32, 4], init: random, seed: 2}
  y: {shape: [192, 4], init: output}
nodes:
  - {name: la, op: LinearOffChipLoad, params: {tensor: a, tile: [4, 4], out_shape: [8]}}
  - {name: lb, op: LinearOffChipLoad, params: {tensor: b, tile: [4, 4], out_shape: [8]}}
  - {name: store, op: LinearOffChipStore, params: {tensor: y, tile: [4, 4]}, inputs: {in: merge.out}})") +
                                  kMergeBranches,
                              "merge_store.yaml", ".", {});
  const CosimReport r = cosimulate(g, options(true), CosimOptions{});
  ASSERT_TRUE(r.cosim.ok) << r.cosim.error;
  ASSERT_EQ(r.tensors.size(), 1u);
  EXPECT_EQ(r.tensors[0].name, "y");
  EXPECT_EQ(r.tensors[0].elements, 192u * 4);
  EXPECT_GT(r.tensors[0].differing, 0u);
  EXPECT_FALSE(r.equivalent);
  // The merge fed by the unit branch alone: nothing competes, the stored tensor is identical.
  Graph alone = g;
  for (NodeSpec& n : alone.nodes)
    if (n.name == "merge") n.inputs = {{"in0", "fa.out"}};
  for (TensorSpec& t : alone.tensors)
    if (t.name == "y") t.rows = 96;  // the store's view: the 24 tiles of one branch
  const CosimReport same = cosimulate(alone, options(true), CosimOptions{});
  ASSERT_TRUE(same.approx.ok) << same.approx.error;
  ASSERT_TRUE(same.cosim.ok) << same.cosim.error;
  ASSERT_EQ(same.tensors.size(), 1u);
  EXPECT_EQ(same.tensors[0].differing, 0u);
}

TEST(Cosim, LoaderRejectsUnknownImpl) {
  EXPECT_THROW(small("  - {name: f, op: Flatten, inputs: {in: x}, impl: verilog}\n"), std::invalid_argument);
}

}  // namespace
}  // namespace stepsim
