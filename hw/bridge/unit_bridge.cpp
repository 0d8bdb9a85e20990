#include "hw/bridge/unit_bridge.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "hw/bridge/unit_kinds.h"  // generated from rtl/units.list
#include "hw/bridge/unit_ops.h"

namespace stepsim::bridge {

UnitBridge::UnitBridge(const OpConfig& cfg, std::string impl) : Op(cfg), impl_(std::move(impl)) { set_reset(false); }

void UnitBridge::add_input(int op_input, PinIn* pin, Encoder enc, std::vector<PinBeat> fixed) {
  In in;
  in.op_input = op_input;
  in.pin = pin;
  in.enc = std::move(enc);
  in.fixed = std::move(fixed);
  in_streams_.push_back(std::move(in));
}

void UnitBridge::add_output(int op_output, PinOut* pin, Decoder dec) {
  Out o;
  o.op_output = op_output;
  o.pin = pin;
  o.dec = std::move(dec);
  out_streams_.push_back(std::move(o));
}

Payload UnitBridge::handle(const Element& e) {
  if (table_.size() >= (uint64_t(1) << 32)) fail("more than 2^32 elements through one unit");
  table_.push_back(e);
  return Payload(table_.size() - 1);
}

const Element& UnitBridge::element(Payload h) const {
  if (h >= table_.size()) fail("the unit emitted an unknown payload handle " + std::to_string(uint64_t(h)));
  return table_[size_t(h)];
}

// Delta-cycle clocking: the pins staged for this cycle are written, then the rising edge, and
// the outputs the unit computes at that edge are visible when edge() returns. A direct unit is
// evaluated in place instead, in the same order.
void UnitBridge::settle() {
  if (direct_)
    direct_->settle();
  else
    sc_core::wait(sc_core::SC_ZERO_TIME);
}

void UnitBridge::set_reset(bool rst_n) {
  rst_n_.write(rst_n);
  rst_level_ = rst_n;
  if (direct_) direct_->set_reset(rst_n);
}

void UnitBridge::edge() {
  for (PinGroup* g : groups_) g->flush();
  if (direct_) {
    direct_->edge();
    ++clocked_;
    return;
  }
  clk_used_->write(false);
  settle();
  clk_used_->write(true);
  settle();  // the edge reaches the unit's processes
  settle();  // their outputs are updated
  ++clocked_;
}

bool UnitBridge::fetch(In& in, uint64_t c, uint64_t& next) {
  next = kNever;
  if (in.finished) return false;
  if (in.op_input < 0) {
    if (in.fixed_pos >= in.fixed.size()) return false;
    in.cur = in.fixed[in.fixed_pos];
    return true;
  }
  Channel& ch = this->in(size_t(in.op_input));
  if (in.quiet_known && c <= in.quiet_until) {
    next = in.quiet_until + 1;
    return false;
  }
  const uint64_t t = ctx().await_arrival(&ch, c);
  if (ch.empty()) {
    if (t == kNever) fail("input " + std::to_string(in.op_input) + " ended without a done beat");
    in.quiet_known = true;
    in.quiet_until = t - 1;
    next = t;
    return false;
  }
  in.quiet_known = false;
  if (t > c) {
    next = t;
    return false;
  }
  const Beat& b = ch.head();
  if (b.stop > 15) fail("stop level S" + std::to_string(b.stop) + " does not fit the 4-bit stop pins");
  in.cur.elem = b.has_elem;
  in.cur.data = b.has_elem ? in.enc(b.elem) : 0;
  in.cur.stop = b.stop;
  in.cur.done = b.done;
  return true;
}

Beat UnitBridge::decode(const Out& o, const PinBeat& b) {
  Beat r;
  r.has_elem = b.elem;
  r.stop = b.stop;
  r.done = b.done;
  if (b.elem) {
    r.elem = o.dec(b.data);
    on_output_element(o.op_output, r.elem);
  }
  return r;
}

void UnitBridge::vcd_open() {
  namespace fs = std::filesystem;
  fs::create_directories(cfg_.env->vcd_dir);
  const std::string path = (fs::path(cfg_.env->vcd_dir) / (sc_safe_name(cfg_.name) + "." + impl_ + ".vcd")).string();
  vcd_ = std::make_unique<std::ofstream>(path);
  if (!*vcd_) fail("cannot write '" + path + "'");
  vcd_file_ = WrittenFile{event_order(), path};
  vcd_pins_.push_back({"rst_ni", 1, [this] { return Payload(rst_level_); }});
  for (size_t k = 0; k < groups_.size(); ++k) groups_[k]->traces(group_names_[k], vcd_pins_);
  std::ofstream& f = *vcd_;
  f << "$comment node " << cfg_.name << " (" << cfg_.info->name << ") on the " << impl_
    << " unit; one time unit = one model cycle; skipped idle cycles hold their values $end\n";
  f << "$timescale 1ns $end\n$scope module " << sc_safe_name(cfg_.name) << " $end\n";
  for (size_t k = 0; k < vcd_pins_.size(); ++k)
    f << "$var wire " << vcd_pins_[k].width << " p" << k << " " << vcd_pins_[k].name << " $end\n";
  f << "$upscope $end\n$enddefinitions $end\n";
  vcd_last_.assign(vcd_pins_.size(), 0);
}

// The waveform is complete when the unit is done: closed here, not when the bridge is destroyed
// (the run's objects may outlive the run, and the file is reported as written).
void UnitBridge::vcd_close() {
  if (!vcd_) return;
  vcd_->close();
  if (vcd_->fail()) fail("cannot write '" + vcd_file_.path + "'");
  vcd_.reset();
}

// Called after the pins of cycle `cycle` are staged and written (before its edge): the values the
// edge samples, and the unit's outputs of this cycle.
void UnitBridge::vcd_sample(uint64_t cycle) {
  std::ofstream& f = *vcd_;
  bool stamped = false;
  for (size_t k = 0; k < vcd_pins_.size(); ++k) {
    const Payload v = vcd_pins_[k].value();
    if (!vcd_first_ && v == vcd_last_[k]) continue;
    if (!stamped) f << "#" << cycle << "\n";
    stamped = true;
    vcd_last_[k] = v;
    const int w = vcd_pins_[k].width;
    if (w == 1) {
      f << (v ? '1' : '0') << "p" << k << "\n";
    } else {
      std::string b;
      for (int i = w - 1; i >= 0; --i) b += ((v >> i) & 1) ? '1' : '0';
      const size_t nz = b.find('1');
      f << "b" << (nz == std::string::npos ? "0" : b.substr(nz)) << " p" << k << "\n";
    }
  }
  vcd_first_ = false;
}

void UnitBridge::note_busy_cycle(uint64_t c) {
  if (!cfg_.env->tracing) return;
  if (span_end_ > span_start_ && c == span_end_) {
    ++span_end_;
    return;
  }
  end_busy_span();
  span_start_ = c;
  span_end_ = c + 1;
}

void UnitBridge::end_busy_span() {
  if (span_end_ > span_start_) trace_span(span_start_, span_end_ - span_start_);
  span_start_ = span_end_ = 0;
}

void UnitBridge::count_pin_waits(uint64_t cycles) {
  for (In& in : in_streams_)
    if (in.waiting) in.wait_cycles += cycles;
  for (Out& o : out_streams_)
    if (o.waiting) o.wait_cycles += cycles;
}

void UnitBridge::report(OpReport& r) {
  r.unit_clocks = clocked_;
  if (!vcd_file_.path.empty()) r.files.push_back(vcd_file_);
}

uint64_t UnitBridge::input_wait_cycles(const Channel* c) {
  uint64_t n = 0;
  for (const In& in : in_streams_)
    if (in.op_input >= 0 && has_in(size_t(in.op_input)) && &this->in(size_t(in.op_input)) == c) n += in.wait_cycles;
  return n;
}

uint64_t UnitBridge::output_wait_cycles(const Channel* c) {
  uint64_t n = 0;
  for (const Out& o : out_streams_)
    if (o.op_output >= 0 && has_out(size_t(o.op_output)) && &this->out(size_t(o.op_output)) == c) n += o.wait_cycles;
  return n;
}

void UnitBridge::run() {
  if (!cfg_.env->vcd_dir.empty()) vcd_open();
  // Configuration is set (cfg pins written by the derived bridge); two edges in reset.
  set_reset(false);
  edge();
  edge();
  set_reset(true);
  settle();
  uint64_t c = ctx().now();
  uint64_t quiet = 0;
  auto take_output = [&](Out& o) {
    const PinBeat pb = o.pin->beat();
    emit(size_t(o.op_output), decode(o, pb));
    if (pb.done) o.finished = true;
  };
  std::vector<size_t> blocked;
  for (;;) {
    ctx().advance_to(c);
    bool active = false;
    uint64_t next_event = kNever;  // earliest time something can change while the unit is quiet
    // Outputs first (a full channel may need its consumer, which may need another output).
    blocked.clear();
    for (size_t k = 0; k < out_streams_.size(); ++k) {
      Out& o = out_streams_[k];
      o.waiting = false;
      if (!o.pin->valid()) {
        o.pin->set_ready(false);
        continue;
      }
      if (o.op_output < 0 || !has_out(size_t(o.op_output))) {
        o.pin->set_ready(true);  // unused consumer: taken and dropped
        if (o.pin->beat().done) o.finished = true;
        active = true;
        continue;
      }
      if (out(size_t(o.op_output)).full()) {
        blocked.push_back(k);
        continue;
      }
      const uint64_t free_at = out(size_t(o.op_output)).next_slot_free_time();
      o.pin->set_ready(free_at <= c);
      if (free_at <= c) {
        take_output(o);
        active = true;
      } else {
        o.waiting = true;
        next_event = std::min(next_event, free_at);
      }
    }
    // A full channel: wait until its consumer has freed a slot or certainly frees none by c;
    // in the latter case the unit runs on with this output held (its inputs keep moving).
    for (size_t k : blocked) {
      Out& o = out_streams_[k];
      Channel& ch = out(size_t(o.op_output));
      const uint64_t free_at = ctx().await_release(&ch, c);
      o.pin->set_ready(free_at <= c);
      if (free_at <= c) {
        take_output(o);
        active = true;
      } else {
        o.waiting = true;
        next_event = std::min(next_event, free_at);
      }
    }
    // Inputs: offer the next beat when it is visible at c; take it if the unit is ready.
    for (In& in : in_streams_) {
      if (!in.presented) {
        uint64_t next = kNever;
        in.presented = fetch(in, c, next);
        next_event = std::min(next_event, next);
      }
      in.pin->drive(in.presented, in.cur);
      in.waiting = in.op_input >= 0 && !in.finished && !in.presented && in.pin->ready();
      if (in.presented && in.pin->ready()) {
        active = true;
        in.presented = false;
        if (in.op_input >= 0)
          this->in(size_t(in.op_input)).pop();
        else
          ++in.fixed_pos;
        if (in.cur.done) in.finished = true;
      }
    }
    if (side_ports(c, next_event)) active = true;
    bool all_done = true;
    for (const Out& o : out_streams_) all_done = all_done && o.finished;
    for (const In& in : in_streams_) all_done = all_done && in.finished;
    if (active) {
      ctx().add_busy(1);
      charge(0);
      note_busy_cycle(c);
    }
    count_pin_waits(1);
    if (vcd_) {
      for (PinGroup* g : groups_) g->flush();
      settle();
      vcd_sample(c);
    }
    edge();
    if (all_done) {
      end_busy_span();
      vcd_close();
      ctx().advance_to(c + 1);
      return;
    }
    ++c;
    quiet = active ? 0 : quiet + 1;
    if (quiet > kHangCycles)
      fail("the unit moved no beat for " + std::to_string(kHangCycles) +
           " cycles (an input stream it cannot handle, or a wait-for cycle through it)");
    // Quiet: nothing moved for a while, so nothing changes before the next arrival or slot.
    if (quiet >= kQuietCycles && next_event > c) {
      if (next_event >= kNever) fail("the unit is idle, nothing can arrive, and not every output has ended");
      count_pin_waits(next_event - c);  // the pins hold their state over the skipped cycles
      c = next_event;
    }
  }
}

// ---- registry

UnitImpl hls_unit_impl();  // generated from rtl/units.list (rtl/units.cmake): hls_routes.cpp

namespace {
std::map<std::string, UnitImpl>& impls() {
  static std::map<std::string, UnitImpl> m = [] {
    std::map<std::string, UnitImpl> r;
    r["hls"] = hls_unit_impl();
    return r;
  }();
  return m;
}
}  // namespace

void register_unit_impl(UnitImpl impl) {
  std::string n = impl.name;
  impls()[n] = std::move(impl);
}

const UnitImpl* find_unit_impl(const std::string& name) {
  auto it = impls().find(name);
  return it == impls().end() ? nullptr : &it->second;
}

// ---- routes

namespace {
// The runner of a node on implementation `impl`: the one of its fn, else the one for any fn.
const UnitRunner* find_runner(const std::string& impl, const OpConfig& cfg) {
  const UnitRunner* any = nullptr;
  for (const UnitRunner& u : cfg.info->units) {
    if (u.impl != impl) continue;
    if (u.fn.empty()) {
      if (!any) any = &u;
    } else if (cfg.params.get(param::kFn) == u.fn) {
      return &u;
    }
  }
  return any;
}
}  // namespace

namespace {
// The operators implementation `impl` has units for, in the registry's order.
std::string operators_on_units(const std::string& impl) {
  std::string s;
  for (const OpInfo* op : OpRegistry::instance().all())
    if (std::any_of(op->units.begin(), op->units.end(), [&](const UnitRunner& u) { return u.impl == impl; }))
      s += (s.empty() ? "" : ", ") + op->name;
  return s;
}
}  // namespace

UnitImpl make_unit_impl(std::string name, std::vector<UnitRoute> routes) {
  for (const UnitRoute& r : routes)
    OpRegistry::instance().add_unit(
        r.op, UnitRunner{name, r.kind, r.fn, [r](const OpConfig& cfg) { return r.unsupported(cfg, r.mode); },
                         [r](const OpConfig& cfg) { return r.create(cfg, r.mode); }});
  UnitImpl impl;
  impl.name = name;
  impl.unsupported = [name](const OpConfig& cfg) -> std::string {
    if (const UnitRunner* u = find_runner(name, cfg)) return u->unsupported(cfg);
    return "no cycle-accurate unit implements " + cfg.info->name + " (units: " + operators_on_units(name) +
           "; `stepsim ops` lists each one's units and the tile functions they compute)";
  };
  impl.create = [name](const OpConfig& cfg) -> std::unique_ptr<Op> {
    const UnitRunner* u = find_runner(name, cfg);
    if (!u) throw std::invalid_argument("node '" + cfg.name + "': no unit for " + cfg.info->name);
    return u->create(cfg);
  };
  return impl;
}

// ---- which nodes each kind's units can run (the kinds of rtl/units.list; Bufferize and
// Streamify in pmu_bridge.cpp, the address generator in ag_bridge.cpp)

namespace {
constexpr int kMaxN = 4;   // consumers / inputs of the router units (RTL default N)
constexpr int kMaxN8 = manifest::router_partition8_N;  // Partition and Reassemble once more at N = 8

std::string stop_param(const Params& p, IntParam key, int64_t lo) {
  const int64_t v = p.get(key);
  if (v < lo || v > 15)
    return std::string(key.name) + " = " + std::to_string(v) + " is outside the unit's range " + std::to_string(lo) +
           "..15";
  return "";
}

// Reassemble and EagerMerge: `data_in` data inputs on a unit with up to `max_in`.
std::string merge_inputs(const OpConfig& cfg, size_t data_in, int max_in) {
  if (data_in > size_t(max_in))
    return "the " + cfg.info->name + " unit has up to " + std::to_string(max_in) + " inputs, the node has " +
           std::to_string(data_in);
  return stop_param(cfg.params, param::kRank, 0);
}
}  // namespace

namespace kinds {

std::string Flatten::unsupported(const OpConfig& cfg, OpMode) {
  if (auto s = stop_param(cfg.params, param::kMin, 0); !s.empty()) return s;
  return stop_param(cfg.params, param::kMax, 0);
}

std::string Promote::unsupported(const OpConfig& cfg, OpMode) {
  const int64_t r = cfg.params.get(param::kRank);
  if (r < -1 || r > 15) return "rank = " + std::to_string(r) + " is outside -1..15";
  return "";
}

std::string Repeat::unsupported(const OpConfig& cfg, OpMode) {
  const int64_t n = cfg.params.get(param::kCount);
  if (n < 0 || n > 255) return "count = " + std::to_string(n) + " does not fit the unit's 8-bit count";
  return "";
}

std::string Expand::unsupported(const OpConfig& cfg, OpMode) { return stop_param(cfg.params, param::kRank, 0); }

std::string Reshape::unsupported(const OpConfig& cfg, OpMode) {
  const int64_t n = cfg.params.get(param::kChunk);
  if (n < 1 || n > 255) return "chunk = " + std::to_string(n) + " does not fit the unit's 8-bit chunk";
  return stop_param(cfg.params, param::kRank, 0);
}

std::string Zip::unsupported(const OpConfig& cfg, OpMode) {
  if (cfg.num_inputs != 2)
    return "the " + cfg.info->name + " unit has 2 inputs, the node has " + std::to_string(cfg.num_inputs);
  return "";
}

std::string Broadcast::unsupported(const OpConfig& cfg, OpMode) {
  if (cfg.num_outputs > size_t(kMaxN))
    return "the " + cfg.info->name + " unit has " + std::to_string(kMaxN) + " consumers, the node has " +
           std::to_string(cfg.num_outputs) + " outputs";
  return "";
}

std::string Partition::unsupported(const OpConfig& cfg, OpMode) {
  if (cfg.num_outputs > size_t(kMaxN8))
    return "the " + cfg.info->name + " unit has up to " + std::to_string(kMaxN8) + " outputs, the node has " +
           std::to_string(cfg.num_outputs);
  return stop_param(cfg.params, param::kRank, 0);
}

std::string Reassemble::unsupported(const OpConfig& cfg, OpMode) {
  return merge_inputs(cfg, cfg.num_inputs - 1, kMaxN8);  // the last input is the selector
}

std::string EagerMerge::unsupported(const OpConfig& cfg, OpMode) { return merge_inputs(cfg, cfg.num_inputs, kMaxN); }

// The lanes of the node's function (hw/functions/unit_lanes.h) decide: the function must name an
// op its lanes' units have a code for (unit_ops.h).
std::string Pcu::unsupported(const OpConfig& cfg, OpMode mode) {
  const std::string& op = cfg.info->name;
  const Params& p = cfg.params;
  const std::string fn = p.get(param::kFn);
  const bool accum = mode != OpMode::kMap;
  const FunctionFamily family = accum ? FunctionFamily::kAccum : FunctionFamily::kMap;
  const ComputeFunction f = compute_function(fn, accum);  // the bridge reads the same (unit_bridges.h)
  const UnitLanes& lanes = f.lanes;
  if (!pcu_computes(lanes, accum)) {
    // Accum also runs retile_row, on the Retile kind's route; Scan and Map only what the Pcu runs.
    auto listed = [mode, accum](const UnitLanes& l) { return mode == OpMode::kAccum ? l.any() : pcu_computes(l, accum); };
    return "no unit computes " + op + " fn=" + fn + " (units: " + functions_on_units(family, listed) + ")";
  }
  if (cfg.num_inputs != size_t(f.arity))
    return op + " " + fn + " runs on " + lane_units(lanes, family) + " with " + std::to_string(f.arity) +
           " input(s); the node has " + std::to_string(cfg.num_inputs);
  if (!accum) return "";
  // The Accum units' Scan (cfg_scan_i) is the inclusive one: no exclusive form, output function
  // or prior tap (hw/ops/higher_order.cpp, class Scan).
  if (mode == OpMode::kScan) {
    if (p.get(param::kExclusive)) return "the Accum unit's Scan is inclusive only (exclusive: true)";
    if (!p.get(param::kOutFn).empty()) return "the Accum unit's Scan has no output function (out_fn)";
    if (cfg.output_read.size() > 1 && cfg.output_read[1]) return "the Accum unit's Scan has no prior output";
  }
  // The tile Accum unit keeps the bank (pcu_tile_accum, cfg_bank_i); the closing stop q + 2 must fit 4 bits.
  if (mode == OpMode::kAccum && (p.get(param::kBankRank) < 0 || p.get(param::kBankRank) > 13))
    return "the tile Accum unit's accumulator bank takes bank_rank 0..13";
  return stop_param(p, param::kRank, 1);
}

std::string Retile::unsupported(const OpConfig& cfg, OpMode mode) {
  const std::string& op = cfg.info->name;
  const std::string fn = cfg.params.get(param::kFn);
  if (mode == OpMode::kRetileRow) {  // the route has fn = retile_row
    if (cfg.num_inputs != 1) return "the " + op + " " + fn + " unit (pcu_retile) has 1 input";
    return stop_param(cfg.params, param::kRank, 1);
  }
  if (function_lanes(FunctionFamily::kFlatMap, fn).op != UnitOp::kRetileRows)
    return "no unit computes " + op + " fn=" + fn + " (units: " + functions_on_units(FunctionFamily::kFlatMap) + ")";
  if (cfg.num_inputs != 1) return "the " + op + " " + fn + " unit (pcu_retile) has 1 input";
  if (cfg.params.get(param::kRank) != 1)
    return "the retile unit expands each tile into a rank-1 stream of rows; the node has rank " +
           std::to_string(cfg.params.get(param::kRank));
  return "";
}

}  // namespace kinds

}  // namespace stepsim::bridge
