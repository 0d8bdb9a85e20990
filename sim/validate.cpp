#include "sim/validate.h"

#include "sim/graph/ports.h"

namespace stepsim {

shape::GraphTypes validate_graph(const Graph& g, shape::SymbolTable& syms) {
  check_ports(g);
  return shape::infer_types(g, syms);
}

void check_before_run(const Graph& g) {
  try {
    shape::SymbolTable syms;
    validate_graph(g, syms);
  } catch (const shape::UntypableGraph&) {
  }
}

}  // namespace stepsim
