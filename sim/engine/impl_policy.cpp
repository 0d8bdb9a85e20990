#include "sim/engine/impl_policy.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "hw/bridge/unit_bridges.h"
#include "sim/engine/validate.h"
#include "sim/shape/metrics.h"

namespace stepsim {

ImplPolicy::ImplPolicy(const Plan& plan, std::string default_impl, const StaticCheck* types)
    : default_impl_(std::move(default_impl)), types_(types) {
  if (types_)
    for (const NodeSpec& n : plan.nodes) {
      const std::string impl = impl_for(n);
      const bridge::UnitImpl* unit = impl == "approx" ? nullptr : bridge::find_unit_impl(impl);
      if (!unit) continue;
      std::string why;
      try {
        why = static_problem(n, *unit);
      } catch (const std::exception&) {
        // a bad parameter or function: the operator's own checks name it
      }
      if (!why.empty()) shapes_[n.name] = why;
    }
  find_unpaired(plan);
}

namespace {

using shape::ElemType;

std::string tile_text(const ElemType& e, const shape::SymbolTable& syms) {
  if (e.kind != ElemType::Tile) return e.str();
  return "[" + shape::to_string(shape::evaluate(e.rows, syms)) + " x " +
         shape::to_string(shape::evaluate(e.cols, syms)) + "] " + dtype_name(e.dtype);
}

std::string sides_text(const std::vector<int>& sides) {
  std::string s;
  for (int t : sides) s += (s.empty() ? "[r x " : " or [r x ") + std::to_string(t) + "]";
  return s + " bf16 tiles (r <= the side)";
}

}  // namespace

// The tiles a compute or retile unit takes, and the buffers of the memory unit, against the
// node's stream types: the bridges' own checks (unit_bridges.h, pmu_bridge.h) before the run.
std::string ImplPolicy::static_problem(const NodeSpec& n, const bridge::UnitImpl& unit) const {
  auto at = types_->types.nodes.find(n.name);
  if (at == types_->types.nodes.end()) return "";  // a Broadcast of the plan: opaque payloads
  const shape::NodeTypes& t = at->second;
  const shape::SymbolTable& syms = types_->syms;
  auto value = [&](const shape::ex& e, int64_t& v) { return shape::to_int(shape::evaluate(e, syms), v); };
  const std::vector<int>& sides = unit.tile_sides;
  auto has_side = [&](int64_t c) { return std::find(sides.begin(), sides.end(), int(c)) != sides.end(); };
  // The function operands in0, in1, ... in order.
  std::vector<const ElemType*> ins;
  for (size_t k = 0;; ++k) {
    auto it = t.inputs.find("in" + std::to_string(k));
    if (it == t.inputs.end()) break;
    ins.push_back(&it->second.elem);
  }
  std::string shapes;
  for (const ElemType* e : ins) shapes += (shapes.empty() ? "" : ", ") + tile_text(*e, syms);
  const std::string fn = n.params.count(param::kFn.name) ? n.params.at(param::kFn.name) : "";
  // [r x c] bf16 tiles on the [r x T] units: c a side built in, r <= c (unknown rows: the bridge checks).
  auto square = [&](const ElemType& e, int64_t side) {
    int64_t r = 0, c = 0;
    if (e.kind != ElemType::Tile || e.dtype != DType::BF16 || !value(e.cols, c) || c != side) return false;
    return !value(e.rows, r) || r <= c;
  };
  auto retile = [&]() -> std::string {
    int64_t c = 0;
    if (ins.size() != 1 || ins[0]->kind != ElemType::Tile || !value(ins[0]->cols, c) || !has_side(c) ||
        !square(*ins[0], c))
      return "tile shape: the retile unit (pcu_retile) takes " + sides_text(sides) + "; the node has " + shapes;
    if (n.is(OpKind::kAccum)) {
      int64_t rows = 0;
      const ElemType& out = t.outputs.at("out").elem;
      if (out.kind == ElemType::Tile && value(out.rows, rows) && rows > c)
        return "capacity: the retile unit packs at most " + std::to_string(c) +
               " rows per group; the node's tiles have " + std::to_string(rows);
    }
    return "";
  };
  if (n.is(OpKind::kFlatMap)) {
    if (fn.empty() || bridge::function_lanes(FunctionFamily::kFlatMap, fn).op != UnitOp::kRetileRows) return "";
    return retile();
  }
  if (n.is(OpKind::kBufferize)) {
    auto out = t.outputs.find("out");
    int64_t elems = 0;
    if (out != t.outputs.end() && value(shape::card_of(out->second.elem.buffer_dims), elems) && elems > bridge::kPmuCap)
      return "capacity: a buffer of " + std::to_string(elems) + " elements; the memory unit holds " +
             std::to_string(bridge::kPmuCap) + " in this configuration";
    return "";
  }
  if (!n.is(OpKind::kMap) && !n.is(OpKind::kAccum) && !n.is(OpKind::kScan)) return "";
  const bool accum = !n.is(OpKind::kMap);
  if (fn.empty() || ins.empty()) return "";
  if (n.is(OpKind::kAccum) && fn == "retile_row") return retile();
  UnitLanes lanes;
  try {
    lanes = bridge::function_lanes(accum ? FunctionFamily::kAccum : FunctionFamily::kMap, fn);
  } catch (const std::invalid_argument&) {
    return "";  // the operator names the unknown function
  }
  if (!lanes.any()) return "";  // unsupported() says that no unit computes it
  // The vector units: [1 x L] bf16 tiles.
  bool vector_ok = lanes.vector != VectorLanes::kNone;
  for (const ElemType* e : ins) {
    int64_t r = 0, c = 0;
    vector_ok = vector_ok && e->kind == ElemType::Tile && e->dtype == DType::BF16 && value(e->rows, r) && r == 1 &&
                value(e->cols, c) && c == bridge::kL;
  }
  // The tile units: every operand [r x T] (a matmul's B [T x T]; an element-wise pair alike).
  int64_t side = 0;
  bool tile_ok = lanes.tile && ins[0]->kind == ElemType::Tile && value(ins[0]->cols, side) && has_side(side);
  for (const ElemType* e : ins) tile_ok = tile_ok && square(*e, side);
  if (tile_ok && ins.size() == 2) {
    int64_t r0 = 0, r1 = 0;
    const bool k0 = value(ins[0]->rows, r0), k1 = value(ins[1]->rows, r1);
    if (lanes.op == UnitOp::kMatmul || lanes.op == UnitOp::kMatmulT)
      tile_ok = !k1 || r1 == side;
    else
      tile_ok = !k0 || !k1 || r0 == r1;
  }
  if (!vector_ok && !tile_ok)
    return "tile shape: " + fn + " runs on " +
           bridge::lane_units(lanes, accum ? FunctionFamily::kAccum : FunctionFamily::kMap) + " with " +
           bridge::lane_tiles(lanes) + (lanes.tile && !has_side(bridge::kT16) ? " (this build: [r x 4] only)" : "") +
           "; the node has " + shapes;
  const int64_t bank = n.is(OpKind::kAccum) && n.params.count(param::kBankRank.name)
                           ? std::stoll(n.params.at(param::kBankRank.name))
                           : 0;
  if (bank > 0) {
    if (!tile_ok)
      return "capacity: Accum bank_rank " + std::to_string(bank) +
             " needs the tile unit's accumulator bank; the vector unit has none";
    const shape::StreamType& in = t.inputs.at("in0");
    int64_t entries = 1, d = 0;
    bool known = in.rank() > size_t(bank);
    for (int64_t k = 1; known && k <= bank; ++k) known = value(in.dim(size_t(k)).size, d) && (entries *= d, true);
    const int64_t size = side == bridge::kT ? bridge::kTileAccumBank : bridge::kTileAccumBank16;
    if (known && entries > size)
      return "capacity: the tile Accum unit's accumulator bank has " + std::to_string(size) +
             " entries at T = " + std::to_string(side) + "; the node's bank_rank " + std::to_string(bank) + " needs " +
             std::to_string(entries);
  }
  return "";
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
  std::string why = unit->unsupported(pc);
  if (why.empty() && shapes_.count(partner->name)) why = shapes_.at(partner->name);
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
  std::string why = unpaired_.count(n.name) ? unpaired_.at(n.name) : c.unit->unsupported(cfg);
  if (why.empty() && shapes_.count(n.name)) why = shapes_.at(n.name);
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

std::string impl_note_kind(const std::string& note) {
  auto starts = [&](const char* p) { return note.rfind(p, 0) == 0; };
  if (starts("no unit computes")) return "function without a unit";
  if (starts("no cycle-accurate unit implements")) return "operator without a unit";
  if (starts("tile shape") || starts("the address generator moves")) return "tile shape";
  if (starts("capacity")) return "unit capacity";
  if (starts("the memory unit takes") || starts("its partner") || starts("an affine view needs"))
    return "memory unit pairing";
  return "parameters";
}

OpConfig static_config(const Plan& plan, const NodeSpec& n) {
  const OpInfo& info = OpRegistry::instance().find(n.op);
  OpConfig cfg;
  cfg.name = n.name;
  cfg.info = &info;
  cfg.params = Params(n.op, n.name, &info.params, n.params);
  cfg.num_inputs = plan.num_inputs(n);
  cfg.num_outputs = plan.num_outputs(n);
  cfg.write_back_mu.assign(cfg.num_outputs, false);
  cfg.output_read.assign(cfg.num_outputs, false);
  for (const Edge& e : plan.edges) {
    if (e.from != n.name) continue;
    const int oi = port_index(info.outputs, plan.ports.at(n.name).out_numbered, e.from_port);
    if (oi < 0) continue;
    cfg.output_read[size_t(oi)] = true;
    if (plan.node(e.to).is(OpKind::kBufferize)) cfg.write_back_mu[size_t(oi)] = true;
  }
  return cfg;
}

size_t nodes_on_units(const Plan& plan, const std::string& impl, const StaticCheck* types) {
  const ImplPolicy policy(plan, impl, types);
  size_t on = 0;
  for (const NodeSpec& n : plan.nodes) {
    try {
      on += policy.choose(n, static_config(plan, n)).unit ? 1 : 0;
    } catch (const std::exception&) {
    }
  }
  return on;
}

}  // namespace stepsim
