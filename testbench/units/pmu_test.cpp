// The memory unit (hw/units/pmu_buffer.h), HLS form: the fused Bufferize -> Streamify pair
// against the approximate pair on random legal streams with random valid gaps and random
// back-pressure; its latency and throughput (double buffering); its capacity behaviour.
// The lock-step comparison with the RTL is in testbench/units/rtl/pmu_lockstep_test.cpp.
#include <gtest/gtest.h>

#include "testbench/units/pmu_bench.h"

namespace stepsim::unit_test {
namespace {

std::vector<Beat> beats_of(const std::string& text) { return to_beats(parse_tokens(text)); }

// Every {elem, stop s} beat split into {elem} and a bare {stop s} (the same tokens).
std::vector<Beat> loosen_all(const std::vector<Beat>& b) {
  std::mt19937_64 r(1);
  return loosen(r, b, 1);
}

// `rows` buffers of `len` elements each, closed by S1 (a rank-1 stream), values 0, 1, ...
std::string rows_stream(int rows, int len) {
  std::string s;
  int v = 0;
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < len; ++j) s += std::to_string(v++) + " ";
    s += "S1 ";
  }
  return s + "D";
}

UnitCase pmu_case(const PmuCfg& c, const std::string& data, const std::string& ref = "D") {
  UnitCase u;
  u.cfg = c.pins();
  u.inputs = {beats_of(data), beats_of(ref)};
  return u;
}

struct PmuRun {
  BenchRun run;
  bool err = false;
};

PmuRun run_pmu(const std::vector<UnitCase>& cases, uint64_t seed, bool full_rate = false) {
  PmuRun r;
  r.run = run_bench<PmuBench<NoRtl>>(cases, seed, full_rate);
  r.err = PmuBench<NoRtl>::last->err_hls.read();
  return r;
}

TEST(UnitsVsApprox, PmuBufferizeStreamify) {
  const std::vector<UnitCase> cases = PmuBench<NoRtl>::cases(400, 31);
  PmuRun r = run_pmu(cases, 31);
  ASSERT_TRUE(r.run.result.ok) << r.run.result.error;
  ASSERT_EQ(r.run.result.cases_done, cases.size());
  EXPECT_FALSE(r.err);
  size_t ref_mode = 0, zero = 0, long_bufs = 0, split = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_EQ(PmuBench<NoRtl>::check(cases[i], case_outputs(r.run.out, i)), "") << "case " << i;
    const PmuCfg p = PmuCfg::of(cases[i].cfg);
    ref_mode += p.ref;
    for (int f : p.repeat) zero += f == 0;
    long_bufs += cases[i].inputs[0].size() > 30;
    const auto& d = cases[i].inputs[0];
    split += d.size() > 1 && d.back().done && !d.back().has_elem && !d.back().stop;
  }
  // The generator covers every mode.
  EXPECT_GT(ref_mode, 50u);
  EXPECT_GT(zero, 10u);
  EXPECT_GT(long_bufs, 20u);
  EXPECT_GT(split, 30u);
}

struct Timing {
  uint64_t latency = 0;  // first output edge - first input edge
  uint64_t beats = 0;    // output beats
  uint64_t span = 0;     // edges from the first to the last output beat, inclusive
  uint64_t in_span = 0;  // edges from the first to the last input beat, inclusive
};

Timing full_rate(const UnitCase& c) {
  PmuRun r = run_pmu({c}, 1, true);
  EXPECT_TRUE(r.run.result.ok) << r.run.result.error;
  EXPECT_EQ(PmuBench<NoRtl>::check(c, case_outputs(r.run.out, 0)), "");
  const std::vector<uint64_t>& in = r.run.in_at[0][0];
  const std::vector<uint64_t>& out = r.run.out_at[0][0];
  Timing t;
  t.latency = out.front() - in.front();
  t.beats = out.size();
  t.span = out.back() - out.front() + 1;
  t.in_span = in.back() - in.front() + 1;
  return t;
}

