// The operators' formulas, written once over a number type N: uint64_t where the fabric evaluates
// them on what a node saw during a run (hw/fabric/onchip_requirement.cpp), GiNaC::ex where
// `stepsim analyze` evaluates them on symbolic stream types (sim/shape/metrics.cpp). Which terms an
// operator has is data in its descriptor (OpInfo::onchip); this header only sums them, so the two
// evaluations cannot drift apart. No GiNaC here: hw/ stays free of it.
#pragma once

#include "hw/ops/op.h"

namespace stepsim {

// The quantities the on-chip formulas read, in bytes or elements.
template <class N>
struct OnChipTerms {
  N staging_tile = N(0);     // bytes of the staged tile (off-chip operators)
  N in_elem = N(0);          // bytes of the largest input element
  N out_elem = N(0);         // bytes of the largest output element
  N buffer_elems = N(0);     // elements of the largest buffer (card(buffer))
  N matmul_operands = N(0);  // 16 rows of operand 0 plus operand 1, bytes
  bool matmul = false;       // the node's function is a matmul
};

// Bytes a node needs on chip by formula `f` (a term with coefficient 0 is left out, so that a
// symbolic result has no 0 * x in it).
template <class N>
N onchip_requirement(const OnChipFormula& f, const OnChipTerms<N>& t) {
  N sum = N(0);
  auto add = [&sum](uint8_t coefficient, const N& term) {
    if (coefficient) sum = sum + N(int(coefficient)) * term;
  };
  add(f.staging_tile, t.staging_tile);
  add(f.in_elem, t.in_elem);
  add(f.buffer_x_in_elem, t.buffer_elems * t.in_elem);
  add(f.buffer_x_out_elem, t.buffer_elems * t.out_elem);
  add(f.out_elem, t.out_elem);
  if (t.matmul) add(f.matmul_operands, t.matmul_operands);
  return sum;
}

// The formula of the on-chip requirement model called `model` ("paper" or "artifact",
// onchip_requirement_models()); throws std::invalid_argument for another name.
const OnChipFormula& onchip_formula(const OpInfo& info, const std::string& model);

}  // namespace stepsim
