#include "sim/engine/eval.h"

#include <algorithm>
#include <stdexcept>

#include "hw/ops/op.h"
#include "sim/graph/ports.h"

namespace stepsim {

namespace {

using NamedStreams = std::vector<std::pair<std::string, std::string>>;

bool named(const NamedStreams& inputs, const std::string& port) {
  return std::any_of(inputs.begin(), inputs.end(), [&](const auto& in) { return in.first == port; });
}

// The ports the positional streams fill, in order: a numbered port takes all that the fixed
// ports after it do not need.
std::vector<std::string> positional_slots(const OpInfo& info, const NamedStreams& inputs) {
  size_t positional = 0, fixed_unnamed = 0;
  for (const auto& in : inputs) positional += in.first.empty();
  for (const PortSpec& p : info.inputs)
    if (!is_numbered(p) && !named(inputs, p.name)) ++fixed_unnamed;
  std::vector<std::string> slots;
  for (const PortSpec& p : info.inputs) {
    if (is_numbered(p)) {
      size_t cnt = positional > fixed_unnamed ? positional - fixed_unnamed : 0;
      for (size_t k = 0; k < cnt; ++k) slots.push_back(port_base(p) + std::to_string(k));
    } else if (!named(inputs, p.name)) {
      slots.push_back(p.name);
    }
  }
  return slots;
}

// A Source per input stream ("src<i>", its beats in g.streams), wired to the node's ports.
void add_sources(Graph& g, NodeSpec& node, const OpInfo& info, const NamedStreams& inputs) {
  const std::vector<std::string> slots = positional_slots(info, inputs);
  size_t next = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string port = inputs[i].first;
    if (port.empty()) {
      if (next >= slots.size()) throw std::invalid_argument("more input streams than " + node.op + " has inputs");
      port = slots[next++];
    }
    const std::string src = "src" + std::to_string(i);
    g.streams[src] = to_beats(parse_tokens(inputs[i].second));
    g.nodes.push_back(node_spec(src, OpKind::kSource, {{param::kStream.name, src}, {param::kInterval.name, "0"}}));
    node.inputs[port] = src + ".out0";
  }
}

// The output ports, numbered ones `outputs` times (0: the largest selector index in the input
// streams + 1, at least 2).
std::vector<std::string> output_ports(const OpInfo& info, const Graph& g, size_t outputs) {
  size_t nnum = outputs;
  if (!nnum) {
    nnum = 2;
    for (const auto& kv : g.streams)
      for (const Beat& b : kv.second)
        if (b.has_elem && b.elem.is_selector())
          for (int i : b.elem.selector().indices()) nnum = std::max(nnum, size_t(i) + 1);
  }
  std::vector<std::string> ports;
  for (const PortSpec& p : info.outputs) {
    if (is_numbered(p))
      for (size_t k = 0; k < nnum; ++k) ports.push_back(port_base(p) + std::to_string(k));
    else
      ports.push_back(p.name);
  }
  return ports;
}

// What a Sink recorded, as token text and observed shape.
void read_sink(EvalResult& r, const std::string& port) {
  auto tokens = to_tokens(r.sim.recorded["sink." + port]);
  int rank = 0;
  for (const Token& t : tokens)
    if (t.kind == Token::kStop) rank = std::max(rank, int(t.level));
  r.text[port] = format_tokens(tokens);
  try {
    r.shape[port] = observe_shape(tokens, rank).to_string();
  } catch (const std::exception& e) {
    r.shape[port] = std::string("malformed: ") + e.what();
  }
}

}  // namespace

EvalResult eval_op(const std::string& op, const std::map<std::string, std::string>& params, const NamedStreams& inputs,
                   const HardwareParams& hw, size_t outputs) {
  const OpInfo& info = OpRegistry::instance().find(op);
  if (outputs > size_t(Selector::kMaxBits))
    throw std::invalid_argument("outputs is " + std::to_string(outputs) + ", outside the allowed range 1.." +
                                std::to_string(Selector::kMaxBits) + " (a selector names at most that many)");
  // The graph: a Source per input stream, the node "op", a Sink per output port.
  Graph g;
  g.name = "eval";
  g.source = "eval";
  NodeSpec node = node_spec("op", op, params);
  add_sources(g, node, info, inputs);
  EvalResult r;
  r.ports = output_ports(info, g, outputs);
  g.nodes.push_back(node);
  for (const std::string& p : r.ports)
    g.nodes.push_back(node_spec("sink." + p, OpKind::kSink, {}, {{"in", "op." + p}}));
  SimOptions opt;
  opt.hw = hw;
  opt.static_check = false;  // the operator's own checks on the given streams are the point
  r.sim = simulate(g, opt);
  if (!r.sim.ok) return r;
  for (const std::string& p : r.ports) read_sink(r, p);
  return r;
}

}  // namespace stepsim