TEST(UnitsTiming, PmuReplaysOneBeatPerCycleWhileTheNextBufferIsWritten) {
  // 10 buffers of 8: the first beat 2 cycles after the closing beat (8 + 1 after the first
  // input beat), then one beat per cycle with no bubble between buffers; writing goes on
  // at one beat per cycle meanwhile.
  PmuCfg once;
  once.repeat = {1};
  Timing t = full_rate(pmu_case(once, rows_stream(10, 8)));
  EXPECT_EQ(t.latency, 9u);
  EXPECT_EQ(t.beats, 80u);
  EXPECT_EQ(t.span, 80u);
  EXPECT_EQ(t.in_span, 80u);
  // Repeat 3: 240 beats back to back; the writes run ahead (ring of 64 words, 4 descriptors).
  PmuCfg thrice;
  thrice.repeat = {3};
  t = full_rate(pmu_case(thrice, rows_stream(10, 8)));
  EXPECT_EQ(t.latency, 9u);
  EXPECT_EQ(t.beats, 240u);
  EXPECT_EQ(t.span, 240u);
  // Two factors [2, 2] (4 replays per buffer, closing S1/S2/S3), empty buffers one beat each.
  PmuCfg two;
  two.repeat = {2, 2};
  t = full_rate(pmu_case(two, "1 2 S1 S1 3 S1 D"));
  EXPECT_EQ(t.beats, 4u * 2 + 4u + 4u);
  EXPECT_EQ(t.span, t.beats);
  // Ref-driven: one replay per ref element, back to back.
  PmuCfg dyn;
  dyn.ref = true;
  t = full_rate(pmu_case(dyn, rows_stream(4, 8), "0 0 S1 0 S1 0 0 0 S1 0 S1 D"));
  EXPECT_EQ(t.beats, 7u * 8 + 1);  // 7 replays of 8, then the bare done
  EXPECT_EQ(t.span, t.beats);
}

TEST(UnitsCapacity, PmuWaitsForRoomAndFlagsABufferLargerThanItsMemory) {
  // Two buffers of 40 beats do not fit the 64-word ring together: the second one's writes wait
  // for the first one's replays to end (back-pressure), and the output is still exact.
  PmuCfg c;
  c.repeat = {2};
  Timing t = full_rate(pmu_case(c, rows_stream(2, 40)));
  EXPECT_EQ(t.beats, 160u);
  EXPECT_GT(t.in_span, 80u);  // the input stalled
  // The first 24 beats of the second buffer fill the free words; its last 16 wait until the
  // first buffer's last replay frees its words, and the output waits for them.
  EXPECT_EQ(t.span, 160u + 16u);
  // A buffer of exactly the capacity fits.
  {
    PmuRun r = run_pmu({pmu_case(c, rows_stream(2, kPmuCap))}, 2);
    ASSERT_TRUE(r.run.result.ok) << r.run.result.error;
    EXPECT_EQ(PmuBench<NoRtl>::check(pmu_case(c, rows_stream(2, kPmuCap)), case_outputs(r.run.out, 0)), "");
    EXPECT_FALSE(r.err);
  }
  // One beat more: err_o rises and stays up; the unit drops the beats that do not fit and
  // carries on (the stream still ends), so the bridge can report the error.
  {
    const std::vector<UnitCase> cases = {pmu_case(c, rows_stream(1, kPmuCap + 1)), pmu_case(c, "1 2 S1 D")};
    PmuRun r = run_pmu(cases, 3);
    ASSERT_TRUE(r.run.result.ok) << r.run.result.error;
    EXPECT_TRUE(r.err);
    const std::string got = format_beats(case_outputs(r.run.out, 0)[0]);
    EXPECT_NE(got.find(" 63 S1 0 "), std::string::npos) << got;  // the first 64 beats, replayed
    EXPECT_EQ(got.substr(got.size() - 8), " 63 S2 D") << got;
    EXPECT_EQ(PmuBench<NoRtl>::check(cases[1], case_outputs(r.run.out, 1)), "");  // the next stream is fine
  }
  // A stream that ends inside a buffer (no closing stop) is an error too.
  {
    // Built beat by beat: the text notation refuses a stream that ends inside a dimension.
    UnitCase open = pmu_case(c, "D");
    Beat last = Beat::data(Element(Scalar{3}));
    last.done = true;
    open.inputs[0] = {Beat::data(Element(Scalar{1})), Beat::data(Element(Scalar{2}), 1), last};
    PmuRun r = run_pmu({open}, 4);
    ASSERT_TRUE(r.run.result.ok) << r.run.result.error;
    EXPECT_TRUE(r.err);
  }
}

