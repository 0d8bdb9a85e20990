// Off-chip memory operators end to end: LinearOffChipLoad (static and with a ref stream),
// LinearOffChipStore, RandomOffChipLoad and RandomOffChipStore over the TLM-2.0 HBM target.
// Token-level semantics, functional data through the backing store and .npy files, exact
// cycle counts from the HBM timing rules, request-vs-fast agreement and clear errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <regex>
#include <stdexcept>
#include <string>

#include "hw/presets/hardware.h"
#include "sim/engine/simulation.h"
#include "sim/graph/loader.h"
#include "sim/graph/npy.h"

namespace stepsim {
namespace {

HardwareParams artifact() { return load_preset("step-artifact"); }

SimResult run_yaml(const std::string& yaml, HardwareParams hw = artifact(), bool functional = false,
                   const std::string& out_dir = "", uint64_t shuffle = 0) {
  Graph g = parse_graph(yaml, "test.yaml", std::filesystem::temp_directory_path().string(), {});
  SimOptions o;
  o.hw = hw;
  o.functional = functional;
  o.output_dir = out_dir;
  o.shuffle_seed = shuffle;
  return simulate(g, o);
}

std::string tokens_of(const SimResult& r, const std::string& sink) { return format_beats(r.recorded.at(sink)); }

// Every element of every tile a sink received, in arrival order (functional runs).
std::vector<float> tile_values(const SimResult& r, const std::string& sink) {
  std::vector<float> v;
  for (const Beat& b : r.recorded.at(sink))
    if (b.has_elem && b.elem.is_tile() && b.elem.tile().has_data())
      v.insert(v.end(), b.elem.tile().data->f.begin(), b.elem.tile().data->f.end());
  return v;
}

std::string fresh_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("stepsim_offchip_" + name);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

// A [rows, cols] float tensor whose element (r, c) is r * cols + c (exact in bf16 below 256).
std::string write_index_tensor(const std::string& dir, uint64_t rows, uint64_t cols) {
  NpyArray a;
  a.shape = {rows, cols};
  for (uint64_t k = 0; k < rows * cols; ++k) a.f.push_back(float(k % 256));
  std::string path = dir + "/x.npy";
  write_npy(path, a);
  return path;
}

// Cycle the last response of an isolated tile is visible at its load, on an idle memory
// (reference HBM rules, step-artifact preset): requests j = 0..n-1 go out par_dispatch per cycle,
// round-robin over the channels; with no channel conflicts the last one is issued at
// t + ceil(n / P) - 1 and returns link + startup + latency + link cycles later.
uint64_t isolated_tile_cycles(uint64_t rows, uint64_t row_bytes, uint64_t par_dispatch) {
  const HbmParams p = artifact().hbm;
  const uint64_t n = rows * ((row_bytes + p.request_bytes - 1) / p.request_bytes);
  const uint64_t last_issue = (n + par_dispatch - 1) / par_dispatch - 1;
  return last_issue + p.link_latency + p.startup + p.latency + p.link_latency;
}

// Paper test 2 (v2 Fig. 2): a [64,256] bf16 tensor read as [64,64] tiles, once per ref element.
TEST(LinearOffChipLoad, RefStreamRepeatsTheTiledView) {
  SimResult r = run_yaml(R"(
tensors:
  w: {shape: [64, 256], dtype: bf16}
streams:
  ref: '7 8 9 S1 D'
nodes:
  - {name: ref, op: Source, params: {stream: ref}}
  - {name: load, op: LinearOffChipLoad, params: {tensor: w, tile: [64, 64], out_shape: [1, 4]}, inputs: {ref: ref}}
  - {name: sink, op: Sink, inputs: {in: load}}
)");
  ASSERT_TRUE(r.ok) << r.error;
  const std::string pass = "T[64x64] T[64x64] T[64x64] T[64x64]";
  EXPECT_EQ(tokens_of(r, "sink"), pass + " S2 " + pass + " S2 " + pass + " S3 D");
  // Traffic: 12 tiles x 64*64*2 B = 98,304 B (every request is a full 64 B one).
  EXPECT_EQ(r.offchip_read_bytes, 12u * 64 * 64 * 2);
  EXPECT_EQ(r.offchip_read_bytes, 98304u);
  EXPECT_EQ(r.offchip_tile_bytes, 98304u);
  EXPECT_EQ(r.offchip_write_bytes, 0u);
}

TEST(LinearOffChipLoad, EmptyRefDimensionsPassThroughRaised) {
  SimResult r = run_yaml(R"(
tensors:
  w: {shape: [2, 4], dtype: fp32}
streams:
  ref: '1 S1 S1 2 S2 D'
nodes:
  - {name: ref, op: Source, params: {stream: ref}}
  - {name: load, op: LinearOffChipLoad, params: {tensor: w, tile: [2, 2]}, inputs: {ref: ref}}
  - {name: sink, op: Sink, inputs: {in: load}}
)");
  ASSERT_TRUE(r.ok) << r.error;
  // The view is [1, 2] tiles (rank 2): ref stop S1 -> S3, an empty ref row -> bare S3.
  EXPECT_EQ(tokens_of(r, "sink"), "T[2x2:fp32] T[2x2:fp32] S3 S3 T[2x2:fp32] T[2x2:fp32] S4 D");
}

TEST(LinearOffChipLoad, AffineViewWithStrideZeroRereads) {
  const std::string dir = fresh_dir("affine");
  write_index_tensor(dir, 2, 4);
  SimResult r = run_yaml(R"(
tensors:
  x: {shape: [2, 4], dtype: fp32, init: file, file: )" +
                             dir + R"(/x.npy}
nodes:
  - {name: load, op: LinearOffChipLoad, params: {tensor: x, tile: [1, 2], out_shape: [2, 3], stride: [2, 0]}}
  - {name: sink, op: Sink, inputs: {in: load}}
)",
                         artifact(), true);
  ASSERT_TRUE(r.ok) << r.error;
  const auto& beats = r.recorded.at("sink");
  // Tiles 0 0 0 S1 2 2 2 S2: stride 0 re-reads the first tile of each tiled row.
  ASSERT_EQ(beats.size(), 6u);  // done rides on the last tile
  const float first[6] = {0, 0, 0, 4, 4, 4};
  for (int k = 0; k < 6; ++k) {
    const Tile& t = beats[size_t(k)].elem.tile();
    EXPECT_EQ(t.f(0, 0), first[k]) << k;
    EXPECT_EQ(t.f(0, 1), first[k] + 1) << k;
    EXPECT_TRUE(t.in_memory_unit);
  }
  EXPECT_EQ(beats[2].stop, 1);
  EXPECT_EQ(beats[5].stop, 2);
}

TEST(LinearOffChipLoad, IsolatedTileCyclesFollowTheHbmRules) {
  // One 64x64 bf16 tile: 64 rows x ceil(128 B / 64 B) = 128 requests at 1 per cycle.
  const uint64_t tile = isolated_tile_cycles(64, 128, 1);
  EXPECT_EQ(tile, 127u + 1 + 14 + 2 + 1);
  SimResult r = run_yaml(R"(
tensors:
  w: {shape: [64, 256]}
nodes:
  - {name: load, op: LinearOffChipLoad, params: {tensor: w, tile: [64, 64]}}
  - {name: sink, op: Sink, inputs: {in: load}}
)");
  ASSERT_TRUE(r.ok) << r.error;
  // One tile in flight: tile k is issued when tile k-1 is back; each is visible one send
  // latency after its last response.
  const auto& times = r.recorded_times.at("sink");
  ASSERT_EQ(times.size(), 4u);
  for (uint64_t k = 0; k < 4; ++k) EXPECT_EQ(times[k], (k + 1) * tile + 1) << "tile " << k;
  EXPECT_EQ(r.cycles, 4 * tile + 1);
}

TEST(LinearOffChipLoad, ParDispatchBundlesRequests) {
  // 128 requests, 16 per cycle: the last is issued at cycle 7; 16 distinct channels per cycle
  // and two cycles per channel slot, so no request waits.
  const uint64_t tile = isolated_tile_cycles(64, 128, 16);
  EXPECT_EQ(tile, 7u + 18);
  SimResult r = run_yaml(R"(
tensors:
  w: {shape: [64, 64]}
nodes:
  - {name: load, op: LinearOffChipLoad, params: {tensor: w, tile: [64, 64], par_dispatch: 16}}
  - {name: sink, op: Sink, inputs: {in: load}}
)");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.recorded_times.at("sink")[0], tile + 1);
}

TEST(LinearOffChipLoad, PipelinedAddressGeneratorOverlapsTiles) {
  HardwareParams hw = artifact();
  hw.set("offchip_one_tile_in_flight", "false");
  SimResult r = run_yaml(R"(
tensors:
  w: {shape: [64, 256]}
nodes:
  - {name: load, op: LinearOffChipLoad, params: {tensor: w, tile: [64, 64]}}
  - {name: sink, op: Sink, inputs: {in: load}}
)",
                         hw);
  ASSERT_TRUE(r.ok) << r.error;
  // 4 tiles x 128 requests back to back at 1 per cycle: the last of 512 is issued at cycle 511
  // and returns 18 cycles later (no channel conflicts at 1 request per cycle); +1 to the sink.
  EXPECT_EQ(r.recorded_times.at("sink")[3], 511u + 18 + 1);
}

