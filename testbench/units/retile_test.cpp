// The retile unit (hw/units/pcu_retile.h) alone, T = 4: random token streams of both modes
// against the reference of the STeP operators (Accum retile_row, FlatMap retile_streamify_row)
// and the approximate operators, with random valid gaps and back-pressure; faulty streams and
// err_o; exact cases written out from the semantics; latency and throughput. The lock-step
// comparison with the RTL is in testbench/units/rtl/retile_lockstep*_test.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <iostream>

#include "testbench/units/retile_bench.h"

namespace stepsim::unit_test {
namespace {

constexpr int T = kRetileT;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
double cpu_since(std::clock_t c0) { return double(std::clock() - c0) / CLOCKS_PER_SEC; }

TEST(UnitsVsApprox, PcuRetileMatchesRetileRowAndRetileStreamifyRow) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  const std::vector<UnitCase> cases = PcuRetileBench<NoRtl>::cases(3000, 41);
  size_t m0 = 0, empty_groups = 0, zero_rows = 0, bare_done = 0;
  for (const UnitCase& c : cases) {
    m0 += c.cfg[kRetileMode] == 0;
    const std::vector<Beat>& v = c.inputs[0];
    bare_done += !v.back().has_elem && !v.back().stop && v.size() > 1;
    for (const Beat& b : v) zero_rows += b.has_elem && b.elem.tile().rows == 0;
    if (c.cfg[kRetileMode] == 0)
      for (const Beat& o : retile_reference<T>(c).out) empty_groups += o.has_elem && o.elem.tile().rows == 0;
  }
  // The generator covers both modes, empty groups, [0 x T] elements and split dones.
  EXPECT_GT(m0, 1200u);
  EXPECT_LT(m0, 1800u);
  EXPECT_GT(empty_groups, 300u);
  EXPECT_GT(zero_rows, 500u);
  EXPECT_GT(bare_done, 300u);
  std::string stats;
  EXPECT_EQ((run_retile<PcuRetileBench<NoRtl>, T>(cases, 41, &stats)), "");
  std::cout << "PcuRetile: mode 0 " << m0 << " cases, " << empty_groups << " empty groups, " << zero_rows
            << " [0 x T] elements, " << bare_done << " split dones\n";
  std::cout << "PcuRetile: " << stats << ", " << seconds_since(t0) << " s wall, " << cpu_since(c0) << " s CPU\n";
}

TEST(UnitsCapacity, PcuRetileErrorsOnRandomFaultyStreams) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  const std::vector<UnitCase> cases = PcuRetileFaultBench<NoRtl>::cases(1000, 43);
  std::string stats;
  EXPECT_EQ((run_retile<PcuRetileFaultBench<NoRtl>, T>(cases, 43, &stats)), "");
  size_t errs = 0;
  for (const UnitCase& c : cases) errs += retile_reference<T>(c).err;
  EXPECT_GT(errs, 400u);  // most cases are faulty, some are not
  EXPECT_LT(errs, 900u);
  std::cout << "PcuRetile faults: " << stats << ", " << seconds_since(t0) << " s wall, " << cpu_since(c0) << " s CPU\n";
}

// ---- exact cases ----
// Row k of a tile: lanes v, v+1, .. v+T-1.
std::vector<uint16_t> row(uint16_t v) {
  std::vector<uint16_t> r;
  for (int j = 0; j < T; ++j) r.push_back(uint16_t(v + j));
  return r;
}
// A [rows.size() x T] tile from its rows; the other lanes are garbage (0xdead) on inputs, 0 on outputs.
Element tile(const std::vector<std::vector<uint16_t>>& rows, bool input = true, int header = -1) {
  std::vector<uint16_t> lanes;
  for (const auto& r : rows) lanes.insert(lanes.end(), r.begin(), r.end());
  lanes.resize(size_t(T) * T, input ? 0xdead : 0);
  return Element(retile_tile(T, header < 0 ? int(rows.size()) : header, lanes));
}
Element out_tile(const std::vector<std::vector<uint16_t>>& rows) { return tile(rows, false); }
Beat elem(Element e, int stop = 0, bool done = false) {
  Beat b = Beat::data(std::move(e), uint8_t(stop));
  b.done = done;
  return b;
}
Beat bare(int stop, bool done = false) {
  Beat b = Beat::bare_stop(uint8_t(stop));
  b.done = done;
  return b;
}

