// The address generator (hw/units/ag_offchip.h), HLS form: LinearOffChipLoad / Store on random
// views, layouts and tensors, with random back-pressure on the tile ports and a testbench
// memory with random latency and request stalls; every tile, stop and written byte against the
// tiled view of hw/ops/offchip_ops.cpp (ag_bench.h); tiles of fewer than T rows (the tile
// header) and loads with a ref stream (one pass per ref element). Its latency and throughput.
// The lock-step comparison with the RTL is in testbench/units/rtl/ag_lockstep_test.cpp.
#include <gtest/gtest.h>

#include "testbench/units/ag_run.h"

namespace stepsim::unit_test {
namespace {

TEST(UnitsVsReference, AgOffchipLinearT4) {
  const std::vector<UnitCase> cases = ag_cases(600, 41, 4);
  AgRun r = run_ag<4, NoRtl>(cases, 41);
  ASSERT_TRUE(r.run.result.ok) << r.run.result.error;
  ASSERT_EQ(r.run.result.cases_done, cases.size());
  EXPECT_EQ(r.error, "");
  EXPECT_GT(r.loads, 200u);
  EXPECT_GT(r.stores, 200u);
  EXPECT_GT(r.errs, 5u);
}

// [8 x 8] tiles: 128 bytes, so a row of the blocked layout takes two requests (64 + 64) and
// the random geometries have rows of 65..128 bytes (a full and a partial request).
TEST(UnitsVsReference, AgOffchipLinearT8) {
  const std::vector<UnitCase> cases = ag_cases(200, 43, 8);
  AgRun r = run_ag<8, NoRtl>(cases, 43);
  ASSERT_TRUE(r.run.result.ok) << r.run.result.error;
  EXPECT_EQ(r.error, "");
}

// [16 x 16] tiles with 4 request lanes (par_dispatch 4, the hdl-validation point): 512-byte
// tiles, row-major (16 rows of 32 bytes: 16 requests, 4 bundles), blocked (8 requests of 64
// bytes, 2 bundles) and random geometries (rows of 16..512 bytes). Every case's request bundles
// against the approximate operator's (ag_expected_bundles): a wrong lane order or bundling
// fails here even when the bytes come out right.
TEST(UnitsVsReference, AgOffchipLinearT16P4) {
  const std::vector<UnitCase> cases = ag_cases(300, 47, 16);
  AgRun r = run_ag<16, NoRtl, 4>(cases, 47, false, 1, true);
  ASSERT_TRUE(r.run.result.ok) << r.run.result.error;
  ASSERT_EQ(r.run.result.cases_done, cases.size());
  EXPECT_EQ(r.error, "");
  EXPECT_GT(r.loads, 100u);
  EXPECT_GT(r.stores, 100u);
  EXPECT_GT(r.errs, 3u);
  EXPECT_GT(r.bundles, 1000u);
  std::cout << "AgOffchip T = 16, P = 4: " << cases.size() << " cases (" << r.loads << " loads, " << r.stores
            << " stores, " << r.errs << " with err_o), " << r.tiles << " tiles, " << r.requests << " requests in "
            << r.bundles << " bundles, " << r.run.result.cycles << " cycles\n";
}

// The T = 4 cases through the 4-lane unit: tiles of one request (blocked, 32 bytes) make
// bundles of one request each, since a bundle never crosses a tile.
TEST(UnitsVsReference, AgOffchipLinearT4P4) {
  const std::vector<UnitCase> cases = ag_cases(200, 53, 4);
  AgRun r = run_ag<4, NoRtl, 4>(cases, 53);
  ASSERT_TRUE(r.run.result.ok) << r.run.result.error;
  EXPECT_EQ(r.error, "");
}

// Tiles of r <= T rows (a third [T x T], a third row tiles [1 x T], a third any r; the burst
// geometries of 2 T r bytes; a store tile with a wrong header now and then: err_o) and loads
// with a ref stream (random ref streams of rank 0..2: elements, stops, bare stops of empty
// dimensions, empty streams, a separate bare done; a third of them follow the previous ref
// stream without reset). Every beat (tile, stop, done, bare beat), every header and lane, every
// written byte and every request bundle against the reference.
template <int T, int P>
void ag_rows_ref(size_t n, uint64_t seed) {
  const std::vector<UnitCase> cases = ag_cases(n, seed, T, 0, AgGen{true, true});
  AgRun r = run_ag<T, NoRtl, P>(cases, seed, false, 1, true);
  ASSERT_TRUE(r.run.result.ok) << r.run.result.error;
  ASSERT_EQ(r.run.result.cases_done, cases.size());
  EXPECT_EQ(r.error, "");
  EXPECT_GT(r.row_cases, n / 2);
  EXPECT_GT(r.ref_loads, n / 8);
  EXPECT_GT(r.passes, n / 4);
  EXPECT_GT(r.bare, n / 20);
  EXPECT_GT(r.stores, n / 4);
  EXPECT_GT(r.errs, n / 50);
  std::cout << "AgOffchip T = " << T << ", P = " << P << ", tile rows and ref: " << cases.size() << " cases ("
            << r.row_cases << " with r < T; " << r.loads << " loads, " << r.ref_loads
            << " with a ref stream: " << r.passes << " passes, " << r.bare << " bare beats out; " << r.stores
            << " stores, " << r.errs << " with err_o), " << r.tiles << " tiles, " << r.bundles << " bundles, "
            << r.run.result.cycles << " cycles\n";
}
TEST(UnitsVsReference, AgOffchipRowsRefT4) { ag_rows_ref<4, 1>(800, 59); }
TEST(UnitsVsReference, AgOffchipRowsRefT16P4) { ag_rows_ref<16, 4>(300, 61); }

// Random access besides the above (a quarter of the cases): RandomOffChipLoad (a tile per
// index, the index stream's stops and done, streams of index streams without reset) and
// RandomOffChipStore (a write per index with the next tile, an acknowledgement per write;
// fewer or more tiles than indices, an index outside the tensor: err_o). Every beat, lane,
// written byte and request bundle against the reference.
template <int T, int P>
void ag_random(size_t n, uint64_t seed) {
  const std::vector<UnitCase> cases = ag_cases(n, seed, T, 0, AgGen{true, true, true});
  AgRun r = run_ag<T, NoRtl, P>(cases, seed, false, 1, true);
  ASSERT_TRUE(r.run.result.ok) << r.run.result.error;
  ASSERT_EQ(r.run.result.cases_done, cases.size());
  EXPECT_EQ(r.error, "");
  EXPECT_GT(r.random_loads, n / 12);
  EXPECT_GT(r.random_stores, n / 12);
  EXPECT_GT(r.errs, n / 50);
  std::cout << "AgOffchip T = " << T << ", P = " << P << ", random access: " << cases.size() << " cases ("
            << r.random_loads << " random loads, " << r.random_stores << " random stores, " << r.loads << " loads, "
            << r.stores << " stores, " << r.errs << " with err_o), " << r.tiles << " tiles, " << r.bundles
            << " bundles, " << r.run.result.cycles << " cycles\n";
}
TEST(UnitsVsReference, AgOffchipRandomT4) { ag_random<4, 1>(800, 67); }
TEST(UnitsVsReference, AgOffchipRandomT16P4) { ag_random<16, 4>(300, 71); }

// One view of n tiles at full rate, fixed memory latency: the edges of the first and last
// tile, of every request bundle and of every ref beat.
struct AgTiming {
  uint64_t first_tile = 0, span = 0, cycles = 0, requests = 0;
  std::vector<uint64_t> bundle_at, ref_at, out_at;
};
template <int T = 4, int P = 1>
AgTiming ag_full_rate(const AgCfg& c, int latency, const std::vector<Beat>& in,
                      const std::vector<Beat>& ref = {Beat::done_beat()}, bool check_bundles = T >= 16) {
  ag_cfgs() = {c};
  UnitCase u;
  u.cfg = c.pins(T);
  u.inputs = {in, ref};
  AgRun r = run_ag<T, NoRtl, P>({u}, 1, true, latency, check_bundles);
  EXPECT_TRUE(r.run.result.ok) << r.run.result.error;
  EXPECT_EQ(r.error, "");
  AgTiming t;
  const auto& at = r.run.out_at[0][0];
  t.first_tile = at.front();
  t.span = at.back() - at.front() + 1;
  t.cycles = r.run.result.cycles;
  t.requests = r.requests;
  t.bundle_at = r.bundle_at;
  t.ref_at = r.run.in_at[1][0];
  t.out_at = at;
  return t;
}

TEST(UnitsTiming, AgOffchipOneRequestPerCycle) {
  AgCfg c;  // a row-major [8 x 4] tiled tensor read whole: 32 tiles of 4 requests
  c.tiles_r = 8;
  c.tiles_c = 4;
  c.shape = {8, 4};
  c.stride = {4, 1};
  c.rows = 4;
  c.row_bytes = 8;
  c.pitch = 32;
  c.a = 128;
  c.b = 8;
  const AgTiming one = ag_full_rate(c, 1, {Beat::done_beat()});
  EXPECT_EQ(one.requests, 128u);
  EXPECT_EQ(one.span, 4u * 31 + 1);  // a tile every 4 cycles: one request per cycle
  const AgTiming slow = ag_full_rate(c, 20, {Beat::done_beat()});
  EXPECT_EQ(slow.span, one.span);  // the latency is hidden (up to 64 requests in flight)
  EXPECT_EQ(slow.first_tile, one.first_tile + 19);
  // Blocked layout: one 32-byte request per tile, a tile per cycle.
  c.rows = 1;
  c.row_bytes = 32;
  c.pitch = 32;
  c.a = 128;
  c.b = 32;
  const AgTiming blk = ag_full_rate(c, 1, {Beat::done_beat()});
  EXPECT_EQ(blk.span, 32u);
  std::cout << "AG load, row-major [4x4] tiles: first tile at edge " << one.first_tile << " (latency 1), "
            << slow.first_tile << " (latency 20); 32 tiles in " << one.span << " cycles; blocked: " << blk.span
            << " cycles\n";
  // Store: 32 tiles written at one request per cycle.
  c.write = true;
  std::vector<Beat> in;
  std::mt19937_64 rng(5);
  for (int k = 0; k < 32; ++k) in.push_back(Beat::data(random_bits_square(rng, 4), 0));
  in.back().done = true;
  const AgTiming st = ag_full_rate(c, 1, in);
  EXPECT_EQ(st.requests, 32u);
  std::cout << "AG store, blocked: 32 tiles, done at edge " << st.first_tile << "\n";
}

// T = 16, P = 4 at full rate: 256 bytes per cycle. A [4 x 4]-tile view of a [64 x 64] bf16
// tensor: blocked (a tile = 8 requests of 64 bytes = 2 bundles: a tile every 2 cycles) and
// row-major (16 requests of 32 bytes = 4 bundles: a tile every 4 cycles, 128 bytes per cycle).
TEST(UnitsTiming, AgOffchipT16FourLanes) {
  AgCfg c;
  c.tiles_r = 4;
  c.tiles_c = 4;
  c.shape = {4, 4};
  c.stride = {4, 1};
  c.rows = 1;
  c.row_bytes = 512;
  c.pitch = 512;
  c.b = 512;
  c.a = 4 * 512;
  const AgTiming blk = ag_full_rate<16, 4>(c, 1, {Beat::done_beat()});
  EXPECT_EQ(blk.requests, 16u * 8);
  EXPECT_EQ(blk.span, 2u * 15 + 1);
  // 64 requests in flight cover 16 cycles at 4 per cycle: a latency of 10 is hidden, one of 20
  // is not (MAXO bounds the throughput to 64 requests per round trip).
  const AgTiming mid = ag_full_rate<16, 4>(c, 10, {Beat::done_beat()});
  EXPECT_EQ(mid.span, blk.span);
  EXPECT_EQ(mid.first_tile, blk.first_tile + 9);
  const AgTiming slow = ag_full_rate<16, 4>(c, 20, {Beat::done_beat()});
  EXPECT_GT(slow.span, blk.span);
  c.rows = 16;
  c.row_bytes = 32;
  c.pitch = 4 * 32;
  c.b = 32;
  c.a = 16 * c.pitch;
  const AgTiming rm = ag_full_rate<16, 4>(c, 1, {Beat::done_beat()});
  EXPECT_EQ(rm.requests, 16u * 16);
  EXPECT_EQ(rm.span, 4u * 15 + 1);
  std::cout << "AG load, T = 16, P = 4: blocked 16 tiles in " << blk.span << " cycles (first at edge " << blk.first_tile
            << "; latency 10: " << mid.span << " cycles, first at edge " << mid.first_tile
            << "; latency 20: " << slow.span << " cycles), row-major in " << rm.span << " cycles\n";
  c.write = true;
  std::vector<Beat> in;
  std::mt19937_64 rng(5);
  for (int k = 0; k < 16; ++k) in.push_back(Beat::data(random_bits_square(rng, 16), 0));
  in.back().done = true;
  const AgTiming st = ag_full_rate<16, 4>(c, 1, in);
  EXPECT_EQ(st.requests, 16u * 16);
  std::cout << "AG store, T = 16, P = 4, row-major: 16 tiles, done at edge " << st.first_tile << "\n";
}

// The co-simulation's row tiles: a [1 x 16] token row of a row-major [32 x 16] bf16 tensor at
// T = 16 is one row of 32 bytes, one request of 32 bytes (a bundle of one lane); header 1, the
// lanes of rows 1..15 zero. The static view, and a ref stream of 3 passes.
TEST(UnitsVsReference, AgOffchipTokenRowsT16) {
  AgCfg c;
  c.tiles_r = 32;
  c.tiles_c = 1;
  c.shape = {32};
  c.stride = {1};
  c.tile_rows = 1;
  c.rows = 1;
  c.row_bytes = 32;
  c.pitch = 32;
  c.a = 32;
  c.b = 32;
  const AgTiming st = ag_full_rate<16, 4>(c, 1, {Beat::done_beat()});
  EXPECT_EQ(st.requests, 32u);
  EXPECT_EQ(st.bundle_at.size(), 32u);
  EXPECT_EQ(st.span, 32u);  // a row per cycle
  c.ref = true;
  const std::vector<Beat> ref = to_beats(parse_tokens("1 2 S1 3 S1 D"));
  const AgTiming rf = ag_full_rate<16, 4>(c, 1, {Beat::done_beat()}, ref);
  EXPECT_EQ(rf.requests, 96u);
  EXPECT_EQ(rf.span, 96u);  // the passes back to back
  std::cout << "AG load, [1 x 16] rows of a [32 x 16] tensor: 32 rows in " << st.span << " cycles; 3 ref passes in "
            << rf.span << " cycles\n";
}

// Loads with a ref stream at full rate: a blocked [4 x 4]-tile tensor, a view of 4 tiles (one
// 32-byte request each). The first request of a pass is on the pins from the edge that
// accepts its ref element (taken at the next edge); the passes follow back to back (one bundle
// per cycle across pass boundaries); the element is consumed with the pass's last bundle. A
// bare ref beat takes one request-side cycle. Passes of one tile with a memory latency of 1, 20
// and 50: every pass waits in the pass queue while its request is in flight, so the latency
// stays hidden up to MAXO requests, as with the static view.
TEST(UnitsTiming, AgOffchipRefPasses) {
  AgCfg c;
  c.tiles_r = 4;
  c.tiles_c = 4;
  c.shape = {4};
  c.stride = {1};
  c.rows = 1;
  c.row_bytes = 32;
  c.pitch = 32;
  c.b = 32;
  c.a = 128;
  c.ref = true;
  const std::vector<Beat> ref = to_beats(parse_tokens("0 1 2 3 S1 4 5 6 7 S1 D"));
  ASSERT_EQ(ref.size(), 8u);
  const AgTiming one = ag_full_rate(c, 1, {Beat::done_beat()}, ref, true);
  ASSERT_EQ(one.bundle_at.size(), 32u);
  EXPECT_EQ(one.bundle_at.front(), one.ref_at.front() + 1);  // latency 1 from the ref beat
  for (size_t j = 1; j < one.bundle_at.size(); ++j) EXPECT_EQ(one.bundle_at[j], one.bundle_at[0] + j) << j;
  EXPECT_EQ(one.span, 32u);
  const AgTiming slow = ag_full_rate(c, 20, {Beat::done_beat()}, ref, true);
  EXPECT_EQ(slow.span, 32u);
  EXPECT_EQ(slow.first_tile, one.first_tile + 19);
  // A bare ref beat between two passes: one cycle without a request.
  const AgTiming bare = ag_full_rate(c, 1, {Beat::done_beat()}, to_beats(parse_tokens("0 S1 S1 1 S1 D")), true);
  ASSERT_EQ(bare.bundle_at.size(), 8u);
  EXPECT_EQ(bare.bundle_at[4], bare.bundle_at[3] + 2);
  EXPECT_EQ(bare.out_at.size(), 9u);  // 4 tiles, the bare stop S2, 4 tiles
  // Passes of one tile: the pass queue holds every pass in flight.
  c.shape = {1};
  std::string many;
  for (int k = 0; k < 100; ++k) many += std::to_string(k) + " ";
  const std::vector<Beat> ref100 = to_beats(parse_tokens(many + "D"));
  uint64_t span[3];
  const int lat[3] = {1, 20, 50};
  for (int i = 0; i < 3; ++i) {
    const AgTiming t = ag_full_rate(c, lat[i], {Beat::done_beat()}, ref100, true);
    span[i] = t.span;
    EXPECT_EQ(t.span, 100u) << "latency " << lat[i];
    EXPECT_EQ(t.bundle_at.back() - t.bundle_at.front() + 1, 100u) << "latency " << lat[i];
  }
  std::cout << "AG load with ref, blocked [4x4]: first request taken at edge " << one.bundle_at.front()
            << " (ref element at edge " << one.ref_at.front() << "), 8 passes of 4 tiles in " << one.span
            << " cycles (latency 20: " << slow.span << "); one-tile passes, 100 in " << span[0] << " / " << span[1]
            << " / " << span[2] << " cycles at latency 1 / 20 / 50\n";
}

// Random access at full rate on the blocked [4 x 4]-tile tensor of 16 tiles (one request per
// tile): the index's first request is on the pins from the edge after the one that takes the
// index (as a ref pass), one tile per cycle whatever the memory latency (every index waits in
// the pass queue), the tiles in index order. A store: one write per index and cycle, the
// acknowledgements one per cycle, the first latency + 1 edges after its write.
TEST(UnitsTiming, AgOffchipRandomOneTilePerCycle) {
  AgCfg c;
  c.tiles_r = 4;
  c.tiles_c = 4;
  c.shape = {2, 3};  // ignored in random access
  c.stride = {1, 1};
  c.rows = 1;
  c.row_bytes = 32;
  c.pitch = 32;
  c.b = 32;
  c.a = 128;
  c.random = true;
  std::string idx;
  for (int k = 0; k < 100; ++k) idx += std::to_string((k * 7) % 16) + (k % 10 == 9 ? " S1 " : " ");
  const std::vector<Beat> ref = to_beats(parse_tokens(idx + "D"));
  const int lat[3] = {1, 20, 50};
  uint64_t span[3];
  for (int i = 0; i < 3; ++i) {
    const AgTiming t = ag_full_rate(c, lat[i], {Beat::done_beat()}, ref, true);
    span[i] = t.span;
    ASSERT_EQ(t.bundle_at.size(), 100u);
    EXPECT_EQ(t.bundle_at.front(), t.ref_at.front() + 1) << "latency " << lat[i];
    EXPECT_EQ(t.bundle_at.back() - t.bundle_at.front() + 1, 100u) << "latency " << lat[i];
    EXPECT_EQ(t.span, 100u) << "latency " << lat[i];
  }
  c.write = true;
  std::vector<Beat> data;
  std::mt19937_64 g(5);
  for (int k = 0; k < 100; ++k) data.push_back(Beat::data(random_bits_square(g, 4)));
  data.back().done = true;
  const AgTiming st = ag_full_rate(c, 20, data, ref, true);
  ASSERT_EQ(st.bundle_at.size(), 100u);
  EXPECT_EQ(st.bundle_at.back() - st.bundle_at.front() + 1, 100u);
  EXPECT_EQ(st.out_at.size(), 100u);  // the acknowledgements (the S1s ride on them)
  EXPECT_EQ(st.span, 100u);
  // The memory answers the write taken at edge b at edge b + 20; the unit takes the response into
  // its output register there, which hands the acknowledgement over at the next edge.
  EXPECT_EQ(st.first_tile, st.bundle_at.front() + 20 + 1);
  std::cout << "AG random access, blocked [4x4]: 100 one-tile loads in " << span[0] << " / " << span[1] << " / "
            << span[2] << " cycles at latency 1 / 20 / 50; 100 writes acknowledged in " << st.span
            << " cycles (first acknowledgement " << st.first_tile - st.bundle_at.front()
            << " cycles after its request at latency 20)\n";
}

}  // namespace
}  // namespace stepsim::unit_test