// ag_max_outstanding L: a pipelined load keeps at most L requests unanswered, and its tiles in
// flight wait in its address generator, not in its output channel (ChannelParams::inflight).
// 64 tiles of one 64-byte request each, issued at most one per cycle with no channel conflicts
// (32 channels, II 2), each answered R cycles after its issue. Per tile k, with the channel's
// depth D = 2 and K = L / 1 staged tiles: the issue s_k follows the previous send and waits for
// tile k - L's answer; the send waits for the slot tile k - (D + K) released; the tile is
// visible at send + R (sent the cycle after its issue with an extra delay of R - 1, one hop),
// and not before the slot tile k - D released + 1 hop; the sink takes it then and releases its
// slot a cycle later. L = 0 is the old rule: no window, and the tiles in flight hold the
// channel's slots.
TEST(LinearOffChipLoad, InFlightTilesWaitInTheAddressGenerator) {
  const uint64_t R = isolated_tile_cycles(1, 64, 1);
  EXPECT_EQ(R, 18u);
  std::map<uint64_t, uint64_t> last;
  for (uint64_t limit : {0u, 8u, 64u}) {
    HardwareParams hw = artifact();
    hw.set("offchip_one_tile_in_flight", "false");
    hw.set("ag_max_outstanding", std::to_string(limit));
    SimResult r = run_yaml(R"(
tensors:
  w: {shape: [1, 2048]}
nodes:
  - {name: load, op: LinearOffChipLoad, params: {tensor: w, tile: [1, 32]}}
  - {name: sink, op: Sink, inputs: {in: load}}
)",
                           hw);
    ASSERT_TRUE(r.ok) << r.error;
    const uint64_t D = 2, K = limit, n = 64;
    std::vector<uint64_t> issue(n), v(n), freed(n);
    uint64_t clock = 0;
    for (uint64_t k = 0; k < n; ++k) {
      issue[k] = clock;
      if (limit && k >= limit) issue[k] = std::max(issue[k], issue[k - limit] + R);
      uint64_t send = issue[k] + 1;
      if (k >= D + K) send = std::max(send, freed[k - D - K]);
      v[k] = send + R;
      if (K && k >= D) v[k] = std::max(v[k], freed[k - D] + 1);
      freed[k] = v[k] + 1;
      clock = send;
    }
    const std::vector<uint64_t>& got = r.recorded_times.at("sink");
    ASSERT_EQ(got.size(), n);
    for (uint64_t k = 0; k < n; ++k) EXPECT_EQ(got[k], v[k]) << "limit " << limit << ", tile " << k;
    last[limit] = got[n - 1];
  }
  EXPECT_EQ(last[64], (64 - 1) + R + 1);  // never throttled: 64 requests cover the round trip
  EXPECT_GT(last[8], last[64]);           // 8 do not
  EXPECT_GT(last[0], last[8]);            // the channel's 2 slots even less
}

