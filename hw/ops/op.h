// Operator base class, the per-simulation environment, and the operator registry.
//
// Every STeP operator is a SystemC module whose body (`run`) runs as a fiber of the Scheduler
// (hw/channel/context.h) with a Context holding its local clock. Operators are registered by name with their ports,
// typed parameters, a one-line description and their timing rule; `stepsim ops`, the graph loader and the docs all read
// the same registry.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <systemc>

#include "hw/channel/channel.h"
#include "hw/channel/context.h"
#include "hw/functions/flops.h"
#include "hw/ops/op_kind.h"
#include "hw/ops/op_params.h"
#include "hw/ops/params.h"
#include "hw/presets/hardware.h"
#include "hw/stream/token.h"

namespace stepsim {

class OffChipMemory;  // hw/memory/offchip.h
class Op;

// One firing of an operator, for the Perfetto/Chrome timeline.
struct TraceEvent {
  int op;
  uint64_t start, dur;
};

// What the operators of one simulation are given (their results come back through each
// operator: Op::take_report).
struct SimEnv {
  Scheduler* scheduler = nullptr;
  HardwareParams hw;
  bool functional = false;
  OffChipMemory* memory = nullptr;
  bool tracing = false;
  // Memory units one Bufferize buffer may occupy (hw/fabric/allocation.h: its own PMU plus the
  // ones no node holds statically); 0 = unchecked.
  uint64_t buffer_pmu_limit = 0;
  // Literal token streams handed to Source operators by name (graph `streams:` and `stepsim eval`).
  std::map<std::string, std::vector<Beat>> streams;
  // Co-simulation: where bridged nodes write pin waveforms ("" = none).
  std::string vcd_dir;
};

// A file an operator wrote, and when (Op::event_order: the run lists its files in that order).
struct WrittenFile {
  uint64_t order = 0;
  std::string path;
};

// What one node reports about its run beyond its clock and counts (Op::take_report); the run's
// results are gathered from these (sim/engine/collect.h).
struct OpReport {
  uint64_t unit_clocks = 0;        // a unit: clock edges it was given
  std::vector<TraceEvent> trace;   // SimEnv::tracing: the node's firings, in the order made
  std::vector<WrittenFile> files;  // files the node wrote (a unit's pin waveform)
  bool records = false;            // a Sink: the beats that arrived and their arrival times
  std::vector<Beat> recorded;
  std::vector<uint64_t> recorded_times;
};

struct PortSpec {
  std::string name;  // "in", "sel", "ref"; a trailing '*' means numbered: in0, in1, ...
  std::string doc;
  bool optional = false;
};

struct OpConfig;

// ---- On-chip accounting -------------------------------------------------------------------
// Shapes are dynamic, so the paper's on-chip requirement formulas (hw/fabric/onchip_requirement.h)
// are evaluated on what each node saw at run time, and next to them the bytes each node really
// held. Every Op records, with no work from the operator:
//   * per output port, the largest element it emitted (the output channel keeps the TileStat,
//     hw/channel/channel.h; onchip_stats() collects it);
// and operators report:
//   * note_operands(args): the tiles a higher-order function was applied to (per operand);
//   * note_onchip(bytes): the bytes the node holds on chip right now (a level: an accumulator, the
//     operand tiles of a matmul, off-chip staging tiles); the measured peak is the largest level;
//   * lease_buffer / note_buffer_read: Bufferize buffers, held from the first write until the
//     last Streamify reading them has finished (model time, so independent of process order).
struct OnChipStats {
  std::vector<TileStat> outputs;   // per output port, from the output channels (onchip_stats())
  std::vector<TileStat> operands;  // per function operand, recorded by note_operands()
  uint64_t max_buffer_elems = 0;   // Bufferize: largest buffer in elements (card(buffer))
  uint64_t max_buffer_bytes = 0;   // Bufferize: largest buffer in bytes
  uint64_t level_peak = 0;         // largest note_onchip() level
};

// Holdings released by another node (a Bufferize buffer is freed when the Streamify reading it is
// done), kept as model-time events: (time, +bytes) and (time, -bytes).
struct HoldLedger {
  std::vector<std::pair<uint64_t, int64_t>> events;
  // Largest sum held at once; at equal times releases come before acquisitions.
  uint64_t peak() const;
};

// A node's on-chip memory requirement by one model (hw/fabric/onchip_requirement.h): a sum of
// terms, each counted `coefficient` times. The terms are what the node saw (hw/fabric) or its
// symbolic stream types (sim/shape); hw/ops/op_formulas.h evaluates the sum for both.
// Written in the registrations as OnChipFormula().staging(2), OnChipFormula().input(1).buffer_x_input(2), ...
struct OnChipFormula {
  uint8_t staging_tile = 0;       // the tile an off-chip operator stages (written or read)
  uint8_t in_elem = 0;            // the largest input element
  uint8_t buffer_x_in_elem = 0;   // card(buffer) x the input element (Bufferize)
  uint8_t buffer_x_out_elem = 0;  // card(buffer) x the output element (Streamify)
  uint8_t out_elem = 0;           // the largest output element
  uint8_t matmul_operands = 0;    // 16 rows of operand 0 + operand 1, when the function is a matmul

