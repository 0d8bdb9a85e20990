#include "sim/graph/ports.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "sim/graph/node_index.h"

namespace stepsim {

std::string port_list(const std::vector<PortSpec>& specs) {
  std::string s;
  for (const PortSpec& p : specs) s += (s.empty() ? "" : ", ") + (is_numbered(p) ? port_base(p) + "0.." : p.name);
  return s.empty() ? "none" : s;
}

std::pair<std::string, std::string> split_ref(const std::string& ref) {
  const size_t dot = ref.rfind('.');
  if (dot == std::string::npos) return {ref, ""};
  return {ref.substr(0, dot), ref.substr(dot + 1)};
}

bool has_port(const std::vector<PortSpec>& specs, const std::string& port) {
  for (const PortSpec& p : specs) {
    if (!is_numbered(p)) {
      if (p.name == port) return true;
      continue;
    }
    const std::string base = port_base(p);
    if (port.size() > base.size() && port.compare(0, base.size(), base) == 0 &&
        std::all_of(port.begin() + long(base.size()), port.end(), [](char c) { return std::isdigit(uint8_t(c)); }))
      return true;
  }
  return false;
}

namespace {

// The inputs of `n` that are wired, by descriptor port: "in" for in0.., the name otherwise.
void check_inputs_connected(const NodeSpec& n, const OpInfo& info) {
  for (const PortSpec& p : info.inputs) {
    if (p.optional) continue;
    if (!is_numbered(p)) {
      if (!n.inputs.count(p.name))
        throw std::invalid_argument("node '" + n.name + "' (" + info.name + "): input '" + p.name +
                                    "' is not connected");
      continue;
    }
    const std::string base = port_base(p);
    size_t count = 0;
    for (const auto& [port, ref] : n.inputs) count += has_port({p}, port) ? 1 : 0;
    if (count == 0)
      throw std::invalid_argument("node '" + n.name + "' (" + info.name + ") needs at least one input " + base + "0");
    for (size_t k = 0; k < count; ++k)
      if (!n.inputs.count(base + std::to_string(k)))
        throw std::invalid_argument("node '" + n.name + "' (" + info.name + "): input '" + base + std::to_string(k) +
                                    "' is not connected");
  }
}

}  // namespace

void check_ports(const Graph& g) {
  const OpRegistry& reg = OpRegistry::instance();
  const NodeIndex index(g);
  for (const NodeSpec& n : g.nodes) {
    const OpInfo& info = reg.find(n.op);
    for (const auto& [port, ref] : n.inputs) {
      if (!has_port(info.inputs, port))
        throw std::invalid_argument("node '" + n.name + "' (" + info.name + ") has no input '" + port +
                                    "' (inputs: " + port_list(info.inputs) + ")");
      const auto [src, sport] = split_ref(ref);
      const NodeSpec* p = index.find(src);
      if (!p || sport.empty()) continue;
      const OpInfo& pinfo = reg.find(p->op);
      if (!has_port(pinfo.outputs, sport))
        throw std::invalid_argument("node '" + n.name + "' reads '" + ref + "', but " + pinfo.name +
                                    " has no output '" + sport + "' (outputs: " + port_list(pinfo.outputs) + ")");
    }
    check_inputs_connected(n, info);
  }
}

}  // namespace stepsim