// The window counts requests, however the tile's bytes fall into rows: one contiguous 16 KiB
// tile (a single row of 256 requests, as a [64 x 256] tile of a blocked tensor is) goes out in
// chunks of L / 2 requests like the same bytes cut into 16 rows of 16 requests. (Before, a row
// longer than the chunk went out whole, ahead of the window.)
TEST(LinearOffChipLoad, WindowCountsRequestsNotRows) {
  auto arrival = [](const std::string& shape, const std::string& tile, uint64_t limit) {
    HardwareParams hw = artifact();
    hw.set("offchip_one_tile_in_flight", "false");
    hw.set("ag_max_outstanding", std::to_string(limit));
    SimResult r = run_yaml("tensors:\n  w: {shape: " + shape +
                               "}\nnodes:\n"
                               "  - {name: load, op: LinearOffChipLoad, params: {tensor: w, tile: " +
                               tile +
                               "}}\n"
                               "  - {name: sink, op: Sink, inputs: {in: load}}\n",
                           hw);
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.offchip_read_bytes, 16384u);
    return r.recorded_times.at("sink").at(0);
  };
  for (uint64_t limit : {8u, 64u}) {
    const uint64_t one_row = arrival("[1, 8192]", "[1, 8192]", limit);
    EXPECT_EQ(one_row, arrival("[16, 512]", "[16, 512]", limit)) << "limit " << limit;
    if (limit == 8) {
      EXPECT_GT(one_row, arrival("[1, 8192]", "[1, 8192]", 0));  // throttled
    }
  }

  // A pipelined store keeps at most ag_max_outstanding L requests unacknowledged, in chunks of
  // L / 2 requests. Four [64 x 64] tiles (64 rows of 2 requests) from a literal source, 1 request
  // per cycle, each answered R1 = 18 cycles after its issue. With L = 16: chunks of 8 requests;
}
// chunk i starts 8 cycles after chunk i - 1 and not before chunk i - 2 is answered (its last
// request, 7 cycles after its start, + R1). With L = 0 (no limit) or a window larger than the
// round trip the tiles go out back to back.
TEST(LinearOffChipStore, OutstandingWritesAreLimited) {
  const uint64_t R1 = isolated_tile_cycles(1, 64, 1);
  for (uint64_t limit : {0u, 16u, 1024u}) {
    HardwareParams hw = artifact();
    hw.set("offchip_one_tile_in_flight", "false");
    hw.set("ag_max_outstanding", std::to_string(limit));
    SimResult r = run_yaml(R"(
tensors:
  y: {shape: [64, 256], init: output}
streams:
  tiles: 'T[64x64] T[64x64] T[64x64] T[64x64] S1 D'
nodes:
  - {name: src, op: Source, params: {stream: tiles}}
  - {name: store, op: LinearOffChipStore, params: {tensor: y, tile: [64, 64]}, inputs: {in: src}}
)",
                           hw);
    ASSERT_TRUE(r.ok) << r.error;
    if (limit == 16) {
      std::vector<uint64_t> start(64), done(64);
      for (size_t i = 0; i < 64; ++i) {
        start[i] = i == 0 ? 1 : start[i - 1] + 8;  // the first tile arrives at cycle 1
        if (i >= 2) start[i] = std::max(start[i], done[i - 2]);
        done[i] = start[i] + 7 + R1;
      }
      EXPECT_EQ(r.cycles, done[63]);
      EXPECT_GT(r.cycles, 1 + 4 * 128 - 1 + R1);
    } else {
      EXPECT_EQ(r.cycles, 1 + 4 * 128 - 1 + R1) << "limit " << limit;
    }
  }
}

// Calibration through the operators: a 16 MiB streaming read reaches the configured peak
// (32 channels x 64 B / II 2 = 1024 B/cycle) within 2 % once the address generator is pipelined
// and issues 16 requests per cycle (the channels' aggregate rate).
TEST(OffChip, StreamingReadReachesPeakBandwidth) {
  HardwareParams hw = artifact();
  hw.set("offchip_one_tile_in_flight", "false");
  SimResult r = run_yaml(R"(
tensors:
  w: {shape: [2048, 4096]}
nodes:
  - {name: load, op: LinearOffChipLoad, params: {tensor: w, tile: [64, 4096], par_dispatch: 16}}
  - {name: sink, op: Sink, inputs: {in: load}}
)",
                         hw);
  ASSERT_TRUE(r.ok) << r.error;
  const double peak = hw.hbm.peak_bytes_per_cycle();
  EXPECT_EQ(peak, 1024.0);
  EXPECT_EQ(r.offchip_read_bytes, 16u << 20);
  // 16 MiB / 1024 B/cycle = 16384 cycles of transfer, plus the 18-cycle round trip of the last
  // request and the hop to the sink.
  EXPECT_EQ(r.cycles, 16384u - 1 + 18 + 1);
  EXPECT_GE(double(r.offchip_read_bytes) / double(r.cycles), 0.98 * peak);
}

TEST(OffChip, FunctionalRoundTripThroughLoadMapStore) {
  const std::string dir = fresh_dir("roundtrip");
  write_index_tensor(dir, 32, 64);
  SimResult r = run_yaml(R"(
tensors:
  x: {shape: [32, 64], dtype: bf16, init: file, file: )" +
                             dir + R"(/x.npy}
  y: {shape: [32, 64], dtype: bf16, init: output}
nodes:
  - {name: load, op: LinearOffChipLoad, params: {tensor: x, tile: [16, 32]}}
  - {name: store, op: LinearOffChipStore, params: {tensor: y, tile: [16, 32], out_shape: [2, 2], stride: [1, 2]}, inputs: {in: load}}
)",
                         artifact(), true, dir);
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.written_files.size(), 1u);
  NpyArray y = read_npy(dir + "/y.npy");
  ASSERT_EQ(y.shape, (std::vector<uint64_t>{32, 64}));
  // The store's view (out_shape [2, 2], stride [1, 2]) writes its k-th tile to stored tile
  // lin(k) = (k / 2) * 1 + (k % 2) * 2: the tiled transpose. So y's tile (tr, tc), stored index
  // tr*2 + tc, holds the k-th tile read, k = tc*2 + tr, which is x's tile (k / 2, k % 2).
  for (uint64_t tr = 0; tr < 2; ++tr)
    for (uint64_t tc = 0; tc < 2; ++tc) {
      const uint64_t k = tc * 2 + tr;
      const uint64_t xr = (k / 2) * 16, xc = (k % 2) * 32;
      for (uint64_t i = 0; i < 16; ++i)
        for (uint64_t j = 0; j < 32; ++j)
          ASSERT_EQ(y.f[(tr * 16 + i) * 64 + tc * 32 + j], float(((xr + i) * 64 + xc + j) % 256))
              << "tile " << tr << "," << tc;
    }
  EXPECT_EQ(r.offchip_read_bytes, 32u * 64 * 2);
  EXPECT_EQ(r.offchip_write_bytes, 32u * 64 * 2);
}

