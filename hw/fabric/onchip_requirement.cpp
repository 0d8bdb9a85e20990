#include "hw/fabric/onchip_requirement.h"

#include "hw/ops/op_formulas.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <unordered_map>

namespace stepsim {

namespace {

uint64_t max_of(const std::vector<TileStat>& v, uint64_t TileStat::*m) {
  uint64_t x = 0;
  for (const TileStat& s : v) x = std::max(x, s.*m);
  return x;
}

struct Registry {
  std::map<std::string, std::unique_ptr<OnChipRequirementModel>> models;
  Registry() {
    // step-paper-notes §3.4 table.
    add(std::make_unique<OnChipRequirementModel>(
        "paper",
        "the paper's formulas (ASPLOS'26 §4.2 table): off-chip ops 2x tile, Bufferize tile + 2x buffer, "
        "Accum/Scan/Expand output element, matmul Map/Accum 16 x in_tile_col + weight (+ output) tile"));
    // The artifact's default on_chip_requirement(count_fifos=False, mode=1).
    add(std::make_unique<OnChipRequirementModel>(
        "artifact",
        "the artifact's default (step_artifact ops.py, mode=1): off-chip ops 1x tile, Map 0, matmul Accum "
        "output tile only, Streamify buffer + tile, Repeat its element; otherwise as the paper"));
    // The preset parameter lists the names (hw/presets/hardware.h): one model for each.
    std::vector<std::string> names;
    for (const auto& kv : models) names.push_back(kv.first);
    if (names != onchip_requirement_models())
      throw std::logic_error("the on-chip requirement models differ from onchip_requirement_models()");
  }
  void add(std::unique_ptr<OnChipRequirementModel> m) {
    std::string n = m->name();
    if (!models.emplace(n, std::move(m)).second)
      throw std::logic_error("on-chip requirement model '" + n + "' registered twice");
  }
};

Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

}  // namespace

uint64_t OnChipRequirementModel::requirement(const NodeObservation& n) const {
  OnChipTerms<uint64_t> t;
  if (n.info->is_offchip()) t.staging_tile = n.staging_tile_bytes();
  t.in_elem = n.in_elem_bytes();
  t.out_elem = n.out_elem_bytes();
  t.buffer_elems = n.max_buffer_elems;
  t.matmul_operands = n.matmul_operand_bytes();
  t.matmul = n.is_matmul();
  return onchip_requirement(onchip_formula(*n.info, name_), t);
}

uint64_t NodeObservation::in_elem_bytes() const { return max_of(inputs, &TileStat::max_elem_bytes); }
uint64_t NodeObservation::in_tile_bytes() const { return max_of(inputs, &TileStat::max_tile_bytes); }
uint64_t NodeObservation::out_elem_bytes() const { return max_of(outputs, &TileStat::max_elem_bytes); }
uint64_t NodeObservation::out_tile_bytes() const { return max_of(outputs, &TileStat::max_tile_bytes); }

uint64_t NodeObservation::matmul_operand_bytes() const {
  uint64_t b = 0;
  if (!operands.empty()) b += 16 * operands[0].max_row_bytes;
  if (operands.size() > 1) b += operands[1].max_tile_bytes;
  return b;
}

const OnChipRequirementModel& onchip_requirement_model(const std::string& name) {
  auto& m = registry().models;
  auto it = m.find(name);
  if (it == m.end()) {
    std::string names;
    for (const auto& kv : m) names += (names.empty() ? "" : ", ") + kv.first;
    throw std::invalid_argument("unknown on-chip requirement model '" + name + "'; known: " + names);
  }
  return *it->second;
}

std::vector<NodeObservation> observe_nodes(const std::vector<const Op*>& ops, const std::vector<OpLink>& links) {
  std::unordered_map<const Op*, std::vector<const OpLink*>> into;
  for (const OpLink& l : links) into[l.consumer].push_back(&l);
  std::vector<NodeObservation> out;
  out.reserve(ops.size());
  for (const Op* op : ops) {
    NodeObservation n;
    const OpConfig& cfg = op->config();
    n.name = cfg.name;
    n.info = cfg.info;
    if (cfg.params.has("fn")) n.fn = cfg.params.get_string("fn");
    const OnChipStats& s = op->onchip_stats();
    n.outputs = s.outputs;
    n.operands = s.operands;
    n.max_buffer_elems = s.max_buffer_elems;
    n.max_buffer_bytes = s.max_buffer_bytes;
    n.inputs.resize(cfg.num_inputs);
    auto it = into.find(op);
    if (it != into.end())
      for (const OpLink* l : it->second) {
        const auto& outs = l->producer->onchip_stats().outputs;
        if (l->input < n.inputs.size() && l->output < outs.size()) n.inputs[l->input].merge(outs[l->output]);
      }
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace stepsim