struct Ran {
  std::vector<Beat> out;
  bool err = false;
};
Ran run_one(int mode, int rank, const std::vector<Beat>& in) {
  UnitCase c;
  c.cfg = {mode, rank};
  c.inputs = {in};
  BenchRun r = run_bench<PcuRetileBench<NoRtl>>({c}, 5);
  EXPECT_TRUE(r.result.ok) << r.result.error;
  Ran o;
  if (r.result.ok && r.result.cases_done == 1) o.out = r.out[0][0];
  o.err = PcuRetileBench<NoRtl>::last->err_hls.read();
  return o;
}

// The unit, the reference and (legal streams) the approximate operator on one stream: the
// unit's beats equal `want` lane for lane, err_o equals `err`, and the approximate operator
// gives `approx` (token text), fails when `approx` is empty, or is not run for "-" (an illegal
// payload the operator reads differently).
void expect_case(int mode, int rank, const std::vector<Beat>& in, const std::vector<Beat>& want, bool err,
                 const std::string& approx) {
  SCOPED_TRACE("mode " + std::to_string(mode) + " rank " + std::to_string(rank) + ": " + format_beats(in));
  const Ran got = run_one(mode, rank, in);
  EXPECT_EQ(compare_retile<T>(want, got.out), "");
  EXPECT_EQ(got.err, err);
  UnitCase c;
  c.cfg = {mode, rank};
  c.inputs = {in};
  const RetileRef ref = retile_reference<T>(c);
  EXPECT_EQ(compare_retile<T>(want, ref.out), "") << "the reference";
  EXPECT_EQ(ref.err, err) << "the reference";
  if (approx == "-") return;
  bool ok = false;
  std::string text;
  try {
    text = retile_approx<T>(c, &ok, nullptr);
  } catch (const std::invalid_argument& e) {
    // The approximate operator takes only well-formed streams (hw/stream/token.h); a case that
    // feeds the units a stream ending inside an open dimension checks the units alone.
    EXPECT_NE(std::string(e.what()).find("the stream ends inside an open dimension"), std::string::npos) << e.what();
    return;
  }
  if (approx.empty()) {
    EXPECT_FALSE(ok) << "the approximate operator should fail, gave " << text;
  } else {
    EXPECT_TRUE(ok);
    EXPECT_EQ(text, approx) << "the approximate operator";
  }
}

TEST(UnitsRetile, AccumRetileRowExactCases) {
  const auto a = row(0x100), b = row(0x200), c = row(0x300), d = row(0x400), e = row(0x500);
  // [1xT] [1xT] S1 [1xT] S1 D at rank 1 -> [2xT] [1xT] D.
  expect_case(0, 1, {elem(tile({a})), elem(tile({b}), 1), elem(tile({c}), 1, true)},
              {elem(out_tile({a, b})), elem(out_tile({c}), 0, true)}, false, "T[2x4] T[1x4] D");
  // Higher stops: [1xT] [2xT] S2 [1xT] S1 D at rank 1 -> [3xT] S1 [1xT] D.
  expect_case(0, 1, {elem(tile({a})), elem(tile({b, c}), 2), elem(tile({d}), 1, true)},
              {elem(out_tile({a, b, c}), 1), elem(out_tile({d}), 0, true)}, false, "T[3x4] S1 T[1x4] D");
  // Rank 2, an empty group (a bare S2): [2xT] S1 [1xT] S2 S2 D -> [3xT] [0xT] D (the approximate
  // Accum emits a 0x0 tile for the empty group: T[0x0:fp32], the known difference).
  expect_case(0, 2, {elem(tile({a, b}), 1), elem(tile({c}), 2), bare(2, true)},
              {elem(out_tile({a, b, c})), elem(out_tile({}), 0, true)}, false, "T[3x4] T[0x4] D");
  // A bare stop below the rank leaves nothing: [1xT] S1 S1 [2xT] S2 D at rank 2 -> [3xT] D.
  expect_case(0, 2, {elem(tile({a}), 1), bare(1), elem(tile({b, c}), 2, true)}, {elem(out_tile({a, b, c}), 0, true)},
              false, "T[3x4] D");
  // [0xT] elements add no rows; a full tile; the done on a bare beat of its own.
  expect_case(0, 1,
              {elem(tile({})), elem(tile({a, b})), elem(tile({})), elem(tile({c, d}), 1), elem(tile({}), 1),
               elem(tile({a, b, c, e}), 1), Beat::done_beat()},
              {elem(out_tile({a, b, c, d})), elem(out_tile({})), elem(out_tile({a, b, c, e})), Beat::done_beat()},
              false, "T[4x4] T[0x4] T[4x4] D");
  // Rank 3: stops 1 and 2 inside the group.
  expect_case(0, 3, {elem(tile({a}), 1), elem(tile({b}), 2), elem(tile({c}), 4), bare(3), Beat::done_beat()},
              {elem(out_tile({a, b, c}), 1), elem(out_tile({})), Beat::done_beat()}, false, "T[3x4] S1 T[0x4] D");
  // An empty stream, and a bare S1 below the rank with the done.
  expect_case(0, 1, {Beat::done_beat()}, {Beat::done_beat()}, false, "D");
  expect_case(0, 2, {bare(1, true)}, {Beat::done_beat()}, false, "D");
}