// Blocked layout: x stored in [16 x 16] blocks. Tiles of whole blocks ([16 x 32]) and tiles
// inside one block ([8 x 8]) read the same values as from a row-major x; the y written through
// a blocked tensor reads back (y.npy, logical order) equal to x.
TEST(OffChip, BlockedLayoutReadsAndWritesTheLogicalTensor) {
  const std::string dir = fresh_dir("blocked");
  write_index_tensor(dir, 32, 64);
  for (const char* tile : {"[16, 32]", "[8, 8]", "[32, 64]"}) {
    const std::string x = "  x: {shape: [32, 64], init: file, file: " + dir + "/x.npy";
    const std::string nodes = std::string(R"(
nodes:
  - {name: load, op: LinearOffChipLoad, params: {tensor: x, tile: )") +
                              tile + R"(}}
  - {name: bc, op: Broadcast, inputs: {in: load}}
  - {name: sink, op: Sink, inputs: {in: bc.out0}}
  - {name: store, op: LinearOffChipStore, params: {tensor: y, tile: )" +
                              tile + R"(}, inputs: {in: bc.out1}}
)";
    SimResult row =
        run_yaml("tensors:\n" + x + "}\n  y: {shape: [32, 64], init: output}" + nodes, artifact(), true, dir);
    ASSERT_TRUE(row.ok) << row.error;
    SimResult blk =
        run_yaml("tensors:\n" + x + ", block: [16, 16]}\n  y: {shape: [32, 64], init: output, block: [16, 16]}" + nodes,
                 artifact(), true, dir);
    ASSERT_TRUE(blk.ok) << blk.error;
    EXPECT_EQ(format_beats(blk.recorded.at("sink")), format_beats(row.recorded.at("sink"))) << tile;
    EXPECT_EQ(tile_values(blk, "sink"), tile_values(row, "sink")) << tile;
    EXPECT_EQ(tile_values(blk, "sink").size(), 32u * 64);
    NpyArray y = read_npy(dir + "/y.npy");
    ASSERT_EQ(y.f.size(), 32u * 64);
    for (uint64_t k = 0; k < y.f.size(); ++k) ASSERT_EQ(y.f[k], float(k % 256)) << tile << " element " << k;
  }
}

// Requests of a blocked tensor: a [16 x 64] bf16 tile of [16 x 16] blocks is one block row of
// 4 blocks, 2 048 contiguous bytes = 32 full requests; row-major it is 16 rows of 128 B, also 32
// requests. A [16 x 16] tile (one block, 512 B) is 8 requests blocked but 16 half-used ones
// row-major (32-byte rows), so row-major reads twice its payload.
TEST(OffChip, BlockedLayoutRequestsAndCycles) {
  auto load = [](const char* block, const char* tile) {
    return run_yaml(std::string("tensors: {w: {shape: [64, 128]") + block + R"(}}
nodes:
  - {name: load, op: LinearOffChipLoad, params: {tensor: w, tile: )" +
                    tile + R"(}}
  - {name: sink, op: Sink, inputs: {in: load}}
)");
  };
  const uint64_t payload = 64 * 128 * 2;
  SimResult whole = load(", block: [16, 16]", "[16, 64]");
  ASSERT_TRUE(whole.ok) << whole.error;
  EXPECT_EQ(whole.offchip_read_bytes, payload);
  // Eight tiles, one in flight, each 32 requests from an idle memory.
  EXPECT_EQ(whole.cycles, 8 * isolated_tile_cycles(1, 2048, 1) + 1);
  EXPECT_EQ(isolated_tile_cycles(1, 2048, 1), isolated_tile_cycles(16, 128, 1));
  SimResult one_block = load(", block: [16, 16]", "[16, 16]");
  ASSERT_TRUE(one_block.ok) << one_block.error;
  EXPECT_EQ(one_block.offchip_read_bytes, payload);
  EXPECT_EQ(one_block.cycles, 32 * isolated_tile_cycles(1, 512, 1) + 1);
  SimResult row_major = load("", "[16, 16]");
  ASSERT_TRUE(row_major.ok) << row_major.error;
  EXPECT_EQ(row_major.offchip_read_bytes, 2 * payload);
  // Inside a block: an [8 x 8] tile is 8 rows of 16 B at the block's 32-byte pitch.
  SimResult inside = load(", block: [16, 16]", "[8, 8]");
  ASSERT_TRUE(inside.ok) << inside.error;
  EXPECT_EQ(inside.offchip_read_bytes, 4 * payload);
  EXPECT_EQ(inside.cycles, 128 * isolated_tile_cycles(8, 16, 1) + 1);
}

// offset moves the view's first tile: a load of rows 2..3 stored at rows 1..2 of y.
// load_buffer_tiles B: a load's output channel is its memory unit's buffer, B tiles deep (at
// least fifo_depth, at most pmu_capacity / tile bytes); a node's own depth wins; other
// operators' channels keep fifo_depth.
TEST(LinearOffChipLoad, MemoryUnitBufferSetsTheOutputDepth) {
  auto depths = [](const std::string& buffer, const std::string& capacity) {
    HardwareParams hw = artifact();  // fifo_depth 2
    hw.set("load_buffer_tiles", buffer);
    hw.set("pmu_capacity", capacity);
    SimResult r = run_yaml(R"(
tensors:
  w: {shape: [1, 2048]}
nodes:
  - {name: load, op: LinearOffChipLoad, params: {tensor: w, tile: [1, 32]}}
  - {name: own, op: LinearOffChipLoad, params: {tensor: w, tile: [1, 32]}, depth: 3}
  - {name: sum, op: Map, params: {fn: add}, inputs: {in0: load, in1: own}}
  - {name: sink, op: Sink, inputs: {in: sum}}
)",
                           hw);
    EXPECT_TRUE(r.ok) << r.error;
    std::map<std::string, uint32_t> d;
    for (const ChannelResult& c : r.channels) d[c.name.substr(0, c.name.find('.'))] = c.params.depth;
    return d;
  };
  const uint64_t tile_bytes = 32 * 2;  // [1 x 32] bf16
  std::map<std::string, uint32_t> d = depths("0", "524288");
  EXPECT_EQ(d["load"], 2u);  // off: fifo_depth
  EXPECT_EQ(d["own"], 3u);
  d = depths("6", "524288");
  EXPECT_EQ(d["load"], 6u);  // 6 tiles fit easily
  EXPECT_EQ(d["own"], 3u);   // the node's depth
  EXPECT_EQ(d["sum"], 2u);   // not a load
  d = depths("6", std::to_string(4 * tile_bytes));
  EXPECT_EQ(d["load"], 4u);  // capacity: 4 tiles
  d = depths("6", std::to_string(tile_bytes));
  EXPECT_EQ(d["load"], 2u);  // never below fifo_depth
}

// ag_load_pipeline_cycles / ag_store_pipeline_cycles (hdl-validation: 2 and 4, the address
// generator unit's registers): every loaded tile reaches the sink that many cycles later, the
// address generator's own schedule unchanged; a store ends that many cycles after its last
// acknowledgement.
TEST(LinearOffChipLoad, AddressGeneratorRegistersDelayTilesAndTheStoreEnd) {
  auto load = [](uint32_t pipe) {
    HardwareParams hw = artifact();
    hw.set("ag_load_pipeline_cycles", std::to_string(pipe));
    SimResult r = run_yaml(R"(
tensors:
  x: {shape: [4, 32]}
nodes:
  - {name: load, op: LinearOffChipLoad, params: {tensor: x, tile: [1, 32]}}
  - {name: sink, op: Sink, inputs: {in: load}}
)",
                           hw);
    EXPECT_TRUE(r.ok) << r.error;
    return r.recorded_times.at("sink");
  };
  const std::vector<uint64_t> t0 = load(0), t2 = load(2);
  ASSERT_EQ(t0.size(), 4u);
  ASSERT_EQ(t2.size(), t0.size());
  for (size_t k = 0; k < t0.size(); ++k) EXPECT_EQ(t2[k], t0[k] + 2) << "tile " << k;
  auto store = [](uint32_t pipe) {
    HardwareParams hw = artifact();
    hw.set("ag_store_pipeline_cycles", std::to_string(pipe));
    SimResult r = run_yaml(R"(
tensors:
  y: {shape: [2, 32], init: output}
streams:
  tiles: 'T[1x32] T[1x32] D'
nodes:
  - {name: src, op: Source, params: {stream: tiles}}
  - {name: store, op: LinearOffChipStore, params: {tensor: y, tile: [1, 32]}, inputs: {in: src}}
)",
                           hw);
    EXPECT_TRUE(r.ok) << r.error;
    return r.cycles;
  };
  EXPECT_EQ(store(4), store(0) + 4);
}

