// The units' bit-level fp32 arithmetic (hw/units/fp32_arith.h) against the C++ float
// operations hw/functions uses (architecture.md §6): identical bits on random operands of
// every class (normal, subnormal, zero, Inf, NaN), near-cancellations and bf16 values.
#include <gtest/gtest.h>

#include <random>

#include "hw/functions/numerics.h"
#include "hw/stream/bf16.h"
#include "hw/units/fp32_arith.h"

namespace stepsim::units {
namespace {

// Native operations, kept out of line so the compiler cannot fold or reorder them.
__attribute__((noinline)) float native_add(float a, float b) { return a + b; }
__attribute__((noinline)) float native_mul(float a, float b) { return a * b; }
__attribute__((noinline)) float native_div(float a, float b) { return a / b; }

uint32_t random_operand(std::mt19937_64& rng) {
  const uint32_t u = uint32_t(rng());
  switch (rng() % 8) {
    case 0:
      return u & 0x807FFFFFu;  // zero / subnormal
    case 1:
      return (u & 0x80000000u) | 0x7F800000u;  // Inf
    case 2:
      return (u | 0x7F800000u) | ((u & 0x007FFFFFu) ? 0 : 1);  // NaN (quiet or signalling)
    case 3:
      return u & 0xFFFF0000u;  // a bf16 value
    case 4:
      return (u & 0x80FFFFFFu) | (uint32_t(rng() % 4) << 23);  // tiny exponents
    case 5:
      return (u & 0x80FFFFFFu) | (uint32_t(251 + rng() % 4) << 23);  // huge exponents
    default:
      return u;
  }
}

TEST(Fp32Arith, AddMatchesNativeFloat) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t a = random_operand(rng);
    uint32_t b = random_operand(rng);
    if (i % 4 == 0) b = (a ^ 0x80000000u) + uint32_t(int(rng() % 64) - 32);   // near-cancellation
    if (i % 4 == 1) b = (a & 0x7F800000u) | (uint32_t(rng()) & 0x807FFFFFu);  // equal exponents
    const uint32_t want = f32_bits(native_add(f32_from_bits(a), f32_from_bits(b)));
    const uint32_t got = uint32_t(fp32_add(f32_t(a), f32_t(b)).to_uint());
    ASSERT_EQ(got, want) << std::hex << "a=" << a << " b=" << b;
  }
}

TEST(Fp32Arith, MulMatchesNativeFloat) {
  std::mt19937_64 rng(8);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t a = random_operand(rng);
    uint32_t b = random_operand(rng);
    if (i % 3 == 0)
      b = (uint32_t(254 - ((a >> 23) & 0xFF) + int(rng() % 40) - 20) << 23) | (uint32_t(rng()) & 0x807FFFFFu);
    const uint32_t want = f32_bits(native_mul(f32_from_bits(a), f32_from_bits(b)));
    const uint32_t got = uint32_t(fp32_mul(f32_t(a), f32_t(b)).to_uint());
    ASSERT_EQ(got, want) << std::hex << "a=" << a << " b=" << b;
  }
}

TEST(Fp32Arith, Bf16RoundMatchesBf16h) {
  std::mt19937_64 rng(9);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t a = random_operand(rng);
    ASSERT_EQ(uint32_t(bf16_round(f32_t(a)).to_uint()), bf16_bits_from_f32(f32_from_bits(a))) << std::hex << a;
  }
}

TEST(Fp32Arith, DivMatchesNativeFloat) {
  std::mt19937_64 rng(10);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t a = random_operand(rng);
    uint32_t b = random_operand(rng);
    if (i % 3 == 0) b = (a & 0x807FFFFFu) | (uint32_t(rng() % 255) << 23);  // equal significands
    if (i % 3 == 1)
      b = (uint32_t(rng()) & 0x807FFFFFu) | (uint32_t(rng() % 2 ? 127 : 128) << 23);  // [1, 4): sigmoid's d
    const uint32_t want = f32_bits(native_div(f32_from_bits(a), f32_from_bits(b)));
    const uint32_t got = uint32_t(fp32_div(f32_t(a), f32_t(b)).to_uint());
    ASSERT_EQ(got, want) << std::hex << "a=" << a << " b=" << b;
  }
}

// exp / sigmoid / silu: every bf16 input, and random fp32 inputs (most in the interesting range).
TEST(Fp32Arith, ExpSigmoidSiluMatchNumerics) {
  std::mt19937_64 rng(11);
  for (uint32_t i = 0; i < 65536 + 100000; ++i) {
    uint32_t x = i < 65536 ? i << 16 : random_operand(rng);
    if (i >= 65536 && i % 2) x = (uint32_t(rng()) & 0x807FFFFFu) | (uint32_t(100 + rng() % 34) << 23);  // |x| < 128
    const float f = f32_from_bits(x);
    ASSERT_EQ(uint32_t(fp32_exp(f32_t(x)).to_uint()), f32_bits(exp_f32(f))) << std::hex << "exp " << x;
    ASSERT_EQ(uint32_t(fp32_sigmoid(f32_t(x)).to_uint()), f32_bits(sigmoid_f32(f))) << std::hex << "sigmoid " << x;
    ASSERT_EQ(uint32_t(fp32_silu(f32_t(x)).to_uint()), f32_bits(silu_f32(f))) << std::hex << "silu " << x;
  }
}

}  // namespace
}  // namespace stepsim::units