  OnChipFormula& staging(uint8_t c) { return set(staging_tile, c); }
  OnChipFormula& input(uint8_t c) { return set(in_elem, c); }
  OnChipFormula& buffer_x_input(uint8_t c) { return set(buffer_x_in_elem, c); }
  OnChipFormula& buffer_x_output(uint8_t c) { return set(buffer_x_out_elem, c); }
  OnChipFormula& output(uint8_t c) { return set(out_elem, c); }
  OnChipFormula& matmul(uint8_t c) { return set(matmul_operands, c); }

 private:
  OnChipFormula& set(uint8_t& term, uint8_t c) {
    term = c;
    return *this;
  }
};
// The formulas of the two models (hw/presets: onchip_requirement_models()). An operator without
// any holds nothing on chip but its FIFOs, which the models do not count.
struct OnChipFormulas {
  OnChipFormula paper, artifact;
};

// Off-chip traffic: the stream an off-chip operator reads from or writes to HBM, and so the tile
// it stages on chip.
struct OffChipTraffic {
  enum class Direction : uint8_t { kNone, kRead, kWrite };
  Direction direction = Direction::kNone;
  std::string port;  // kRead: the output port of the loaded tiles; kWrite: the input port written
};

// A cycle-accurate unit kind that can run the operator. hw/bridge adds one per route of the unit
// manifest (rtl/units.list) when an implementation (hls, rtl) registers, so the descriptor says
// which units run it, how they check a node and how they are made; `stepsim ops` lists them.
struct UnitRunner {
  std::string impl;                                         // hls | rtl
  std::string kind;                                         // the manifest's bridge kind (Pcu, Ag, Retile, ...)
  std::string fn;                                           // the `fn` it is limited to; "" = any
  std::function<std::string(const OpConfig&)> unsupported;  // "" if its units can run the node
  std::function<std::unique_ptr<Op>(const OpConfig&)> create;
};

// The descriptor of one operator: everything the rest of the tree knows about it. `stepsim ops`,
// the docs, the loader, shape inference (sim/shape, which keys its rules by `kind`), the metrics,
// the fabric and the builder all read it.
struct OpInfo {
  OpKind kind;
  std::string name;  // the operator's one spelling (graph files, messages)
  OpCategory category;
  std::string description;
  std::string timing;  // the timing rule, one or two sentences
  std::vector<PortSpec> inputs, outputs;
  std::vector<ParamSpec> params;
  bool uses_compute = false;  // a higher-order node: gets compute bandwidth and compute units
  std::function<std::unique_ptr<Op>(const OpConfig&)> create;
  FunctionFamily functions = FunctionFamily::kNone;  // what its `fn` parameter names
  OnChipFormulas onchip{};
  OffChipTraffic traffic{};
  // The node holds a memory unit for as long as the graph is placed (a Bufferize's buffer, an
  // off-chip operator's staging tiles): hw/fabric/allocation.h.
  bool holds_memory_unit = false;
  std::vector<UnitRunner> units{};  // filled by hw/bridge (UnitRunner)

