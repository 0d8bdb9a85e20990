// The tile functions' FLOP counts, written once over a number type N: uint64_t for the timing model
// (hw/functions/*_functions.cpp charge them per application) and GiNaC::ex for `stepsim analyze`
// (sim/shape/rules.cpp multiplies them by stream cardinalities). Each function's descriptor
// (MapFunction / AccumFunction::flop_rule, hw/functions/functions.h) says which formula applies.
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
};

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

}  // namespace stepsim
