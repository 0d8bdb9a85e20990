#include "sim/impl_policy.h"

#include <stdexcept>
#include <vector>

namespace stepsim {

ImplPolicy::ImplPolicy(const Plan& plan, std::string default_impl) : default_impl_(std::move(default_impl)) {
  find_unpaired(plan);
}

// The node's `impl:`, else the default (a default skips nodes without a unit: choose()).
std::string ImplPolicy::impl_for(const NodeSpec& n) const {
  return !n.impl.empty() ? n.impl : default_impl_.empty() ? "approx" : default_impl_;
}

std::string ImplPolicy::pair_problem(const NodeSpec& n, const NodeSpec* partner) const {
  const std::string rule = "the memory unit takes a Bufferize whose only consumer is a Streamify, both on the unit";
  if (!partner) return rule;
  if (impl_for(*partner) != impl_for(n))
    return rule + " (its partner '" + partner->name + "' runs as " + impl_for(*partner) + ")";
  const bridge::UnitImpl* unit = bridge::find_unit_impl(impl_for(n));
  if (!unit) return "";  // choose() names the unknown implementation
  const OpRegistry& reg = OpRegistry::instance();
  OpConfig pc;  // enough of the partner's configuration to ask the unit
  pc.name = partner->name;
  pc.info = &reg.find(partner->op);
  pc.params = Params(partner->op, partner->name, &pc.info->params, partner->params);
  const std::string why = unit->unsupported(pc);
  if (!why.empty()) return "its partner '" + partner->name + "' cannot run on the memory unit: " + why;
  // The pair as a whole (an affine view over a Bufferize rank the unit does not track).
  const Params own(n.op, n.name, &reg.find(n.op).params, n.params);
  return n.is(OpKind::kBufferize) ? bridge::pmu_pair_unsupported(own, pc.params)
                                  : bridge::pmu_pair_unsupported(pc.params, own);
}

// A Bufferize whose only consumer is one Streamify, with the same impl on both sides, can go on
// the memory unit; any other Bufferize or Streamify cannot.
void ImplPolicy::find_unpaired(const Plan& plan) {
  std::map<std::string, std::vector<const Edge*>> out_edges, in_edges;
  for (const Edge& e : plan.edges) {
    out_edges[e.from].push_back(&e);
    in_edges[e.to].push_back(&e);
  }
  for (const NodeSpec& n : plan.nodes) {
    const NodeSpec* partner = nullptr;
    if (n.is(OpKind::kBufferize)) {
      const auto& o = out_edges[n.name];
      if (o.size() == 1 && plan.node(o[0]->to).is(OpKind::kStreamify) && o[0]->to_port == "in")
        partner = &plan.node(o[0]->to);
    } else if (n.is(OpKind::kStreamify)) {
      for (const Edge* e : in_edges[n.name])
        if (e->to_port == "in" && plan.node(e->from).is(OpKind::kBufferize) && out_edges[e->from].size() == 1)
          partner = &plan.node(e->from);
    } else {
      continue;
    }
    const std::string why = pair_problem(n, partner);
    if (!why.empty()) unpaired_[n.name] = why;
  }
}

ImplChoice ImplPolicy::choose(const NodeSpec& n, const OpConfig& cfg) const {
  ImplChoice c;
  c.impl = impl_for(n);
  if (c.impl == "approx") return c;
  c.unit = bridge::find_unit_impl(c.impl);
  if (!c.unit)
    throw std::invalid_argument(
        "node '" + n.name + "': impl " + c.impl +
        (c.impl == "rtl" ? " is not built in (needs Verilator: STEPSIM_RTL)" : " is unknown (approx, hls, rtl)"));
  const std::string why = unpaired_.count(n.name) ? unpaired_.at(n.name) : c.unit->unsupported(cfg);
  if (why.empty()) return c;
  if (!n.impl.empty())
    throw std::invalid_argument("node '" + n.name + "' (" + n.op + "): impl: " + c.impl + ": " + why);
  return ImplChoice{"approx", why, nullptr};
}

std::string cosim_impl(const Graph& g, const std::string& impl_option) {
  std::string unit_impl = impl_option.empty() ? g.impl : impl_option;
  if (unit_impl == "approx") unit_impl.clear();
  if (impl_option != "approx")
    for (const NodeSpec& n : g.nodes)
      if (unit_impl.empty() && !n.impl.empty() && n.impl != "approx") unit_impl = n.impl;
  return unit_impl;
}

Graph all_approximate(Graph g) {
  g.impl.clear();
  for (NodeSpec& n : g.nodes) n.impl.clear();
  return g;
}

}  // namespace stepsim
