// On-chip memory requirement: the paper's per-operator formulas (step-paper-notes §3.4), made
// pluggable — v2 §4.4 says they are meant to be customised — and evaluated on the shapes each
// node observed at run time, because STeP shapes are dynamic (a Bufferize buffer's size, an
// accumulator sized by its first input, ...). The measured peak (Op::onchip_peak_bytes) is
// reported beside the formula value; see hw/ops/op.h "On-chip accounting".
//
// Models, selected by the hardware parameter `onchip_requirement_model`:
//   paper     the paper's table (§3.4), all values in bytes:
//               off-chip load/store      2 x staging tile (double-buffered): the output tile of a
//                                        load, the written (input) tile of a store
//               Bufferize                size(in tile) + card(buffer) x size(in tile) x 2
//               Accum, Scan, Expand      size(output element)
//               Map with a matmul        16 x in_tile_col x size(in dtype) + size(weight tile)
//               Accum with a matmul      the same + size(output tile)
//               everything else          0 (fully streamed; FIFOs are not counted)
//             Units: the paper writes "16 x in_tile_col" (16 rows of the input tile, mirroring the
//             16x16 hardware tiles); we count it in bytes, i.e. multiplied by the input's element
//             size, so that every term of the sum is in bytes (the artifact's mode=2 code leaves
//             it in elements and mixes units).
//   artifact  the artifact's default call on_chip_requirement(count_fifos=False, mode=1)
//             (stanford-ppl/step_artifact src/step_py/ops.py), where it differs from the paper:
//               off-chip load/store      1 x staging tile
//               Map (matmul or not)      0
//               Accum with a matmul      size(output tile) only
//               Streamify                card(buffer) x size(tile) + size(tile)
//               Repeat (RepeatStatic)    size(output element)
//             Bufferize, Accum/Scan/Expand and the rest as in the paper. (Its FlatReassemble term
//             for a reassembly written to a memory unit is not modelled: Reassemble counts 0.)
//
// Dynamic shapes: every size is the largest seen on that node during the run (largest input
// tile, largest output element, largest buffer in elements), so the value is what the formula
// gives for the largest instance the run produced.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hw/ops/op.h"
#include "hw/presets/hardware.h"

namespace stepsim {

// What one node saw during the run, in the terms the formulas use.
struct NodeObservation {
  std::string name;
  const OpInfo* info = nullptr;    // the node's operator
  std::string fn;                  // function parameter of a higher-order node ("" otherwise)
  std::vector<TileStat> inputs;    // per input port: the largest elements that arrived
  std::vector<TileStat> outputs;   // per output port: the largest elements emitted
  std::vector<TileStat> operands;  // per function operand (higher-order nodes)
  uint64_t max_buffer_elems = 0;   // card of the largest buffer written (Bufferize) or read (Streamify)
  uint64_t max_buffer_bytes = 0;

  bool is_store() const { return info->traffic.direction == OffChipTraffic::Direction::kWrite; }
  bool is_matmul() const { return !fn.empty() && applies_matmul(*info, fn); }
  // Largest element / tile over all input or output ports.
  uint64_t in_elem_bytes() const;
  uint64_t in_tile_bytes() const;
  uint64_t out_elem_bytes() const;
  uint64_t out_tile_bytes() const;
  // The staging tile of an off-chip op: a store's written tile, a load's output tile.
  uint64_t staging_tile_bytes() const { return is_store() ? in_tile_bytes() : out_tile_bytes(); }
  // 16 x (innermost dimension x element size) of operand 0 plus the bytes of operand 1.
  uint64_t matmul_operand_bytes() const;
};

// A model is a name and a description; its formulas are in the operators' descriptors
// (OpInfo::onchip, summed by hw/ops/op_formulas.h).
class OnChipRequirementModel {
 public:
  OnChipRequirementModel(std::string name, std::string description)
      : name_(std::move(name)), description_(std::move(description)) {}
  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  // Bytes node `n` needs on chip by this model's formulas.
  uint64_t requirement(const NodeObservation& n) const;

 private:
  std::string name_, description_;
};

// The model of a name of onchip_requirement_models() (hw/presets/hardware.h, where a new model's
// name is added too); throws std::invalid_argument listing the names.
const OnChipRequirementModel& onchip_requirement_model(const std::string& name);

// One elaborated channel: producer output port -> consumer input port.
struct OpLink {
  const Op* producer;
  size_t output;
  const Op* consumer;
  size_t input;
};

// The observations of `ops` after the run (same order); a node's inputs are what its producers
// emitted on the linked ports.
std::vector<NodeObservation> observe_nodes(const std::vector<const Op*>& ops, const std::vector<OpLink>& links);

}  // namespace stepsim
