// The Map functions a PyTorch LLM front door needs (functions.h, "For PyTorch programs"): neg,
// abs, sqrt, tanh, erf, gelu, select, cast_f32, cast_bf16, rotate_pairs, rotate_half, row_mean,
// row_var. Hand-computed values, bf16 rounding, NaN/Inf/+-0, broadcasting, shape errors, FLOP
// counts, timing (shape-only) tiles; the tanh/erf/gelu kernels' golden bits and their accuracy
// against double precision over a deterministic sample; and the existing broadcasting forms
// (sub/div by a [1x1] scalar, mul by an [Mx1] row vector) that make further row functions
// unnecessary.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>

#include "hw/functions/functions.h"
#include "hw/functions/numerics.h"
#include "hw/ops/op.h"
#include "hw/stream/bf16.h"
#include "testbench/functions/test_util.h"

namespace stepsim {
namespace {

using testing_util::expect_bits_equal;
using testing_util::expect_invalid;
using testing_util::random_tile;

Tile run(const std::string& fn, const std::vector<Tile>& in) { return map_function(fn).apply(in); }
uint64_t flops(const std::string& fn, const std::vector<Tile>& in) { return map_function(fn).flops(in); }
float fb(uint32_t u) { return f32_from_bits(u); }
Tile f32(uint32_t r, uint32_t c, std::vector<float> v) { return make_tile(r, c, DType::FP32, std::move(v)); }
Tile bf16(uint32_t r, uint32_t c, std::vector<float> v) { return make_tile(r, c, DType::BF16, std::move(v)); }
Tile i32(uint32_t r, uint32_t c, std::vector<int32_t> v) { return make_int_tile(r, c, std::move(v)); }

const std::vector<std::string> kNew = {"neg",         "abs",      "sqrt",     "tanh",      "erf",
                                       "gelu",        "select",   "cast_f32", "cast_bf16", "rotate_pairs",
                                       "rotate_half", "row_mean", "row_var"};

TEST(LlmMapRegistry, NamesArityAndNoUnits) {
  const auto names = map_function_names();
  for (const std::string& n : kNew) {
    SCOPED_TRACE(n);
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end());
    const MapFunction& f = map_function(n);
    EXPECT_EQ(f.arity, n == "select" ? 3 : 1);
    EXPECT_FALSE(f.lanes.any()) << "approximate model only (unit_lanes.h: kNone)";
    EXPECT_FALSE(f.matmul);
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  // `stepsim ops` (and docs/operators.md) list them in Map's and Scan's fn parameters.
  bool listed = false;
  for (const ParamSpec& p : OpRegistry::instance().find("Map").params)
    if (p.name == "fn") {
      listed = true;
      const std::string list = ", " + p.doc.substr(p.doc.find(": ") + 2) + ",";  // "map function: a, b, ..."
      for (const std::string& n : kNew) EXPECT_NE(list.find(", " + n + ","), std::string::npos) << n << " in " << p.doc;
    }
  EXPECT_TRUE(listed);
}

TEST(LlmMapRegistry, Signatures) {
  using S = TileSignature::Shape;
  using D = TileSignature::DTypeRule;
  EXPECT_EQ(map_function("select").signature.shape, S::kSelect);
  EXPECT_EQ(map_function("select").signature.dtype, D::kPromote);
  for (const char* n : {"row_mean", "row_var"}) {
    EXPECT_EQ(map_function(n).signature.shape, S::kRowReduce) << n;
    EXPECT_EQ(map_function(n).signature.dtype, D::kFirst) << n;
  }
  EXPECT_EQ(map_function("cast_f32").signature.dtype, D::kFp32);
  EXPECT_EQ(map_function("cast_bf16").signature.dtype, D::kBf16);
  for (const char* n : {"neg", "abs", "sqrt", "tanh", "erf", "gelu", "rotate_pairs", "rotate_half"}) {
    EXPECT_EQ(map_function(n).signature.shape, S::kSameAsFirst) << n;
    EXPECT_EQ(map_function(n).signature.dtype, D::kFirst) << n;
  }
}

// ---- neg, abs, sqrt ----

TEST(LlmUnary, NegAndAbsAreExactSignBitOperations) {
  const std::vector<float> x = {1.5f, -2.25f, 0.0f, -0.0f, INFINITY, -INFINITY, 1e-45f, -3e38f};
  const Tile n = run("neg", {f32(1, 8, x)}), a = run("abs", {f32(1, 8, x)});
  ASSERT_EQ(n.to_string(), "T[1x8:fp32]");
  for (uint32_t j = 0; j < 8; ++j) {
    EXPECT_EQ(f32_bits(n.f(0, j)), f32_bits(x[j]) ^ 0x80000000u) << j;
    EXPECT_EQ(f32_bits(a.f(0, j)), f32_bits(x[j]) & 0x7fffffffu) << j;
  }
  // A NaN keeps its payload; only the sign bit changes.
  const float nan = fb(0x7fc01234u), neg_nan = fb(0xffc01234u);
  EXPECT_EQ(f32_bits(run("neg", {f32(1, 1, {nan})}).f(0, 0)), 0xffc01234u);
  EXPECT_EQ(f32_bits(run("abs", {f32(1, 1, {neg_nan})}).f(0, 0)), 0x7fc01234u);
  // bf16 in, bf16 out, nothing to round.
  const Tile b = run("neg", {bf16(1, 2, {1.0078125f, -3.0f})});
  EXPECT_EQ(b.dtype, DType::BF16);
  EXPECT_EQ(b.f(0, 0), -1.0078125f);
  EXPECT_EQ(b.f(0, 1), 3.0f);
}

TEST(LlmUnary, SqrtIsIeee) {
  const Tile s = run("sqrt", {f32(1, 8, {4.0f, 2.0f, 0.0f, -0.0f, -1.0f, INFINITY, NAN, 0x1p-149f})});
  EXPECT_EQ(s.f(0, 0), 2.0f);
  EXPECT_EQ(f32_bits(s.f(0, 1)), 0x3fb504f3u);  // sqrt(2) correctly rounded
  EXPECT_EQ(f32_bits(s.f(0, 2)), 0x00000000u);
  EXPECT_EQ(f32_bits(s.f(0, 3)), 0x80000000u);  // sqrt(-0) = -0
  EXPECT_TRUE(std::isnan(s.f(0, 4)));
  EXPECT_EQ(s.f(0, 5), INFINITY);
  EXPECT_TRUE(std::isnan(s.f(0, 6)));
  EXPECT_EQ(s.f(0, 7), float(std::sqrt(0x1p-149)));  // 2^-74.5 (double, then fp32: exact rounding)
  // bf16: the fp32 root, rounded once (1.41421354 -> 1.4140625).
  const Tile b = run("sqrt", {bf16(1, 1, {2.0f})});
  EXPECT_EQ(b.dtype, DType::BF16);
  EXPECT_EQ(b.f(0, 0), 1.4140625f);
  EXPECT_EQ(b.f(0, 0), round_to_bf16(sqrt_f32(2.0f)));
}

// ---- tanh, erf, gelu: the kernels ----

struct Golden {
  uint32_t x, y;
};

TEST(LlmKernels, TanhGoldenBitsAndSpecials) {
  // Regression guard for the definition (numerics.h); the last column is the correctly rounded value.
  const Golden g[] = {
      {0x3f000000u, 0x3eec9a9fu},  // tanh(0.5)          (= correctly rounded)
      {0xbf800000u, 0xbf42f7d6u},  // tanh(-1)           (=)
      {0x3f400000u, 0x3f229920u},  // tanh(0.75): exp path (correctly rounded 0x3f22991f)
      {0x3f3fffffu, 0x3f22991eu},  // tanh(0.74999994): polynomial (correctly rounded 0x3f22991f)
      {0x40000000u, 0x3f76ca83u},  // tanh(2)            (=)
      {0x3a83126fu, 0x3a83126cu},  // tanh(0.001)        (=)
      {0x3e000000u, 0x3dfeacc9u},  // tanh(0.125)        (=)
      {0xc0800000u, 0xbf7fd40cu},  // tanh(-4)           (=)
      {0x41100000u, 0x3f7fffffu},  // tanh(9)            (=)
      {0x41200000u, 0x3f800000u},  // tanh(10) = 1
  };
  for (const auto& c : g) EXPECT_EQ(f32_bits(tanh_f32(fb(c.x))), c.y) << "x=" << fb(c.x);
  EXPECT_EQ(f32_bits(tanh_f32(0.0f)), 0x00000000u);
  EXPECT_EQ(f32_bits(tanh_f32(-0.0f)), 0x80000000u);
  EXPECT_EQ(tanh_f32(INFINITY), 1.0f);
  EXPECT_EQ(tanh_f32(-INFINITY), -1.0f);
  EXPECT_EQ(tanh_f32(1e-30f), 1e-30f);  // tiny u gives u
  EXPECT_EQ(tanh_f32(-0x1p-149f), -0x1p-149f);
  EXPECT_EQ(f32_bits(tanh_f32(fb(0x7f800001u))), 0x7fc00001u);  // a signalling NaN, quieted
  EXPECT_EQ(f32_bits(tanh_f32(fb(0xffc00000u))), 0xffc00000u);
}

TEST(LlmKernels, ErfGoldenBitsAndSpecials) {
  const Golden g[] = {
      {0x3f000000u, 0x3f053f7bu},  // erf(0.5)           (= correctly rounded)
      {0x3f800000u, 0x3f57bb3du},  // erf(1): exp path   (=)
      {0x3f7fffffu, 0x3f57bb3du},  // erf(0.99999994): polynomial (=)
      {0xc0000000u, 0xbf7ecd71u},  // erf(-2)            (=)
      {0x40600000u, 0x3f7ffff4u},  // erf(3.5)           (=)
      {0x4079999au, 0x3f7fffffu},  // erf(3.9)           (=)
      {0x407ccccdu, 0x3f800000u},  // erf(3.95) = 1      (=)
      {0x3a83126fu, 0x3a93e61cu},  // erf(0.001)         (=)
      {0x3e000000u, 0x3e0faf0du},  // erf(0.125)         (=)
      {0xbf400000u, 0xbf360e4cu},  // erf(-0.75)         (=)
  };
  for (const auto& c : g) EXPECT_EQ(f32_bits(erf_f32(fb(c.x))), c.y) << "x=" << fb(c.x);
  EXPECT_EQ(f32_bits(erf_f32(0.0f)), 0x00000000u);
  EXPECT_EQ(f32_bits(erf_f32(-0.0f)), 0x80000000u);
  EXPECT_EQ(erf_f32(4.0f), 1.0f);
  EXPECT_EQ(erf_f32(1e30f), 1.0f);
  EXPECT_EQ(erf_f32(INFINITY), 1.0f);
  EXPECT_EQ(erf_f32(-INFINITY), -1.0f);
  EXPECT_EQ(f32_bits(erf_f32(fb(0xff800001u))), 0xffc00001u);  // a signalling NaN, quieted
  EXPECT_GT(erf_f32(0x1p-140f), 0x1p-140f);                    // 2/sqrt(pi) x, even subnormal
}

TEST(LlmKernels, GeluGoldenBitsAndSpecials) {
  const Golden g[] = {
      {0x3f800000u, 0x3f57625eu},  // gelu(1)     (correctly rounded 0x3f57625f)
      {0xbf800000u, 0xbe227686u},  // gelu(-1)    (=)
      {0x3f000000u, 0x3eb103afu},  // gelu(0.5)   (=)
      {0x40000000u, 0x3ffa2d0cu},  // gelu(2)     (=)
      {0xc0400000u, 0xbb84b340u},  // gelu(-3)    (correctly rounded 0xbb84b34c: 1 + erf cancels)
      {0xbe800000u, 0xbdcd765eu},  // gelu(-0.25) (correctly rounded 0xbdcd765d)
      {0x41200000u, 0x41200000u},  // gelu(10) = 10
      {0xc0c00000u, 0x80000000u},  // gelu(-6) = -0: erf(-6/sqrt 2) rounds to -1
  };
  for (const auto& c : g) EXPECT_EQ(f32_bits(gelu_f32(fb(c.x))), c.y) << "x=" << fb(c.x);
  EXPECT_EQ(f32_bits(gelu_f32(0.0f)), 0x00000000u);
  EXPECT_EQ(f32_bits(gelu_f32(-0.0f)), 0x80000000u);
  EXPECT_EQ(gelu_f32(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(gelu_f32(-INFINITY)));  // (-Inf) * 0, as gelu_tanh
  EXPECT_EQ(f32_bits(gelu_f32(fb(0x7f800001u))), 0x7fc00001u);
  // The stated order: v = x * k; e = erf_f32(v); (0.5 * x) * (1 + e).
  for (float x : {0.3f, -0.7f, 1.9f, -2.6f, 5.5f}) {
    volatile float v = x * 0.70710677f;
    volatile float e = erf_f32(v);
    volatile float h = 0.5f * x;
    volatile float s = 1.0f + e;
    EXPECT_EQ(f32_bits(gelu_f32(x)), f32_bits(h * s)) << x;
  }
}

TEST(LlmKernels, TanhAndErfAreOddBitForBit) {
  for (uint64_t u = 0; u < 0x80000000ull; u += 4099) {
    const float x = fb(uint32_t(u));
    if (std::isnan(x)) continue;
    ASSERT_EQ(f32_bits(tanh_f32(-x)), f32_bits(tanh_f32(x)) ^ 0x80000000u) << x;
    ASSERT_EQ(f32_bits(erf_f32(-x)), f32_bits(erf_f32(x)) ^ 0x80000000u) << x;
  }
}

// Accuracy against double-precision libm over every 331st fp32 bit pattern (13 million inputs,
// the sample of numerics_test.cpp). The figures are printed; the bounds are the measured values
// rounded up (numerics.h quotes them, and the exhaustive figures).
struct Accuracy {
  double max_rel = 0;  // over normal reference results
  float worst = 0;
  double max_abs_subnormal = 0;
  uint64_t n = 0;
};
Accuracy measure(const std::function<float(float)>& f, const std::function<double(double)>& ref, float lo, float hi) {
  Accuracy a;
  for (uint64_t u = 0; u < 0x100000000ull; u += 331) {
    const float x = fb(uint32_t(u));
    if (!(x >= lo && x <= hi)) continue;
    const double r = ref(double(x)), got = f(x);
    if (std::fabs(r) >= FLT_MIN) {
      const double e = std::fabs(got - r) / std::fabs(r);
      if (e > a.max_rel) a.max_rel = e, a.worst = x;
      ++a.n;
    } else {
      a.max_abs_subnormal = std::max(a.max_abs_subnormal, std::fabs(got - r));
    }
  }
  return a;
}
void print(const char* name, const Accuracy& a, const char* range) {
  std::printf("%s: max rel error %.3e (%.2f x 2^-24) at %a over %llu samples %s; subnormal max abs error %.3e\n", name,
              a.max_rel, a.max_rel / std::ldexp(1.0, -24), a.worst, (unsigned long long)a.n, range,
              a.max_abs_subnormal);
}

// Every finite input is in the sample (the functions are odd; the results from 9.02 / 3.92 on are
// +-1 exactly). Bounds: the measured maxima, 1.16e-7 (1.94 x 2^-24) for tanh and 1.07e-7 (1.79 x
// 2^-24) for erf, rounded up.
TEST(LlmKernels, TanhAndErfAccuracyAgainstDouble) {
  const std::vector<std::tuple<const char*, std::function<float(float)>, std::function<double(double)>, double>> fns = {
      {"tanh_f32", tanh_f32, [](double x) { return std::tanh(x); }, 1.2e-7},
      {"erf_f32", erf_f32, [](double x) { return std::erf(x); }, 1.1e-7}};
  for (const auto& [name, f, ref, bound] : fns) {
    SCOPED_TRACE(name);
    const Accuracy a = measure(f, ref, -FLT_MAX, FLT_MAX);
    print(name, a, "(every 331st finite bit pattern)");
    EXPECT_LT(a.max_rel, bound);
    EXPECT_GT(a.n, 12000000u);
    EXPECT_LE(a.max_abs_subnormal, std::ldexp(1.0, -149));
  }
}

TEST(LlmKernels, GeluAccuracyAgainstDouble) {
  auto gelu = [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); };
  const Accuracy a = measure(gelu_f32, gelu, -1.5f, 1e30f);
  print("gelu_f32", a, "on [-1.5, 1e30]");
  EXPECT_LT(a.max_rel, 8.0e-7);  // measured 7.49e-7 near -1.43: 1 + erf cancels
  const Accuracy p = measure(gelu_f32, gelu, 0.0f, 1e30f);
  print("gelu_f32", p, "on [0, 1e30]");
  EXPECT_LT(p.max_rel, 2.0e-7);
  // Below -1.5 the result is x times a small difference (1 + erf, erf near -1): the absolute error
  // stays within about one fp32 ulp of 1.
  double abs_err = 0;
  for (uint64_t u = 0x80000000ull; u < 0x100000000ull; u += 331) {
    const float x = fb(uint32_t(u));
    if (x < -1.5f && std::isfinite(x)) abs_err = std::max(abs_err, std::fabs(double(gelu_f32(x)) - gelu(double(x))));
  }
  std::printf("gelu_f32: max abs error %.3e below -1.5\n", abs_err);
  EXPECT_LT(abs_err, 1.0e-7);
}

// Every finite bf16 input: the bf16-rounded kernel is within one bf16 ulp of the bf16-rounded
// double-precision value (they differ only next to a rounding tie).
TEST(LlmKernels, Bf16InputsWithinOneBf16UlpOfDouble) {
  auto gelu = [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); };
  const std::vector<std::tuple<const char*, std::function<float(float)>, std::function<double(double)>>> fns = {
      {"tanh", tanh_f32, [](double x) { return std::tanh(x); }},
      {"erf", erf_f32, [](double x) { return std::erf(x); }},
      {"gelu", gelu_f32, gelu}};
  for (const auto& [name, f, ref] : fns) {
    int differ = 0;
    for (uint32_t b = 0; b < 0x10000u; ++b) {
      const float x = f32_from_bf16_bits(uint16_t(b));
      if (!std::isfinite(x) || (std::string(name) == "gelu" && x < -1.5f)) continue;
      const uint16_t got = bf16_bits_from_f32(f(x)), want = bf16_bits_from_f32(float(ref(double(x))));
      EXPECT_LE(std::abs(int(got) - int(want)), 1) << name << " x=" << x;
      differ += got != want;
    }
    std::printf("%s on bf16 inputs: %d bf16 results differ (by 1 ulp) from double precision\n", name, differ);
  }
}

TEST(LlmUnary, MapAppliesTheKernelsAndRoundsOnce) {
  std::mt19937 rng(11);
  const std::vector<std::pair<std::string, std::function<float(float)>>> fns = {
      {"tanh", tanh_f32},
      {"erf", erf_f32},
      {"gelu", gelu_f32},
      {"sqrt", sqrt_f32},
      {"neg", [](float x) { return -x; }},
      {"abs", [](float x) { return std::fabs(x); }}};
  for (const auto& [name, k] : fns) {
    for (DType dt : {DType::FP32, DType::BF16}) {
      SCOPED_TRACE(std::string(name) + " " + dtype_name(dt));
      const Tile x = random_tile(3, 37, dt, rng, -6.0f, 6.0f);
      const Tile y = run(name, {x});
      ASSERT_EQ(y.dtype, dt);
      std::vector<float> want;
      for (float v : x.data->f) want.push_back(k(v));
      expect_bits_equal(y, make_tile(3, 37, dt, want));  // bf16: the fp32 result rounded once
    }
  }
}

TEST(LlmUnary, FlopsPerElement) {
  const Tile x = shape_tile(4, 8);
  EXPECT_EQ(flops("neg", {x}), 32u);
  EXPECT_EQ(flops("abs", {x}), 32u);
  EXPECT_EQ(flops("sqrt", {x}), 32u);
  EXPECT_EQ(flops("tanh", {x}), 14u * 32);
  EXPECT_EQ(flops("erf", {x}), 18u * 32);
  EXPECT_EQ(flops("gelu", {x}), 22u * 32);
  expect_invalid([] { run("tanh", {i32(1, 1, {1})}); }, {"map function 'tanh'", "bf16 or fp32", "T[1x1:int32]"});
}

// ---- select ----

TEST(LlmSelect, HandComputedWithIntAndFloatConditions) {
  const Tile a = f32(2, 2, {1, 2, 3, 4}), b = f32(2, 2, {-1, -2, -3, -4});
  const Tile s = run("select", {i32(2, 2, {1, 0, -7, 0}), a, b});
  ASSERT_EQ(s.to_string(), "T[2x2:fp32]");
  EXPECT_EQ(s.data->f, (std::vector<float>{1, -2, 3, -4}));
  // A float condition: nonzero (NaN and Inf too) selects a; +0 and -0 select b.
  const Tile c = f32(1, 6, {0.5f, 0.0f, -0.0f, NAN, -INFINITY, 1e-45f});
  const Tile t = run("select", {c, f32(1, 6, {1, 1, 1, 1, 1, 1}), f32(1, 6, {2, 2, 2, 2, 2, 2})});
  EXPECT_EQ(t.data->f, (std::vector<float>{1, 2, 2, 1, 1, 1}));
  // The chosen values pass unchanged: -0, NaN payloads, Inf.
  const Tile u =
      run("select", {i32(1, 3, {1, 1, 0}), f32(1, 3, {-0.0f, fb(0x7fc01234u), 5}), f32(1, 3, {0, 0, -INFINITY})});
  EXPECT_EQ(f32_bits(u.f(0, 0)), 0x80000000u);
  EXPECT_EQ(f32_bits(u.f(0, 1)), 0x7fc01234u);
  EXPECT_EQ(u.f(0, 2), -INFINITY);
}

TEST(LlmSelect, AllThreeBroadcast) {
  // masked_fill: a causal mask [M x N] of int32, a scalar fill, the scores.
  const Tile mask = i32(2, 3, {0, 1, 1, 0, 0, 1});
  const Tile fill = f32(1, 1, {-INFINITY});
  const Tile scores = f32(2, 3, {1, 2, 3, 4, 5, 6});
  const Tile m = run("select", {mask, fill, scores});
  EXPECT_EQ(m.data->f, (std::vector<float>{1, -INFINITY, -INFINITY, 4, 5, -INFINITY}));
  // cond a column [Mx1], a a row [1xN], b a scalar [1x1]: [M x N].
  const Tile o = run("select", {i32(3, 1, {1, 0, 1}), f32(1, 2, {7, 8}), f32(1, 1, {9})});
  ASSERT_EQ(o.to_string(), "T[3x2:fp32]");
  EXPECT_EQ(o.data->f, (std::vector<float>{7, 8, 9, 9, 7, 8}));
  // cond [1x1] broadcast over [2x2] operands; a row cond [1xN] over a column a [Mx1].
  EXPECT_EQ(run("select", {i32(1, 1, {0}), f32(2, 2, {1, 2, 3, 4}), f32(2, 2, {5, 6, 7, 8})}).data->f,
            (std::vector<float>{5, 6, 7, 8}));
  const Tile r = run("select", {f32(1, 2, {1, 0}), f32(2, 1, {1, 2}), f32(1, 1, {0})});
  EXPECT_EQ(r.data->f, (std::vector<float>{1, 0, 2, 0}));
}

TEST(LlmSelect, DtypeFromAAndBOnly) {
  const Tile hb = bf16(1, 2, {1.5f, 2.5f}), hb2 = bf16(1, 2, {-1, -2}), fp = f32(1, 2, {0.1f, 0.2f});
  // bf16 a and b give bf16, whatever the condition's dtype.
  for (const Tile& c : {i32(1, 2, {1, 0}), f32(1, 2, {1, 0}), bf16(1, 2, {1, 0})}) {
    const Tile o = run("select", {c, hb, hb2});
    EXPECT_EQ(o.dtype, DType::BF16);
    EXPECT_EQ(o.data->f, (std::vector<float>{1.5f, -2}));
  }
  // One fp32 operand: fp32, the fp32 value exact (not rounded to bf16).
  const Tile o = run("select", {i32(1, 2, {0, 1}), hb, fp});
  EXPECT_EQ(o.dtype, DType::FP32);
  EXPECT_EQ(o.data->f, (std::vector<float>{0.1f, 2.5f}));
}

TEST(LlmSelect, ShapeErrorsNameTheFunctionAndEveryShape) {
  expect_invalid(
      [] {
        run("select", {i32(2, 3, {0, 0, 0, 0, 0, 0}), f32(2, 2, {0, 0, 0, 0}), f32(1, 1, {0})});
      },
      {"map function 'select'", "T[2x3:int32]", "T[2x2:fp32]", "T[1x1:fp32]", "not broadcast-compatible"});
  expect_invalid(
      [] {
        run("select", {shape_tile(1, 4), shape_tile(3, 1), shape_tile(2, 4)});
      },
      {"'select'", "T[1x4], T[3x1] and T[2x4]"});
  expect_invalid(
      [] {
        run("select", {shape_tile(1, 1), shape_tile(1, 1, DType::INT32), shape_tile(1, 1)});
      },
      {"'select'", "bf16 or fp32", "T[1x1:int32]"});
  expect_invalid([] { run("select", {shape_tile(1, 1), shape_tile(1, 1)}); }, {"'select'", "takes 3 input(s), got 2"});
}

TEST(LlmSelect, FlopsAndTiming) {
  const std::vector<Tile> in = {shape_tile(4, 1, DType::INT32), shape_tile(1, 8), shape_tile(4, 8, DType::FP32)};
  EXPECT_EQ(flops("select", in), 0u);  // a select, as mask_cols
  const Tile out = run("select", in);
  EXPECT_FALSE(out.has_data());
  EXPECT_EQ(out.to_string(), "T[4x8:fp32]");
  EXPECT_EQ(map_function("select").out_shape(in).to_string(), "T[4x8:fp32]");
}

// ---- casts ----

TEST(LlmCast, ToFp32IsExactAndToBf16RoundsOnceToNearestEven) {
  const Tile b = bf16(1, 3, {1.0078125f, -0.0f, INFINITY});
  const Tile f = run("cast_f32", {b});
  ASSERT_EQ(f.dtype, DType::FP32);
  EXPECT_EQ(f.data->f, b.data->f);
  EXPECT_EQ(f32_bits(f.f(0, 1)), 0x80000000u);
  const Tile x = f32(1, 4, {0.1f, 1.0f, 2.0f, 3.0f});
  EXPECT_EQ(run("cast_f32", {x}).data->f, x.data->f);  // fp32 stays fp32
  // 1 + 2^-8 is a tie: to 1 (even); 1 + 3 * 2^-8 also a tie: to 1 + 2^-6 (even); 1 + 2^-8 + 2^-20
  // is above the tie: up; NaN stays NaN (quiet), +-Inf and -0 stay.
  const Tile r =
      run("cast_bf16",
          {f32(1, 7, {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-20f, NAN, -INFINITY, -0.0f, 0.1f})});
  ASSERT_EQ(r.dtype, DType::BF16);
  EXPECT_EQ(r.f(0, 0), 1.0f);
  EXPECT_EQ(r.f(0, 1), 1.015625f);
  EXPECT_EQ(r.f(0, 2), 1.0078125f);
  EXPECT_TRUE(std::isnan(r.f(0, 3)));
  EXPECT_EQ(r.f(0, 4), -INFINITY);
  EXPECT_EQ(f32_bits(r.f(0, 5)), 0x80000000u);
  EXPECT_EQ(r.f(0, 6), round_to_bf16(0.1f));
  // bf16 stays bf16; a round trip bf16 -> fp32 -> bf16 changes nothing.
  std::mt19937 rng(5);
  const Tile h = random_tile(4, 9, DType::BF16, rng, -100, 100);
  expect_bits_equal(run("cast_bf16", {h}), h);
  expect_bits_equal(run("cast_bf16", {run("cast_f32", {h})}), h);
}

TEST(LlmCast, FlopsTimingAndErrors) {
  EXPECT_EQ(flops("cast_f32", {shape_tile(4, 8)}), 0u);
  EXPECT_EQ(flops("cast_bf16", {shape_tile(4, 8, DType::FP32)}), 0u);
  const Tile t = run("cast_bf16", {shape_tile(4, 8, DType::FP32)});
  EXPECT_FALSE(t.has_data());
  EXPECT_EQ(t.to_string(), "T[4x8]");
  EXPECT_EQ(run("cast_f32", {shape_tile(2, 3)}).to_string(), "T[2x3:fp32]");
  expect_invalid([] { run("cast_f32", {i32(1, 2, {1, 2})}); }, {"map function 'cast_f32'", "T[1x2:int32]"});
  expect_invalid([] { run("cast_bf16", {shape_tile(1, 1, DType::INT32)}); }, {"'cast_bf16'", "T[1x1:int32]"});
}

// ---- RoPE rotations ----

TEST(LlmRotate, HandComputed) {
  const Tile x = f32(2, 4, {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(run("rotate_pairs", {x}).data->f, (std::vector<float>{-2, 1, -4, 3, -6, 5, -8, 7}));
  EXPECT_EQ(run("rotate_half", {x}).data->f, (std::vector<float>{-3, -4, 1, 2, -7, -8, 5, 6}));
  // [1 x 2]: both are the same rotation.
  EXPECT_EQ(run("rotate_pairs", {f32(1, 2, {3, 4})}).data->f, (std::vector<float>{-4, 3}));
  EXPECT_EQ(run("rotate_half", {f32(1, 2, {3, 4})}).data->f, (std::vector<float>{-4, 3}));
}

TEST(LlmRotate, ExactSignFlipsAndFourTurnsAreTheIdentity) {
  // +0 moved to a negated position becomes -0; NaN and Inf move (a NaN's sign flips).
  const Tile x = f32(1, 4, {1, 0.0f, INFINITY, fb(0x7fc00001u)});
  const Tile p = run("rotate_pairs", {x});
  EXPECT_EQ(f32_bits(p.f(0, 0)), 0x80000000u);
  EXPECT_EQ(p.f(0, 1), 1.0f);
  EXPECT_EQ(f32_bits(p.f(0, 2)), 0xffc00001u);
  EXPECT_EQ(p.f(0, 3), INFINITY);
  const Tile h = run("rotate_half", {x});
  EXPECT_EQ(h.f(0, 0), -INFINITY);
  EXPECT_EQ(f32_bits(h.f(0, 1)), 0xffc00001u);
  EXPECT_EQ(h.f(0, 2), 1.0f);
  EXPECT_EQ(f32_bits(h.f(0, 3)), 0x00000000u);
  // Each is a quarter turn of each pair: twice negates, four times is the identity, bit for bit.
  std::mt19937 rng(7);
  for (const char* fn : {"rotate_pairs", "rotate_half"})
    for (DType dt : {DType::BF16, DType::FP32}) {
      SCOPED_TRACE(std::string(fn) + " " + dtype_name(dt));
      const Tile a = random_tile(3, 16, dt, rng);
      const Tile twice = run(fn, {run(fn, {a})});
      EXPECT_EQ(twice.dtype, dt);
      expect_bits_equal(twice, run("neg", {a}));
      expect_bits_equal(run(fn, {run(fn, {twice})}), a);
    }
}

TEST(LlmRotate, OddColumnsRejectedFlopsAndTiming) {
  expect_invalid(
      [] {
        run("rotate_pairs", {f32(2, 3, {1, 2, 3, 4, 5, 6})});
      },
      {"map function 'rotate_pairs'", "even number of columns", "T[2x3:fp32]"});
  expect_invalid([] { run("rotate_half", {shape_tile(4, 7)}); }, {"'rotate_half'", "T[4x7]"});
  EXPECT_EQ(flops("rotate_pairs", {shape_tile(4, 8)}), 0u);
  EXPECT_EQ(flops("rotate_half", {shape_tile(4, 8)}), 0u);
  const Tile t = run("rotate_half", {shape_tile(4, 64)});
  EXPECT_FALSE(t.has_data());
  EXPECT_EQ(t.to_string(), "T[4x64]");
  EXPECT_EQ(run("rotate_pairs", {shape_tile(2, 0)}).to_string(), "T[2x0]");
}

// ---- row_mean, row_var ----

TEST(LlmRowMoments, HandComputed) {
  const Tile x = f32(2, 4, {1, 2, 3, 4, 2, 4, 4, 6});
  const Tile m = run("row_mean", {x}), v = run("row_var", {x});
  ASSERT_EQ(m.to_string(), "T[2x1:fp32]");
  ASSERT_EQ(v.to_string(), "T[2x1:fp32]");
  EXPECT_EQ(m.data->f, (std::vector<float>{2.5f, 4.0f}));
  EXPECT_EQ(v.data->f, (std::vector<float>{1.25f, 2.0f}));  // population variance (/ N)
  const Tile y = f32(1, 8, {2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_EQ(run("row_mean", {y}).f(0, 0), 5.0f);
  EXPECT_EQ(run("row_var", {y}).f(0, 0), 4.0f);
}

TEST(LlmRowMoments, LeftToRightThenOneDivision) {
  // (((1e8 + 1) - 1e8) + 1) = 1 in fp32 (1e8 + 1 rounds to 1e8): mean 1/4, not 2/4.
  EXPECT_EQ(run("row_mean", {f32(1, 4, {1e8f, 1, -1e8f, 1})}).f(0, 0), 0.25f);
  // The mean is fp32 (not rounded to bf16) inside row_var; the result is rounded once.
  const Tile b = bf16(1, 3, {1, 2, 2});
  const Tile m = run("row_mean", {b});
  EXPECT_EQ(m.dtype, DType::BF16);
  EXPECT_EQ(m.f(0, 0), round_to_bf16(5.0f / 3.0f));
  volatile float mean = 5.0f / 3.0f;
  volatile float d0 = 1.0f - mean, d1 = 2.0f - mean;
  volatile float s = d0 * d0;
  s = s + d1 * d1;
  s = s + d1 * d1;
  const Tile v = run("row_var", {b});
  EXPECT_EQ(v.dtype, DType::BF16);
  EXPECT_EQ(v.f(0, 0), round_to_bf16(s / 3.0f));
}

// Against the definitions written as plain loops, bit for bit, at widths that leave remainders.
TEST(LlmRowMoments, EqualTheirDefinitions) {
  std::mt19937 rng(9);
  for (uint32_t rows : {1u, 5u, 17u})
    for (uint32_t cols : {1u, 7u, 16u, 33u, 100u})
      for (DType dt : {DType::FP32, DType::BF16}) {
        SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " " + dtype_name(dt));
        const Tile x = random_tile(rows, cols, dt, rng, -50, 70);
        std::vector<float> mean, var;
        for (uint32_t i = 0; i < rows; ++i) {
          volatile float s = x.f(i, 0);
          for (uint32_t j = 1; j < cols; ++j) s = s + x.f(i, j);
          const float m = s / float(cols);
          volatile float d = x.f(i, 0) - m;
          volatile float q = d * d;
          for (uint32_t j = 1; j < cols; ++j) {
            d = x.f(i, j) - m;
            q = q + d * d;
          }
          mean.push_back(m);
          var.push_back(q / float(cols));
        }
        expect_bits_equal(run("row_mean", {x}), make_tile(rows, 1, dt, mean));
        expect_bits_equal(run("row_var", {x}), make_tile(rows, 1, dt, var));
      }
}

TEST(LlmRowMoments, NaNInfAndEmptyRows) {
  const Tile x = f32(3, 2, {1, INFINITY, 1, NAN, 3, 3});
  const Tile m = run("row_mean", {x}), v = run("row_var", {x});
  EXPECT_EQ(m.f(0, 0), INFINITY);
  EXPECT_TRUE(std::isnan(v.f(0, 0)));  // Inf - Inf
  EXPECT_TRUE(std::isnan(m.f(1, 0)));
  EXPECT_TRUE(std::isnan(v.f(1, 0)));
  EXPECT_EQ(m.f(2, 0), 3.0f);
  EXPECT_EQ(f32_bits(v.f(2, 0)), 0x00000000u);
  // A row of no columns: 0 / 0.
  const Tile e = make_tile(2, 0, DType::FP32, {});
  EXPECT_TRUE(std::isnan(run("row_mean", {e}).f(1, 0)));
  EXPECT_TRUE(std::isnan(run("row_var", {e}).f(0, 0)));
}

TEST(LlmRowMoments, FlopsTimingAndErrors) {
  EXPECT_EQ(flops("row_mean", {shape_tile(4, 8)}), 32u);     // N-1 adds and one division per row
  EXPECT_EQ(flops("row_var", {shape_tile(4, 8)}), 4u * 32);  // mean, subtract, square, sum, divide
  const Tile t = run("row_var", {shape_tile(16, 64)});
  EXPECT_FALSE(t.has_data());
  EXPECT_EQ(t.to_string(), "T[16x1]");
  EXPECT_EQ(run("row_mean", {shape_tile(3, 5, DType::FP32)}).to_string(), "T[3x1:fp32]");
  expect_invalid([] { run("row_mean", {i32(1, 2, {1, 2})}); }, {"map function 'row_mean'", "T[1x2:int32]"});
  expect_invalid([] { run("row_var", {shape_tile(1, 2), shape_tile(1, 2)}); }, {"'row_var'", "takes 1 input(s)"});
}

// ---- what already broadcasts ----

TEST(LlmBroadcast, ScalarAndRowVectorOperandsOfTheBinaryFunctions) {
  const Tile x = f32(2, 3, {1, 2, 3, 4, 5, 6});
  // sub and div by a [1x1] scalar, either side.
  EXPECT_EQ(run("sub", {x, f32(1, 1, {1})}).data->f, (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(run("div", {x, f32(1, 1, {2})}).data->f, (std::vector<float>{0.5f, 1, 1.5f, 2, 2.5f, 3}));
  EXPECT_EQ(run("div", {f32(1, 1, {6}), x}).data->f, (std::vector<float>{6, 3, 2, 1.5f, 1.2f, 1}));
  // mul by an [Mx1] row vector (LayerNorm's rstd) and sub of one: what a mul_row would be.
  EXPECT_EQ(run("mul", {x, f32(2, 1, {2, -1})}).data->f, (std::vector<float>{2, 4, 6, -4, -5, -6}));
  EXPECT_EQ(run("sub", {x, f32(2, 1, {1, 4})}).data->f, run("sub_row", {x, f32(2, 1, {1, 4})}).data->f);
  // LayerNorm from these: (x - row_mean) * rsqrt(row_var + eps).
  const Tile m = run("row_mean", {x}), v = run("row_var", {x});
  const Tile n = run("mul", {run("sub", {x, m}), run("rsqrt", {run("add", {v, f32(1, 1, {1e-5f})})})});
  ASSERT_EQ(n.to_string(), "T[2x3:fp32]");
  EXPECT_NEAR(n.f(0, 0), -1.2247357f, 1e-6f);
  EXPECT_NEAR(n.f(1, 2), 1.2247357f, 1e-6f);
  expect_invalid([] { run("div", {shape_tile(2, 3), shape_tile(3, 1)}); }, {"'div'", "T[2x3]", "T[3x1]"});
}

TEST(LlmTimingMode, EveryNewFunctionShapeOnlyInShapeOnlyOut) {
  for (const std::string& n : kNew) {
    SCOPED_TRACE(n);
    const std::vector<Tile> in =
        n == "select" ? std::vector<Tile>{shape_tile(4, 8, DType::INT32), shape_tile(4, 8), shape_tile(4, 8)}
                      : std::vector<Tile>{shape_tile(4, 8, DType::FP32)};
    const Tile out = run(n, in);
    EXPECT_FALSE(out.has_data());
    EXPECT_EQ(out.to_string(), map_function(n).out_shape(in).to_string());
  }
  expect_invalid(
      [] {
        run("select", {shape_tile(1, 1), f32(1, 1, {1}), shape_tile(1, 1)});
      },
      {"'select'", "mix payload"});
}

// ---- cat_rows / cat_cols (KV caches, torch.cat) ----

TEST(LlmConcat, RowsThenColumnsExactlyWithTheDtypeRule) {
  const Tile a = bf16(2, 2, {1, 2, 3, 4}), b = bf16(1, 2, {5, 6});
  Tile r = run("cat_rows", {a, b});
  EXPECT_EQ(r.rows, 3u);
  EXPECT_EQ(r.cols, 2u);
  EXPECT_EQ(r.dtype, DType::BF16);
  EXPECT_EQ(r.data->f, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  const Tile c = f32(2, 1, {0.1f, -0.0f});
  Tile k = run("cat_cols", {a, c});  // bf16 beside fp32: fp32, every value as it was
  EXPECT_EQ(k.rows, 2u);
  EXPECT_EQ(k.cols, 3u);
  EXPECT_EQ(k.dtype, DType::FP32);
  expect_bits_equal(k, f32(2, 3, {1, 2, 0.1f, 3, 4, -0.0f}));
  EXPECT_EQ(flops("cat_rows", {a, b}), 0u);
  EXPECT_EQ(map_function("cat_rows").signature.shape, TileSignature::Shape::kConcatRows);
  EXPECT_EQ(map_function("cat_cols").signature.shape, TileSignature::Shape::kConcatCols);
  EXPECT_FALSE(map_function("cat_cols").lanes.any());
}

TEST(LlmConcat, TimingTilesAndMismatchedShapesNamingBoth) {
  Tile a = shape_tile(16, 64, DType::BF16), b = shape_tile(1, 64, DType::BF16);
  Tile r = run("cat_rows", {a, b});
  EXPECT_FALSE(r.data);
  EXPECT_EQ(r.rows, 17u);
  expect_invalid([&] { run("cat_rows", {a, shape_tile(1, 32, DType::BF16)}); },
                 {"cat_rows", "equal columns", "[16x64", "[1x32"});
  expect_invalid([&] { run("cat_cols", {a, shape_tile(8, 64, DType::BF16)}); }, {"cat_cols", "equal rows"});
}

TEST(LlmCompare, OneWhereTrueZeroWhereFalseWithNaNAndBroadcasting) {
  const float nan = std::nanf("");
  const Tile a = f32(1, 4, {1.0f, 2.0f, nan, -0.0f}), b = f32(1, 1, {2.0f});
  EXPECT_EQ(run("gt", {a, b}).data->f, (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(run("ge", {a, b}).data->f, (std::vector<float>{0, 1, 0, 0}));
  EXPECT_EQ(run("lt", {a, b}).data->f, (std::vector<float>{1, 0, 0, 1}));
  EXPECT_EQ(run("le", {a, b}).data->f, (std::vector<float>{1, 1, 0, 1}));
  EXPECT_EQ(run("eq", {a, b}).data->f, (std::vector<float>{0, 1, 0, 0}));
  EXPECT_EQ(run("ne", {a, b}).data->f, (std::vector<float>{1, 0, 1, 1}));
  EXPECT_EQ(run("eq", {f32(1, 2, {0.0f, -0.0f}), f32(1, 2, {-0.0f, 0.0f})}).data->f, (std::vector<float>{1, 1}));
  EXPECT_EQ(run("gt", {bf16(1, 2, {1, 3}), bf16(1, 2, {2, 2})}).dtype, DType::BF16);
  EXPECT_EQ(flops("gt", {a, b}), 4u);
}

}  // namespace
}  // namespace stepsim
