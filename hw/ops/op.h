// Operator base class, the per-simulation environment, and the operator registry.
//
// Every STeP operator is a SystemC module with one SC_THREAD (`run`) and a Context holding its
// local clock. Operators are registered by name with their ports, typed parameters, a one-line
// description and their timing rule; `stepsim ops`, the graph loader and the docs all read the
// same registry.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "hw/channel/channel.h"
#include "hw/channel/context.h"
#include "hw/ops/params.h"
#include "hw/presets/hardware.h"
#include "hw/stream/token.h"

namespace stepsim {

class OffChipMemory;  // hw/fabric/offchip.h
class Op;

// One firing of an operator, for the Perfetto/Chrome timeline.
struct TraceEvent {
  int op;
  uint64_t start, dur;
};

// Shared by all operators of one simulation.
struct SimEnv {
  Scheduler* scheduler = nullptr;
  HardwareParams hw;
  bool functional = false;
  OffChipMemory* memory = nullptr;
  bool tracing = false;
  std::vector<TraceEvent> trace;
  std::vector<std::string> errors;
  // Literal token streams handed to Source operators by name (graph `streams:` and `stepsim eval`).
  std::map<std::string, std::vector<Beat>> streams;
  // Streams recorded by Sink operators, by node name.
  std::map<std::string, std::vector<Beat>> recorded;
  std::map<std::string, std::vector<uint64_t>> recorded_times;
};

struct PortSpec {
  std::string name;  // "in", "sel", "ref"; a trailing '*' means numbered: in0, in1, ...
  std::string doc;
  bool optional = false;
};

struct OpConfig;

struct OpInfo {
  std::string name;
  std::string category;  // off-chip memory | on-chip memory | routing | higher-order | shape | source/sink
  std::string description;
  std::string timing;  // the timing rule, one or two sentences
  std::vector<PortSpec> inputs, outputs;
  std::vector<ParamSpec> params;
  bool uses_compute = false;  // a higher-order node: gets compute bandwidth and compute units
  std::function<std::unique_ptr<Op>(const OpConfig&)> create;
};

struct OpConfig {
  std::string name;  // node (instance) name
  const OpInfo* info = nullptr;
  Params params;
  SimEnv* env = nullptr;
  size_t num_inputs = 0, num_outputs = 0;
  uint64_t compute_bw = 0;          // FLOPs/cycle allocated to this node
  std::vector<bool> write_back_mu;  // per output: the consumer is a memory unit (Bufferize)
};

class OpRegistry {
 public:
  static OpRegistry& instance();
  void add(OpInfo info);
  const OpInfo& find(const std::string& name) const;  // throws std::invalid_argument listing names
  bool has(const std::string& name) const { return ops_.count(name) > 0; }
  std::vector<const OpInfo*> all() const;

 private:
  std::map<std::string, OpInfo> ops_;
};

class Op : public sc_core::sc_module {
 public:
  explicit Op(const OpConfig& cfg);

  Context& ctx() { return ctx_; }
  const Context& ctx() const { return ctx_; }
  const OpConfig& config() const { return cfg_; }
  const std::string& node_name() const { return cfg_.name; }
  void bind_input(size_t i, Channel* c);
  void bind_output(size_t i, Channel* c);
  uint64_t flops_executed() const { return flops_; }
  uint64_t firings() const { return firings_; }

 protected:
  virtual void run() = 0;

  size_t num_in() const { return ins_.size(); }
  size_t num_out() const { return outs_.size(); }
  Channel& in(size_t i) { return *ins_[i]; }
  bool has_in(size_t i) const { return i < ins_.size() && ins_[i] != nullptr; }
  bool has_out(size_t i) const { return i < outs_.size() && outs_[i] != nullptr; }
  // Sends on output o if it is connected.
  void emit(size_t o, Beat b, uint64_t extra_delay = 0) {
    if (has_out(o)) outs_[o]->send(std::move(b), extra_delay);
  }
  void emit_all(const Beat& b) {
    for (size_t o = 0; o < outs_.size(); ++o) emit(o, b);
  }
  // Spends `cycles` of the operator's own time (recorded as one firing on the timeline).
  void charge(uint64_t cycles);
  void count_flops(uint64_t f) { flops_ += f; }
  // ceil(bytes / on-chip bandwidth) and ceil(flops / allocated compute bandwidth).
  uint64_t mem_cycles(uint64_t bytes) const;
  uint64_t compute_cycles(uint64_t flops) const;
  const HardwareParams& hw() const { return cfg_.env->hw; }
  bool functional() const { return cfg_.env->functional; }
  [[noreturn]] void fail(const std::string& msg) const;

  OpConfig cfg_;

 private:
  void thread_main();

  Context ctx_;
  std::vector<Channel*> ins_, outs_;
  uint64_t flops_ = 0;
  uint64_t firings_ = 0;
};

// SystemC object names allow only [A-Za-z0-9_].
std::string sc_safe_name(const std::string& name);

// Error raised by an operator at run time (bad data, malformed stream).
struct OpError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Helpers for operator implementations.
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

}  // namespace stepsim