  OpInfo&& with_functions(FunctionFamily f) && {
    functions = f;
    return std::move(*this);
  }
  OpInfo&& with_onchip(OnChipFormula paper, OnChipFormula artifact) && {
    onchip = {paper, artifact};
    return std::move(*this);
  }
  OpInfo&& with_traffic(OffChipTraffic::Direction d, std::string port) && {
    traffic = {d, std::move(port)};
    return std::move(*this);
  }
  OpInfo&& with_memory_unit() && {
    holds_memory_unit = true;
    return std::move(*this);
  }
  bool is_offchip() const { return category == OpCategory::kOffChipMemory; }
};

struct OpConfig {
  std::string name;  // node (instance) name
  const OpInfo* info = nullptr;
  Params params;
  SimEnv* env = nullptr;
  size_t num_inputs = 0, num_outputs = 0;
  uint64_t compute_bw = 0;          // FLOPs/cycle allocated to this node
  std::vector<bool> write_back_mu;  // per output: the consumer is a memory unit (Bufferize)
  std::vector<bool> output_read;    // per output: a consumer reads it (a unit without the port refuses)
};

class OpRegistry {
 public:
  static OpRegistry& instance();
  void add(OpInfo info);
  const OpInfo& find(const std::string& name) const;  // throws std::invalid_argument listing names
  const OpInfo& find(OpKind kind) const { return *by_kind_[size_t(kind)]; }
  bool has(const std::string& name) const { return ops_.count(name) > 0; }
  std::vector<const OpInfo*> all() const;
  // Throws std::logic_error unless every OpKind was added exactly once (checked at start-up).
  void check_complete() const;
  // A unit that can run operators of `kind` (hw/bridge, as an implementation registers); the same
  // impl, kind and fn twice is kept once.
  void add_unit(OpKind kind, UnitRunner unit);

 private:
  std::map<std::string, OpInfo> ops_;
  std::array<const OpInfo*, kNumOpKinds> by_kind_{};
};

// The name of an operator kind ("Map"), for code that writes graphs (the builder, down-tiling).
inline const std::string& op_name(OpKind kind) { return OpRegistry::instance().find(kind).name; }
// Whether the node's `fn` names a matmul (the on-chip formulas and accounting treat those apart).
bool applies_matmul(const OpInfo& info, const std::string& fn);

class Op : public sc_core::sc_module {
 public:
  // stepped: the operator is a StepOp (below) and gets no fiber.
  explicit Op(const OpConfig& cfg, bool stepped = false);

  Context& ctx() { return ctx_; }
  const Context& ctx() const { return ctx_; }
  const OpConfig& config() const { return cfg_; }
  const std::string& node_name() const { return cfg_.name; }
  void bind_input(size_t i, Channel* c);
  void bind_output(size_t i, Channel* c);
  // Beats output o may hold in flight ahead of its channel's FIFO (ChannelParams::inflight): the
  // elaboration asks before it creates the channel. 0 for every operator but the loads.
  virtual uint32_t output_inflight(size_t /*o*/) const { return 0; }
  // Depth of output o's channel when the node sets none (`fifo_depth` = the preset's): the
  // loads make it their memory unit's buffer (load_buffer_tiles).
  virtual uint32_t output_depth(size_t /*o*/, uint32_t fifo_depth) const { return fifo_depth; }
  uint64_t flops_executed() const { return arithmetic_.flops(); }
  // The FLOPs by kind (hw/functions/flops.h) and the bytes the timing charged as moved in and out of
  // memory units (mem_read_cycles, mem_write_cycles): the node's actions (sim/report/actions.def).
  const Arithmetic& arithmetic() const { return arithmetic_; }
  uint64_t sram_read_bytes() const { return sram_read_bytes_; }
  uint64_t sram_write_bytes() const { return sram_write_bytes_; }
  uint64_t firings() const { return ctx_.firings(); }
  // On-chip accounting (see OnChipStats above); collects the outputs' TileStats from the channels.
  const OnChipStats& onchip_stats() const;
  // Measured peak of bytes this node held on chip at once: the largest note_onchip() level, or
  // the peak of its leased buffers, whichever is larger.
  uint64_t onchip_peak_bytes() const;
  // The node holds `live_bytes` on chip from now on (a level, not a delta): call it whenever
  // the amount changes, e.g. note_onchip(staged) after a tile arrives and after it leaves.
  void note_onchip(uint64_t live_bytes) {
    if (live_bytes > onchip_.level_peak) onchip_.level_peak = live_bytes;
  }
  // After the run, once: what the node reports (its timeline, then the operator's own results:
  // report()); moved out of the node.
  OpReport take_report();
  // The error that stopped the run in this node's body ("" = none), and when (event_order():
  // the first failure is the run's error).
  const std::string& failure() const { return failure_; }
  uint64_t failure_order() const { return failure_order_; }
  // A unit waits at its pins, not in the channel's receive and send, so the channel's own starve
  // and stall counts miss it: its bridge counts those cycles for channel `c` (0 for others).
  virtual uint64_t input_wait_cycles(const Channel* /*c*/) { return 0; }
  virtual uint64_t output_wait_cycles(const Channel* /*c*/) { return 0; }

