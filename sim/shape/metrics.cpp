#include "sim/shape/metrics.h"

#include "hw/ops/op_formulas.h"

namespace stepsim::shape {

using namespace GiNaC;

namespace {

ex port_elem_bytes(const std::map<std::string, StreamType>& m, const std::string& port) {
  auto it = m.find(port);
  return it == m.end() ? ex(0) : it->second.elem.bytes();
}

// The operands of a higher-order node's function (a single tuple input is unpacked).
std::vector<ElemType> operands(const NodeTypes& t) {
  std::vector<ElemType> v;
  for (size_t i = 0;; ++i) {
    auto it = t.inputs.find("in" + std::to_string(i));
    if (it == t.inputs.end()) break;
    v.push_back(it->second.elem);
  }
  if (v.size() == 1 && v[0].kind == ElemType::Tuple) return v[0].members;
  return v;
}

// 16 rows of operand 0 (in bytes) + operand 1: the paper's matmul term.
ex matmul_operand_bytes(const NodeTypes& t) {
  std::vector<ElemType> ops = operands(t);
  ex b = 0;
  if (!ops.empty() && ops[0].kind == ElemType::Tile) b += 16 * ops[0].cols * int64_t(dtype_bytes(ops[0].dtype));
  if (ops.size() > 1) b += ops[1].bytes();
  return b;
}

// The elements of the buffer a node writes (Bufferize's output) or reads (Streamify's input).
ex buffer_elems(const NodeTypes& t) {
  for (const auto* ports : {&t.outputs, &t.inputs})
    for (const auto& [port, type] : *ports)
      if (type.elem.kind == ElemType::Buffer) return card_of(type.elem.buffer_dims);
  return 0;
}

// The descriptor's on-chip terms on the node's symbolic types (hw/ops/op_formulas.h sums them, as
// the fabric does on what a run observed).
OnChipTerms<ex> onchip_terms(const NodeSpec& n, const OpInfo& info, const NodeTypes& t) {
  OnChipTerms<ex> terms;
  const OffChipTraffic& tr = info.traffic;
  if (tr.direction != OffChipTraffic::Direction::kNone)
    terms.staging_tile =
        port_elem_bytes(tr.direction == OffChipTraffic::Direction::kWrite ? t.inputs : t.outputs, tr.port);
  terms.in_elem = port_elem_bytes(t.inputs, "in");
  terms.out_elem = port_elem_bytes(t.outputs, "out");
  terms.buffer_elems = buffer_elems(t);
  terms.matmul_operands = matmul_operand_bytes(t);
  auto fn = n.params.find("fn");
  terms.matmul = fn != n.params.end() && applies_matmul(info, fn->second);
  return terms;
}

// Off-chip traffic: the cardinality of the stream read or written x element bytes.
void add_traffic(const OpInfo& info, const NodeTypes& t, NodeMetrics& m) {
  const OffChipTraffic& tr = info.traffic;
  if (tr.direction == OffChipTraffic::Direction::kRead) m.read_bytes = stream_bytes(t.outputs.at(tr.port));
  if (tr.direction == OffChipTraffic::Direction::kWrite) m.write_bytes = stream_bytes(t.inputs.at(tr.port));
}

}  // namespace

GraphMetrics symbolic_metrics(const Graph& g, const GraphTypes& types, const std::string& onchip_model) {
  GraphMetrics gm;
  for (const NodeSpec& n : g.nodes) {
    const NodeTypes& t = types.nodes.at(n.name);
    const OpInfo& info = OpRegistry::instance().find(n.op);
    const OnChipFormula& formula = onchip_formula(info, onchip_model);  // throws for an unknown model
    NodeMetrics m;
    m.name = n.name;
    m.op = n.op;
    add_traffic(info, t, m);
    m.flops = t.flops;
    m.onchip_bytes = onchip_requirement(formula, onchip_terms(n, info, t));
    m.read_bytes = m.read_bytes.expand();
    m.write_bytes = m.write_bytes.expand();
    m.flops = m.flops.expand();
    m.onchip_bytes = m.onchip_bytes.expand();
    gm.read_bytes += m.read_bytes;
    gm.write_bytes += m.write_bytes;
    gm.flops += m.flops;
    gm.onchip_bytes += m.onchip_bytes;
    gm.nodes.push_back(m);
  }
  gm.read_bytes = gm.read_bytes.expand();
  gm.write_bytes = gm.write_bytes.expand();
  gm.flops = gm.flops.expand();
  gm.onchip_bytes = gm.onchip_bytes.expand();
  return gm;
}

ex evaluate(const ex& e, const SymbolTable& syms) { return e.subs(syms.substitution()).expand(); }

bool to_int(const ex& e, int64_t& out) {
  if (!is_a<numeric>(e)) return false;
  const numeric& n = ex_to<numeric>(e);
  if (!n.is_integer()) return false;
  out = n.to_long();
  return true;
}

}  // namespace stepsim::shape