// hdl-validation (input_register, ag_max_outstanding): the address generator takes an index as
// the firing starts (its input buffer's second entry), so sequential indices load as the linear
// view of the same tiles: 16 [4 x 4] tiles of 4 requests each, one request per cycle, reach the
// sink on the same cycles but one (the first index arrives after the index channel's latency of
// 1 cycle). Without the input register every index waits for the index channel's round trip
// (depth 1). A random store keeps its acknowledgements in flight (the unit's pass queue): they
// reach their sink 4 cycles apart, as its writes go out.
TEST(RandomOffChipLoad, IndicesTakenAsTheFiringStartsLoadAsTheLinearView) {
  std::string idx;
  for (int k = 0; k < 16; ++k) idx += std::to_string(k) + " ";
  auto sink_times = [&](bool random, bool input_register) {
    HardwareParams hw = load_preset("hdl-validation");
    hw.set("input_register", input_register ? "true" : "false");
    const std::string load =
        random ? "{name: load, op: RandomOffChipLoad, params: {tensor: x, tile: [4, 4], par_dispatch: 1}, "
                 "inputs: {raddr: idx}}"
               : "{name: load, op: LinearOffChipLoad, params: {tensor: x, tile: [4, 4], par_dispatch: 1}}";
    SimResult r = run_yaml(R"(
tensors:
  x: {shape: [16, 16]}
streams:
  idx: ')" + idx + R"(D'
nodes:
  - {name: idx, op: Source, params: {stream: idx}}
  - )" + load + R"(
  - {name: sink, op: Sink, inputs: {in: load}}
)",
                           hw);
    EXPECT_TRUE(r.ok) << r.error;
    return r.recorded_times.at("sink");
  };
  const std::vector<uint64_t> lin = sink_times(false, true), rnd = sink_times(true, true),
                              slow = sink_times(true, false);
  ASSERT_EQ(lin.size(), 16u);
  for (size_t k = 0; k < lin.size(); ++k) EXPECT_EQ(rnd[k], lin[k] + 1) << k;
  for (size_t k = 1; k < lin.size(); ++k) EXPECT_EQ(lin[k] - lin[k - 1], 4u) << k;  // 4 requests per tile
  EXPECT_GT(slow.back(), rnd.back());
  auto ack_times = [&]() {
    const std::string store =
        "{name: store, op: RandomOffChipStore, params: {tensor: y, tile: [4, 4], par_dispatch: 1}, "
        "inputs: {waddr: idx, wdata: src}}\n  - {name: acks, op: Sink, inputs: {in: store}}";
    std::string tiles;
    for (int k = 0; k < 16; ++k) tiles += "T[4x4] ";
    SimResult r = run_yaml(R"(
tensors:
  y: {shape: [16, 16], init: output}
streams:
  idx: ')" + idx + R"(D'
  tiles: ')" + tiles + R"(D'
nodes:
  - {name: idx, op: Source, params: {stream: idx}}
  - {name: src, op: Source, params: {stream: tiles}}
  - )" + store + R"(
)",
                           load_preset("hdl-validation"));
    EXPECT_TRUE(r.ok) << r.error;
    return r.recorded_times.at("acks");
  };
  const std::vector<uint64_t> acks = ack_times();
  ASSERT_EQ(acks.size(), 16u);
  for (size_t k = 1; k < acks.size(); ++k) EXPECT_EQ(acks[k] - acks[k - 1], 4u) << k;
}

TEST(LinearOffChipLoad, OffsetStartsTheViewAtATile) {
  const std::string dir = fresh_dir("offset");
  write_index_tensor(dir, 4, 4);  // tile k of [1,4] holds 4k .. 4k+3
  SimResult r = run_yaml(R"(
tensors:
  x: {shape: [4, 4], dtype: fp32, init: file, file: )" +
                             dir + R"(/x.npy}
  y: {shape: [4, 4], dtype: fp32, init: output}
nodes:
  - {name: load, op: LinearOffChipLoad, params: {tensor: x, tile: [1, 4], out_shape: [2], offset: 2}}
  - {name: store, op: LinearOffChipStore, params: {tensor: y, tile: [1, 4], out_shape: [2], offset: 1}, inputs: {in: load}}
)",
                         artifact(), true, dir);
  ASSERT_TRUE(r.ok) << r.error;
  NpyArray y = read_npy(dir + "/y.npy");
  const float expect[16] = {0, 0, 0, 0, 8, 9, 10, 11, 12, 13, 14, 15, 0, 0, 0, 0};
  for (int k = 0; k < 16; ++k) EXPECT_EQ(y.f[size_t(k)], expect[k]) << k;
  // A view past the tensor's end is refused before the run.
  try {
    run_yaml(R"(
tensors:
  x: {shape: [4, 4], dtype: fp32}
nodes:
  - {name: load, op: LinearOffChipLoad, params: {tensor: x, tile: [1, 4], out_shape: [2], offset: 3}}
  - {name: sink, op: Sink, inputs: {in: load}}
)");
    ADD_FAILURE() << "an offset past the tensor must be an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the view reaches tile 4 but tensor 'x' holds 4 tiles"), std::string::npos)
        << e.what();
  }
}

TEST(OffChip, RandomLoadAndStoreFollowTheAddressStreams) {
  const std::string dir = fresh_dir("random");
  write_index_tensor(dir, 4, 4);  // 4 tiles of [1,4]: tile k holds 4k .. 4k+3
  SimResult r = run_yaml(R"(
tensors:
  x: {shape: [4, 4], dtype: fp32, init: file, file: )" +
                             dir + R"(/x.npy}
  y: {shape: [4, 4], dtype: fp32, init: output}
streams:
  raddr: '3 0 S1 S1 2 S1 D'
  waddr: '0 1 2 D'
nodes:
  - {name: raddr, op: Source, params: {stream: raddr}}
  - {name: waddr, op: Source, params: {stream: waddr}}
  - {name: load, op: RandomOffChipLoad, params: {tensor: x, tile: [1, 4]}, inputs: {raddr: raddr}}
  - {name: fork, op: Broadcast, inputs: {in: load}}
  - {name: sink, op: Sink, inputs: {in: fork.out0}}
  - {name: store, op: RandomOffChipStore, params: {tensor: y, tile: [1, 4]}, inputs: {waddr: waddr, wdata: fork.out1}}
  - {name: acks, op: Sink, inputs: {in: store}}
)",
                         artifact(), true, dir);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(tokens_of(r, "sink"), "T[1x4:fp32] T[1x4:fp32] S1 S1 T[1x4:fp32] S1 D");
  const auto& b = r.recorded.at("sink");
  EXPECT_EQ(b[0].elem.tile().f(0, 0), 12.0f);  // tile 3
  EXPECT_EQ(b[1].elem.tile().f(0, 0), 0.0f);   // tile 0
  EXPECT_EQ(b[3].elem.tile().f(0, 0), 8.0f);   // tile 2 (b[2] is the bare S1)
  EXPECT_EQ(tokens_of(r, "acks"), "1 1 1 D");
  NpyArray y = read_npy(dir + "/y.npy");
  const float expect[16] = {12, 13, 14, 15, 0, 1, 2, 3, 8, 9, 10, 11, 0, 0, 0, 0};
  for (int k = 0; k < 16; ++k) EXPECT_EQ(y.f[size_t(k)], expect[k]) << k;
}

