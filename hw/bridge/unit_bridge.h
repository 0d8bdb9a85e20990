// Fabric co-simulation (issue 4 item 5, docs/cosim.md): a graph node run by a cycle-accurate
// unit (hw/units, HLS form, or its Verilated RTL twin) inside the time-annotated channel domain.
//
// A UnitBridge is an Op: it owns the unit, the unit's pins and a private clock, and has the
// node's channels like any operator. One thread (the Op's) clocks the unit edge by edge; unit
// cycle c is model time c (Context::now() == c while cycle c is decided):
//   * input: a channel beat visible at time t is offered on the pins from cycle max(t, c); it
//     is dequeued (at model time c) at the edge where valid and the unit's ready are both high;
//   * output: a beat the unit offers at cycle c is taken at that edge if the output channel has
//     a free slot at c (the slot's release time <= c) and sent with model time c; otherwise the
//     pin's ready is low and the unit holds the beat (back-pressure crosses the bridge as ready);
//   * "is there a beat at cycle c" is answered conservatively: an empty channel with a lower
//     bound on its next arrival (Scheduler) above c has none; otherwise the bridge waits for the
//     producer, like select_earliest does, so results do not depend on SystemC process order;
//   * a unit that moved no beat on any pin for kQuietCycles cycles is not clocked until the next
//     input can arrive or a blocked output's channel frees a slot (cycles skipped: every unit's
//     internal work without pin traffic is bounded by its two-entry input buffers, so it holds
//     its state until then).
// Payloads: shape and router units move their payload opaquely, so the bridge hands them a
// 32-bit handle into its table of elements; compute units get the real bf16 lanes.
#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hw/bridge/direct_pins.h"
#include "hw/bridge/pins.h"
#include "hw/ops/op.h"

namespace stepsim::bridge {

// Element <-> payload of one stream (per port kind).
using Encoder = std::function<Payload(const Element&)>;
using Decoder = std::function<Element(Payload)>;

class UnitBridge : public Op {
 public:
  static constexpr uint64_t kQuietCycles = 4;
  // A unit clocked this many cycles without moving a beat is hung (an illegal stream the unit
  // does not detect, or a wait-for cycle through the unit): the run fails.
  static constexpr uint64_t kHangCycles = 1u << 20;

  UnitBridge(const OpConfig& cfg, std::string impl);

  const std::string& impl() const { return impl_; }
  uint64_t clocked_cycles() const { return clocked_; }
  // What the unit waited on at its pins (it waits there, not in the channels' recv and send, so
  // the channels' own starve and stall counts miss it; the run's results add these): cycles in
  // which the input pin fed from `c` was ready with nothing to offer, and cycles in which the
  // output pin feeding `c` held a beat the full channel could not take. 0 for other channels.
  uint64_t input_wait_cycles(const Channel* c) override;
  uint64_t output_wait_cycles(const Channel* c) override;

 protected:
  // Set by the derived bridge while it elaborates.
  sc_core::sc_signal<bool> clk_, rst_n_;
  // The clock the bridge toggles (clk_ unless the derived bridge picks another before run():
  // PcuBridge gives each of its candidate units its own clock, so the units it does not use
  // never see an edge and cost nothing).
  sc_core::sc_signal<bool>* clk_used_ = &clk_;
  // A unit driven without SystemC (direct_pins.h), set by the derived bridge before run(): the
  // bridge then clocks it through this instead of toggling clk_used_.
  DirectClock* direct_ = nullptr;
  // Input stream fed from op input `op_input` (or, with op_input < 0, a fixed beat list, e.g. a
  // bare done for an unused lane of an input group).
  void add_input(int op_input, PinIn* pin, Encoder enc, std::vector<PinBeat> fixed = {});
  // Output consumer sent to op output `op_output` (< 0: unused, taken and dropped).
  void add_output(int op_output, PinOut* pin, Decoder dec);
  void add_group(PinGroup* g, const std::string& name) {
    groups_.push_back(g);
    group_names_.push_back(name);
  }

  // Element table for opaque payloads.
  Payload handle(const Element& e);
  const Element& element(Payload h) const;

  void run() override;
  // The unit's clock edges and its waveform file.
  void report(OpReport& r) override;
  // Called for every decoded element of op output `o` before it is sent (Reshape: zero padding).
  virtual void on_output_element(int /*o*/, Element& /*e*/) {}
  // Ports that are not streams (the address generator's memory port): called every clocked
  // cycle c after the stream pins are staged and before the edge; stages those pins (in a
  // PinGroup added with add_group). Returns whether anything moved at this edge, and lowers
  // `next_event` to the next time the ports can change while the unit is quiet.
  virtual bool side_ports(uint64_t /*c*/, uint64_t& /*next_event*/) { return false; }

