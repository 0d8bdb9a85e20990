#include "hw/ops/op.h"

#include "hw/functions/functions.h"
#include "hw/ops/op_formulas.h"

#include <alloca.h>

#include <algorithm>
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
    register_address_ops(*reg);
    reg->check_complete();
    return reg;
  }();
  return *r;
}

void OpRegistry::add(OpInfo info) {
  std::string n = info.name;
  const size_t k = size_t(info.kind);
  if (k >= by_kind_.size() || by_kind_[k]) throw std::logic_error("operator kind of '" + n + "' registered twice");
  auto [it, added] = ops_.emplace(n, std::move(info));
  if (!added) throw std::logic_error("operator '" + n + "' registered twice");
  by_kind_[k] = &it->second;  // std::map nodes do not move
}

void OpRegistry::check_complete() const {
  for (size_t k = 0; k < by_kind_.size(); ++k)
    if (!by_kind_[k]) throw std::logic_error("operator kind " + std::to_string(k) + " has no registration");
}

void OpRegistry::add_unit(OpKind kind, UnitRunner unit) {
  OpInfo& info = ops_.at(find(kind).name);
  for (const UnitRunner& u : info.units)
    if (u.impl == unit.impl && u.kind == unit.kind && u.fn == unit.fn) return;
  info.units.push_back(std::move(unit));
}

const char* category_name(OpCategory c) {
  switch (c) {
    case OpCategory::kOffChipMemory:
      return "off-chip memory";
    case OpCategory::kOnChipMemory:
      return "on-chip memory";
    case OpCategory::kRouting:
      return "routing";
    case OpCategory::kHigherOrder:
      return "higher-order";
    case OpCategory::kShape:
      return "shape";
    case OpCategory::kAddressGeneration:
      return "address generation";
    case OpCategory::kSourceSink:
      return "source/sink";
  }
  return "?";
}

const OnChipFormula& onchip_formula(const OpInfo& info, const std::string& model) {
  if (model == "paper") return info.onchip.paper;
  if (model == "artifact") return info.onchip.artifact;
  throw std::invalid_argument("unknown on-chip requirement model '" + model + "'; known: artifact, paper");
}