TEST(UnitsRetile, FlatMapRetileStreamifyRowExactCases) {
  const auto a = row(0x100), b = row(0x200), c = row(0x300), d = row(0x400);
  // A [3 x T] tile with S1 -> three rows, the last with S2.
  expect_case(1, 0, {elem(tile({a, b, c}), 1, true)},
              {elem(out_tile({a})), elem(out_tile({b})), elem(out_tile({c}), 2, true)}, false,
              "T[1x4] T[1x4] T[1x4] S2 D");
  // [0xT] -> a bare S1; no stop -> S1; a bare stop s -> s + 1; the rank pin is not used.
  expect_case(
      1, 7, {elem(tile({})), elem(tile({a, b}), 1), elem(tile({d}), 1), bare(2), Beat::done_beat()},
      {bare(1), elem(out_tile({a})), elem(out_tile({b}), 2), elem(out_tile({d}), 2), bare(3), Beat::done_beat()}, false,
      "S1 T[1x4] T[1x4] S2 T[1x4] S2 S3 D");
  // A full tile; a bare stop with the done.
  expect_case(1, 0, {elem(tile({a, b, c, d}), 2), bare(3, true)},
              {elem(out_tile({a})), elem(out_tile({b})), elem(out_tile({c})), elem(out_tile({d}), 3), bare(4, true)},
              false, "T[1x4] T[1x4] T[1x4] T[1x4] S3 S4 D");
  // Stops up to 14 (S15 out); an empty stream.
  expect_case(1, 0, {elem(tile({a}), 14), elem(tile({}), 13, true)}, {elem(out_tile({a}), 15), bare(14, true)}, false,
              "T[1x4] S15 S14 D");
  expect_case(1, 0, {Beat::done_beat()}, {Beat::done_beat()}, false, "D");
}

TEST(UnitsRetile, ErrorCases) {
  const auto a = row(0x100), b = row(0x200), c = row(0x300), d = row(0x400), e = row(0x500);
  // Mode 0: 3 + 2 rows in a [4 x T] tile: the fifth row is dropped.
  expect_case(0, 1, {elem(tile({a, b, c})), elem(tile({d, e}), 1, true)}, {elem(out_tile({a, b, c, d}), 0, true)}, true,
              "T[5x4] D");
  // A stream that ends inside a group: a bare done leaves (the approximate Accum fails).
  expect_case(0, 1, {elem(tile({a}), 0, true)}, {Beat::done_beat()}, true, "");
  expect_case(0, 1, {elem(tile({}), 0, true)}, {Beat::done_beat()}, true, "");
  expect_case(0, 2, {elem(tile({a}), 1), elem(tile({b}), 2), elem(tile({c}), 1), Beat::done_beat()},
              {elem(out_tile({a, b})), Beat::done_beat()}, true, "");
  // No error: the done after a closed group.
  expect_case(0, 1, {elem(tile({a}), 1), Beat::done_beat()}, {elem(out_tile({a})), Beat::done_beat()}, false,
              "T[1x4] D");
  // Mode 1: a header above T (T rows leave); a stop 15 (S15 leaves: the unit flags it, and the
  // approximate FlatMap refuses to emit S16, which the 4-bit stop field cannot carry).
  expect_case(1, 0, {elem(tile({a, b, c, d}, true, 7), 1, true)},
              {elem(out_tile({a})), elem(out_tile({b})), elem(out_tile({c})), elem(out_tile({d}), 2, true)}, true,
              "-");  // the operator reads the header: 7 rows
  expect_case(1, 0, {elem(tile({a}), 15, true)}, {elem(out_tile({a}), 15, true)}, true, "");
  expect_case(1, 0, {bare(15, true)}, {bare(15, true)}, true, "");
}