// One load of four [64 x 128] tiles into a sink: the off-chip path alone.
const char* const kIsolatedLoad = R"(
tensors:
  w: {shape: [64, 512]}
nodes:
  - {name: load, op: LinearOffChipLoad, params: {tensor: w, tile: [64, 128], par_dispatch: 4}}
  - {name: sink, op: Sink, inputs: {in: load}}
)";

TEST(OffChip, RequestModeMatchesFastModeOnAnIsolatedLoad) {
  const std::string g = kIsolatedLoad;
  HardwareParams req = artifact();
  req.set("hbm.mode", "request");
  SimResult fast = run_yaml(g), slow = run_yaml(g, req);
  ASSERT_TRUE(fast.ok && slow.ok) << fast.error << slow.error;
  EXPECT_EQ(fast.cycles, slow.cycles);
  EXPECT_EQ(fast.recorded_times.at("sink"), slow.recorded_times.at("sink"));
  EXPECT_EQ(fast.offchip_read_bytes, slow.offchip_read_bytes);
}

// hbm.model names the timing model (hw/memory/hbm_model.h): `fixed` is the default and times
// as before; an unknown name fails the run with the known names, not a crash.
TEST(OffChip, HbmModelIsChosenByName) {
  const std::string g = kIsolatedLoad;
  HardwareParams fixed = artifact(), unknown = artifact();
  EXPECT_EQ(fixed.hbm.model, "fixed");
  fixed.set("hbm.model", "fixed");
  unknown.set("hbm.model", "hbm3");
  const SimResult base = run_yaml(g), named = run_yaml(g, fixed);
  ASSERT_TRUE(base.ok && named.ok) << base.error << named.error;
  EXPECT_EQ(named.cycles, base.cycles);
  std::string msg;
  try {  // elaboration makes the memory, and refuses the name (`stepsim run` prints it, exit 1)
    const SimResult bad = run_yaml(g, unknown);
    ASSERT_FALSE(bad.ok);
    msg = bad.error;
  } catch (const std::invalid_argument& e) {
    msg = e.what();
  }
  EXPECT_EQ(msg, "unknown HBM model 'hbm3' (hbm.model); known models: fixed, dram");
}

TEST(OffChip, ConcurrentClientsAreOrderedDeterministically) {
  const std::string g = R"(
tensors:
  a: {shape: [64, 256]}
  b: {shape: [64, 256]}
  c: {shape: [64, 256], init: output}
nodes:
  - {name: la, op: LinearOffChipLoad, params: {tensor: a, tile: [32, 64]}}
  - {name: lb, op: LinearOffChipLoad, params: {tensor: b, tile: [16, 64], par_dispatch: 2}}
  - {name: act, op: Map, params: {fn: silu}, inputs: {in0: la}}
  - {name: sink, op: Sink, inputs: {in: lb}}
  - {name: st, op: LinearOffChipStore, params: {tensor: c, tile: [32, 64]}, inputs: {in: act}}
)";
  SimResult base = run_yaml(g);
  ASSERT_TRUE(base.ok) << base.error;
  for (uint64_t seed : {1, 2, 3}) {
    SimResult s = run_yaml(g, artifact(), false, "", seed);
    ASSERT_TRUE(s.ok) << s.error;
    EXPECT_EQ(s.cycles, base.cycles) << "seed " << seed;
    EXPECT_EQ(s.recorded_times.at("sink"), base.recorded_times.at("sink")) << "seed " << seed;
  }
}

// The fast (tile-level, deferred) path must give exactly what the request-level path gives,
// also when several clients contend for the channels, under both channel mappings.
TEST(OffChip, FastModeEqualsRequestModeUnderContention) {
  const std::string g = R"(
tensors:
  a: {shape: [128, 512]}
  b: {shape: [64, 1024], dtype: fp32}
  c: {shape: [128, 512], init: output}
  d: {shape: [32, 32]}
streams:
  addr: '3 1 0 2 3 3 S1 1 0 S1 D'
nodes:
  - {name: la, op: LinearOffChipLoad, params: {tensor: a, tile: [32, 128], par_dispatch: 16}}
  - {name: lb, op: LinearOffChipLoad, params: {tensor: b, tile: [16, 64], par_dispatch: 8}}
  - {name: addr, op: Source, params: {stream: addr}}
  - {name: ld, op: RandomOffChipLoad, params: {tensor: d, tile: [16, 16], par_dispatch: 3}, inputs: {raddr: addr}}
  - {name: act, op: Map, params: {fn: silu}, inputs: {in0: la}}
  - {name: sb, op: Sink, inputs: {in: lb}}
  - {name: sd, op: Sink, inputs: {in: ld}}
  - {name: st, op: LinearOffChipStore, params: {tensor: c, tile: [32, 128], par_dispatch: 5}, inputs: {in: act}}
)";
  for (const char* mapping : {"round_robin", "address_interleave"}) {
    for (const char* quirk : {"true", "false"}) {
      HardwareParams fast = artifact();
      fast.set("hbm.mapping", mapping);
      fast.set("hbm.startup_every_request", quirk);
      HardwareParams req = fast;
      req.set("hbm.mode", "request");
      SimResult f = run_yaml(g, fast), r = run_yaml(g, req);
      ASSERT_TRUE(f.ok && r.ok) << f.error << r.error;
      EXPECT_EQ(f.cycles, r.cycles) << mapping << " startup_every_request=" << quirk;
      EXPECT_EQ(f.recorded_times.at("sb"), r.recorded_times.at("sb")) << mapping;
      EXPECT_EQ(f.recorded_times.at("sd"), r.recorded_times.at("sd")) << mapping;
      EXPECT_EQ(f.offchip_read_bytes, r.offchip_read_bytes);
      EXPECT_EQ(f.offchip_write_bytes, r.offchip_write_bytes);
    }
  }
}