 protected:
  virtual void run() = 0;

  size_t num_in() const { return ins_.size(); }
  size_t num_out() const { return outs_.size(); }
  Channel& in(size_t i) { return *ins_[i]; }
  Channel& out(size_t i) { return *outs_[i]; }
  bool has_in(size_t i) const { return i < ins_.size() && ins_[i] != nullptr; }
  bool has_out(size_t i) const { return i < outs_.size() && outs_[i] != nullptr; }
  // Sends on output o if it is connected.
  // (Two overloads rather than one by-value parameter: a moved beat is not moved again.)
  // (The channel records the element for the on-chip accounting: Channel::output_stat.)
  void emit(size_t o, Beat&& b, uint64_t extra_delay = 0) {
    if (has_out(o)) outs_[o]->send(std::move(b), extra_delay);
  }
  void emit(size_t o, const Beat& b, uint64_t extra_delay = 0) {
    if (has_out(o)) outs_[o]->send(b, extra_delay);
  }
  void emit_all(const Beat& b) {
    for (size_t o = 0; o < outs_.size(); ++o) emit(o, b);
  }
  // Spends `cycles` of the operator's own time (recorded as one firing on the timeline).
  void charge(uint64_t cycles) {
    ctx_.count_firing();
    if (cycles) charge_cycles(cycles);
  }
  // One firing from `start` to `end` (the clock may already be past start, e.g. after waiting
  // for off-chip memory): busy for end - start cycles, clock moved to end.
  void charge_span(uint64_t start, uint64_t end);
  void count_arithmetic(const Arithmetic& a) { arithmetic_ += a; }
  // ceil(bytes / on-chip bandwidth) and ceil(flops / allocated compute bandwidth).
  uint64_t mem_cycles(uint64_t bytes) const;
  // mem_cycles of bytes read from (written to) a memory unit's SRAM, which they also count: call
  // them once per transfer the timing charges.
  uint64_t mem_read_cycles(uint64_t bytes) {
    sram_read_bytes_ += bytes;
    return mem_cycles(bytes);
  }
  uint64_t mem_write_cycles(uint64_t bytes) {
    sram_write_bytes_ += bytes;
    return mem_cycles(bytes);
  }
  // Bytes written to a memory unit's SRAM where the timing charges no bandwidth for them (a
  // load's staging buffer, a Bufferize's buffer).
  void count_sram_write(uint64_t bytes) { sram_write_bytes_ += bytes; }
  uint64_t compute_cycles(uint64_t flops) const;
  const HardwareParams& hw() const { return cfg_.env->hw; }
  bool functional() const { return cfg_.env->functional; }
  [[noreturn]] void fail(const std::string& msg) const;
  // A stop level computed from ranks (an input's stop plus the operator's rank): the beat's stop
  // field, or an error naming the level and the limit when it does not fit in S1..S15 (a bare
  // stop beat needs a level: bare = true excludes 0, which would send a beat that says nothing).
  // Called where an operator computes a level, never per beat of a pass-through.
  uint8_t stop_level(int64_t level, bool bare = false) const {
    if (level > kMaxStopLevel || level < (bare ? 1 : 0)) stop_level_error(level);
    return uint8_t(level);
  }
  // An integer parameter that must lie in lo..hi (a rank, a level): read as 64 bits and checked
  // before it is narrowed, so that no value wraps.
  int int_param(const std::string& name, int64_t lo, int64_t hi) const;
  int int_param(IntParam key, int64_t lo, int64_t hi) const { return int_param(std::string(key.name), lo, hi); }
  // On-chip accounting helpers (see OnChipStats above).
  void note_operands(const std::vector<Tile>& args);
  void note_buffer(uint64_t elems, uint64_t bytes) {
    onchip_.max_buffer_elems = std::max(onchip_.max_buffer_elems, elems);
    onchip_.max_buffer_bytes = std::max(onchip_.max_buffer_bytes, bytes);
  }
  // Bufferize: wraps a filled buffer in a reference whose on-chip bytes count as held by this
  // node from `acquired` (model time of the first write) until the last reader is done.
  BufferRef lease_buffer(Buffer&& b, uint64_t acquired);
  // Streamify: done reading `b` at the current local time (the buffer is released when the last
  // reference goes; a buffer no reader reported counts as held to the end of the run).
  void note_buffer_read(const BufferRef& b) const;