// The checks themselves catch wrong outputs: a lane, a don't-care lane, the header, a stop.
TEST(UnitsRetile, CheckerCatchesWrongOutputs) {
  const std::vector<UnitCase> cases = PcuRetileBench<NoRtl>::cases(50, 47);
  size_t caught = 0, tried = 0;
  std::mt19937_64 r(3);
  for (const UnitCase& c : cases) {
    const std::vector<Beat> good = retile_reference<T>(c).out;
    ASSERT_EQ(check_retile<T>(c, good), "");
    for (size_t i = 0; i < good.size(); ++i) {
      if (!good[i].has_elem) continue;
      for (int kind = 0; kind < 4; ++kind) {
        std::vector<Beat> bad = good;
        const Tile& t = good[i].elem.tile();
        std::vector<uint16_t> lanes;
        for (int l = 0; l < T * T; ++l) lanes.push_back(retile_lane(t, size_t(l)));
        int rows = int(t.rows);
        if (kind == 0 && rows > 0)
          lanes[r() % size_t(rows * T)] ^= 0x8000;  // a lane
        else if (kind == 1 && rows < T)
          lanes[size_t(rows * T) + r() % size_t((T - rows) * T)] = 1;  // don't-care
        else if (kind == 2)
          rows = rows == T ? T - 1 : rows + 1;  // the header
        else if (kind == 3)
          bad[i].stop = uint8_t(bad[i].stop + 1);  // a stop
        else
          continue;
        bad[i].elem = Element(retile_tile(T, rows, lanes));
        ++tried;
        caught += check_retile<T>(c, bad) != "";
      }
    }
  }
  EXPECT_GT(tried, 100u);
  EXPECT_EQ(caught, tried);
  std::cout << "wrong outputs caught: " << caught << " of " << tried << "\n";
}

// ---- latency and throughput, full-rate source and sink ----
struct Timing {
  uint64_t latency = 0, beats = 0, span = 0;
};
Timing full_rate(int mode, int rank, const std::vector<Beat>& in) {
  UnitCase c;
  c.cfg = {mode, rank};
  c.inputs = {in};
  BenchRun r = run_bench<PcuRetileBench<NoRtl>>({c}, 1, true);
  EXPECT_TRUE(r.result.ok) << r.result.error;
  EXPECT_EQ(check_retile<T>(c, r.out[0][0]), "");
  const std::vector<uint64_t>& out = r.out_at[0][0];
  Timing t;
  t.latency = out.front() - r.in_at[0][0][0];
  t.beats = out.size();
  t.span = out.back() - out.front() + 1;
  return t;
}

TEST(UnitsTiming, RetileRowTakesOneBeatPerCycle) {
  std::mt19937_64 rng(9);
  // 50 groups of 4 [1 x T] rows (rank 1): a [4 x T] tile every 4 cycles, 1 cycle after the close.
  std::vector<Beat> v;
  for (int i = 0; i < 200; ++i) v.push_back(elem(random_retile_tile<T>(rng, 1), i % 4 == 3 ? 1 : 0));
  v.back().done = true;
  Timing t = full_rate(0, 1, v);
  EXPECT_EQ(t.latency, 4u);
  EXPECT_EQ(t.beats, 50u);
  EXPECT_EQ(t.span, 197u);
  // Every beat closes: one tile per cycle.
  for (Beat& b : v) b.stop = 1;
  t = full_rate(0, 1, v);
  EXPECT_EQ(t.latency, 1u);
  EXPECT_EQ(t.beats, 200u);
  EXPECT_EQ(t.span, 200u);
}

TEST(UnitsTiming, RetileStreamifyRowEmitsOneRowPerCycle) {
  std::mt19937_64 rng(10);
  // 50 [4 x T] tiles -> 200 rows, one per cycle.
  std::vector<Beat> v;
  for (int i = 0; i < 50; ++i) v.push_back(elem(random_retile_tile<T>(rng, T)));
  v.back().done = true;
  Timing t = full_rate(1, 0, v);
  EXPECT_EQ(t.latency, 1u);
  EXPECT_EQ(t.beats, 200u);
  EXPECT_EQ(t.span, 200u);
  // [0 x T] and [1 x T] tiles: one beat each per cycle.
  v.clear();
  for (int i = 0; i < 100; ++i) v.push_back(elem(random_retile_tile<T>(rng, i % 2)));
  v.back().done = true;
  t = full_rate(1, 0, v);
  EXPECT_EQ(t.latency, 1u);
  EXPECT_EQ(t.beats, 100u);
  EXPECT_EQ(t.span, 100u);
}

}  // namespace
}  // namespace stepsim::unit_test