// Clients whose request rates cannot make a request wait (one tile in flight, par_dispatch
// summing to channels / II = 16 in the artifact preset) are served in closed form without
// turns; the request level, which interleaves every request in model time, must agree on the
// cycles, every arrival time, the traffic and (functional mode) the stored values. One more
// request per cycle (17) leaves the regime, and the two modes still agree.
TEST(OffChip, UncontendedMemoryEqualsRequestMode) {
  for (const char* pd_b : {"4", "5"}) {
    const std::string g = std::string(R"(
tensors:
  a: {shape: [128, 512]}
  b: {shape: [64, 1024], dtype: fp32}
  c: {shape: [128, 512], init: output}
nodes:
  - {name: la, op: LinearOffChipLoad, params: {tensor: a, tile: [32, 128], par_dispatch: 8}}
  - {name: lb, op: LinearOffChipLoad, params: {tensor: b, tile: [16, 64], par_dispatch: )") +
                          pd_b + R"(}}
  - {name: act, op: Map, params: {fn: silu}, inputs: {in0: la}}
  - {name: sb, op: Sink, inputs: {in: lb}}
  - {name: st, op: LinearOffChipStore, params: {tensor: c, tile: [32, 128], par_dispatch: 4}, inputs: {in: act}}
)";
    const bool uncontended = std::string(pd_b) == "4";
    for (bool functional : {false, true}) {
      HardwareParams req = artifact();
      req.set("hbm.mode", "request");
      const std::string dir_f = ::testing::TempDir() + "uncontended_f", dir_r = ::testing::TempDir() + "uncontended_r";
      SimResult f = run_yaml(g, artifact(), functional, dir_f), r = run_yaml(g, req, functional, dir_r);
      ASSERT_TRUE(f.ok && r.ok) << f.error << r.error;
      EXPECT_EQ(f.offchip_uncontended, uncontended) << "par_dispatch of lb " << pd_b;
      EXPECT_FALSE(r.offchip_uncontended);
      EXPECT_EQ(f.cycles, r.cycles) << "par_dispatch of lb " << pd_b << " functional " << functional;
      EXPECT_EQ(f.recorded_times.at("sb"), r.recorded_times.at("sb"));
      EXPECT_EQ(f.offchip_read_bytes, r.offchip_read_bytes);
      EXPECT_EQ(f.offchip_write_bytes, r.offchip_write_bytes);
      if (functional) {
        EXPECT_EQ(read_npy(dir_f + "/c.npy").f, read_npy(dir_r + "/c.npy").f);
      }
    }
  }
}

void expect_error(const std::string& yaml, const std::vector<std::string>& words, bool functional = false) {
  std::string msg;
  try {
    SimResult r = run_yaml(yaml, artifact(), functional);
    ASSERT_FALSE(r.ok);
    msg = r.error;
  } catch (const std::exception& e) {
    msg = e.what();
  }
  for (const std::string& w : words) EXPECT_NE(msg.find(w), std::string::npos) << "'" << w << "' not in: " << msg;
}

TEST(OffChipErrors, ClearMessages) {
  expect_error(R"(
tensors: {w: {shape: [64, 64]}}
nodes: [{name: l, op: LinearOffChipLoad, params: {tensor: v, tile: [64, 64]}}]
)",
               {"no tensor named 'v'", "w"});
  expect_error(R"(
tensors: {w: {shape: [64, 64]}}
nodes: [{name: l, op: LinearOffChipLoad, params: {tensor: w, tile: [48, 64]}}]
)",
               {"node 'l'", "does not divide", "[64, 64]"});
  expect_error(R"(
tensors: {w: {shape: [64, 64]}}
nodes: [{name: l, op: LinearOffChipLoad, params: {tensor: w, tile: [32, 32], out_shape: [3], stride: [2]}}]
)",
               {"node 'l'", "reaches tile 4", "holds 4 tiles"});
  expect_error(R"(
tensors: {w: {shape: [64, 64]}, y: {shape: [64, 64]}}
nodes:
  - {name: l, op: LinearOffChipLoad, params: {tensor: w, tile: [32, 64]}}
  - {name: s, op: LinearOffChipStore, params: {tensor: y, tile: [64, 32]}, inputs: {in: l}}
)",
               {"node 's'", "'l.out'", "T[32x64:bf16]", "T[64x32:bf16]"});
  expect_error(R"(
tensors: {w: {shape: [4, 4]}}
streams: {a: '1 9 D'}
nodes:
  - {name: a, op: Source, params: {stream: a}}
  - {name: l, op: RandomOffChipLoad, params: {tensor: w, tile: [1, 4]}, inputs: {raddr: a}}
)",
               {"node 'l'", "tile index 9", "outside tensor 'w'"});
  expect_error(R"(
tensors: {w: {shape: [4, 4]}}
streams: {a: '1 2 D', d: 'T[1x4] D'}
nodes:
  - {name: a, op: Source, params: {stream: a}}
  - {name: d, op: Source, params: {stream: d}}
  - {name: s, op: RandomOffChipStore, params: {tensor: w, tile: [1, 4]}, inputs: {waddr: a, wdata: d}}
)",
               {"node 's' (RandomOffChipStore)", "has 2 addresses", "has 1 tiles: one tile per address"});
  expect_error(R"(
tensors: {w: {shape: [4, 4], init: file, file: /nonexistent/w.npy}}
nodes: []
)",
               {"tensor 'w'", "/nonexistent/w.npy", "cannot open"});
  expect_error(R"(
tensors: {w: {shape: [4, 4], colour: red}}
nodes: []
)",
               {"tensor 'w'", "unknown key 'colour'"});
  expect_error(R"(
tensors: {w: {shape: [64, 64], block: [16, 24]}}
nodes: []
)",
               {"tensor 'w'", "block [16, 24]", "divide the shape [64, 64]"});
  expect_error(R"(
tensors: {w: {shape: [64, 64], block: [16, 16]}}
nodes: [{name: l, op: LinearOffChipLoad, params: {tensor: w, tile: [8, 32]}}]
)",
               {"node 'l'", "tile [8, 32]", "[16, 16] blocks"});
}

TEST(OffChipErrors, TensorFileShapeMismatch) {
  const std::string dir = fresh_dir("badshape");
  write_index_tensor(dir, 2, 4);
  expect_error(R"(
tensors: {x: {shape: [4, 4], init: file, file: )" +
                   dir + R"(/x.npy}}
nodes: []
)",
               {"tensor 'x'", "(2, 4)", "[4, 4]"});
}

