#include "sim/engine/plan.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "sim/graph/node_index.h"

namespace stepsim {

namespace {

// Whether `port` is "<base>k" of numbered port p; k goes to `k`.
bool numbered_port(const PortSpec& p, const std::string& port, size_t& k) {
  const std::string base = port_base(p);
  if (port.rfind(base, 0) != 0 || port.size() <= base.size()) return false;
  const std::string num = port.substr(base.size());
  if (!std::all_of(num.begin(), num.end(), ::isdigit)) return false;
  k = std::stoul(num);
  return true;
}

void check_names(const Graph& g) {
  std::set<std::string> names;
  for (const NodeSpec& n : g.nodes) {
    if (n.name.empty()) throw std::invalid_argument(g.source + ": a node has no name");
    if (!names.insert(n.name).second)
      throw std::invalid_argument(g.source + ": node name '" + n.name + "' is used twice");
    OpRegistry::instance().find(n.op);  // unknown operator -> clear error
  }
}

// The edge into node n's input `port` from reference `ref`, with the producer's port named.
Edge resolve_input(const NodeIndex& nodes, const NodeSpec& n, const std::string& port, const std::string& ref) {
  auto [src, sport] = split_ref(ref);
  const NodeSpec* p = nodes.find(src);
  if (!p)
    throw std::invalid_argument("node '" + n.name + "' input '" + port + "' refers to unknown node '" + src + "'");
  const OpInfo& pinfo = OpRegistry::instance().find(p->op);
  if (sport.empty()) {
    if (pinfo.outputs.empty()) throw std::invalid_argument("node '" + src + "' (" + p->op + ") has no outputs");
    sport = is_numbered(pinfo.outputs[0]) ? port_base(pinfo.outputs[0]) + "0" : pinfo.outputs[0].name;
  }
  return Edge{src, sport, n.name, port};
}

// Streams are consumed once: a port read by several consumers gets a Broadcast, whose outputs
// take over the edges.
void insert_broadcasts(Plan& plan) {
  std::map<std::string, std::vector<size_t>> by_source;  // "node.port" -> edge indices
  for (size_t k = 0; k < plan.edges.size(); ++k)
    by_source[plan.edges[k].from + "." + plan.edges[k].from_port].push_back(k);
  for (auto& [key, idx] : by_source) {
    if (idx.size() < 2) continue;
    const Edge first = plan.edges[idx[0]];
    NodeSpec b;
    b.name = first.from + "." + first.from_port + ".broadcast";
    b.op = op_name(OpKind::kBroadcast);
    b.inputs["in"] = first.from + "." + first.from_port;
    for (size_t k = 0; k < idx.size(); ++k) {
      Edge& e = plan.edges[idx[k]];
      e.from = b.name;
      e.from_port = "out" + std::to_string(k);
    }
    plan.edges.push_back(Edge{first.from, first.from_port, b.name, "in"});
    plan.nodes.push_back(b);
  }
}

// Numbered ports per node: one past the highest number an edge uses (outputs: at least the
// node's num_outputs).
void count_ports(Plan& plan) {
  const OpRegistry& reg = OpRegistry::instance();
  auto bump = [](size_t& cnt, const std::vector<PortSpec>& specs, const std::string& port) {
    for (const PortSpec& p : specs)
      if (is_numbered(p)) {
        size_t k = 0;
        if (numbered_port(p, port, k)) cnt = std::max(cnt, k + 1);
      }
  };
  for (const NodeSpec& n : plan.nodes) plan.ports[n.name] = PortUse{};
  for (const Edge& e : plan.edges) {
    bump(plan.ports[e.to].in_numbered, reg.find(plan.node(e.to).op).inputs, e.to_port);
    bump(plan.ports[e.from].out_numbered, reg.find(plan.node(e.from).op).outputs, e.from_port);
  }
  for (const NodeSpec& n : plan.nodes)
    if (n.num_outputs) plan.ports[n.name].out_numbered = std::max(plan.ports[n.name].out_numbered, *n.num_outputs);
}

// Throws before anything is built when the graph does not fit.
FabricAllocation allocate(const Plan& plan, const HardwareParams& hw) {
  std::vector<AllocationRequest> requests;
  for (const NodeSpec& n : plan.nodes) {
    const OpInfo& info = OpRegistry::instance().find(n.op);
    requests.push_back({n.name, &info, info.uses_compute ? n.compute_bw.value_or(hw.compute_bw) : 0});
  }
  return allocate_fabric(requests, hw);
}

}  // namespace

int port_index(const std::vector<PortSpec>& specs, size_t numbered, const std::string& port) {
  int idx = 0;
  for (const PortSpec& p : specs) {
    if (is_numbered(p)) {
      size_t k = 0;
      if (numbered_port(p, port, k)) return k < numbered ? idx + int(k) : -2;
      idx += int(numbered);
    } else {
      if (p.name == port) return idx;
      ++idx;
    }
  }
  return -1;
}

size_t Plan::num_inputs(const NodeSpec& n) const {
  size_t count = 0;
  for (const PortSpec& p : OpRegistry::instance().find(n.op).inputs)
    count += is_numbered(p) ? ports.at(n.name).in_numbered : 1;
  return count;
}

size_t Plan::num_outputs(const NodeSpec& n) const {
  size_t count = 0;
  for (const PortSpec& p : OpRegistry::instance().find(n.op).outputs)
    count += is_numbered(p) ? ports.at(n.name).out_numbered : 1;
  return count;
}

Plan plan_graph(const Graph& g, const HardwareParams& hw) {
  check_names(g);
  Plan plan;
  plan.nodes = g.nodes;
  const NodeIndex nodes(g);
  for (const NodeSpec& n : g.nodes)
    for (const auto& [port, ref] : n.inputs) plan.edges.push_back(resolve_input(nodes, n, port, ref));
  insert_broadcasts(plan);
  for (size_t k = 0; k < plan.nodes.size(); ++k) plan.index_[plan.nodes[k].name] = k;
  plan.alloc = allocate(plan, hw);
  count_ports(plan);
  return plan;
}

}  // namespace stepsim
