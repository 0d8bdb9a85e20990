#include "hw/ops/op.h"

#include <cctype>
#include <stdexcept>

namespace stepsim {

OpRegistry& OpRegistry::instance() {
  static OpRegistry* r = [] {
    auto* reg = new OpRegistry();
    register_source_sink_ops(*reg);
    register_offchip_ops(*reg);
    register_onchip_ops(*reg);
    register_routing_ops(*reg);
    register_higher_order_ops(*reg);
    register_shape_ops(*reg);
    return reg;
  }();
  return *r;
}

void OpRegistry::add(OpInfo info) {
  std::string n = info.name;
  if (!ops_.emplace(n, std::move(info)).second) throw std::logic_error("operator '" + n + "' registered twice");
}

const OpInfo& OpRegistry::find(const std::string& name) const {
  auto it = ops_.find(name);
  if (it == ops_.end()) {
    std::string names;
    for (const auto& kv : ops_) names += (names.empty() ? "" : ", ") + kv.first;
    throw std::invalid_argument("unknown operator '" + name + "'; known operators: " + names);
  }
  return it->second;
}

std::vector<const OpInfo*> OpRegistry::all() const {
  std::vector<const OpInfo*> v;
  for (const auto& kv : ops_) v.push_back(&kv.second);
  return v;
}

std::string sc_safe_name(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  return s;
}

Op::Op(const OpConfig& cfg)
    : sc_core::sc_module(sc_core::sc_module_name(sc_safe_name(cfg.name).c_str())),
      cfg_(cfg),
      ctx_(cfg.name, cfg.env->scheduler) {
  ins_.assign(cfg.num_inputs, nullptr);
  outs_.assign(cfg.num_outputs, nullptr);
  if (cfg_.write_back_mu.size() < cfg.num_outputs) cfg_.write_back_mu.resize(cfg.num_outputs, false);
  // The module-name scope has closed by the time this body runs (the derived classes take an
  // OpConfig, not an sc_module_name), so the thread is spawned with an explicit unique name.
  sc_core::sc_spawn_options opts;
  opts.set_stack_size(0x10000);  // operators keep little on their stacks; thousands of them exist
  sc_core::sc_spawn([this] { thread_main(); }, (sc_safe_name(cfg.name) + "_run").c_str(), &opts);
}

void Op::bind_input(size_t i, Channel* c) {
  ins_.at(i) = c;
  ctx_.add_input(c);
}

void Op::bind_output(size_t i, Channel* c) {
  outs_.at(i) = c;
  ctx_.add_output(c);
}

void Op::thread_main() {
  try {
    run();
  } catch (const std::exception& e) {
    cfg_.env->errors.push_back("node '" + cfg_.name + "' (" + cfg_.info->name + "): " + e.what());
    sc_core::sc_stop();
  }
  ctx_.finish();
}

void Op::charge(uint64_t cycles) {
  ++firings_;
  if (cycles == 0) return;
  if (cfg_.env->tracing) cfg_.env->trace.push_back(TraceEvent{ctx_.index(), ctx_.now(), cycles});
  ctx_.incr(cycles);
}

uint64_t Op::mem_cycles(uint64_t bytes) const { return (bytes + hw().onchip_bw - 1) / hw().onchip_bw; }

uint64_t Op::compute_cycles(uint64_t flops) const {
  uint64_t bw = cfg_.compute_bw ? cfg_.compute_bw : hw().compute_bw;
  return (flops + bw - 1) / bw;
}

void Op::fail(const std::string& msg) const { throw OpError(msg); }

}  // namespace stepsim