 private:
  struct In {
    int op_input;
    PinIn* pin;
    Encoder enc;
    std::vector<PinBeat> fixed;
    size_t fixed_pos = 0;
    bool presented = false;
    PinBeat cur;
    bool finished = false;     // its done beat was taken
    uint64_t quiet_until = 0;  // no arrival at or before this time (lower bound - 1)
    bool quiet_known = false;
    bool waiting = false;  // this cycle: the pin is ready, no beat to offer
    uint64_t wait_cycles = 0;
  };
  struct Out {
    int op_output;
    PinOut* pin;
    Decoder dec;
    bool finished = false;  // its done beat was taken
    bool waiting = false;   // this cycle: a beat on the pin, no free slot in the channel
    uint64_t wait_cycles = 0;
  };
  void edge();
  void settle();
  void set_reset(bool rst_n);  // rst_n_, or the direct unit's reset input
  // Whether input i can offer a beat at cycle c (may block for the producer). Returns false
  // when nothing is visible at c; `next` gets a lower bound on its next arrival.
  bool fetch(In& in, uint64_t c, uint64_t& next);
  Beat decode(const Out& o, const PinBeat& b);

  std::string impl_;
  // rst_n_ as written (the waveform's rst_ni: a direct unit's bridge passes no delta cycle, so the
  // signal may not show the write yet).
  bool rst_level_ = false;
  std::vector<In> in_streams_;
  std::vector<Out> out_streams_;
  std::vector<PinGroup*> groups_;
  std::vector<std::string> group_names_;
  // Waveform of the pins (SimEnv::vcd_dir): VCD with one time unit per model cycle.
  void vcd_open();
  void vcd_sample(uint64_t cycle);
  void vcd_close();
  std::unique_ptr<std::ofstream> vcd_;
  std::vector<PinTrace> vcd_pins_;
  std::vector<Payload> vcd_last_;
  WrittenFile vcd_file_;  // path "" = none written
  bool vcd_first_ = true;
  std::vector<Element> table_;
  uint64_t clocked_ = 0;
  // The timeline (SimEnv::tracing): consecutive busy cycles (a beat moved on a pin) as one span.
  void note_busy_cycle(uint64_t c);
  void count_pin_waits(uint64_t cycles);  // adds `cycles` to every stream waiting this cycle
  void end_busy_span();
  uint64_t span_start_ = 0, span_end_ = 0;  // [start, end), empty when equal
};

// ---- implementations registry (hls is built in; rtl is added by the Verilated build).
struct UnitImpl {
  std::string name;
  // "" if the node can run on a unit, otherwise why not (operator or parameters without a unit).
  std::function<std::string(const OpConfig&)> unsupported;
  std::function<std::unique_ptr<Op>(const OpConfig&)> create;
  // The sides T of the [r x T] tile units built in (unit_ops.h: kT, kT16; rtl without the T = 16
  // library has kT only).
  std::vector<int> tile_sides{4, 16};
};
void register_unit_impl(UnitImpl impl);
// nullptr if no such implementation was built in.
const UnitImpl* find_unit_impl(const std::string& name);
void register_rtl_units();  // defined by the RTL build (hw/bridge/rtl); see scripts/cli/main.cpp
// Why a Bufferize -> Streamify pair cannot run on the memory unit although each half can ("" = it
// can; pmu_bridge.cpp).
std::string pmu_pair_unsupported(const Params& bufferize, const Params& streamify);

// ---- routes: which operator runs on which bridge kind (generated from the unit manifest)
// The bridge kinds are the `bridge:` lines of rtl/units.list; rtl/units.cmake generates their
// declarations (kinds::KIND in hw/bridge/unit_kinds.h, with `unsupported` and `create<U>`), one
// source per kind and implementation with its unit table and factory, and each implementation's
// routes (<impl>_unit_impl()). A node's route is found by its operator's kind (OpKind); the
// bridges never read the operator's name: a kind that runs several operators gets the mode of
// the route.
enum class OpMode {
  kPlain,               // the kind runs one operator
  kMap,                 // Pcu: Map on the vector or tile units
  kAccum,               // Pcu: Accum
  kScan,                // Pcu: Scan (the Accum units with cfg_scan_i)
  kRetileRow,           // Retile: Accum retile_row (cfg_mode_i 0)
  kRetileStreamifyRow,  // Retile: FlatMap retile_streamify_row (cfg_mode_i 1)
  kLoad,                // Ag: LinearOffChipLoad
  kStore,               // Ag: LinearOffChipStore
  kRandomLoad,          // Ag: RandomOffChipLoad
  kRandomStore,         // Ag: RandomOffChipStore
};
struct UnitRoute {
  OpKind op;       // the operator (the manifest's OP is OpKind::kOP)
  const char* fn;  // its `fn` parameter, or "" for any (a route with fn is tried first)
  OpMode mode;
  const char* kind;  // the bridge kind's name (Pcu, Ag, ...)
  // "" if the kind's units can run the node, otherwise why not.
  std::string (*unsupported)(const OpConfig& cfg, OpMode mode);
  std::unique_ptr<Op> (*create)(const OpConfig& cfg, OpMode mode);
};
// The implementation `name` over its routes: each route becomes a UnitRunner on its operator's
// descriptor (OpInfo::units), and a node runs on the runner of its operator and fn.
UnitImpl make_unit_impl(std::string name, std::vector<UnitRoute> routes);

}  // namespace stepsim::bridge
