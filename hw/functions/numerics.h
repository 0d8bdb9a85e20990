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
#include <cstddef>
#include <cstdint>

#include "hw/stream/bf16.h"

namespace stepsim {

// kExp2Table[j] = 2^(j/64) correctly rounded (RNE) to fp32, j = 0..63, as bit patterns.
extern const uint32_t kExp2Table[64];

// The polynomial coefficients of tanh_f32 and erf_f32 (below), fp32 bit patterns, highest degree
// first (horner_f32's order).
inline constexpr uint32_t kTanhP[6] = {0x3ae3a9e5u, 0xbbfae9b7u, 0x3cafbc2du, 0xbd5cbe9eu, 0x3e0886dcu, 0xbeaaaaa5u};
inline constexpr uint32_t kErfA[7] = {0x38a4b52cu, 0xba51fb88u, 0x3baa02dau, 0xbcdbfc87u,
                                      0x3de7167cu, 0xbec0939fu, 0x3e0375d4u};
inline constexpr uint32_t kErfB[7] = {0x394296a5u, 0xba81e722u, 0x3b970368u, 0xbca837c2u,
                                      0xbf68f199u, 0xc07d6a43u, 0xc08a2bf0u};

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
//   c = (x * x) * x; i = x + k1 * c; u = k0 * i; t = tanh_exp_f32(u);
//   result = (0.5f * x) * (1.0f + t)
// with tanh_exp_f32(u) = sign(u) * (1 - e) / (1 + e), e = exp_f32(-2 |u|) (|u| * 2 exact), NaN ->
// NaN.
// (tanh_exp_f32 is accurate in absolute terms only, which is all 1 + t needs; the Map function
// `tanh` uses tanh_f32 below.) x = -Inf gives NaN ((-Inf) * 0), +Inf gives +Inf. 16 FLOPs/element
// (5 for i and u, 8 for tanh: the doubling, exp 4, two adds, one division; 3 for the result).
inline float gelu_tanh_f32(float x);
inline float tanh_exp_f32(float u);

// sqrt(x): the IEEE fp32 square root (correctly rounded, as every IEEE 754 unit gives it). x < 0
// gives NaN, -0 gives -0, +Inf gives +Inf.
inline float sqrt_f32(float x);

// p(z) = c[0] z^(N-1) + ... + c[N-1] by Horner's rule, c the fp32 bit patterns, highest degree
// first: p = c[0]; p = p * z + c[k] for k = 1 .. N-1 (a multiplication, then an addition).
template <size_t N>
inline float horner_f32(const uint32_t (&c)[N], float z);

// tanh(u), accurate in relative terms (the Map function `tanh`). Definition (fp32 RNE ops in
// this order; a = |u| (sign bit cleared), s the sign bit of u, so tanh(-0) = -0):
//   a < 0.75 (polynomial):  z = a * a; p = horner_f32(P5..P0, z); q = z * p; t = a + a * q
//   a >= 0.75 (exp_f32):    e = exp_f32(-(a * 2.0f)); d = (e * 2.0f) / (1.0f + e); t = 1.0f - d
//   result = t with sign bit s (-t when u is negative); u NaN -> u quieted.
// P5..P0 = kTanhP (0.00173693581, -0.00765725551, 0.0214520339, -0.0538927242, 0.133326948,
// -0.333333164): a minimax fit of (tanh(a)/a - 1)/a^2 on [0, 0.75] in z = a^2, weighted for the
// relative error of tanh, rounded to fp32. From a = 9.0109 on the result is 1 (+-Inf gives +-1:
// e = +0). Tiny u gives u (z underflows). Measured max relative error against double-precision
// std::tanh over every finite fp32 input: 1.28e-7 (2.14 x 2^-24, at 0x1.807d9ap-1, just past the
// switch to exp_f32); 1.16e-7 over every 331st bit pattern (llm_map_test.cpp).
// 14 FLOPs/element, the longer path (polynomial: z, 10 for p, q, a * q, the add; exp path: 9).
inline float tanh_f32(float u);

// erf(x). Definition (fp32 RNE ops in this order; a = |x|, s the sign bit of x):
//   a < 1 (polynomial):        z = a * a; p = horner_f32(A6..A0, z); r = a + a * p
//   1 <= a < 4 (exp_f32):      t = a - 1.75f (exact for these a); q = horner_f32(B6..B0, t);
//                              r = 1.0f - exp_f32(q)
//   a >= 4 (and +-Inf):        r = 1.0f  (erfc(4) = 1.5e-8 < 2^-25: erf rounds to 1 from 3.92 on)
//   result = r with sign bit s (erf(-0) = -0); x NaN -> x quieted.
// A6..A0 = kErfA (7.85387529e-05, -0.000801019836, 0.00518832821, -0.0268538129, 0.112835854,
// -0.37612626, 0.128379166): erf(a)/a - 1 on [0, 1] in z = a^2, minimax for the relative error of
// erf. B6..B0 = kErfB (0.000185574012, -0.000991080189, 0.00460856035, -0.0205343999, -0.909936488,
// -3.9596107, -4.31786346): log(erfc(a)) on [1, 4] in t = a - 1.75, minimax for the absolute error
// of erfc = exp(q). Fits rounded to fp32. Measured max relative error against double-precision
// std::erf over every finite fp32 input: 1.16e-7 (1.95 x 2^-24, at 0x1.044e36p+0); 1.07e-7 over
// every 331st bit pattern (llm_map_test.cpp); subnormal results within 2^-149.
// 18 FLOPs/element, the longer path (exp path: t, 12 for q, exp 4, the subtraction; polynomial: 15).
inline float erf_f32(float x);

// GELU, exact form (PyTorch's gelu(approximate='none')): 0.5 x (1 + erf(x / sqrt(2))).
// Definition (fp32 RNE ops in this order; k = 0.70710677f = 0x3f3504f3, 1/sqrt(2) rounded):
//   v = x * k; e = erf_f32(v); result = (0.5f * x) * (1.0f + e); x NaN -> x quieted.
// x = -Inf gives NaN ((-Inf) * 0), +Inf gives +Inf; from x = -5.5433 on down 1 + e is 0 and the
// result -0. Measured against double precision (0.5 x erfc(-x / sqrt(2))) over every finite fp32
// input: max relative error 1.34e-7 (2.25 x 2^-24) for x >= 0; 8.73e-7 (14.6 x 2^-24, at -1.4999)
// on [-1.5, 0), where 1 + e cancels; below -1.5 max absolute error 8.69e-8 (the result is x times a
// difference of numbers near 1, as gelu_tanh's).
// 22 FLOPs/element (v, erf 18, 0.5 * x, the add, the product).
inline float gelu_f32(float x);

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

inline float tanh_exp_f32(float u) {
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
  const float t = tanh_exp_f32(u);
  return (0.5f * x) * (1.0f + t);
}

inline float sqrt_f32(float x) { return std::sqrt(x); }  // IEEE: correctly rounded

template <size_t N>
inline float horner_f32(const uint32_t (&c)[N], float z) {
  float p = f32_from_bits(c[0]);
  for (size_t k = 1; k < N; ++k) p = p * z + f32_from_bits(c[k]);
  return p;
}

// Both paths are computed and one is selected (vectorizable); the unused one may see Inf or NaN.
inline float tanh_f32(float u) {
  using namespace numerics_detail;
  const bool negative = (f32_bits(u) & 0x80000000u) != 0;
  const float a = f32_from_bits(f32_bits(u) & 0x7fffffffu);
  const float z = a * a;
  const float q = z * horner_f32(kTanhP, z);
  const float small = a + a * q;
  const float e = exp_f32(-(a * 2.0f));
  const float d = (e * 2.0f) / (1.0f + e);
  const float large = 1.0f - d;
  const float t = a < 0.75f ? small : large;
  const float s = negative ? -t : t;
  return is_nan(u) ? quiet(u) : s;
}

inline float erf_f32(float x) {
  using namespace numerics_detail;
  const bool negative = (f32_bits(x) & 0x80000000u) != 0;
  const float a = f32_from_bits(f32_bits(x) & 0x7fffffffu);
  const float z = a * a;
  const float small = a + a * horner_f32(kErfA, z);
  const float t = a - 1.75f;
  const float large = 1.0f - exp_f32(horner_f32(kErfB, t));
  const float r = a < 1.0f ? small : a < 4.0f ? large : 1.0f;
  const float s = negative ? -r : r;
  return is_nan(x) ? quiet(x) : s;
}

inline float gelu_f32(float x) {
  using namespace numerics_detail;
  const float v = x * f32_from_bits(0x3f3504f3u);  // 1/sqrt(2)
  const float e = erf_f32(v);
  const float g = (0.5f * x) * (1.0f + e);
  return is_nan(x) ? quiet(x) : g;
}

inline float max_f32(float a, float b) {
  using namespace numerics_detail;
  const float equal = (f32_bits(a) & 0x80000000u) ? b : a;  // prefers +0 over -0
  const float larger = a == b ? equal : a > b ? a : b;
  return is_nan(a) ? quiet(a) : is_nan(b) ? quiet(b) : larger;
}

}  // namespace stepsim
