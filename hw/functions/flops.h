// The tile functions' FLOP counts, written once over a number type N: uint64_t for the timing model
// (hw/functions/*_functions.cpp charge them per application) and GiNaC::ex for `stepsim analyze`
// (sim/shape/rules.cpp multiplies them by stream cardinalities). Each function's descriptor
// (MapFunction / AccumFunction::flop_rule, hw/functions/functions.h) says which formula applies.
// tile_arithmetic splits one application's FLOPs by kind (multiply-adds, exponentials, the rest),
// the arithmetic actions the energy report prices (sim/report/actions.def).
#pragma once

#include <cstdint>

namespace stepsim {

// How a function's FLOPs follow from its operand and output shapes.
struct FlopRule {
  enum class Kind : uint8_t {
    kNone,              // data movement or selects: 0
    kPerInputElement,   // per_element x the elements of operand 0 (row reductions, accumulating adds)
    kPerOutputElement,  // per_element x the output elements (element-wise functions)
    kMatmul,            // 2 M K N: one multiply and one add per product
    kFlashAttention,    // one online-softmax update, functions.h "flash_attn_update"
  };
  Kind kind = Kind::kNone;
  uint8_t per_element = 1;
  // Per-element rules: how many of an element's per_element FLOPs are exponentials (sigmoid,
  // SiLU, tanh, erf, GELU: one exp_f32 each; exp itself), each counted as kExpFlops FLOPs.
  uint8_t exps_per_element = 0;
};

// The FLOPs one exponential counts (exp_f32: table lookup plus polynomial).
constexpr uint64_t kExpFlops = 4;

// The shapes a FLOP formula reads: operand 0 is [in_rows x in_cols]; `n` is the output columns
// operand 1 contributes (N of a matmul, D of attention's V); the output is [out_rows x out_cols].
template <class N>
struct FlopDims {
  N in_rows, in_cols, n, out_rows, out_cols;
};

template <class N>
N tile_flops(const FlopRule& r, const FlopDims<N>& d) {
  switch (r.kind) {
    case FlopRule::Kind::kNone:
      return N(0);
    case FlopRule::Kind::kPerInputElement:
      return N(int(r.per_element)) * d.in_rows * d.in_cols;
    case FlopRule::Kind::kPerOutputElement:
      return N(int(r.per_element)) * d.out_rows * d.out_cols;
    case FlopRule::Kind::kMatmul:
      return N(2) * d.in_rows * d.in_cols * d.n;
    case FlopRule::Kind::kFlashAttention: {
      // S[M x T], V[T x D]: row max, subtract, exp (4), sum: 7 M T; P V: 2 M T D; the running max
      // and its rescale factor (max, sub, exp 4): 6 M; l' = a l + ls: 2 M; o' = a o + pv: 2 M D.
      const N& M = d.in_rows;
      const N& T = d.in_cols;
      const N& D = d.n;
      return N(7) * M * T + N(2) * M * T * D + N(6) * M + N(2) * M + N(2) * M * D;
    }
  }
  return N(0);
}

// One application's FLOPs by kind: flops = 2 macs + kExpFlops exps + others.
struct Arithmetic {
  uint64_t macs = 0;    // multiply-adds: a matmul's products, attention's P V and its o rescale
  uint64_t exps = 0;    // exponentials
  uint64_t others = 0;  // every other FLOP: adds, multiplies, compares, divisions, reductions
  uint64_t flops() const { return 2 * macs + kExpFlops * exps + others; }
  Arithmetic& operator+=(const Arithmetic& a) {
    macs += a.macs;
    exps += a.exps;
    others += a.others;
    return *this;
  }
};

// The split of tile_flops: the multiply-adds and exponentials the rule's formula contains; the
// rest of its FLOPs are `others` (so the total stays tile_flops, written once above).
inline Arithmetic tile_arithmetic(const FlopRule& r, const FlopDims<uint64_t>& d) {
  Arithmetic a;
  switch (r.kind) {
    case FlopRule::Kind::kNone:
      break;
    case FlopRule::Kind::kPerInputElement:
      a.exps = uint64_t(r.exps_per_element) * d.in_rows * d.in_cols;
      break;
    case FlopRule::Kind::kPerOutputElement:
      a.exps = uint64_t(r.exps_per_element) * d.out_rows * d.out_cols;
      break;
    case FlopRule::Kind::kMatmul:
      a.macs = d.in_rows * d.in_cols * d.n;
      break;
    case FlopRule::Kind::kFlashAttention:
      // P V: M T D multiply-adds, o' = a o + pv: M D; exp of every score and of each row's rescale.
      a.macs = d.in_rows * d.in_cols * d.n + d.in_rows * d.n;
      a.exps = d.in_rows * d.in_cols + d.in_rows;
      break;
  }
  a.others = tile_flops<uint64_t>(r, d) - 2 * a.macs - kExpFlops * a.exps;
  return a;
}

}  // namespace stepsim