  // The operator's own results (take_report): a Sink its stream, a unit's bridge its clocks.
  virtual void report(OpReport& /*r*/) {}
  // Increasing numbers in the order things happen across the operators (failures, files
  // written), so that the run can list them in that order.
  static uint64_t event_order();
  // One span of the timeline (SimEnv::tracing), for operators that time themselves.
  void trace_span(uint64_t start, uint64_t dur) { trace_.push_back(TraceEvent{ctx_.index(), start, dur}); }

  OpConfig cfg_;
  // An error thrown by the body: recorded, and the run stops (nothing else runs).
  void body_failed(const std::exception& e);

 private:
  void thread_main();
  void charge_cycles(uint64_t cycles);  // the part of charge() that spends time
  [[noreturn]] void stop_level_error(int64_t level) const;

  Context ctx_;
  std::vector<Channel*> ins_, outs_;
  Arithmetic arithmetic_;
  uint64_t sram_read_bytes_ = 0, sram_write_bytes_ = 0;
  mutable OnChipStats onchip_;         // outputs: filled in by onchip_stats()
  std::shared_ptr<HoldLedger> holds_;  // leased buffers (created on the first lease)
  std::vector<TraceEvent> trace_;      // SimEnv::tracing: this node's firings
  std::string failure_;                // body_failed
  uint64_t failure_order_ = 0;
};

// An operator written as a step function instead of a body that blocks: it runs without a
// fiber of its own (Context::set_step), so an activation costs a call instead of two context
// switches. For operators whose state between beats is small (a beat waiting for space).
//
// A step operator derives from StepOp, passes `this` to its constructor (so the activation calls
// its step() directly, without loading the object's vtable pointer, one more cache line) and
// defines, public:
//   bool step();  // goes on until it would block: then parks its context on that channel
//                 // (ctx().park_recv / park_send) and returns false; returns true once it is
//                 // finished. Channel calls must not block: check empty() before a receive and
//                 // full() before a send.
class StepOp : public Op {
 protected:
  template <class Self>
  StepOp(const OpConfig& cfg, Self* self) : Op(cfg, true) {
    ctx().set_step(&step_main<Self>, self);
  }

 private:
  void run() final;  // never called: there is no fiber
  template <class Self>
  static void step_main(void* p) {
    Self* op = static_cast<Self*>(p);
    bool finished = true;
    try {
      finished = op->step();
    } catch (const std::exception& e) {
      op->body_failed(e);
    }
    if (finished) op->ctx().finish();
  }
};

static_assert(kRankRange.max == kMaxStopLevel, "rank parameters end at the highest stop level");

// SystemC object names allow only [A-Za-z0-9_].
std::string sc_safe_name(const std::string& name);

// Error raised by an operator at run time (bad data, malformed stream).
struct OpError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Helpers for operator implementations.

// An integer carried by metadata streams (tile indices, KV lengths): a scalar, or a 1x1 int32
// tile with its payload. nullopt for anything else.
std::optional<int64_t> index_value(const Element& e);

// A beat in the text notation for messages ("T[2x2] S1 D"; buffers without their contents).
std::string beat_text(const Beat& b);

// How messages name an element of a stream (a port): by its index, counted from 0 and said so:
// "stream element 4 of 'sel' (counting from 0)".
inline std::string element_number(const std::string& port, uint64_t index) {
  return "stream element " + std::to_string(index) + " of '" + port + "' (counting from 0)";
}

inline Beat with_stop(Beat b, uint8_t stop) {
  b.stop = stop;
  return b;
}

// Registration entry points, one per operator family (hw/ops/*.cpp).
void register_source_sink_ops(OpRegistry&);
void register_offchip_ops(OpRegistry&);
void register_onchip_ops(OpRegistry&);
void register_routing_ops(OpRegistry&);
void register_higher_order_ops(OpRegistry&);
void register_shape_ops(OpRegistry&);
void register_address_ops(OpRegistry&);

}  // namespace stepsim
