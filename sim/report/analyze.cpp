#include "sim/report/analyze.h"

#include <iomanip>
#include <sstream>

#include "sim/engine/validate.h"

namespace stepsim {

using shape::ex;

Analysis analyze_graph(const Graph& g, const std::string& onchip_model,
                       const std::map<std::string, std::string>& values) {
  Analysis a;
  a.onchip_model = onchip_model;
  a.types = validate_graph(g, a.syms);
  for (const auto& [k, v] : values) a.syms.set_value(k, a.syms.parse(v));
  a.metrics = shape::symbolic_metrics(g, a.types, onchip_model);
  return a;
}

namespace {

// "expr = value" (or just the expression when it is already a number or not fully known).
std::string with_value(const ex& e, const shape::SymbolTable& syms) {
  const std::string s = shape::to_string(e);
  const ex v = shape::evaluate(e, syms);
  const std::string vs = shape::to_string(v);
  return vs == s ? s : s + " = " + vs;
}

nlohmann::json expr_json(const ex& e, const shape::SymbolTable& syms) {
  nlohmann::json j;
  j["expr"] = shape::to_string(e);
  int64_t v = 0;
  const ex known = shape::evaluate(e, syms);
  if (shape::to_int(known, v)) {
    j["value"] = v;
  } else {
    j["value"] = nullptr;
    j["evaluated"] = shape::to_string(known);  // the known symbols substituted
  }
  return j;
}

}  // namespace

void print_analysis(const Graph& g, Analysis& a, std::ostream& out) {
  const auto& m = a.metrics;
  out << "graph " << g.name << ": " << g.nodes.size() << " nodes, shapes in the graph's symbols\n";
  out << "\nstreams (node.port: [dims, outermost first; ~ = ragged, its symbol is the sum] of element):\n";
  for (const std::string& n : a.types.order)
    for (const auto& [port, t] : a.types.nodes.at(n).outputs)
      out << "  " << n << "." << port << ": " << t.str() << "\n";
  std::vector<std::string> names = a.syms.names();
  if (!names.empty()) {
    out << "\nsymbols (dynamic and ragged dimensions):\n";
    for (const std::string& s : names) {
      auto it = a.syms.values().find(s);
      out << "  " << s << (it == a.syms.values().end() ? " (unknown)" : " = " + shape::to_string(it->second)) << "\n";
    }
  }
  out << "\nper operator (only nonzero terms; on-chip model '" << a.onchip_model << "'):\n";
  for (const shape::NodeMetrics& n : m.nodes) {
    std::vector<std::string> parts;
    if (!n.read_bytes.is_zero()) parts.push_back("off-chip read " + with_value(n.read_bytes, a.syms) + " B");
    if (!n.write_bytes.is_zero()) parts.push_back("off-chip written " + with_value(n.write_bytes, a.syms) + " B");
    if (!n.flops.is_zero()) parts.push_back("FLOPs " + with_value(n.flops, a.syms));
    if (!n.onchip_bytes.is_zero()) parts.push_back("on-chip " + with_value(n.onchip_bytes, a.syms) + " B");
    if (parts.empty()) continue;
    out << "  " << n.name << " (" << n.op << "):";
    for (size_t i = 0; i < parts.size(); ++i) out << (i ? "; " : " ") << parts[i];
    out << "\n";
  }
  out << "\ntotals:\n";
  out << "  off-chip read          " << with_value(m.read_bytes, a.syms) << " B\n";
  out << "  off-chip written       " << with_value(m.write_bytes, a.syms) << " B\n";
  out << "  off-chip traffic       " << with_value(m.traffic(), a.syms)
      << " B (a lower bound if other operators spill)\n";
  out << "  FLOPs                  " << with_value(m.flops, a.syms) << " FLOPs\n";
  out << "  on-chip requirement    " << with_value(m.onchip_bytes, a.syms) << " B (" << a.onchip_model
      << " formulas)\n";
  int64_t f = 0, t = 0;
  if (shape::to_int(shape::evaluate(m.flops, a.syms), f) && shape::to_int(shape::evaluate(m.traffic(), a.syms), t) &&
      t > 0) {
    std::ostringstream oi;
    oi << std::fixed << std::setprecision(3) << double(f) / double(t);
    out << "  operational intensity  " << oi.str() << " FLOPs/B (FLOPs / off-chip traffic)\n";
  } else {
    out << "  operational intensity  (" << shape::to_string(m.flops) << ") / (" << shape::to_string(m.traffic())
        << ") FLOPs/B\n";
  }
}

nlohmann::json symbolic_vs_measured(const Graph& g, const StaticCheck* checked, const std::string& onchip_model,
                                    uint64_t read_bytes, uint64_t write_bytes, uint64_t flops, uint64_t onchip_bytes) {
  nlohmann::json j;
  try {
    Analysis fresh;
    if (!checked) fresh = analyze_graph(g, onchip_model);
    const shape::SymbolTable& syms = checked ? checked->syms : fresh.syms;
    const shape::GraphMetrics metrics =
        checked ? shape::symbolic_metrics(g, checked->types, onchip_model) : std::move(fresh.metrics);
    j["available"] = true;
    auto item = [&](const ex& e, uint64_t measured) {
      nlohmann::json x = expr_json(e, syms);
      x["measured"] = measured;
      return x;
    };
    j["read_bytes"] = item(metrics.read_bytes, read_bytes);
    j["write_bytes"] = item(metrics.write_bytes, write_bytes);
    j["flops"] = item(metrics.flops, flops);
    j["onchip_requirement_bytes"] = item(metrics.onchip_bytes, onchip_bytes);
  } catch (const std::exception& e) {
    j = nlohmann::json::object();
    j["available"] = false;
    j["reason"] = e.what();
  }
  return j;
}

nlohmann::json analysis_json(const Graph& g, Analysis& a) {
  nlohmann::json j;
  j["graph"] = g.name;
  j["onchip_model"] = a.onchip_model;
  for (const std::string& n : a.types.order)
    for (const auto& [port, t] : a.types.nodes.at(n).outputs) j["streams"][n + "." + port] = t.str();
  for (const std::string& s : a.syms.names()) {
    auto it = a.syms.values().find(s);
    j["symbols"][s] =
        it == a.syms.values().end() ? nlohmann::json(nullptr) : nlohmann::json(shape::to_string(it->second));
  }
  for (const shape::NodeMetrics& n : a.metrics.nodes) {
    nlohmann::json jn;
    jn["name"] = n.name;
    jn["op"] = n.op;
    jn["read_bytes"] = expr_json(n.read_bytes, a.syms);
    jn["write_bytes"] = expr_json(n.write_bytes, a.syms);
    jn["flops"] = expr_json(n.flops, a.syms);
    jn["onchip_bytes"] = expr_json(n.onchip_bytes, a.syms);
    j["nodes"].push_back(jn);
  }
  j["read_bytes"] = expr_json(a.metrics.read_bytes, a.syms);
  j["write_bytes"] = expr_json(a.metrics.write_bytes, a.syms);
  j["flops"] = expr_json(a.metrics.flops, a.syms);
  j["onchip_bytes"] = expr_json(a.metrics.onchip_bytes, a.syms);
  return j;
}

}  // namespace stepsim
