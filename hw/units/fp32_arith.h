// Bit-level IEEE binary32 arithmetic of the compute units: the integer-only, synthesizable
// form of the operations hw/functions performs with C++ floats (architecture.md §6), bit for
// bit, including subnormals and x86's NaN results, so that unit, RTL and approximate model agree:
//   * add and multiply round to nearest, ties to even; overflow gives Inf; no flush to zero;
//   * a NaN operand gives that NaN quieted (the first operand's when both are NaN);
//   * Inf - Inf and 0 * Inf give x86's default NaN 0xFFC00000;
//   * an exact zero sum is +0, except (-0) + (-0) = -0.
// bf16_round is hw/stream/bf16.h bf16_bits_from_f32; fp32_max is numerics.h max_f32;
// fp32_div is IEEE division (x86 divss); fp32_exp, fp32_sigmoid and fp32_silu are numerics.h
// exp_f32, sigmoid_f32 and silu_f32, the same operations in the same order.
// RTL twins: rtl/fp32_add.sv, rtl/fp32_mul.sv, rtl/fp32_max.sv, rtl/bf16_round.sv,
// rtl/fp32_div.sv, rtl/fp32_exp.sv, rtl/fp32_silu.sv.
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

// a / b, fp32 RNE: a NaN operand gives that NaN quieted (a's first); 0/0 and Inf/Inf give
// 0xFFC00000; x/0 = Inf, x/Inf = 0 with the sign of the quotient. The significands (subnormals
// normalized first) are divided by restoring division, 27 quotient bits and a sticky remainder.
inline f32_t fp32_div(const f32_t& a, const f32_t& b) {
  const f32_t qbit = f32_t(0x00400000u);
  if (f32_is_nan(a)) return a | qbit;
  if (f32_is_nan(b)) return b | qbit;
  const bool sign = a[31] != b[31];
  const bool za = a.range(30, 0) == 0, zb = b.range(30, 0) == 0;
  if ((za && zb) || (f32_is_inf(a) && f32_is_inf(b))) return f32_t(kDefaultNaN);
  f32_t r = 0;
  r[31] = sign;
  if (f32_is_inf(a) || zb) {
    r.range(30, 23) = 0xFF;
    return r;
  }
  if (za || f32_is_inf(b)) return r;
  bits_t<24> ma = bits_t<24>(a.range(22, 0)), mb = bits_t<24>(b.range(22, 0));
  ma[23] = a.range(30, 23) != 0;
  mb[23] = b.range(30, 23) != 0;
  const int la = leading_zeros<24>(ma), lb = leading_zeros<24>(mb);
  ma = ma << la;
  mb = mb << lb;
  const int ea = (a.range(30, 23) == 0 ? 1 : int(a.range(30, 23))) - la;
  const int eb = (b.range(30, 23) == 0 ? 1 : int(b.range(30, 23))) - lb;
  // q = floor(ma / mb * 2^26): ma / mb is in (1/2, 2).
  bits_t<25> rem = bits_t<25>(ma);
  bits_t<27> q = 0;
  for (int i = 26; i >= 0; --i) {
    const bool ge = rem >= bits_t<25>(mb);
    q[i] = ge;
    if (ge) rem = rem - bits_t<25>(mb);
    rem = rem << 1;
  }
  int e = ea - eb + 127;
  bits_t<27> m = q;
  if (!q[26]) {  // quotient below 1: one more bit of it is significant
    m = q << 1;
    e = e - 1;
  }
  if (rem != 0) m[0] = 1;
  if (e < 1) {  // subnormal: shift right to exponent 1, keeping a sticky bit
    const int sh = 1 - e;
    bool st = false;
    for (int i = 0; i < 27; ++i)
      if (i < sh && m[i]) st = true;
    m = sh >= 27 ? bits_t<27>(0) : bits_t<27>(m >> sh);
    if (st) m[0] = 1;
    e = 1;
  }
  if (e >= 255) {
    r.range(30, 23) = 0xFF;
    return r;
  }
  return f32_round_pack(sign, e, m);
}

// a < b for values that are not NaN (-0 == +0).
inline bool f32_less(const f32_t& a, const f32_t& b) {
  const bool za = a.range(30, 0) == 0, zb = b.range(30, 0) == 0;
  if (za && zb) return false;
  if (a[31] != b[31]) return a[31];
  return a[31] ? a.range(30, 0) > b.range(30, 0) : a.range(30, 0) < b.range(30, 0);
}

inline f32_t f32_neg(const f32_t& x) { return x ^ f32_t(0x80000000u); }

// 2^e as fp32 for -126 <= e <= 127.
inline f32_t f32_pow2(int e) {
  f32_t r = 0;
  r.range(30, 23) = e + 127;
  return r;
}

