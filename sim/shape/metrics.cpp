#include "sim/shape/metrics.h"

#include "hw/ops/op.h"

namespace stepsim::shape {

using namespace GiNaC;

namespace {

bool is_matmul(const NodeSpec& n) {
  auto it = n.params.find("fn");
  return it != n.params.end() && it->second.rfind("matmul", 0) == 0;
}

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

ex staging_tile(const NodeSpec& n, const NodeTypes& t) {
  if (n.op == "LinearOffChipStore") return port_elem_bytes(t.inputs, "in");
  if (n.op == "RandomOffChipStore") return port_elem_bytes(t.inputs, "wdata");
  return port_elem_bytes(t.outputs, "out");
}

ex paper_onchip(const NodeSpec& n, const NodeTypes& t, const std::string& category) {
  if (category == "off-chip memory") return 2 * staging_tile(n, t);
  if (n.op == "Bufferize") {
    const StreamType& in = t.inputs.at("in");
    const StreamType& out = t.outputs.at("out");
    return in.elem.bytes() + card_of(out.elem.buffer_dims) * in.elem.bytes() * 2;
  }
  if (n.op == "Map") return is_matmul(n) ? matmul_operand_bytes(t) : ex(0);
  if (n.op == "Accum") return (is_matmul(n) ? matmul_operand_bytes(t) : ex(0)) + port_elem_bytes(t.outputs, "out");
  if (n.op == "Scan" || n.op == "Expand") return port_elem_bytes(t.outputs, "out");
  return 0;
}

ex artifact_onchip(const NodeSpec& n, const NodeTypes& t, const std::string& category) {
  if (category == "off-chip memory") return staging_tile(n, t);
  if (n.op == "Map") return 0;
  if (n.op == "Accum" && is_matmul(n)) return port_elem_bytes(t.outputs, "out");
  if (n.op == "Streamify") {
    const StreamType& in = t.inputs.at("in");
    const ex out = port_elem_bytes(t.outputs, "out");
    return card_of(in.elem.buffer_dims) * out + out;
  }
  if (n.op == "Repeat") return port_elem_bytes(t.outputs, "out");
  return paper_onchip(n, t, category);
}

}  // namespace

GraphMetrics symbolic_metrics(const Graph& g, const GraphTypes& types, const std::string& onchip_model) {
  if (onchip_model != "paper" && onchip_model != "artifact")
    throw std::invalid_argument("unknown on-chip requirement model '" + onchip_model + "'; known: artifact, paper");
  GraphMetrics gm;
  for (const NodeSpec& n : g.nodes) {
    const NodeTypes& t = types.nodes.at(n.name);
    const std::string category = OpRegistry::instance().find(n.op).category;
    NodeMetrics m;
    m.name = n.name;
    m.op = n.op;
    // Off-chip traffic: the cardinality of the stream read or written x element bytes.
    if (n.op == "LinearOffChipLoad" || n.op == "RandomOffChipLoad") m.read_bytes = stream_bytes(t.outputs.at("out"));
    if (n.op == "LinearOffChipStore") m.write_bytes = stream_bytes(t.inputs.at("in"));
    if (n.op == "RandomOffChipStore") m.write_bytes = stream_bytes(t.inputs.at("wdata"));
    m.flops = t.flops;
    m.onchip_bytes = onchip_model == "paper" ? paper_onchip(n, t, category) : artifact_onchip(n, t, category);
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
