// exp / sigmoid / SiLU / max kernels (hw/functions/numerics.h): golden bit patterns (the
// definition, bit for bit) and accuracy against double-precision libm (test-side only).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <functional>

#include "hw/functions/numerics.h"
#include "hw/stream/bf16.h"

namespace stepsim {
namespace {

float fb(uint32_t u) { return f32_from_bits(u); }

TEST(Exp2Table, EntriesAreCorrectlyRounded) {
  for (int j = 0; j < 64; ++j) {
    const double exact = std::exp2(j / 64.0);
    const float t = fb(kExp2Table[j]);
    EXPECT_EQ(t, float(exact)) << "j=" << j;
    // within half an ulp (ulp of [1,2) is 2^-23)
    EXPECT_LE(std::fabs(double(t) - exact), std::ldexp(1.0, -24)) << "j=" << j;
  }
}

struct Golden {
  uint32_t x, y;
};

TEST(ExpF32, GoldenBitPatterns) {
  // Bit patterns of exp_f32 (regression guard for the RTL definition). All are within 1 ulp
  // of the correctly rounded value; most are equal to it.
  const Golden g[] = {
      {0x00000000u, 0x3f800000u},  // exp(0) = 1
      {0x80000000u, 0x3f800000u},  // exp(-0) = 1
      {0x3f800000u, 0x402df854u},  // exp(1) = e (correctly rounded)
      {0xbf800000u, 0x3ebc5ab2u},  // exp(-1)
      {0x3f000000u, 0x3fd3094du},  // exp(0.5)  (correctly rounded: 0x3fd3094c)
      {0x40200000u, 0x4142eb7fu},  // exp(2.5)
      {0xc0700000u, 0x3cc0a84au},  // exp(-3.75)
      {0x41200000u, 0x46ac14efu},  // exp(10)   (correctly rounded: 0x46ac14ee)
      {0x42b10000u, 0x7f4cdcc4u},  // exp(88.5)
      {0xc2b40000u, 0x0008ec28u},  // exp(-90): subnormal result
      {0xc2c80000u, 0x0000001bu},  // exp(-100): subnormal result
      {0xc1a00000u, 0x310da432u},  // exp(-20)
  };
  for (const auto& c : g)
    EXPECT_EQ(f32_bits(exp_f32(fb(c.x))), c.y) << "x=" << fb(c.x) << std::hex << " (0x" << c.x << ")";
}

TEST(ExpF32, SpecialValues) {
  EXPECT_TRUE(std::isnan(exp_f32(NAN)));
  EXPECT_TRUE(std::isnan(exp_f32(fb(0x7f800001u))));  // signalling NaN -> NaN
  EXPECT_EQ(exp_f32(INFINITY), INFINITY);
  EXPECT_EQ(f32_bits(exp_f32(-INFINITY)), 0u);  // +0
  EXPECT_EQ(exp_f32(89.0f), INFINITY);
  EXPECT_EQ(exp_f32(88.8f), INFINITY);  // k = 128 path overflows as IEEE
  EXPECT_TRUE(std::isfinite(exp_f32(88.72f)));
  EXPECT_EQ(f32_bits(exp_f32(-104.0f)), 0u);  // e^-104 < 2^-150 -> +0
  EXPECT_EQ(f32_bits(exp_f32(-200.0f)), 0u);
  EXPECT_GT(exp_f32(-103.0f), 0.0f);  // 2^-148.6: smallest subnormals
}

// Max relative error against double-precision std::exp over a sample of every fp32 value
// whose exp is a normal number, plus absolute error in the subnormal range.
TEST(ExpF32, AccuracyAgainstLibm) {
  double max_rel = 0, max_abs_sub = 0;
  float worst = 0;
  uint64_t n = 0;
  for (uint64_t u = 0; u < 0x100000000ull; u += 331) {
    const float x = fb(uint32_t(u));
    if (!(x >= -104.0f && x <= 88.72f)) continue;
    const double ref = std::exp(double(x));
    const double got = exp_f32(x);
    if (ref >= FLT_MIN) {
      const double rel = std::fabs(got - ref) / ref;
      if (rel > max_rel) max_rel = rel, worst = x;
      ++n;
    } else {
      max_abs_sub = std::max(max_abs_sub, std::fabs(got - ref));
    }
  }
  std::printf(
      "exp_f32: max rel error %.3e (%.2f x 2^-24) at %a over %llu samples; "
      "subnormal max abs error %.3e (2^-149 = %.3e)\n",
      max_rel, max_rel / std::ldexp(1.0, -24), worst, (unsigned long long)n, max_abs_sub, std::ldexp(1.0, -149));
  EXPECT_LT(max_rel, 1.25e-7);                    // ~2 x 2^-24
  EXPECT_LE(max_abs_sub, std::ldexp(1.0, -148));  // within 2 subnormal ulps
}

// Every finite bf16 input: the bf16-rounded exp_f32 is within one bf16 ulp of the
// bf16-rounded libm value (they differ only next to a rounding tie).
TEST(ExpF32, Bf16InputsWithinOneBf16Ulp) {
  int differ = 0;
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const float x = f32_from_bf16_bits(uint16_t(b));
    if (!std::isfinite(x) || x > 88.0f || x < -87.0f) continue;
    const uint16_t got = bf16_bits_from_f32(exp_f32(x));
    const uint16_t ref = bf16_bits_from_f32(float(std::exp(double(x))));
    EXPECT_LE(std::abs(int(got) - int(ref)), 1) << "x=" << x;
    differ += got != ref;
  }
  std::printf("exp_f32 on bf16 inputs: %d bf16 results differ (by 1 ulp) from libm\n", differ);
}

TEST(SigmoidF32, GoldenBitPatterns) {
  const Golden g[] = {
      {0x00000000u, 0x3f000000u},  // sigmoid(0) = 0.5
      {0x3f800000u, 0x3f3b26a8u},  // sigmoid(1)
      {0xbf800000u, 0x3e89b2b1u},  // sigmoid(-1)
      {0x40200000u, 0x3f6c948fu},  // sigmoid(2.5)
      {0xc0a00000u, 0x3bdb4fb4u},  // sigmoid(-5)
      {0x41a00000u, 0x3f800000u},  // sigmoid(20) = 1 in fp32
      {0xc1f00000u, 0x29d2b707u},  // sigmoid(-30)
      {0x3e000000u, 0x3f07fd57u},  // sigmoid(0.125)
  };
  for (const auto& c : g) EXPECT_EQ(f32_bits(sigmoid_f32(fb(c.x))), c.y) << "x=" << fb(c.x);
  EXPECT_TRUE(std::isnan(sigmoid_f32(NAN)));
  EXPECT_EQ(sigmoid_f32(INFINITY), 1.0f);
  EXPECT_EQ(f32_bits(sigmoid_f32(-INFINITY)), 0u);
}

TEST(SiluF32, GoldenBitPatterns) {
  const Golden g[] = {
      {0x00000000u, 0x00000000u},  // silu(0) = 0
      {0x3f800000u, 0x3f3b26a8u},  // silu(1)
      {0xbf800000u, 0xbe89b2b1u},  // silu(-1)
      {0x40200000u, 0x4013dcd9u},  // silu(2.5)
      {0xc0a00000u, 0xbd0911d0u},  // silu(-5)
      {0x41a00000u, 0x41a00000u},  // silu(20) = 20
      {0xc1f00000u, 0xac458b97u},  // silu(-30)
      {0x3e000000u, 0x3d87fd57u},  // silu(0.125)
  };
  for (const auto& c : g) EXPECT_EQ(f32_bits(silu_f32(fb(c.x))), c.y) << "x=" << fb(c.x);
  EXPECT_TRUE(std::isnan(silu_f32(NAN)));
  EXPECT_EQ(silu_f32(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(silu_f32(-INFINITY)));  // -Inf * 0, as PyTorch's x*sigmoid(x)
}

double max_rel_error(const std::function<float(float)>& f, const std::function<double(double)>& ref, float lo, float hi,
                     float* worst) {
  double m = 0;
  for (uint64_t u = 0; u < 0x100000000ull; u += 331) {
    const float x = fb(uint32_t(u));
    if (!(x >= lo && x <= hi)) continue;
    const double r = ref(double(x));
    if (std::fabs(r) < FLT_MIN) continue;  // relative error is only meaningful for normals
    const double e = std::fabs(double(f(x)) - r) / std::fabs(r);
    if (e > m) m = e, *worst = x;
  }
  return m;
}

TEST(SigmoidF32, AccuracyAgainstLibm) {
  float worst = 0;
  const double e = max_rel_error(
      sigmoid_f32, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -87.0f, 1e30f, &worst);
  std::printf("sigmoid_f32: max rel error %.3e (%.2f x 2^-24) at %a\n", e, e / std::ldexp(1.0, -24), worst);
  EXPECT_LT(e, 3.0e-7);
}

TEST(SiluF32, AccuracyAgainstLibm) {
  float worst = 0;
  const double e = max_rel_error(
      silu_f32, [](double x) { return x / (1.0 + std::exp(-x)); }, -85.0f, 1e30f, &worst);
  std::printf("silu_f32: max rel error %.3e (%.2f x 2^-24) at %a\n", e, e / std::ldexp(1.0, -24), worst);
  EXPECT_LT(e, 3.0e-7);
}

TEST(MaxF32, Semantics) {
  EXPECT_EQ(max_f32(1.0f, 2.0f), 2.0f);
  EXPECT_EQ(max_f32(-1.0f, -2.0f), -1.0f);
  EXPECT_EQ(max_f32(-INFINITY, 3.0f), 3.0f);
  EXPECT_TRUE(std::isnan(max_f32(NAN, 1.0f)));
  EXPECT_TRUE(std::isnan(max_f32(1.0f, NAN)));
  EXPECT_EQ(f32_bits(max_f32(0.0f, -0.0f)), 0u);
  EXPECT_EQ(f32_bits(max_f32(-0.0f, 0.0f)), 0u);
  EXPECT_EQ(f32_bits(max_f32(-0.0f, -0.0f)), 0x80000000u);
}

// rsqrt_f32 is sqrt then divide, each IEEE-rounded: the special values follow from IEEE.
TEST(RsqrtF32, SpecialValuesAndGoldenBits) {
  EXPECT_EQ(f32_bits(rsqrt_f32(4.0f)), f32_bits(0.5f));
  EXPECT_EQ(f32_bits(rsqrt_f32(0.0f)), 0x7f800000u);    // +Inf
  EXPECT_EQ(f32_bits(rsqrt_f32(-0.0f)), 0xff800000u);   // -Inf
  EXPECT_EQ(f32_bits(rsqrt_f32(INFINITY)), 0x00000000u);
  EXPECT_TRUE(std::isnan(rsqrt_f32(-1.0f)));
  EXPECT_TRUE(std::isnan(rsqrt_f32(NAN)));
  EXPECT_EQ(f32_bits(rsqrt_f32(2.0f)), 0x3f3504f3u);   // 1/sqrt(2) = 0.70710677
  EXPECT_EQ(f32_bits(rsqrt_f32(0x1p-149f)), 0x64b504f3u);  // the smallest subnormal: 2^74.5 rounded
}

TEST(RsqrtF32, AccuracyAgainstLibm) {
  float worst = 0;
  const double e = max_rel_error(
      rsqrt_f32, [](double x) { return 1.0 / std::sqrt(x); }, 1e-30f, 1e30f, &worst);
  std::printf("rsqrt_f32: max rel error %.3e (%.2f x 2^-24) at %a\n", e, e / std::ldexp(1.0, -24), worst);
  EXPECT_LT(e, 2.0e-7);
}

TEST(GeluTanhF32, SpecialValuesAndSymmetry) {
  EXPECT_EQ(f32_bits(gelu_tanh_f32(0.0f)), 0x00000000u);
  EXPECT_EQ(f32_bits(gelu_tanh_f32(INFINITY)), 0x7f800000u);
  EXPECT_TRUE(std::isnan(gelu_tanh_f32(-INFINITY)));
  EXPECT_TRUE(std::isnan(gelu_tanh_f32(NAN)));
  EXPECT_EQ(f32_bits(tanh_exp_f32(-0.5f)), f32_bits(-tanh_exp_f32(0.5f)));  // odd by construction
  EXPECT_EQ(f32_bits(gelu_tanh_f32(-20.0f)), 0x80000000u);                  // -0: tanh(u) rounds to -1
}

TEST(GeluTanhF32, AccuracyAgainstLibm) {
  float worst = 0;
  auto gelu = [](double x) { return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); };
  const double e = max_rel_error(gelu_tanh_f32, gelu, -1.5f, 1e6f, &worst);
  std::printf("gelu_tanh_f32: max rel error %.3e (%.2f x 2^-24) at %a on [-1.5, 1e6]\n", e,
              e / std::ldexp(1.0, -24), worst);
  EXPECT_LT(e, 1.0e-6);
  // Below -1.5 the result is x times a small difference (1 + tanh, tanh near -1): relative error
  // grows; the absolute error stays within two fp32 ulps of 1 (measured 1.57e-7).
  double abs_err = 0;
  for (float x = -10.0f; x < -1.5f; x += 0.001f)
    abs_err = std::max(abs_err, std::fabs(double(gelu_tanh_f32(x)) - gelu(double(x))));
  std::printf("gelu_tanh_f32: max abs error %.3e on [-10, -1.5]\n", abs_err);
  EXPECT_LT(abs_err, 2.4e-7);
}

}  // namespace
}  // namespace stepsim
