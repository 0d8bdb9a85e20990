// Scalar fp32 kernels with a bit-exact definition (architecture.md §6).
//
// Every kernel below uses only IEEE-754 binary32 operations with round-to-nearest-even
// (add, sub, mul, div; compiled with -ffp-contract=off so nothing is fused), comparisons,
// integer/bit manipulation and the 64-entry table kExp2Table. No libm call takes part in
// any definition, so an RTL unit that performs the same operations in the same order
// reproduces every result bit for bit. The tile functions in functions.h apply these
// element-wise and round the fp32 result to bf16 once when the output dtype is bf16.
#pragma once

#include <cmath>
#include <cstdint>

#include "hw/stream/bf16.h"

namespace stepsim {

// kExp2Table[j] = 2^(j/64) correctly rounded (RNE) to fp32, j = 0..63, as bit patterns.
extern const uint32_t kExp2Table[64];

// exp(x), fp32 in / fp32 out. Definition (all operations fp32 RNE, in this order):
//   1. x NaN -> x with the quiet bit set.  x > 89 -> +Inf.  x < -104 -> +0.
//      (exp(89) overflows fp32 and exp(-104) < 2^-150 rounds to +0, so the clamps only
//      short-cut values the general path would also produce; they bound n below.)
//   2. z = x * 0x1.715476p+6f                       (64/ln2 rounded to fp32, 0x42b8aa3b)
//      n = (z + 0x1.8p23f) - 0x1.8p23f             (round z to the nearest integer, ties
//                                                   to even; exact for |z| < 2^22)
//      N = (int32)n
//   3. r = (x - n * L_HI) - n * L_LO               (Cody-Waite: L_HI = 0x3c314000 has 10
//      significant bits so n*L_HI is exact; L_LO = 0x37485fdf; L_HI + L_LO ~ ln2/64;
//      |r| <= ~ln2/128)
//   4. j = N & 63 (table index), k = N >> 6 (arithmetic shift, = floor(N/64))
//   5. q = r + (r*r) * (0.5f + r * C3)            (C3 = 0x3e2aaaab ~ 1/6; evaluated as
//      t = r*C3; t = 0.5f + t; t = (r*r) * t; q = r + t), so exp(r) ~ 1 + q
//   6. m = T[j] + T[j] * q                          (T = kExp2Table)
//   7. result = m * 2^k, applied as IEEE multiplications by exact powers of two:
//        -126 <= k <= 127 : m * 2^k
//        k > 127          : (m * 2^127) * 2^(k-127)      (overflows to +Inf as IEEE)
//        k < -126         : (m * 2^(k+64)) * 2^-64       (single rounding into subnormals)
// Measured accuracy against double-precision std::exp (numerics_test.cpp and a sweep of
// every 7th fp32 input): max relative error 1.17e-7 (1.96 x 2^-24) where the result is
// normal; max absolute error 1.37e-45 (< 1 x 2^-149) where it is subnormal. On every bf16
// input, round_to_bf16(exp_f32(x)) equals round_to_bf16 of the libm result.
inline float exp_f32(float x);

// sigmoid(x) = 1 / (1 + e^-x). Definition (fp32 RNE ops; division is IEEE fp32 division):
//   x NaN      -> quiet NaN
//   x >= 0     : e = exp_f32(-x); d = 1.0f + e; result = 1.0f / d
//   x <  0     : e = exp_f32(x);  d = 1.0f + e; result = e / d
// The sign split keeps the result accurate for large negative x (no overflow of e^-x).
// Measured max relative error 2.25e-7 (3.8 x 2^-24) for x >= -87 (normal results).
inline float sigmoid_f32(float x);

// SiLU(x) = x * sigmoid_f32(x) (one fp32 RNE multiplication). silu(-Inf) = -Inf * 0 = NaN,
// as PyTorch's x * sigmoid(x). Measured max relative error 2.6e-7 (4.4 x 2^-24) where the
// result is normal.
inline float silu_f32(float x);

// 1 / sqrt(x), for RMSNorm. Definition: s = sqrt(x) (IEEE fp32 square root, correctly rounded,
// as every IEEE 754 unit gives it); result = 1.0f / s (IEEE fp32 division). So x < 0 and NaN give
// NaN, +0 gives +Inf, -0 gives -Inf, +Inf gives +0. At most one rounding more than the exact
// reciprocal square root (2 roundings): numerics_test.cpp measures the error against libm.
inline float rsqrt_f32(float x);

// GELU, tanh form (PyTorch's gelu(approximate='tanh')):
//   0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
// Definition (fp32 RNE ops in this order; k0 = 0.7978845608f = sqrt(2/pi), k1 = 0.044715f):
//   c = (x * x) * x; i = x + k1 * c; u = k0 * i; t = tanh_f32(u); result = (0.5f * x) * (1.0f + t)
// with tanh_f32(u) = sign(u) * (1 - e) / (1 + e), e = exp_f32(-2 |u|) (|u| * 2 exact), NaN -> NaN.
// x = -Inf gives NaN ((-Inf) * 0), +Inf gives +Inf. 16 FLOPs/element
// (5 for i and u, 8 for tanh: the doubling, exp 4, two adds, one division; 3 for the result).
inline float gelu_tanh_f32(float x);
inline float tanh_f32(float u);

// max(a, b): NaN if either operand is NaN (the first NaN operand, quieted), otherwise the
// larger value; max(+0, -0) = max(-0, +0) = +0. (Propagating, like torch.maximum.)
inline float max_f32(float a, float b);

// ---- Definitions ----
// Inline, so that a tile loop compiled per instruction set (hw/stream/simd.h) vectorizes them.
// Written with selects rather than early returns where that lets the loops vectorize; every
// path computes what the definitions above say (the special cases are chosen after the general
// path, which then runs on a harmless input), so the results are the definitions' bits
// (testbench/functions/elementwise_kernel_test.cpp checks them against the plain branching form).

namespace numerics_detail {
inline bool is_nan(float x) { return x != x; }
inline float quiet(float x) { return f32_from_bits(f32_bits(x) | 0x00400000u); }
// 2^e as an fp32 value, for -126 <= e <= 127 (normal range only).
inline float pow2(int32_t e) { return f32_from_bits(uint32_t(e + 127) << 23); }
}  // namespace numerics_detail

inline float exp_f32(float x) {
  using namespace numerics_detail;
  const bool in_range = x >= -104.0f && x <= 89.0f;  // false for NaN too
  const float xr = in_range ? x : 0.0f;              // the general path below runs on xr
  const float z = xr * f32_from_bits(0x42b8aa3bu);   // 64/ln2
  const float n = (z + 12582912.0f) - 12582912.0f;   // 0x1.8p23: rounds z to an integer (RNE)
  const int32_t N = int32_t(n);
  const float r = (xr - n * f32_from_bits(0x3c314000u)) - n * f32_from_bits(0x37485fdfu);  // L_HI, L_LO
  const int32_t j = N & 63;
  const int32_t k = N >> 6;                  // arithmetic shift (floor division by 64)
  float t = r * f32_from_bits(0x3e2aaaabu);  // C3
  t = 0.5f + t;
  t = (r * r) * t;
  const float q = r + t;
  const float T = f32_from_bits(kExp2Table[j]);
  const float m = T + T * q;
  // m * 2^k as two exact scalings: (2^127, 2^(k-127)) above the normal range, (2^(k+64), 2^-64)
  // below it, (2^k, 1) inside (a product with 1 is exact).
  const int32_t e1 = k > 127 ? 127 : k < -126 ? k + 64 : k;
  const int32_t e2 = k > 127 ? k - 127 : k < -126 ? -64 : 0;
  const float general = (m * pow2(e1)) * pow2(e2);
  const float outside = x > 89.0f ? f32_from_bits(0x7f800000u) : 0.0f;  // +Inf above, +0 below
  return is_nan(x) ? quiet(x) : in_range ? general : outside;
}

inline float sigmoid_f32(float x) {
  using namespace numerics_detail;
  const bool positive = x >= 0.0f;
  const float e = exp_f32(positive ? -x : x);
  const float d = 1.0f + e;
  const float s = (positive ? 1.0f : e) / d;
  return is_nan(x) ? quiet(x) : s;
}

inline float silu_f32(float x) { return x * sigmoid_f32(x); }

inline float rsqrt_f32(float x) {
  const float s = std::sqrt(x);  // IEEE: correctly rounded
  return 1.0f / s;
}

inline float tanh_f32(float u) {
  using namespace numerics_detail;
  const bool negative = u < 0.0f;
  const float a = negative ? -u : u;
  const float e = exp_f32(-(a * 2.0f));
  const float t = (1.0f - e) / (1.0f + e);
  const float s = negative ? -t : t;
  return is_nan(u) ? quiet(u) : s;
}

inline float gelu_tanh_f32(float x) {
  const float k0 = 0.7978845608f, k1 = 0.044715f;
  const float c = (x * x) * x;
  const float i = x + k1 * c;
  const float u = k0 * i;
  const float t = tanh_f32(u);
  return (0.5f * x) * (1.0f + t);
}

inline float max_f32(float a, float b) {
  using namespace numerics_detail;
  const float equal = (f32_bits(a) & 0x80000000u) ? b : a;  // prefers +0 over -0
  const float larger = a == b ? equal : a > b ? a : b;
  return is_nan(a) ? quiet(a) : is_nan(b) ? quiet(b) : larger;
}

}  // namespace stepsim