bool applies_matmul(const OpInfo& info, const std::string& fn) {
  switch (info.functions) {
    case FunctionFamily::kMap:
      return map_function(fn).matmul;
    case FunctionFamily::kAccum:
      return accum_function(fn).matmul;
    case FunctionFamily::kFlatMap:
    case FunctionFamily::kNone:
      return false;
  }
  return false;
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

Op::Op(const OpConfig& cfg, bool stepped)
    : sc_core::sc_module(sc_core::sc_module_name(sc_safe_name(cfg.name).c_str())),
      cfg_(cfg),
      ctx_(cfg.name, cfg.env->scheduler) {
  ins_.assign(cfg.num_inputs, nullptr);
  outs_.assign(cfg.num_outputs, nullptr);
  onchip_.outputs.resize(cfg.num_outputs);
  if (cfg_.write_back_mu.size() < cfg.num_outputs) cfg_.write_back_mu.resize(cfg.num_outputs, false);
  // The body runs as a fiber of the Scheduler (hw/channel/context.h), not a SystemC thread.
  if (!stepped) ctx_.spawn([this] { thread_main(); }, kFiberStackBytes);
}

void StepOp::run() { throw std::logic_error("StepOp::run: a stepped operator has no fiber"); }

// Counted across runs (never two at once: one kernel runs at a time, on one thread).
uint64_t Op::event_order() {
  static uint64_t events = 0;
  return ++events;
}

void Op::body_failed(const std::exception& e) {
  failure_ = "node '" + cfg_.name + "' (" + cfg_.info->name + "): " + e.what();
  failure_order_ = event_order();
  ctx_.scheduler()->stop();  // nothing else runs
  sc_core::sc_stop();        // co-simulated units (hw/bridge) stop too
}

OpReport Op::take_report() {
  OpReport r;
  r.trace = std::move(trace_);
  report(r);
  return r;
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
  // Fiber stacks are page-aligned, so every operator's hot top-of-stack lines would fall in the
  // same cache sets; a per-operator offset spreads them (docs/performance.md).
  volatile char* pad = static_cast<char*>(alloca(64 + 64 * ((ctx_.index() * 37) % 64)));
  pad[0] = 0;
  try {
    run();
  } catch (const std::exception& e) {
    body_failed(e);
  }
  ctx_.finish();
}

void Op::charge_cycles(uint64_t cycles) {
  if (cfg_.env->tracing) trace_span(ctx_.now(), cycles);
  ctx_.incr(cycles);
}

void Op::charge_span(uint64_t start, uint64_t end) {
  ctx_.count_firing();
  if (end <= start) return;
  if (cfg_.env->tracing) trace_span(start, end - start);
  ctx_.add_busy(end - start);
  ctx_.advance_to(end);
}

namespace {
// ceil(x / d). The bandwidths are powers of two in both presets: a shift instead of a 64-bit
// division (tens of cycles), since Map and the other higher-order operators ask for every tile.
uint64_t ceil_div(uint64_t x, uint64_t d) {
  if (d != 0 && (d & (d - 1)) == 0) return (x + d - 1) >> __builtin_ctzll(d);
  return (x + d - 1) / d;
}
}  // namespace

uint64_t Op::mem_cycles(uint64_t bytes) const { return ceil_div(bytes, hw().onchip_bw); }

uint64_t Op::compute_cycles(uint64_t flops) const {
  uint64_t bw = cfg_.compute_bw ? cfg_.compute_bw : hw().compute_bw;
  return ceil_div(flops, bw);
}

void Op::fail(const std::string& msg) const { throw OpError(msg); }

int Op::int_param(const std::string& name, int64_t lo, int64_t hi) const {
  const int64_t v = cfg_.params.get_int(name);
  if (v < lo || v > hi)
    fail(name + " is " + std::to_string(v) + ", outside the allowed range " + std::to_string(lo) + ".." +
         std::to_string(hi));
  return int(v);
}

void Op::stop_level_error(int64_t level) const {
  if (level > kMaxStopLevel)
    fail("would emit stop level S" + std::to_string(level) + ", above the highest level S" +
         std::to_string(kMaxStopLevel) +
         " (the stop field has 4 bits): the input's stop levels plus the operator's "
         "rank must stay within " +
         std::to_string(kMaxStopLevel));
  fail("would emit stop level " + std::to_string(level) + "; stop levels are S1..S" + std::to_string(kMaxStopLevel));
}

std::string beat_text(const Beat& b) {
  std::string s = b.has_elem ? b.elem.brief() : "";
  if (b.stop) s += (s.empty() ? "S" : " S") + std::to_string(b.stop);
  if (b.done) s += s.empty() ? "D" : " D";
  return s;
}

std::optional<int64_t> index_value(const Element& e) {
  if (e.is_scalar()) return e.scalar();
  if (e.is_tile() && e.tile().dtype == DType::INT32 && e.tile().has_data() && e.tile().elems() == 1)
    return e.tile().i(0, 0);
  return std::nullopt;
}

// ---- On-chip accounting ----

uint64_t HoldLedger::peak() const {
  std::vector<std::pair<uint64_t, int64_t>> ev = events;
  std::sort(ev.begin(), ev.end());  // by time, then releases (negative) before acquisitions
  int64_t cur = 0, best = 0;
  for (const auto& e : ev) {
    cur += e.second;
    best = std::max(best, cur);
  }
  return uint64_t(best);
}

namespace {

// The deleter of a leased buffer: when the last reference goes, the buffer's bytes are released
// at the time its last reader reported (Op::note_buffer_read). Readers reach it through
// std::get_deleter, so Buffer itself carries no accounting.
struct BufferLease {
  std::shared_ptr<HoldLedger> ledger;
  int64_t bytes = 0;
  bool read = false;
  uint64_t last_read = 0;
  void operator()(Buffer* p) const {
    if (read && bytes) ledger->events.emplace_back(last_read, -bytes);
    delete p;
  }
};

}  // namespace

void Op::note_operands(const std::vector<Tile>& args) {
  if (onchip_.operands.size() < args.size()) onchip_.operands.resize(args.size());
  // The same count and maxima as before, recorded as elements: a repeat of the last shape
  // only counts (TileStat::add_element).
  for (size_t i = 0; i < args.size(); ++i) onchip_.operands[i].add_element(args[i]);
}

BufferRef Op::lease_buffer(Buffer&& b, uint64_t acquired) {
  if (!holds_) holds_ = std::make_shared<HoldLedger>();
  const int64_t bytes = int64_t(b.bytes);
  if (bytes) holds_->events.emplace_back(acquired, bytes);
  return BufferRef(new Buffer(std::move(b)), BufferLease{holds_, bytes, false, 0});
}

void Op::note_buffer_read(const BufferRef& b) const {
  if (BufferLease* lease = std::get_deleter<BufferLease>(b)) {
    lease->last_read = lease->read ? std::max(lease->last_read, ctx_.now()) : ctx_.now();
    lease->read = true;
  }
}

const OnChipStats& Op::onchip_stats() const {
  for (size_t o = 0; o < outs_.size(); ++o)
    if (outs_[o]) onchip_.outputs[o] = outs_[o]->output_stat();
  return onchip_;
}

uint64_t Op::onchip_peak_bytes() const { return std::max(onchip_.level_peak, holds_ ? holds_->peak() : uint64_t(0)); }

}  // namespace stepsim