// kExp2Table[j] of hw/functions/numerics.cpp: 2^(j/64) rounded to fp32.
inline f32_t exp2_table(int j) {
  constexpr uint32_t kTable[64] = {
      0x3f800000u, 0x3f8164d2u, 0x3f82cd87u, 0x3f843a29u, 0x3f85aac3u, 0x3f871f62u, 0x3f88980fu, 0x3f8a14d5u,
      0x3f8b95c2u, 0x3f8d1adfu, 0x3f8ea43au, 0x3f9031dcu, 0x3f91c3d3u, 0x3f935a2bu, 0x3f94f4f0u, 0x3f96942du,
      0x3f9837f0u, 0x3f99e046u, 0x3f9b8d3au, 0x3f9d3edau, 0x3f9ef532u, 0x3fa0b051u, 0x3fa27043u, 0x3fa43516u,
      0x3fa5fed7u, 0x3fa7cd94u, 0x3fa9a15bu, 0x3fab7a3au, 0x3fad583fu, 0x3faf3b79u, 0x3fb123f6u, 0x3fb311c4u,
      0x3fb504f3u, 0x3fb6fd92u, 0x3fb8fbafu, 0x3fbaff5bu, 0x3fbd08a4u, 0x3fbf179au, 0x3fc12c4du, 0x3fc346cdu,
      0x3fc5672au, 0x3fc78d75u, 0x3fc9b9beu, 0x3fcbec15u, 0x3fce248cu, 0x3fd06334u, 0x3fd2a81eu, 0x3fd4f35bu,
      0x3fd744fdu, 0x3fd99d16u, 0x3fdbfbb8u, 0x3fde60f5u, 0x3fe0ccdfu, 0x3fe33f89u, 0x3fe5b907u, 0x3fe8396au,
      0x3feac0c7u, 0x3fed4f30u, 0x3fefe4bau, 0x3ff28177u, 0x3ff5257du, 0x3ff7d0dfu, 0x3ffa83b3u, 0x3ffd3e0cu,
  };
  return f32_t(kTable[j]);
}

// The integer value of an fp32 value that holds an integer of magnitude < 2^24 (C++ (int32)n).
inline int f32_to_int(const f32_t& n) {
  const int e = int(n.range(30, 23)) - 127;
  if (e < 0) return 0;
  bits_t<24> m = bits_t<24>(n.range(22, 0));
  m[23] = 1;
  const int v = int(bits_t<24>(m >> (23 - e)).to_uint());
  return n[31] ? -v : v;
}

// exp_f32 of numerics.h, step by step (fp32 RNE operations in its order).
inline f32_t fp32_exp(const f32_t& x) {
  if (f32_is_nan(x)) return x | f32_t(0x00400000u);
  if (f32_less(f32_t(0x42B20000u), x)) return f32_t(0x7F800000u);  // x > 89
  if (f32_less(x, f32_t(0xC2D00000u))) return f32_t(0);            // x < -104
  const f32_t magic = f32_t(0x4B400000u);                          // 0x1.8p23
  const f32_t z = fp32_mul(x, f32_t(0x42B8AA3Bu));
  const f32_t n = fp32_add(fp32_add(z, magic), f32_neg(magic));
  const int N = f32_to_int(n);
  const f32_t r =
      fp32_add(fp32_add(x, f32_neg(fp32_mul(n, f32_t(0x3C314000u)))), f32_neg(fp32_mul(n, f32_t(0x37485FDFu))));
  const int j = N & 63;
  const int k = N >> 6;  // floor(N / 64)
  f32_t t = fp32_mul(r, f32_t(0x3E2AAAABu));
  t = fp32_add(f32_t(0x3F000000u), t);
  t = fp32_mul(fp32_mul(r, r), t);
  const f32_t q = fp32_add(r, t);
  const f32_t tj = exp2_table(j);
  const f32_t m = fp32_add(tj, fp32_mul(tj, q));
  if (k > 127) return fp32_mul(fp32_mul(m, f32_pow2(127)), f32_pow2(k - 127));
  if (k < -126) return fp32_mul(fp32_mul(m, f32_pow2(k + 64)), f32_pow2(-64));
  return fp32_mul(m, f32_pow2(k));
}

// sigmoid_f32 of numerics.h.
inline f32_t fp32_sigmoid(const f32_t& x) {
  if (f32_is_nan(x)) return x | f32_t(0x00400000u);
  const f32_t one = f32_t(0x3F800000u);
  const bool neg = f32_less(x, f32_t(0));
  const f32_t e = fp32_exp(neg ? x : f32_neg(x));
  const f32_t d = fp32_add(one, e);
  return fp32_div(neg ? e : one, d);
}

// silu_f32 of numerics.h: x * sigmoid(x).
inline f32_t fp32_silu(const f32_t& x) { return fp32_mul(x, fp32_sigmoid(x)); }

}  // namespace stepsim::units
