// Map functions: values (hand-computed and against independent references), broadcasting,
// dtypes, FLOP counts, shape errors and timing (shape-only) mode.
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

Tile apply(const std::string& fn, const std::vector<Tile>& in) { return map_function(fn).apply(in); }
uint64_t flops(const std::string& fn, const std::vector<Tile>& in) { return map_function(fn).flops(in); }

TEST(MapRegistry, NamesAndUnknown) {
  const auto names = map_function_names();
  for (const char* n : {"matmul", "matmul_t", "matmul_f32", "matmul_t_f32", "add", "sub", "mul", "div", "max", "min",
                        "sub_row", "exp", "sigmoid", "silu", "row_sum", "row_max"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(map_function("matmul").arity, 2);
  EXPECT_EQ(map_function("exp").arity, 1);
  expect_invalid([] { map_function("matmull"); }, {"unknown map function 'matmull'", "known:", "matmul", "silu"});
}

// ---- matmul ----

TEST(Matmul, HandComputed2x2) {
  Tile a = make_tile(2, 2, DType::BF16, {1, 2, 3, 4});
  Tile b = make_tile(2, 2, DType::BF16, {5, 6, 7, 8});
  Tile c = apply("matmul", {a, b});
  EXPECT_EQ(c.to_string(), "T[2x2]");
  // [1*5+2*7, 1*6+2*8; 3*5+4*7, 3*6+4*8]
  EXPECT_EQ(c.f(0, 0), 19.0f);
  EXPECT_EQ(c.f(0, 1), 22.0f);
  EXPECT_EQ(c.f(1, 0), 43.0f);
  EXPECT_EQ(c.f(1, 1), 50.0f);
  // matmul_t takes the weight as [NxK]: B^T = [5 7; 6 8].
  Tile bt = make_tile(2, 2, DType::BF16, {5, 7, 6, 8});
  expect_bits_equal(apply("matmul_t", {a, bt}), c);
}

TEST(Matmul, NonSquareHandComputed) {
  // [1x3] x [3x2]: [1 2 3] x [[1 0],[0 1],[1 1]] = [4 5]
  Tile a = make_tile(1, 3, DType::BF16, {1, 2, 3});
  Tile b = make_tile(3, 2, DType::BF16, {1, 0, 0, 1, 1, 1});
  Tile c = apply("matmul", {a, b});
  ASSERT_EQ(c.to_string(), "T[1x2]");
  EXPECT_EQ(c.f(0, 0), 4.0f);
  EXPECT_EQ(c.f(0, 1), 5.0f);
}

TEST(Matmul, RoundsOnceToBf16TiesToEven) {
  // 256*1 + 1*1 = 257 exactly in fp32; bf16 has 8 significant bits: 257 is halfway between
  // 256 and 258 -> 256 (even). The fp32 variant keeps 257.
  Tile a = make_tile(1, 2, DType::BF16, {256, 1});
  Tile b = make_tile(2, 1, DType::BF16, {1, 1});
  EXPECT_EQ(apply("matmul", {a, b}).f(0, 0), 256.0f);
  Tile f = apply("matmul_f32", {a, b});
  EXPECT_EQ(f.dtype, DType::FP32);
  EXPECT_EQ(f.f(0, 0), 257.0f);
  // 256 + 3 = 259 -> 260 (halfway between 258 and 260, even mantissa is 260).
  Tile a3 = make_tile(1, 2, DType::BF16, {256, 3});
  EXPECT_EQ(apply("matmul", {a3, b}).f(0, 0), 260.0f);
}

TEST(Matmul, FixedLeftToRightOrder) {
  // k order 0,1,2 in fp32: (2^24 + 1) rounds to 2^24 (tie to even), + 1 again -> 2^24.
  // Summing the two 1s first would give 2^24 + 2: the order is observable and fixed.
  const float big = 16777216.0f;  // 2^24 is a bf16 value
  Tile a = make_tile(1, 3, DType::BF16, {big, 1, 1});
  Tile b = make_tile(3, 1, DType::BF16, {1, 1, 1});
  EXPECT_EQ(apply("matmul_f32", {a, b}).f(0, 0), big);
  Tile a2 = make_tile(1, 3, DType::BF16, {1, 1, big});
  EXPECT_EQ(apply("matmul_f32", {a2, b}).f(0, 0), big + 2.0f);
  EXPECT_EQ(apply("matmul_t_f32", {a, transpose(b)}).f(0, 0), big);
}

TEST(Matmul, ProductsOfBf16AreExact) {
  // (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14 needs 15 bits: exact in fp32, not in bf16.
  const float v = 1.0f + 1.0f / 128;
  Tile a = make_tile(1, 1, DType::BF16, {v});
  Tile f = apply("matmul_f32", {a, a});
  EXPECT_EQ(double(f.f(0, 0)), double(v) * double(v));
  EXPECT_EQ(apply("matmul", {a, a}).f(0, 0), round_to_bf16(v * v));
}

// Independent reference: the exact value of each dot product in double (bf16 products and
// their sums of 64 terms in [-1,1] are exact in double), then the fp32 and bf16 rounding
// checked against it.
TEST(Matmul, RandomAgainstDoubleReference) {
  std::mt19937 rng(1234);
  const uint32_t M = 16, K = 64, N = 32;
  Tile a = random_tile(M, K, DType::BF16, rng);
  Tile b = random_tile(K, N, DType::BF16, rng);
  Tile c32 = apply("matmul_f32", {a, b});
  Tile c16 = apply("matmul", {a, b});
  ASSERT_EQ(c32.to_string(), "T[16x32:fp32]");
  ASSERT_EQ(c16.to_string(), "T[16x32]");
  int bf16_exact = 0;
  for (uint32_t i = 0; i < M; ++i)
    for (uint32_t j = 0; j < N; ++j) {
      double exact = 0, abs_sum = 0;
      float seq = 0;  // straightforward fp32 left-to-right sum
      for (uint32_t k = 0; k < K; ++k) {
        const double p = double(a.f(i, k)) * double(b.f(k, j));
        exact += p;
        abs_sum += std::fabs(p);
        seq = k == 0 ? float(p) : seq + float(p);
      }
      // fp32: bit-exact to the straightforward loop, and within the (K-1) u sum|p| bound.
      ASSERT_EQ(f32_bits(c32.f(i, j)), f32_bits(seq));
      EXPECT_LE(std::fabs(double(c32.f(i, j)) - exact), (K - 1) * std::ldexp(1.0, -24) * abs_sum);
      // bf16: the fp32 result rounded once; within one bf16 ulp of the rounded exact value.
      ASSERT_EQ(f32_bits(c16.f(i, j)), f32_bits(round_to_bf16(seq)));
      const float ref16 = round_to_bf16(float(exact));
      const int d = std::abs(int(bf16_bits_from_f32(c16.f(i, j))) - int(bf16_bits_from_f32(ref16)));
      EXPECT_LE(d, 1);
      bf16_exact += d == 0;
    }
  EXPECT_GT(bf16_exact, int(M * N * 9 / 10));  // almost always equal
  // matmul_t with the transposed weight gives the same bits.
  expect_bits_equal(apply("matmul_t", {a, transpose(b)}), c16);
}

TEST(Matmul, Fp32InputsGiveFp32Output) {
  std::mt19937 rng(7);
  Tile a = random_tile(4, 8, DType::FP32, rng);
  Tile b = random_tile(8, 3, DType::BF16, rng);
  Tile c = apply("matmul", {a, b});
  EXPECT_EQ(c.dtype, DType::FP32);
  for (uint32_t i = 0; i < 4; ++i)
    for (uint32_t j = 0; j < 3; ++j) {
      float s = 0;
      for (uint32_t k = 0; k < 8; ++k) {
        const float p = a.f(i, k) * b.f(k, j);  // rounded fp32 product
        s = k == 0 ? p : s + p;
      }
      EXPECT_EQ(f32_bits(c.f(i, j)), f32_bits(s));
    }
}

TEST(Matmul, InfAndNaNPropagate) {
  Tile a = make_tile(1, 2, DType::BF16, {INFINITY, 1});
  Tile b = make_tile(2, 2, DType::BF16, {1, 0, 1, 1});
  Tile c = apply("matmul", {a, b});
  EXPECT_EQ(c.f(0, 0), INFINITY);
  EXPECT_TRUE(std::isnan(c.f(0, 1)));  // Inf * 0
}

TEST(Matmul, FlopsAre2MKN) {
  EXPECT_EQ(flops("matmul", {shape_tile(16, 64), shape_tile(64, 32)}), 2ull * 16 * 64 * 32);
  EXPECT_EQ(flops("matmul_t", {shape_tile(16, 4096), shape_tile(64, 4096)}), 2ull * 16 * 4096 * 64);
  EXPECT_EQ(flops("matmul_f32", {shape_tile(1, 2048), shape_tile(2048, 64)}), 2ull * 1 * 2048 * 64);
  EXPECT_EQ(flops("matmul_t_f32", {shape_tile(8, 64), shape_tile(32, 64)}), 2ull * 8 * 64 * 32);
}

TEST(Matmul, ShapeErrorsNameFunctionAndShapes) {
  expect_invalid(
      [] {
        map_function("matmul").out_shape({shape_tile(16, 64), shape_tile(32, 16)});
      },
      {"'matmul'", "T[16x64]", "T[32x16]"});
  expect_invalid(
      [] {
        map_function("matmul_t").out_shape({shape_tile(16, 64), shape_tile(64, 32)});
      },
      {"'matmul_t'", "T[16x64]", "T[64x32]"});
  expect_invalid([] { map_function("matmul").apply({shape_tile(16, 64)}); }, {"'matmul'", "takes 2 input(s), got 1"});
  expect_invalid(
      [] {
        map_function("matmul").out_shape({make_int_tile(1, 1, {1}), shape_tile(1, 1)});
      },
      {"'matmul'", "T[1x1:int32]"});
}

// ---- elementwise ----

TEST(Elementwise, SameShape) {
  Tile a = make_tile(1, 4, DType::BF16, {1, 2, 3, 4});
  Tile b = make_tile(1, 4, DType::BF16, {4, 3, 2, 1});
  Tile s = apply("add", {a, b});
  for (int j = 0; j < 4; ++j) EXPECT_EQ(s.f(0, j), 5.0f);
  Tile d = apply("sub", {a, b});
  EXPECT_EQ(d.f(0, 0), -3.0f);
  EXPECT_EQ(d.f(0, 3), 3.0f);
  Tile m = apply("mul", {a, b});
  EXPECT_EQ(m.f(0, 1), 6.0f);
  Tile q = apply("div", {a, b});
  EXPECT_EQ(q.f(0, 0), round_to_bf16(0.25f));
  EXPECT_EQ(q.f(0, 1), round_to_bf16(2.0f / 3.0f));  // fp32 division, then bf16 once
  Tile mx = apply("max", {a, b});
  EXPECT_EQ(mx.f(0, 0), 4.0f);
  EXPECT_EQ(mx.f(0, 3), 4.0f);
  Tile mn = apply("min", {a, b});
  EXPECT_EQ(mn.f(0, 0), 1.0f);
  EXPECT_EQ(mn.f(0, 3), 1.0f);
}

TEST(Elementwise, RowBroadcast) {  // [Mx1] with [MxN]
  Tile x = make_tile(2, 3, DType::BF16, {1, 2, 3, 4, 5, 6});
  Tile r = make_tile(2, 1, DType::BF16, {10, 100});
  Tile s = apply("add", {x, r});
  EXPECT_EQ(s.to_string(), "T[2x3]");
  EXPECT_EQ(s.f(0, 2), 13.0f);
  EXPECT_EQ(s.f(1, 0), 104.0f);
  Tile s2 = apply("sub", {r, x});  // broadcast operand on the left
  EXPECT_EQ(s2.f(0, 0), 9.0f);
  EXPECT_EQ(s2.f(1, 2), 94.0f);
  expect_bits_equal(apply("sub_row", {x, r}), apply("sub", {x, r}));
  Tile q = apply("div", {x, r});
  EXPECT_EQ(q.f(1, 1), round_to_bf16(0.05f));
}

TEST(Elementwise, ColumnBroadcast) {  // [1xN] with [MxN]
  Tile x = make_tile(2, 3, DType::BF16, {1, 2, 3, 4, 5, 6});
  Tile c = make_tile(1, 3, DType::BF16, {2, 3, 4});
  Tile m = apply("mul", {x, c});
  EXPECT_EQ(m.f(0, 0), 2.0f);
  EXPECT_EQ(m.f(1, 2), 24.0f);
  Tile m2 = apply("mul", {c, x});
  expect_bits_equal(m, m2);
}

TEST(Elementwise, ScalarAndOuterBroadcast) {
  Tile x = make_tile(2, 2, DType::BF16, {1, 2, 3, 4});
  Tile s = make_tile(1, 1, DType::BF16, {0.5f});
  Tile m = apply("mul", {x, s});
  EXPECT_EQ(m.f(1, 1), 2.0f);
  Tile col = make_tile(2, 1, DType::BF16, {1, 2});
  Tile row = make_tile(1, 3, DType::BF16, {1, 10, 100});
  Tile o = apply("mul", {col, row});
  EXPECT_EQ(o.to_string(), "T[2x3]");
  EXPECT_EQ(o.f(1, 2), 200.0f);
}

TEST(Elementwise, DtypeRuleAndSingleRounding) {
  Tile a = make_tile(1, 1, DType::BF16, {1.0f});
  Tile b16 = make_tile(1, 1, DType::BF16, {1.0f / 256});  // 2^-8
  Tile b32 = make_tile(1, 1, DType::FP32, {1.0f / 256});
  // 1 + 2^-8 is a bf16 tie -> 1.0 ; in fp32 it is exact.
  Tile s16 = apply("add", {a, b16});
  EXPECT_EQ(s16.dtype, DType::BF16);
  EXPECT_EQ(s16.f(0, 0), 1.0f);
  Tile s32 = apply("add", {a, b32});
  EXPECT_EQ(s32.dtype, DType::FP32);
  EXPECT_EQ(s32.f(0, 0), 1.0f + 1.0f / 256);
}

TEST(Elementwise, IeeeSpecials) {
  Tile a = make_tile(1, 4, DType::BF16, {1, 0, INFINITY, NAN});
  Tile z = make_tile(1, 4, DType::BF16, {0, 0, INFINITY, 1});
  Tile q = apply("div", {a, z});
  EXPECT_EQ(q.f(0, 0), INFINITY);
  EXPECT_TRUE(std::isnan(q.f(0, 1)));
  EXPECT_TRUE(std::isnan(q.f(0, 2)));
  EXPECT_TRUE(std::isnan(q.f(0, 3)));
  Tile s = apply("sub", {a, z});
  EXPECT_TRUE(std::isnan(s.f(0, 2)));  // Inf - Inf
  Tile mx = apply("max", {a, z});
  EXPECT_TRUE(std::isnan(mx.f(0, 3)));  // NaN-propagating
}

TEST(Elementwise, FlopsAreOutputElements) {
  EXPECT_EQ(flops("add", {shape_tile(16, 64), shape_tile(16, 64)}), 16ull * 64);
  EXPECT_EQ(flops("sub", {shape_tile(16, 64), shape_tile(16, 1)}), 16ull * 64);
  EXPECT_EQ(flops("mul", {shape_tile(1, 64), shape_tile(16, 64)}), 16ull * 64);
  EXPECT_EQ(flops("div", {shape_tile(16, 1), shape_tile(1, 64)}), 16ull * 64);
  EXPECT_EQ(flops("max", {shape_tile(8, 1), shape_tile(8, 1)}), 8ull);
  EXPECT_EQ(flops("min", {shape_tile(8, 2), shape_tile(1, 1)}), 16ull);
  EXPECT_EQ(flops("sub_row", {shape_tile(8, 32), shape_tile(8, 1)}), 8ull * 32);
}

TEST(Elementwise, ShapeErrors) {
  expect_invalid(
      [] {
        map_function("add").out_shape({shape_tile(16, 64), shape_tile(8, 64)});
      },
      {"'add'", "T[16x64]", "T[8x64]", "broadcast"});
  expect_invalid(
      [] {
        map_function("mul").apply({shape_tile(2, 3), shape_tile(2, 4)});
      },
      {"'mul'", "T[2x3]", "T[2x4]"});
  expect_invalid(
      [] {
        map_function("sub_row").out_shape({shape_tile(16, 64), shape_tile(1, 64)});
      },
      {"'sub_row'", "T[16x64]", "T[1x64]"});
  expect_invalid([] { map_function("add").apply({shape_tile(1, 1)}); }, {"'add'", "takes 2 input(s), got 1"});
}

// ---- unary ----

TEST(Unary, ExpSigmoidSiluElementwise) {
  Tile x = make_tile(2, 2, DType::BF16, {0, 1, -2.5f, 3});
  for (const char* fn : {"exp", "sigmoid", "silu"}) {
    float (*k)(float) = std::string(fn) == "exp" ? exp_f32 : std::string(fn) == "sigmoid" ? sigmoid_f32 : silu_f32;
    Tile y = apply(fn, {x});
    ASSERT_EQ(y.to_string(), "T[2x2]") << fn;
    for (uint32_t i = 0; i < 2; ++i)
      for (uint32_t j = 0; j < 2; ++j) EXPECT_EQ(f32_bits(y.f(i, j)), f32_bits(round_to_bf16(k(x.f(i, j))))) << fn;
    Tile y32 = apply(fn, {make_tile(2, 2, DType::FP32, {0, 1, -2.5f, 3})});
    EXPECT_EQ(y32.dtype, DType::FP32);
    EXPECT_EQ(f32_bits(y32.f(1, 1)), f32_bits(k(3.0f))) << fn;
  }
  EXPECT_EQ(apply("exp", {x}).f(0, 0), 1.0f);
  EXPECT_EQ(apply("sigmoid", {x}).f(0, 0), 0.5f);
  EXPECT_EQ(apply("silu", {x}).f(0, 0), 0.0f);
}

TEST(Unary, Flops) {
  const Tile t = shape_tile(16, 64);
  EXPECT_EQ(flops("exp", {t}), 4ull * 16 * 64);
  EXPECT_EQ(flops("sigmoid", {t}), 7ull * 16 * 64);
  EXPECT_EQ(flops("silu", {t}), 8ull * 16 * 64);
}

// ---- row reductions ----

TEST(RowReduce, SumAndMax) {
  Tile x = make_tile(2, 3, DType::BF16, {1, 2, 3, -4, 8, -1});
  Tile s = apply("row_sum", {x});
  EXPECT_EQ(s.to_string(), "T[2x1]");
  EXPECT_EQ(s.f(0, 0), 6.0f);
  EXPECT_EQ(s.f(1, 0), 3.0f);
  Tile m = apply("row_max", {x});
  EXPECT_EQ(m.to_string(), "T[2x1]");
  EXPECT_EQ(m.f(0, 0), 3.0f);
  EXPECT_EQ(m.f(1, 0), 8.0f);
}

TEST(RowReduce, SumOrderIsLeftToRight) {
  const float big = 16777216.0f;
  Tile x = make_tile(1, 3, DType::FP32, {big, 1, 1});
  EXPECT_EQ(apply("row_sum", {x}).f(0, 0), big);
  Tile y = make_tile(1, 3, DType::FP32, {1, 1, big});
  EXPECT_EQ(apply("row_sum", {y}).f(0, 0), big + 2);
}

TEST(RowReduce, NaNAndInf) {
  Tile x = make_tile(2, 2, DType::BF16, {-INFINITY, -INFINITY, 1, NAN});
  Tile m = apply("row_max", {x});
  EXPECT_EQ(m.f(0, 0), -INFINITY);
  EXPECT_TRUE(std::isnan(m.f(1, 0)));
}

TEST(RowReduce, FlopsAreInputElements) {
  EXPECT_EQ(flops("row_sum", {shape_tile(16, 64)}), 16ull * 64);
  EXPECT_EQ(flops("row_max", {shape_tile(8, 32, DType::FP32)}), 8ull * 32);
}

// ---- timing mode ----

TEST(MapTimingMode, ShapeOnlyInputsGiveShapeOnlyOutputs) {
  Tile out = apply("matmul", {shape_tile(16, 64), shape_tile(64, 32)});
  EXPECT_FALSE(out.has_data());
  EXPECT_EQ(out.to_string(), "T[16x32]");
  EXPECT_EQ(map_function("silu").out_shape({shape_tile(4, 4, DType::FP32)}).to_string(), "T[4x4:fp32]");
  expect_invalid([] { apply("add", {shape_tile(1, 1), make_tile(1, 1, DType::BF16, {1})}); }, {"'add'", "mix payload"});
}

// A matmul form names its Accum form: the same operands, transposition and output width, so
// down-tiling's K split (sim/transform/downtile.cpp) sums exactly what the Map computes. (The Accum forms
// say bf16 where the Map forms promote: they agree on the bf16 operands down-tiling takes.)
TEST(MapFunctions, EveryMatmulFormNamesItsAccumForm) {
  int forms = 0;
  for (const std::string& n : map_function_names()) {
    const MapFunction& f = map_function(n);
    if (!f.matmul) {
      EXPECT_TRUE(f.accum_form.empty()) << n;
      continue;
    }
    ++forms;
    const AccumFunction& a = accum_function(f.accum_form);
    EXPECT_TRUE(a.matmul) << n;
    EXPECT_EQ(a.arity, f.arity) << n;
    EXPECT_EQ(a.signature.transposed_b, f.signature.transposed_b) << n;
    const auto fp32 = TileSignature::DTypeRule::kFp32;  // the _f32 forms pair up
    EXPECT_EQ(a.signature.dtype == fp32, f.signature.dtype == fp32) << n;
  }
  EXPECT_EQ(forms, 4);
}

}  // namespace
}  // namespace stepsim