// A store writes exactly its view: fewer tiles used to leave part of it unwritten, silently.
TEST(OffChipErrors, StoresReceiveExactlyTheirView) {
  const std::string g = R"(
tensors:
  x: {shape: [64, 64]}
  y: {shape: [64, 64], init: output}
nodes:
  - {name: load, op: LinearOffChipLoad, params: {tensor: x, tile: [16, 16], out_shape: [OUT]}}
  - {name: store, op: LinearOffChipStore, params: {tensor: y, tile: [16, 16]}, inputs: {in: load}}
)";
  auto with = [&](const std::string& out) { return std::regex_replace(g, std::regex("OUT"), out); };
  // The static check counts the tiles (analyze and run alike, docs/semantics.md); the operator's
  // own check, with the same words, is left for counts known only as the data arrives.
  expect_error(with("2, 4"), {"node 'store' (LinearOffChipStore): received 8 tiles but its view of tensor 'y' "
                              "(out_shape [4, 4]) expects 16"});
  expect_error(with("2, 4"), {"received 8 tiles", "expects 16"}, true);  // functional mode too
  expect_error(R"(
tensors:
  x: {shape: [64, 64]}
  y: {shape: [64, 64], init: output}
nodes:
  - {name: load, op: LinearOffChipLoad, params: {tensor: x, tile: [16, 16]}}
  - {name: store, op: LinearOffChipStore, params: {tensor: y, tile: [16, 16], out_shape: [2, 4]}, inputs: {in: load}}
)",
               {"node 'store' (LinearOffChipStore): received 16 tiles but its view of tensor 'y' (out_shape [2, 4]) "
                "expects 8"});
  EXPECT_TRUE(run_yaml(with("4, 4")).ok);
}

TEST(OffChipErrors, RandomStoresNameBothCounts) {
  expect_error(R"(
tensors: {w: {shape: [4, 4]}}
streams: {a: '1 D', d: 'T[1x4] T[1x4] S1 D'}
nodes:
  - {name: a, op: Source, params: {stream: a}}
  - {name: d, op: Source, params: {stream: d}}
  - {name: s, op: RandomOffChipStore, params: {tensor: w, tile: [1, 4]}, inputs: {waddr: a, wdata: d}}
  - {name: acks, op: Sink, inputs: {in: s}}
)",
               {"node 's' (RandomOffChipStore): waddr from 'a.out0' [1] of scalar has 1 addresses but wdata from "
                "'d.out0' [1, 2] of T[1x4:bf16] has 2 tiles: one tile per address"});
}

// Sizes of a view are products: they are checked without overflowing (2^40 x 2^40 tiles used to
// wrap around to a small count).
TEST(OffChipErrors, ViewSizesDoNotOverflow) {
  expect_error(
      R"(
tensors: {w: {shape: [64, 64]}}
nodes: [{name: l, op: LinearOffChipLoad, params: {tensor: w, tile: [64, 64], out_shape: [1099511627776, 1099511627776], stride: [0, 0]}}]
)",
      {"node 'l'", "the view out_shape [1099511627776, 1099511627776] has more than 1099511627776 tiles per pass"});
  expect_error(R"(
tensors: {w: {shape: [64, 64]}}
nodes: [{name: l, op: LinearOffChipLoad, params: {tensor: w, tile: [64, 64], out_shape: [2, 2], stride: [1099511627776, 1099511627776]}}]
)",
               {"node 'l'", "reaches tile 2199023255552", "holds 1 tiles"});
}

// Timing mode reads no values, but checks a tensor file as functional mode does: before, it
// accepted a truncated file that functional mode rejected.
TEST(OffChipErrors, TensorFilesAreCheckedAlikeInBothModes) {
  const std::string dir = fresh_dir("npycheck");
  const std::string full = write_index_tensor(dir, 4, 4);
  std::string bytes;
  {
    std::ifstream in(full, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto write = [&](const std::string& name, const std::string& content) {
    std::ofstream(dir + "/" + name, std::ios::binary) << content;
    return R"(
tensors: {x: {shape: [4, 4], dtype: fp32, init: file, file: )" +
           dir + "/" + name + R"(}}
nodes:
  - {name: l, op: LinearOffChipLoad, params: {tensor: x, tile: [4, 4]}}
  - {name: s, op: Sink, inputs: {in: l}}
)";
  };
  const std::string truncated = write("short.npy", bytes.substr(0, bytes.size() - 20));
  const std::string longer = write("long.npy", bytes + std::string(8, '\0'));
  for (bool functional : {false, true}) {
    expect_error(truncated,
                 {"tensor 'x'", dir + "/short.npy",
                  "truncated data: shape (4, 4) of <f4 needs 64 bytes of data after "
                  "the 128-byte header (192 bytes in all), but the file has 172 bytes (44 of data)"},
                 functional);
    expect_error(longer, {"long.npy", "data longer than its header says", "the file has 200 bytes (72 of data)"},
                 functional);
  }
  EXPECT_TRUE(run_yaml(write("same.npy", bytes)).ok);
}

TEST(NpyReader, HeadersAndInt64ValuesAreCheckedWithoutReadingTheData) {
  const std::string dir = fresh_dir("npyheader");
  // Header dict + padding to 64 bytes, then `data`.
  auto npy = [&](const std::string& name, const std::string& dict, const std::string& data) {
    std::string h = dict;
    h.append((64 - (10 + h.size() + 1) % 64) % 64, ' ');
    h += '\n';
    std::string out = std::string("\x93NUMPY\x01\x00", 8) + char(h.size() & 0xff) + char(h.size() >> 8) + h + data;
    std::ofstream(dir + "/" + name, std::ios::binary) << out;
    return dir + "/" + name;
  };
  auto error_of = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // A dimension beyond 64 bits used to leak "stoull"; a huge shape in a small file is found
  // from the file size, before anything is allocated.
  const std::string huge =
      npy("huge.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999, 4), }", "");
  EXPECT_EQ(error_of([&] { read_npy_header(huge); }),
            "tensor file '" + huge + "': shape (99999999999999999999999, 4) has a dimension beyond 64 bits");
  const std::string big = npy("big.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000, 1000), }", "");
  EXPECT_NE(error_of([&] {
              read_npy(big);
            }).find("truncated data: shape (1000000000, 1000) of <f4 needs 4000000000000 bytes"),
            std::string::npos);
  const std::string odd = npy("odd.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1 2,), }", "");
  EXPECT_NE(error_of([&] { read_npy_header(odd); }).find("malformed shape '(1 2,)'"), std::string::npos);
  // A shape without its parentheses (a fuzzer's find: "basic_string::substr" leaked).
  const std::string bare = npy("bare.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': , }", "");
  EXPECT_EQ(error_of([&] { read_npy_header(bare); }),
            "tensor file '" + bare + "': malformed header: unexpected ',' at byte 50");
  // int64 values must fit int32: check_npy (timing mode) streams them, read_npy converts them.
  std::string data;
  for (int64_t v : {int64_t(1), int64_t(1) << 40}) data.append(reinterpret_cast<const char*>(&v), 8);
  const std::string wide = npy("wide.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", data);
  const std::string why =
      "tensor file '" + wide + "': int64 value 1099511627776 (element 1, counting from 0) does not fit in int32";
  EXPECT_EQ(error_of([&] { check_npy(wide); }), why);
  EXPECT_EQ(error_of([&] { read_npy(wide); }), why);
}

}  // namespace
}  // namespace stepsim
