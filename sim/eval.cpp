#include "sim/eval.h"

#include <algorithm>
#include <stdexcept>

#include "hw/ops/op.h"

namespace stepsim {

namespace {
bool numbered(const PortSpec& p) { return p.name.back() == '*'; }
std::string base(const PortSpec& p) { return p.name.substr(0, p.name.size() - 1); }
}  // namespace

EvalResult eval_op(const std::string& op, const std::map<std::string, std::string>& params,
                   const std::vector<std::pair<std::string, std::string>>& inputs, const HardwareParams& hw,
                   size_t outputs) {
  const OpInfo& info = OpRegistry::instance().find(op);
  if (outputs > size_t(Selector::kMaxBits))
    throw std::invalid_argument("outputs is " + std::to_string(outputs) + ", outside the allowed range 1.." +
                                std::to_string(Selector::kMaxBits) + " (a selector names at most that many)");
  // Positional streams fill the ports in order; a numbered port takes all that the fixed ports
  // after it do not need.
  size_t positional = 0, fixed_unnamed = 0;
  for (const auto& in : inputs) positional += in.first.empty();
  for (const PortSpec& p : info.inputs)
    if (!numbered(p) && std::none_of(inputs.begin(), inputs.end(), [&](const auto& in) { return in.first == p.name; }))
      ++fixed_unnamed;
  std::vector<std::string> slots;
  for (const PortSpec& p : info.inputs) {
    if (numbered(p)) {
      size_t cnt = positional > fixed_unnamed ? positional - fixed_unnamed : 0;
      for (size_t k = 0; k < cnt; ++k) slots.push_back(base(p) + std::to_string(k));
    } else if (std::none_of(inputs.begin(), inputs.end(), [&](const auto& in) { return in.first == p.name; })) {
      slots.push_back(p.name);
    }
  }
  Graph g;
  g.name = "eval";
  g.source = "eval";
  NodeSpec node;
  node.name = "op";
  node.op = op;
  node.params = params;
  size_t next = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string port = inputs[i].first;
    if (port.empty()) {
      if (next >= slots.size()) throw std::invalid_argument("more input streams than " + op + " has inputs");
      port = slots[next++];
    }
    const std::string src = "src" + std::to_string(i);
    g.streams[src] = to_beats(parse_tokens(inputs[i].second));
    NodeSpec s;
    s.name = src;
    s.op = op_name(OpKind::kSource);
    s.params = {{param::kStream.name, src}, {param::kInterval.name, "0"}};
    g.nodes.push_back(s);
    node.inputs[port] = src + ".out0";
  }
  size_t nnum = outputs;
  if (!nnum) {
    nnum = 2;
    for (const auto& kv : g.streams)
      for (const Beat& b : kv.second)
        if (b.has_elem && b.elem.is_selector())
          for (int i : b.elem.selector().indices()) nnum = std::max(nnum, size_t(i) + 1);
  }
  EvalResult r;
  for (const PortSpec& p : info.outputs) {
    if (numbered(p))
      for (size_t k = 0; k < nnum; ++k) r.ports.push_back(base(p) + std::to_string(k));
    else
      r.ports.push_back(p.name);
  }
  g.nodes.push_back(node);
  for (const std::string& p : r.ports) {
    NodeSpec s;
    s.name = "sink." + p;
    s.op = op_name(OpKind::kSink);
    s.inputs["in"] = "op." + p;
    g.nodes.push_back(s);
  }
  SimOptions opt;
  opt.hw = hw;
  opt.static_check = false;  // the operator's own checks on the given streams are the point
  r.sim = simulate(g, opt);
  if (!r.sim.ok) return r;
  for (const std::string& p : r.ports) {
    auto tokens = to_tokens(r.sim.recorded["sink." + p]);
    int rank = 0;
    for (const Token& t : tokens)
      if (t.kind == Token::kStop) rank = std::max(rank, int(t.level));
    r.text[p] = format_tokens(tokens);
    try {
      r.shape[p] = observe_shape(tokens, rank).to_string();
    } catch (const std::exception& e) {
      r.shape[p] = std::string("malformed: ") + e.what();
    }
  }
  return r;
}

}  // namespace stepsim