// ---- affine views (Streamify out_shape/stride)

PmuCfg view(std::vector<int> shape, std::vector<int> stride, int rank = 2) {
  PmuCfg c;
  c.rank = rank;
  c.shape = std::move(shape);
  c.stride = std::move(stride);
  return c;
}

// `rows` x `cols` elements 0, 1, ... as one rank-2 buffer per `bufs` (closed by S2).
std::string grid_stream(int bufs, int rows, int cols) {
  std::string s;
  int v = 0;
  for (int b = 0; b < bufs; ++b)
    for (int i = 0; i < rows; ++i) {
      for (int j = 0; j < cols; ++j) s += std::to_string(v++) + " ";
      s += i + 1 == rows ? "S2 " : "S1 ";
    }
  return s + "D";
}

TEST(UnitsVsApprox, PmuAffineViews) {
  const std::vector<UnitCase> cases = pmu_affine_cases(600, 41);
  PmuRun r = run_pmu(cases, 41);
  ASSERT_TRUE(r.run.result.ok) << r.run.result.error;
  ASSERT_EQ(r.run.result.cases_done, cases.size());
  EXPECT_FALSE(r.err);
  size_t ref_mode = 0, zero_view = 0, rank4 = 0, broadcast = 0, loose = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_EQ(PmuBench<NoRtl>::check(cases[i], case_outputs(r.run.out, i)), "") << "case " << i;
    const PmuCfg p = PmuCfg::of(cases[i].cfg);
    ref_mode += p.ref;
    zero_view += std::find(p.shape.begin(), p.shape.end(), 0) != p.shape.end();
    rank4 += p.shape.size() == 4;
    for (size_t k = 0; k < p.shape.size(); ++k) broadcast += p.shape[k] > 1 && p.stride[k] == 0;
    const auto& d = cases[i].inputs[0];
    for (size_t k = 1; k < d.size(); ++k) loose += d[k - 1].has_elem && !d[k - 1].stop && !d[k].has_elem && d[k].stop;
  }
  EXPECT_GT(ref_mode, 60u);
  EXPECT_GT(zero_view, 10u);
  EXPECT_GT(rank4, 60u);
  EXPECT_GT(broadcast, 60u);
  EXPECT_GT(loose, 60u);
}

TEST(UnitsVsApprox, PmuAffineViewsOfTheDownTiledSwiglu) {
  // The views `stepsim downtile` gives the matmul operands (tile_f = 64): A [1 x 16] tiles
  // read [1, 4, 16] with stride [16, 0, 1] (each row 4 times), B 16 x 4 tiles read transposed
  // with stride [0, 1, 4]; and a Repeat as Bufferize rank 2 -> Streamify repeat [8].
  struct V {
    PmuCfg c;
    std::string data;
    size_t beats;
  };
  PmuCfg rep;
  rep.rank = 2;
  rep.repeat = {8};
  const std::vector<V> views = {
      {view({1, 4, 16}, {16, 0, 1}), grid_stream(3, 1, 16), 3u * 64},
      {view({1, 4, 16}, {0, 1, 4}), grid_stream(2, 16, 4), 2u * 64},
      {rep, grid_stream(2, 1, 16), 2u * 8 * 16},
  };
  for (const V& v : views) {
    const UnitCase c = pmu_case(v.c, v.data);
    PmuRun r = run_pmu({c}, 7);
    ASSERT_TRUE(r.run.result.ok) << r.run.result.error;
    EXPECT_EQ(PmuBench<NoRtl>::check(c, case_outputs(r.run.out, 0)), "");
    EXPECT_EQ(case_outputs(r.run.out, 0)[0].size(), v.beats) << v.c.text();
    EXPECT_FALSE(r.err);
  }
  // The transposed read, spelled out: 16 x 4 elements 0..63 read column by column.
  const UnitCase c = pmu_case(view({4, 16}, {1, 4}), grid_stream(1, 16, 4));
  PmuRun r = run_pmu({c}, 8);
  const std::string got = format_beats(case_outputs(r.run.out, 0)[0]);
  EXPECT_EQ(got.substr(0, 24), "0 4 8 12 16 20 24 28 32 ") << got;
  EXPECT_NE(got.find(" 60 S1 1 5 "), std::string::npos) << got;
  EXPECT_EQ(got.substr(got.size() - 10), "59 63 S2 D") << got;
}

