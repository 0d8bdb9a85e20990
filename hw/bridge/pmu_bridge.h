// A Bufferize -> Streamify pair on the memory unit (hw/units/pmu_buffer.h) in co-simulation
// (docs/cosim.md, "The memory unit: two nodes, one PMU").
//
// The PMU fuses the pair: the buffer references never leave the unit. The graph still has two
// nodes and the channel between them, so each node gets its half:
//   * the Bufferize node runs a PmuWritePort: the PMU's write port. It forwards every beat of
//     its input, unchanged, to the channel towards the Streamify (the write path into the
//     unit). For the co-simulation report, that channel's transaction log holds the buffer
//     references the write side forms (one per closed buffer, with the beats written), which is
//     what the approximate Bufferize sends on it; the write beats themselves are not logged.
//   * the Streamify node runs a PmuBridge: a UnitBridge that owns the unit and clocks it. The
//     forwarded beats are its `in` port, the Streamify's ref (if any) its `ref` port, and the
//     unit's output is the Streamify's output. The Bufferize rank comes from the paired
//     PmuWritePort; an affine view (out_shape/stride) goes to the unit's view pins.
// The two halves find each other at run time through the channel between them (its producer's
// Context): a PmuWritePort whose output does not go straight to a Streamify on a unit, or a
// PmuBridge whose input does not come straight from a Bufferize on a unit, fails the run and
// says so (sim/ creates each node's operator from its own OpConfig, without the graph's edges,
// so an unpaired node cannot fall back to its approximate operator: docs/cosim.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <systemc>

#include "hw/bridge/bridge_base.h"
#include "hw/bridge/pins.h"
#include "hw/bridge/unit_kinds.h"  // generated from rtl/units.list: manifest::
#include "hw/ops/op.h"

namespace stepsim::bridge {

// The co-simulation configuration: 4 banks x 256 words and 8 descriptors (the RTL defaults but
// DEPTH and NBUF; the RTL is Verilated a second time for it, Vpmu_buffer_cosim): 1024 tiles, so
// the down-tiled SwiGLU's largest buffer (512 tiles of W2) fits twice (double buffering); with 4
// descriptors its tile_f = 256 run took 5 % more cycles than the approximate one, with 8 none.
// Affine views of up to kPmuNA dimensions, entries 0..65535 (kPmuVW bits). DEPTH and NBUF are
// the manifest's (rtl/units.list, the pmu_buffer_cosim line); the others the RTL defaults.
constexpr int kPmuDepth = manifest::pmu_buffer_cosim_DEPTH, kPmuNbuf = manifest::pmu_buffer_cosim_NBUF;
constexpr int kPmuBanks = 4, kPmuR = 2, kPmuNA = 4, kPmuVW = 16;
constexpr int kPmuCap = kPmuBanks * kPmuDepth;  // words (elements)

class PmuWritePort : public Op {
 public:
  PmuWritePort(const OpConfig& cfg, std::string impl);
  ~PmuWritePort() override;
  int rank() const { return rank_; }
  // The write port whose operator context is `producer` (nullptr: none).
  static PmuWritePort* of(const Context* producer);

 protected:
  void run() override;

