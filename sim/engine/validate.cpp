#include "sim/engine/validate.h"

#include "sim/graph/ports.h"

namespace stepsim {

shape::GraphTypes validate_graph(const Graph& g, shape::SymbolTable& syms) {
  check_ports(g);
  return shape::infer_types(g, syms);
}

std::shared_ptr<const StaticCheck> check_before_run(const Graph& g) {
  auto check = std::make_shared<StaticCheck>();
  try {
    check->types = validate_graph(g, check->syms);
  } catch (const shape::UntypableGraph&) {
    return nullptr;
  }
  return check;
}

}  // namespace stepsim