TEST(UnitsTiming, PmuAffineReadsOneBeatPerCycle) {
  // Same latency as a linear replay (first beat 2 cycles after the closing beat) and one beat per
  // cycle, across the view's dimension boundaries, replays and buffers.
  PmuCfg t = view({2, 4, 8}, {0, 1, 4});  // 4 x 8 elements read transposed, twice
  t.repeat = {2};
  Timing m = full_rate(pmu_case(t, grid_stream(4, 8, 4)));
  EXPECT_EQ(m.latency, 33u);  // 32 beats in, then 1 + the descriptor register
  EXPECT_EQ(m.beats, 4u * 2 * 64);
  EXPECT_EQ(m.span, m.beats);
  // Loosely packed stops (a bare stop after its element) are folded: same timing.
  std::string loose;
  for (int b = 0; b < 4; ++b)
    for (int i = 0; i < 8; ++i) {
      for (int j = 0; j < 4; ++j) loose += std::to_string(32 * b + 4 * i + j) + " ";
      loose += i + 1 == 8 ? "S2 " : "S1 ";
    }
  UnitCase lc = pmu_case(t, loose + "D");
  lc.inputs[0] = loosen_all(lc.inputs[0]);
  ASSERT_EQ(lc.inputs[0].size(), 4u * 32 + 4u * 8);
  PmuRun r = run_pmu({lc}, 1, true);
  ASSERT_TRUE(r.run.result.ok) << r.run.result.error;
  EXPECT_EQ(PmuBench<NoRtl>::check(lc, case_outputs(r.run.out, 0)), "");
  EXPECT_EQ(case_outputs(r.run.out, 0)[0].size(), 4u * 2 * 64);
}

TEST(UnitsVsApprox, PmuAffineRaggedBuffersReplayLinearlyUnfolded) {
  // A ragged buffer under a view replays linearly, as the approximate Streamify does; its folded
  // stops come out as separate bare stops again (the same beats as without the view).
  const PmuCfg c = view({2, 2}, {1, 2});
  UnitCase u = pmu_case(c, "1 2 S1 3 S2 4 5 S1 6 7 S2 D");
  u.inputs[0] = loosen_all(u.inputs[0]);
  PmuRun r = run_pmu({u}, 1, true);
  ASSERT_TRUE(r.run.result.ok) << r.run.result.error;
  EXPECT_EQ(PmuBench<NoRtl>::check(u, case_outputs(r.run.out, 0)), "");
  const std::vector<Beat> out = case_outputs(r.run.out, 0)[0];
  // Buffer 1 (ragged: rows of 2 and 1) linear, loose as it came: 5 beats; buffer 2 (regular) via the view: 4.
  EXPECT_EQ(out.size(), 5u + 4u) << format_beats(out);
  EXPECT_EQ(format_beats(out), "1 2 S1 3 S2 4 6 S1 5 7 S2 D");
  EXPECT_FALSE(r.err);
}

TEST(UnitsCapacity, PmuAffineReadOutsideTheBufferIsAnError) {
  // The approximate Streamify fails the run; the unit raises err_o, replays a 0 and carries on.
  const PmuCfg c = view({2, 3}, {3, 1});  // needs 6 elements
  const std::vector<UnitCase> cases = {pmu_case(c, grid_stream(1, 2, 2)), pmu_case(c, grid_stream(1, 2, 3))};
  EXPECT_EQ(pmu_reference(c, cases[0].inputs[0], cases[0].inputs[1]).substr(0, 6), "error:");
  PmuRun r = run_pmu(cases, 9);
  ASSERT_TRUE(r.run.result.ok) << r.run.result.error;
  EXPECT_TRUE(r.err);
  EXPECT_EQ(format_beats(case_outputs(r.run.out, 0)[0]), "0 1 2 S1 3 0 0 S2 D");
  EXPECT_EQ(PmuBench<NoRtl>::check(cases[1], case_outputs(r.run.out, 1)), "");
  // A Bufferize rank above the tracked dimensions (NA = 4) in affine mode is a configuration error.
  PmuRun q = run_pmu({pmu_case(view({2}, {1}, kPmuNA + 1), "1 2 S5 D")}, 10);
  EXPECT_TRUE(q.err);
}

}  // namespace
}  // namespace stepsim::unit_test
