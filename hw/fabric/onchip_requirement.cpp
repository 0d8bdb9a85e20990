#include "hw/fabric/onchip_requirement.h"

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

// step-paper-notes §3.4 table.
class PaperModel : public OnChipRequirementModel {
 public:
  std::string name() const override { return "paper"; }
  std::string description() const override {
    return "the paper's formulas (ASPLOS'26 §4.2 table): off-chip ops 2x tile, Bufferize tile + 2x buffer, "
           "Accum/Scan/Expand output element, matmul Map/Accum 16 x in_tile_col + weight (+ output) tile";
  }
  uint64_t requirement(const NodeObservation& n) const override {
    if (n.is_offchip()) return 2 * n.staging_tile_bytes();
    if (n.op == "Bufferize") return n.in_elem_bytes() + n.max_buffer_elems * n.in_elem_bytes() * 2;
    if (n.op == "Map") return n.is_matmul() ? n.matmul_operand_bytes() : 0;
    if (n.op == "Accum") return (n.is_matmul() ? n.matmul_operand_bytes() : 0) + n.out_elem_bytes();
    if (n.op == "Scan" || n.op == "Expand") return n.out_elem_bytes();
    return 0;
  }
};

// The artifact's default on_chip_requirement(count_fifos=False, mode=1).
class ArtifactModel : public PaperModel {
 public:
  std::string name() const override { return "artifact"; }
  std::string description() const override {
    return "the artifact's default (step_artifact ops.py, mode=1): off-chip ops 1x tile, Map 0, matmul Accum "
           "output tile only, Streamify buffer + tile, Repeat its element; otherwise as the paper";
  }
  uint64_t requirement(const NodeObservation& n) const override {
    if (n.is_offchip()) return n.staging_tile_bytes();
    if (n.op == "Map") return 0;
    if (n.op == "Accum" && n.is_matmul()) return n.out_elem_bytes();
    if (n.op == "Streamify") return n.max_buffer_elems * n.out_elem_bytes() + n.out_elem_bytes();
    if (n.op == "Repeat") return n.out_elem_bytes();  // RepeatStatic counts its element
    return PaperModel::requirement(n);
  }
};

struct Registry {
  std::map<std::string, std::unique_ptr<OnChipRequirementModel>> models;
  Registry() {
    add(std::make_unique<PaperModel>());
    add(std::make_unique<ArtifactModel>());
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
    n.op = cfg.info->name;
    n.category = cfg.info->category;
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
