// Accum functions: K-tiled matmul accumulation (dynamic accumulator), add/max, retile and
// the FlashAttention online-softmax update; FLOP counts; shape errors; timing mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "hw/functions/functions.h"
#include "hw/functions/numerics.h"
#include "hw/stream/bf16.h"
#include "testbench/functions/test_util.h"

namespace stepsim {
namespace {

using testing_util::expect_bits_equal;
using testing_util::expect_invalid;
using testing_util::random_tile;
using testing_util::transpose;

Tile cols_of(const Tile& t, uint32_t c0, uint32_t n) {
  std::vector<float> v;
  for (uint32_t i = 0; i < t.rows; ++i)
    for (uint32_t j = c0; j < c0 + n; ++j) v.push_back(t.f(i, j));
  return make_tile(t.rows, n, t.dtype, v);
}
Tile rows_of(const Tile& t, uint32_t r0, uint32_t n) {
  std::vector<float> v;
  for (uint32_t i = r0; i < r0 + n; ++i)
    for (uint32_t j = 0; j < t.cols; ++j) v.push_back(t.f(i, j));
  return make_tile(n, t.cols, t.dtype, v);
}

// Runs init, update over every input tuple, finalize.
Tile reduce(const AccumFunction& f, const std::vector<std::vector<Tile>>& steps) {
  Tile acc = f.init();
  for (const auto& in : steps) acc = f.update(std::move(acc), in);
  return f.finalize(acc);
}

TEST(AccumRegistry, NamesAndUnknown) {
  const auto names = accum_function_names();
  for (const char* n : {"matmul_acc", "matmul_t_acc", "matmul_acc_f32", "matmul_t_acc_f32", "add", "add_f32", "max",
                        "retile_row", "retile_col", "flash_attn_update"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  expect_invalid([] { accum_function("retile"); }, {"unknown accum function 'retile'", "known:", "retile_row"});
  EXPECT_TRUE(is_empty_acc(accum_function("add").init()));
}

// ---- matmul_acc ----

TEST(MatmulAcc, KTiledEqualsUntiledBitExact) {
  std::mt19937 rng(42);
  const uint32_t M = 8, K = 96, N = 16, TK = 32;
  Tile a = random_tile(M, K, DType::BF16, rng);
  Tile b = random_tile(K, N, DType::BF16, rng);
  std::vector<std::vector<Tile>> steps, steps_t;
  for (uint32_t k = 0; k < K; k += TK) {
    steps.push_back({cols_of(a, k, TK), rows_of(b, k, TK)});
    steps_t.push_back({cols_of(a, k, TK), transpose(rows_of(b, k, TK))});
  }
  expect_bits_equal(reduce(accum_function("matmul_acc"), steps), map_function("matmul").apply({a, b}));
  expect_bits_equal(reduce(accum_function("matmul_acc_f32"), steps), map_function("matmul_f32").apply({a, b}));
  expect_bits_equal(reduce(accum_function("matmul_t_acc"), steps_t), map_function("matmul").apply({a, b}));
  expect_bits_equal(reduce(accum_function("matmul_t_acc_f32"), steps_t), map_function("matmul_f32").apply({a, b}));
}

TEST(MatmulAcc, DynamicallySizedByFirstUpdate) {
  const auto& f = accum_function("matmul_acc");
  Tile acc = f.init();
  // the first update sizes the accumulator: [5x64] x [64x16] -> [5x16] fp32 (e.g. 5 tokens)
  Tile s = f.acc_shape(acc, {shape_tile(5, 64), shape_tile(64, 16)});
  EXPECT_EQ(s.to_string(), "T[5x16:fp32]");
  EXPECT_EQ(f.out_shape(s).to_string(), "T[5x16]");
  EXPECT_EQ(accum_function("matmul_acc_f32").out_shape(s).to_string(), "T[5x16:fp32]");
  // later updates must match it
  expect_invalid(
      [&] {
        f.acc_shape(s, {shape_tile(6, 64), shape_tile(64, 16)});
      },
      {"'matmul_acc'", "T[5x16:fp32]", "T[6x64]", "T[64x16]"});
  expect_invalid(
      [&] {
        f.acc_shape(acc, {shape_tile(5, 64), shape_tile(32, 16)});
      },
      {"'matmul_acc'", "T[5x64]", "T[32x16]"});
}

TEST(MatmulAcc, HandComputedAndSingleRounding) {
  // acc = [256] then += [1*1] -> 257 in fp32, bf16 output 256 (tie to even) only at the end.
  Tile a1 = make_tile(1, 1, DType::BF16, {256}), b1 = make_tile(1, 1, DType::BF16, {1});
  Tile a2 = make_tile(1, 1, DType::BF16, {1});
  EXPECT_EQ(reduce(accum_function("matmul_acc_f32"), {{a1, b1}, {a2, b1}}).f(0, 0), 257.0f);
  EXPECT_EQ(reduce(accum_function("matmul_acc"), {{a1, b1}, {a2, b1}, {a2, b1}}).f(0, 0), 258.0f);
}

TEST(MatmulAcc, Flops) {
  const auto& f = accum_function("matmul_acc");
  EXPECT_EQ(f.flops(f.init(), {shape_tile(16, 64), shape_tile(64, 4096)}), 2ull * 16 * 64 * 4096);
  EXPECT_EQ(accum_function("matmul_t_acc").flops(f.init(), {shape_tile(4, 8), shape_tile(2, 8)}), 2ull * 4 * 8 * 2);
  EXPECT_EQ(f.finalize_flops(shape_tile(16, 4096, DType::FP32)), 0u);
}

TEST(MatmulAcc, SharedAccumulatorIsNeverModified) {
  const auto& f = accum_function("matmul_acc_f32");
  Tile a = make_tile(1, 1, DType::BF16, {2}), b = make_tile(1, 1, DType::BF16, {3});
  Tile acc = f.update(f.init(), {a, b});
  Tile kept = acc;  // shares the payload
  Tile acc2 = f.update(acc, {a, b});
  EXPECT_EQ(kept.f(0, 0), 6.0f);
  EXPECT_EQ(acc2.f(0, 0), 12.0f);
  // moved in (not shared): updated in place
  const TileData* p = acc2.data.get();
  Tile acc3 = f.update(std::move(acc2), {a, b});
  EXPECT_EQ(acc3.data.get(), p);
  EXPECT_EQ(acc3.f(0, 0), 18.0f);
}

// ---- add / max ----

TEST(AddAcc, Fp32AccumulationRoundedOnce) {
  Tile one = make_tile(1, 1, DType::BF16, {1});
  Tile eps = make_tile(1, 1, DType::BF16, {1.0f / 256});  // 2^-8
  // fp32: 1 + 2^-8 + 2^-8 = 1 + 2^-7 (a bf16 value). Rounding each step to bf16 would give 1.
  Tile r = reduce(accum_function("add"), {{one}, {eps}, {eps}});
  EXPECT_EQ(r.to_string(), "T[1x1]");
  EXPECT_EQ(r.f(0, 0), 1.0f + 1.0f / 128);
  Tile r32 = reduce(accum_function("add_f32"), {{one}, {eps}});
  EXPECT_EQ(r32.to_string(), "T[1x1:fp32]");
  EXPECT_EQ(r32.f(0, 0), 1.0f + 1.0f / 256);
  EXPECT_EQ(accum_function("add").flops(one, {shape_tile(16, 64)}), 16ull * 64);
  expect_invalid([] { accum_function("add").acc_shape(shape_tile(2, 2, DType::FP32), {shape_tile(2, 3)}); },
                 {"'add'", "T[2x3]", "T[2x2:fp32]"});
}

TEST(MaxAcc, ElementwiseMaxAndDtype) {
  Tile a = make_tile(1, 3, DType::BF16, {1, 5, -2});
  Tile b = make_tile(1, 3, DType::BF16, {3, 4, NAN});
  Tile r = reduce(accum_function("max"), {{a}, {b}});
  EXPECT_EQ(r.to_string(), "T[1x3]");
  EXPECT_EQ(r.f(0, 0), 3.0f);
  EXPECT_EQ(r.f(0, 1), 5.0f);
  EXPECT_TRUE(std::isnan(r.f(0, 2)));
  Tile c = make_tile(1, 3, DType::FP32, {0, 0, 0});
  EXPECT_EQ(reduce(accum_function("max"), {{a}, {c}}).to_string(), "T[1x3:fp32]");
  EXPECT_EQ(accum_function("max").flops(a, {shape_tile(1, 3)}), 3u);
}

// ---- retile ----

TEST(RetileRow, ConcatenatesVertically) {
  const auto& f = accum_function("retile_row");
  Tile r0 = make_tile(1, 3, DType::BF16, {1, 2, 3});
  Tile r1 = make_tile(1, 3, DType::BF16, {4, 5, 6});
  Tile r2 = make_tile(2, 3, DType::BF16, {7, 8, 9, 10, 11, 12});
  Tile out = reduce(f, {{r0}, {r1}, {r2}});
  EXPECT_EQ(out.to_string(), "T[4x3]");
  for (uint32_t i = 0; i < 4; ++i)
    for (uint32_t j = 0; j < 3; ++j) EXPECT_EQ(out.f(i, j), float(i * 3 + j + 1));
  // the inputs are untouched (the first input's payload was shared, then copied)
  EXPECT_EQ(r0.data->f.size(), 3u);
  EXPECT_EQ(f.flops(f.init(), {r0}), 0u);
  EXPECT_EQ(f.finalize_flops(out), 0u);
}

TEST(RetileRow, DynamicTileShapesInTimingMode) {
  // [1x4096] * B_i -> [B_i x 4096]: the packed tile size depends on the data.
  const auto& f = accum_function("retile_row");
  for (uint32_t b : {1u, 7u, 16u, 33u}) {
    Tile acc = f.init();
    for (uint32_t k = 0; k < b; ++k) acc = f.update(std::move(acc), {shape_tile(1, 4096)});
    EXPECT_FALSE(acc.has_data());
    EXPECT_EQ(f.finalize(acc).to_string(), "T[" + std::to_string(b) + "x4096]");
  }
  EXPECT_TRUE(is_empty_acc(f.finalize(f.init())));  // nothing seen -> empty tile
}

TEST(RetileRow, Int32AndErrors) {
  const auto& f = accum_function("retile_row");
  Tile out = reduce(f, {{make_int_tile(1, 1, {0})}, {make_int_tile(1, 1, {1})}});
  EXPECT_EQ(out.to_string(), "T[2x1:int32]");
  EXPECT_EQ(out.i(1, 0), 1);
  expect_invalid([&] { f.acc_shape(shape_tile(2, 4), {shape_tile(1, 3)}); }, {"'retile_row'", "T[1x3]", "T[2x4]"});
  expect_invalid([&] { f.acc_shape(shape_tile(2, 4), {shape_tile(1, 4, DType::FP32)}); },
                 {"'retile_row'", "T[1x4:fp32]", "T[2x4]"});
  expect_invalid([&] { f.update(f.init(), {}); }, {"'retile_row'", "takes 1 input(s), got 0"});
}

TEST(RetileCol, ConcatenatesHorizontally) {
  const auto& f = accum_function("retile_col");
  Tile c0 = make_tile(2, 1, DType::BF16, {1, 4});
  Tile c1 = make_tile(2, 2, DType::BF16, {2, 3, 5, 6});
  Tile out = reduce(f, {{c0}, {c1}});
  EXPECT_EQ(out.to_string(), "T[2x3]");
  for (uint32_t i = 0; i < 2; ++i)
    for (uint32_t j = 0; j < 3; ++j) EXPECT_EQ(out.f(i, j), float(i * 3 + j + 1));
  EXPECT_EQ(f.flops(f.init(), {c0}), 0u);
  expect_invalid([&] { f.acc_shape(shape_tile(2, 4), {shape_tile(3, 4)}); }, {"'retile_col'", "T[3x4]", "T[2x4]"});
}

TEST(AccumTimingMode, MixedPayloadRejected) {
  const auto& f = accum_function("add");
  Tile acc = f.update(f.init(), {make_tile(1, 1, DType::BF16, {1})});
  expect_invalid([&] { f.update(acc, {shape_tile(1, 1)}); }, {"'add'", "shape-only"});
}

// ---- flash_attn_update ----

// Straightforward re-implementation of the documented definition (one row at a time).
std::vector<float> flash_reference(const std::vector<std::pair<Tile, Tile>>& tiles) {
  const uint32_t M = tiles[0].first.rows, D = tiles[0].second.cols;
  std::vector<float> out(size_t(M) * D);
  for (uint32_t i = 0; i < M; ++i) {
    float m = 0, l = 0;
    std::vector<float> o(D, 0.0f);
    bool first = true;
    for (const auto& [S, V] : tiles) {
      float mt = -INFINITY;
      for (uint32_t t = 0; t < S.cols; ++t) mt = t ? max_f32(mt, S.f(i, t)) : S.f(i, t);
      const float mn = first ? mt : max_f32(m, mt);
      std::vector<float> p(S.cols);
      float ls = 0;
      for (uint32_t t = 0; t < S.cols; ++t) {
        p[t] = mn == -INFINITY ? 0.0f : exp_f32(S.f(i, t) - mn);
        ls = t ? ls + p[t] : p[t];
      }
      const float a = first ? 0.0f : (mn == -INFINITY ? 1.0f : exp_f32(m - mn));
      for (uint32_t j = 0; j < D; ++j) {
        float pv = 0;
        for (uint32_t t = 0; t < S.cols; ++t) pv = t ? pv + p[t] * V.f(t, j) : p[t] * V.f(t, j);
        o[j] = first ? pv : a * o[j] + pv;
      }
      l = first ? ls : a * l + ls;
      m = mn;
      first = false;
    }
    for (uint32_t j = 0; j < D; ++j) out[size_t(i) * D + j] = round_to_bf16(o[j] / l);
  }
  return out;
}

// Decode attention for one KV head: 8 query heads, head_dim 64, KV length 70 in tiles of 32
// (the last tile is short: 6 rows). S = matmul_t_f32(Q * 1/sqrt(64), K_tile).
struct Attn {
  Tile q, qs;
  std::vector<Tile> k, v;
};
Attn make_attn(std::mt19937& rng, uint32_t kv_len) {
  Attn a;
  a.q = random_tile(8, 64, DType::BF16, rng, -2, 2);
  a.qs = map_function("mul").apply({a.q, make_tile(1, 1, DType::BF16, {0.125f})});
  for (uint32_t t0 = 0; t0 < kv_len; t0 += 32) {
    const uint32_t T = std::min(32u, kv_len - t0);
    a.k.push_back(random_tile(T, 64, DType::BF16, rng, -2, 2));
    a.v.push_back(random_tile(T, 64, DType::BF16, rng));
  }
  return a;
}

TEST(FlashAttn, DecodeAttentionMatchesDefinitionAndDoubleSoftmax) {
  std::mt19937 rng(99);
  Attn at = make_attn(rng, 70);
  const auto& f = accum_function("flash_attn_update");
  Tile acc = f.init();
  std::vector<std::pair<Tile, Tile>> st;
  for (size_t n = 0; n < at.k.size(); ++n) {
    Tile S = map_function("matmul_t_f32").apply({at.qs, at.k[n]});
    st.push_back({S, at.v[n]});
    acc = f.update(std::move(acc), {S, at.v[n]});
    EXPECT_EQ(acc.to_string(), "T[8x66:fp32]");  // [o | m | l]
  }
  Tile out = f.finalize(acc);
  ASSERT_EQ(out.to_string(), "T[8x64]");
  // bit-exact against the straightforward implementation of the definition
  const auto ref = flash_reference(st);
  for (uint32_t i = 0; i < 8; ++i)
    for (uint32_t j = 0; j < 64; ++j)
      ASSERT_EQ(f32_bits(out.f(i, j)), f32_bits(ref[size_t(i) * 64 + j])) << i << "," << j;
  // accuracy against softmax(q k^T / 8) v in double precision
  double max_err = 0;
  for (uint32_t i = 0; i < 8; ++i) {
    std::vector<double> s;
    std::vector<const Tile*> vrow_tile;
    std::vector<uint32_t> vrow;
    for (size_t n = 0; n < at.k.size(); ++n)
      for (uint32_t t = 0; t < at.k[n].rows; ++t) {
        double d = 0;
        for (uint32_t c = 0; c < 64; ++c) d += double(at.q.f(i, c)) * at.k[n].f(t, c);
        s.push_back(d / 8);
        vrow_tile.push_back(&at.v[n]);
        vrow.push_back(t);
      }
    double mx = -INFINITY, den = 0;
    for (double x : s) mx = std::max(mx, x);
    for (double x : s) den += std::exp(x - mx);
    for (uint32_t j = 0; j < 64; ++j) {
      double num = 0;
      for (size_t t = 0; t < s.size(); ++t) num += std::exp(s[t] - mx) * vrow_tile[t]->f(vrow[t], j);
      max_err = std::max(max_err, std::fabs(out.f(i, j) - num / den));
    }
  }
  std::printf("flash_attn_update: max abs error vs double softmax attention %.3e\n", max_err);
  EXPECT_LT(max_err, 4e-3);  // bf16 output (|values| < 1: half ulp <= 2^-9)
}

// The same online softmax composed from Map functions (all fp32) gives the same bits.
TEST(FlashAttn, ComposableFromMapFunctions) {
  std::mt19937 rng(5);
  Attn at = make_attn(rng, 64 + 20);
  auto mapf = [](const char* n, std::vector<Tile> in) { return map_function(n).apply(in); };
  const auto& f = accum_function("flash_attn_update");
  Tile acc = f.init();
  Tile m, l, o;
  for (size_t n = 0; n < at.k.size(); ++n) {
    Tile S = mapf("matmul_t_f32", {at.qs, at.k[n]});
    acc = f.update(std::move(acc), {S, at.v[n]});
    Tile mt = mapf("row_max", {S});
    if (n == 0) {
      m = mt;
      Tile p = mapf("exp", {mapf("sub_row", {S, m})});
      l = mapf("row_sum", {p});
      o = mapf("matmul_f32", {p, at.v[n]});
    } else {
      Tile mn = mapf("max", {m, mt});
      Tile a = mapf("exp", {mapf("sub", {m, mn})});
      Tile p = mapf("exp", {mapf("sub_row", {S, mn})});
      l = mapf("add", {mapf("mul", {a, l}), mapf("row_sum", {p})});
      o = mapf("add", {mapf("mul", {a, o}), mapf("matmul_f32", {p, at.v[n]})});
      m = mn;
    }
  }
  Tile composed = mapf("div", {o, l});
  ASSERT_EQ(composed.dtype, DType::FP32);
  std::vector<float> v(composed.data->f);
  Tile composed16 = make_tile(composed.rows, composed.cols, DType::BF16, v);
  expect_bits_equal(f.finalize(acc), composed16);
}

TEST(FlashAttn, MaskedScoresContributeNothing) {
  std::mt19937 rng(11);
  Tile S1 = random_tile(2, 4, DType::FP32, rng);
  Tile V1 = random_tile(4, 8, DType::BF16, rng);
  Tile Smask = make_tile(2, 3, DType::FP32, std::vector<float>(6, -INFINITY));
  Tile Vmask = random_tile(3, 8, DType::BF16, rng);
  const auto& f = accum_function("flash_attn_update");
  Tile only = reduce(f, {{S1, V1}});
  expect_bits_equal(reduce(f, {{Smask, Vmask}, {S1, V1}}), only);  // masked tile first
  expect_bits_equal(reduce(f, {{S1, V1}, {Smask, Vmask}}), only);  // masked tile last
}

TEST(FlashAttn, FlopsAndShapes) {
  const auto& f = accum_function("flash_attn_update");
  // M = 8 query rows, T = 32 keys, D = 64:
  // 7*M*T + 2*M*T*D + 6*M + 2*M + 2*M*D = 1792 + 32768 + 48 + 16 + 1024
  EXPECT_EQ(f.flops(f.init(), {shape_tile(8, 32, DType::FP32), shape_tile(32, 64)}),
            7ull * 8 * 32 + 2ull * 8 * 32 * 64 + 6ull * 8 + 2ull * 8 + 2ull * 8 * 64);
  EXPECT_EQ(f.finalize_flops(shape_tile(8, 66, DType::FP32)), 8ull * 64);
  EXPECT_EQ(f.acc_shape(f.init(), {shape_tile(8, 32), shape_tile(32, 64)}).to_string(), "T[8x66:fp32]");
  EXPECT_EQ(f.out_shape(shape_tile(8, 66, DType::FP32)).to_string(), "T[8x64]");
  expect_invalid(
      [&] {
        f.acc_shape(f.init(), {shape_tile(8, 32), shape_tile(16, 64)});
      },
      {"'flash_attn_update'", "T[8x32]", "T[16x64]"});
  expect_invalid(
      [&] {
        f.acc_shape(shape_tile(8, 66, DType::FP32), {shape_tile(4, 32), shape_tile(32, 64)});
      },
      {"'flash_attn_update'", "T[8x66:fp32]", "T[4x32]"});
  // timing mode
  Tile acc = f.update(f.init(), {shape_tile(8, 32), shape_tile(32, 64)});
  EXPECT_FALSE(acc.has_data());
  EXPECT_EQ(f.finalize(acc).to_string(), "T[8x64]");
}

}  // namespace
}  // namespace stepsim