 private:
  std::string impl_;
  int rank_;
};

// Why a Bufferize / Streamify node cannot run on the PMU: kinds::PmuWrite::unsupported,
// kinds::Pmu::unsupported (pmu_bridge.cpp).
// Why a Bufferize -> Streamify pair cannot run on the PMU although each half can ("" = it can):
// an affine view needs the Bufferize rank <= kPmuNA (the unit tracks that many dimensions to
// tell regular buffers, which it reads through the view, from ragged ones).
std::string pmu_pair_unsupported(const Params& bufferize, const Params& streamify);
// Whether a consumer context belongs to a PmuBridge (registered by the bridges).
bool is_pmu_reader(const Context* c);
void register_pmu_reader(const Context* c, bool on);

template <class Dut>
class PmuBridge : public BridgeBase {
 public:
  PmuBridge(const OpConfig& cfg, const std::string& impl) : BridgeBase(cfg, impl), dut_(unit_name().c_str()) {
    bind_clock(dut_);
    dut_.cfg_rank_i(rank_);
    dut_.cfg_ref_i(ref_mode_);
    dut_.cfg_ref_rank_i(ref_rank_);
    dut_.cfg_nrep_i(nrep_);
    dut_.cfg_repeat_i(repeat_);
    dut_.cfg_view_rank_i(view_rank_);
    dut_.cfg_shape_i(shape_);
    dut_.cfg_stride_i(stride_);
    STEPSIM_BRIDGE_IN(dut_, in, in_);
    STEPSIM_BRIDGE_IN(dut_, ref, ref_);
    STEPSIM_BRIDGE_OUT(dut_, out, out_);
    dut_.err_o(err_);
    add_group(&in_, "in");
    add_group(&ref_, "ref");
    add_group(&out_, "out");
    register_pmu_reader(&ctx(), true);
  }
  ~PmuBridge() override { register_pmu_reader(&ctx(), false); }

 protected:
  void run() override {
    const PmuWritePort* w = has_in(0) ? PmuWritePort::of(in(0).producer()) : nullptr;
    if (!w)
      fail("impl: " + impl() +
           ": the memory unit runs a Bufferize -> Streamify pair; this Streamify's input must "
           "come straight from a Bufferize node on the unit too (give both nodes the same impl, or neither)");
    rank_.write(stop_t(w->rank()));
    const bool dyn = has_in(1);
    ref_mode_.write(dyn);
    ref_rank_.write(stop_t(dyn ? cfg_.params.get(param::kRank) : 1));
    const std::vector<int64_t> rep = cfg_.params.get(param::kRepeat);
    nrep_.write(stop_t(dyn ? 0 : rep.size()));
    uint64_t packed = 0;
    for (size_t k = 0; k < rep.size() && !dyn; ++k) packed |= uint64_t(rep[k]) << (kCW * k);
    repeat_.write(bits_t<kPmuR * kCW>(packed));
    const std::vector<int64_t> shape = cfg_.params.get(param::kOutShape), stride = cfg_.params.get(param::kStride);
    uint64_t sp = 0, tp = 0;
    for (size_t k = 0; k < shape.size(); ++k) {
      sp |= uint64_t(shape[k]) << (kPmuVW * k);
      tp |= uint64_t(stride[k]) << (kPmuVW * k);
    }
    view_rank_.write(stop_t(shape.size()));
    shape_.write(bits_t<kPmuNA * kPmuVW>(sp));
    stride_.write(bits_t<kPmuNA * kPmuVW>(tp));
    add_input(0, &in_.lanes[0], handles());
    if (dyn)
      add_input(1, &ref_.lanes[0], handles());
    else
      add_input(-1, &ref_.lanes[0], handles(), empty_stream());
    add_output(0, &out_.consumers[0], elements());
    UnitBridge::run();
    check_err();
  }
  void on_output_element(int, Element&) override { check_err(); }

 private:
  void check_err() {
    if (err_.read())
      fail("the memory unit raised err_o: a buffer of more than " + std::to_string(kPmuCap) +
           " elements (its capacity in this configuration: " + std::to_string(kPmuBanks) + " banks x " +
           std::to_string(kPmuDepth) +
           " words), an input stream that ended inside a buffer, or an affine "
           "read outside the buffer");
  }
  sc_core::sc_signal<stop_t> rank_, ref_rank_, nrep_;
  sc_core::sc_signal<bool> ref_mode_, err_;
  sc_core::sc_signal<bits_t<kPmuR * kCW>> repeat_;
  sc_core::sc_signal<stop_t> view_rank_;
  sc_core::sc_signal<bits_t<kPmuNA * kPmuVW>> shape_, stride_;
  InPins<1, kW> in_, ref_;
  OutPins<1, kW> out_;
  Dut dut_;
};

}  // namespace stepsim::bridge
