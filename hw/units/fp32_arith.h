// Bit-level IEEE binary32 arithmetic of the compute units: the integer-only, synthesizable
// form of the operations hw/functions performs with C++ floats (architecture.md §6), bit for
// bit, including subnormals and x86's NaN results, so that unit, RTL and approximate model agree:
//   * add and multiply round to nearest, ties to even; overflow gives Inf; no flush to zero;
//   * a NaN operand gives that NaN quieted (the first operand's when both are NaN);
//   * Inf - Inf and 0 * Inf give x86's default NaN 0xFFC00000;
//   * an exact zero sum is +0, except (-0) + (-0) = -0.
// bf16_round is hw/functions/bf16.h bf16_bits_from_f32; fp32_max is numerics.h max_f32.
// RTL twins: rtl/fp32_add.sv, rtl/fp32_mul.sv, rtl/fp32_max.sv, rtl/bf16_round.sv.
#pragma once

#include "hw/units/types.h"

namespace stepsim::units {

using f32_t = bits_t<32>;
using bf16_t = bits_t<16>;

constexpr uint32_t kDefaultNaN = 0xFFC00000u;

inline bool f32_is_nan(const f32_t& x) { return x.range(30, 23) == 0xFF && x.range(22, 0) != 0; }
inline bool f32_is_inf(const f32_t& x) { return x.range(30, 23) == 0xFF && x.range(22, 0) == 0; }

// Rounds an fp32 value to bf16 (RNE); NaN keeps its sign and upper payload, quiet bit set.
inline bf16_t bf16_round(const f32_t& x) {
  if (f32_is_nan(x)) return bf16_t(x.range(31, 16)) | bf16_t(0x0040);
  const bits_t<33> u = bits_t<33>(x) + bits_t<33>(0x7FFF) + bits_t<33>(x[16] ? 1 : 0);
  return bf16_t(u.range(31, 16));
}

// Leading zeros of a W-bit value (W when zero).
template <int W>
inline int leading_zeros(const bits_t<W>& v) {
  int n = W;
  for (int i = 0; i < W; ++i)
    if (v[i]) n = W - 1 - i;
  return n;
}

// Rounds m (24-bit significand in [26:3], guard in [2], sticky below) at biased exponent e
// (>= 1; significand bit 26 clear means subnormal when e == 1) and packs the result.
inline f32_t f32_round_pack(bool sign, int e, const bits_t<27>& m) {
  const bool g = m[2];
  const bool sticky = m[1] || m[0];
  const bool lsb = m[3];
  bits_t<25> sig = bits_t<25>(m.range(26, 3));
  if (g && (sticky || lsb)) sig = sig + 1;
  if (sig[24]) {  // carried out: 2^24
    sig = sig >> 1;
    e = e + 1;
  }
  f32_t r = 0;
  r[31] = sign;
  if (e >= 255) {
    r.range(30, 23) = 0xFF;  // overflow: Inf
  } else {
    r.range(30, 23) = sig[23] ? e : 0;
    r.range(22, 0) = sig.range(22, 0);
  }
  return r;
}

// a + b, fp32 RNE.
inline f32_t fp32_add(const f32_t& a, const f32_t& b) {
  const f32_t qbit = f32_t(0x00400000u);
  if (f32_is_nan(a)) return a | qbit;
  if (f32_is_nan(b)) return b | qbit;
  if (f32_is_inf(a) && f32_is_inf(b) && a[31] != b[31]) return f32_t(kDefaultNaN);
  if (f32_is_inf(a)) return a;
  if (f32_is_inf(b)) return b;
  // Order by magnitude: x is the larger.
  const bool swap = b.range(30, 0) > a.range(30, 0);
  const f32_t x = swap ? b : a;
  const f32_t y = swap ? a : b;
  const int ex = x.range(30, 23) == 0 ? 1 : int(x.range(30, 23));
  const int ey = y.range(30, 23) == 0 ? 1 : int(y.range(30, 23));
  bits_t<24> mx = bits_t<24>(x.range(22, 0));
  bits_t<24> my = bits_t<24>(y.range(22, 0));
  mx[23] = x.range(30, 23) != 0;
  my[23] = y.range(30, 23) != 0;
  // Align y: 3 extra bits (guard, round, sticky).
  const int d = ex - ey;
  bits_t<28> mxs = bits_t<28>(mx) << 3;
  bits_t<28> mys = bits_t<28>(my) << 3;
  if (d >= 27) {
    mys = my != 0 ? 1 : 0;
  } else if (d > 0) {
    bool st = false;
    for (int i = 0; i < 27; ++i)
      if (i < d && mys[i]) st = true;
    mys = mys >> d;
    if (st) mys[0] = 1;
  }
  const bool sign = x[31];
  int e = ex;
  bits_t<27> m = 0;
  if (x[31] == y[31]) {
    bits_t<28> s = mxs + mys;
    if (s[27]) {
      const bool st = s[0];
      s = s >> 1;
      if (st) s[0] = 1;
      e = e + 1;
    }
    m = bits_t<27>(s.range(26, 0));
  } else {
    const bits_t<28> diff = mxs - mys;
    if (diff == 0) return f32_t(0);  // exact cancellation: +0
    m = bits_t<27>(diff.range(26, 0));
    int lz = leading_zeros<27>(m);
    if (lz > e - 1) lz = e - 1;  // stop at the subnormal exponent
    m = m << lz;
    e = e - lz;
  }
  if (e >= 255) {
    f32_t r = 0;
    r[31] = sign;
    r.range(30, 23) = 0xFF;
    return r;
  }
  return f32_round_pack(sign, e, m);
}

// a * b, fp32 RNE.
inline f32_t fp32_mul(const f32_t& a, const f32_t& b) {
  const f32_t qbit = f32_t(0x00400000u);
  if (f32_is_nan(a)) return a | qbit;
  if (f32_is_nan(b)) return b | qbit;
  const bool sign = a[31] != b[31];
  const bool za = a.range(30, 0) == 0, zb = b.range(30, 0) == 0;
  if ((f32_is_inf(a) && zb) || (f32_is_inf(b) && za)) return f32_t(kDefaultNaN);
  f32_t r = 0;
  r[31] = sign;
  if (f32_is_inf(a) || f32_is_inf(b)) {
    r.range(30, 23) = 0xFF;
    return r;
  }
  if (za || zb) return r;
  const int ea = a.range(30, 23) == 0 ? 1 : int(a.range(30, 23));
  const int eb = b.range(30, 23) == 0 ? 1 : int(b.range(30, 23));
  bits_t<24> ma = bits_t<24>(a.range(22, 0));
  bits_t<24> mb = bits_t<24>(b.range(22, 0));
  ma[23] = a.range(30, 23) != 0;
  mb[23] = b.range(30, 23) != 0;
  bits_t<48> p = bits_t<48>(ma) * bits_t<48>(mb);
  const int lz = leading_zeros<48>(p);
  p = p << lz;
  // value = 1.p[46:0] * 2^(ea + eb - 127 - 126 - lz) -> biased exponent:
  int e = ea + eb - 126 - lz;
  if (e < 1) {  // subnormal: shift right to exponent 1, keeping a sticky bit
    const int sh = 1 - e;
    bool st = false;
    for (int i = 0; i < 48; ++i)
      if (i < sh && p[i]) st = true;
    p = sh >= 48 ? bits_t<48>(0) : bits_t<48>(p >> sh);
    if (st) p[0] = 1;
    e = 1;
  }
  if (e >= 255) {
    r.range(30, 23) = 0xFF;
    return r;
  }
  bits_t<27> m = bits_t<27>(p.range(47, 21));
  if (p.range(20, 0) != 0) m[0] = 1;
  return f32_round_pack(sign, e, m);
}

// max(a, b) as hw/functions/numerics.h max_f32: a NaN operand gives that NaN quieted (a's
// first); equal values (+0 and -0 too) give a unless a is negative (then b), which prefers
// +0 over -0; otherwise the larger value.
inline f32_t fp32_max(const f32_t& a, const f32_t& b) {
  const f32_t qbit = f32_t(0x00400000u);
  if (f32_is_nan(a)) return a | qbit;
  if (f32_is_nan(b)) return b | qbit;
  const bool zeros = a.range(30, 0) == 0 && b.range(30, 0) == 0;
  if (a == b || zeros) return a[31] ? b : a;
  bool a_gt;
  if (a[31] != b[31])
    a_gt = !a[31];
  else if (!a[31])
    a_gt = a.range(30, 0) > b.range(30, 0);
  else
    a_gt = a.range(30, 0) < b.range(30, 0);
  return a_gt ? a : b;
}

// A bf16 value (the upper half of its fp32 value) as fp32.
inline f32_t f32_from_bf16(const bf16_t& x) {
  f32_t r = 0;
  r.range(31, 16) = x.to_uint();
  return r;
}

}  // namespace stepsim::units
