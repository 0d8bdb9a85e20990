// Bit-accurate types of the cycle-accurate units: the ONE place that chooses them.
//
// Widths map exactly as Verilator 5.006 maps SystemVerilog ports when a model is built with
// `--sc --pins-sc-uint` (rtl/CMakeLists.txt), so a unit in hw/units and its Verilated RTL
// twin bind to the same sc_signal objects:
//   1 bit -> bool, 2..64 bits -> sc_uint<W>, wider -> sc_bv<W>.
// Not sc_biguint for the wide ports: with Verilator 5.006 and SystemC 2.3.4, --pins-sc-biguint
// outputs always read as zero (VL_ASSIGN_SBW fills the digits of a fresh sc_biguint without
// setting its sign field); inputs work. Measured here, see docs/unit-protocol.md.
// Wide values are payloads (selectors, packed tiles): units only move, slice and compare them.
// An HLS flow that prefers ac_int (Catapult) or native integers only has to change this file.
#pragma once

#include <systemc>
#include <type_traits>

namespace stepsim::units {

template <int W, typename = void>
struct BitsSel {
  static_assert(W >= 1, "port widths are at least 1 bit");
  using type = sc_dt::sc_bv<W>;
};
template <int W>
struct BitsSel<W, std::enable_if_t<(W >= 2 && W <= 64)>> {
  using type = sc_dt::sc_uint<W>;
};
template <>
struct BitsSel<1> {
  using type = bool;
};

// An unsigned W-bit value (port or register).
template <int W>
using bits_t = typename BitsSel<W>::type;

constexpr int kStopBits = 4;  // stop level S1..S15, 0 = none (architecture.md §3)
using stop_t = bits_t<kStopBits>;

// Bits needed to count 0..v-1 (ceil(log2(v)); 0 for v <= 1), for widths in templates.
constexpr int clog2(int v) {
  int r = 0;
  while ((1 << r) < v) ++r;
  return r;
}

// Bit i of a W-bit value (W = 1 is a bool).
template <int W>
inline bool bit_of(const bits_t<W>& v, int i) {
  if constexpr (W == 1) {
    (void)i;
    return v;
  } else if constexpr (W > 64) {
    return v[i].to_bool();
  } else {
    return v[i] != 0;
  }
}
template <int W>
inline void set_bit(bits_t<W>& v, int i, bool b) {
  if constexpr (W == 1) {
    (void)i;
    v = b;
  } else {
    v[i] = b;
  }
}
// All W bits set.
template <int W>
inline bits_t<W> all_ones() {
  if constexpr (W == 1) {
    return true;
  } else {
    bits_t<W> v = 0;
    v = ~v;
    return v;
  }
}
template <int W>
inline bool any_bit(const bits_t<W>& v) {
  if constexpr (W == 1)
    return v;
  else if constexpr (W > 64)
    return v.or_reduce();
  else
    return v != 0;
}

// a & b and a | b. For wide values word by word: SystemC's & | ^ on two sc_bv go through an
// sc_lv_base temporary whose clean_tail() shifts a 32-bit word by 32 when W is a multiple of 32
// (undefined behaviour, UBSan "shift exponent 32" at sc_lv_base.h:303; the result happened to
// be right). Same bits, no temporary.
template <int W>
inline bits_t<W> bits_and(const bits_t<W>& a, const bits_t<W>& b) {
  if constexpr (W > 64) {
    bits_t<W> r;
    for (int i = 0; i < r.size(); ++i) r.set_word(i, a.get_word(i) & b.get_word(i));
    return r;
  } else {
    return a & b;
  }
}
template <int W>
inline bits_t<W> bits_or(const bits_t<W>& a, const bits_t<W>& b) {
  if constexpr (W > 64) {
    bits_t<W> r;
    for (int i = 0; i < r.size(); ++i) r.set_word(i, a.get_word(i) | b.get_word(i));
    return r;
  } else {
    return a | b;
  }
}

// dst[dlo+W-1:dlo] = src[slo+W-1:slo] on wide values. SystemC's range-to-range assignment builds
// the same sc_lv_base temporary as & and | (a shift by 32 when W is a multiple of 32); going
// through a W-bit value does not.
template <int W, int WD, int WS>
inline void copy_range(bits_t<WD>& dst, int dlo, const bits_t<WS>& src, int slo) {
  if constexpr (W > 64) {
    const bits_t<W> v = src.range(slo + W - 1, slo);
    dst.range(dlo + W - 1, dlo) = v;
  } else {
    dst.range(dlo + W - 1, dlo) = src.range(slo + W - 1, slo).to_uint64();
  }
}

// Bits [lo+W-1:lo] of a WV-bit value, and the assignment to them (static bit loops).
template <int W, int WV>
inline bits_t<W> slice(const bits_t<WV>& v, int lo) {
  bits_t<W> r = 0;
  for (int k = 0; k < W; ++k) set_bit<W>(r, k, bit_of<WV>(v, lo + k));
  return r;
}
template <int W, int WV>
inline void set_slice(bits_t<WV>& v, int lo, const bits_t<W>& x) {
  for (int k = 0; k < W; ++k) set_bit<WV>(v, lo + k, bit_of<W>(x, k));
}

// The lowest set bit of v, as a one-hot value (0 when v is 0).
template <int W>
inline bits_t<W> lowest_one(const bits_t<W>& v) {
  bits_t<W> r = 0;
  bool found = false;
  for (int i = 0; i < W; ++i) {
    if (bit_of<W>(v, i) && !found) set_bit<W>(r, i, true);
    found = found || bit_of<W>(v, i);
  }
  return r;
}

}  // namespace stepsim::units
