// The bridge of every unit kind (docs/cosim.md), written once for both forms: `U` names the unit
// types, the HLS units of hw/units or their Verilated RTL twins (the unit tables generated from
// rtl/units.list by rtl/units.cmake, one source per bridge kind and form). Both have the same
// pins, so the binding code is shared. Each kind's factory, kinds::KIND::create<U>, is at the end.
//
// Configurations: W = 32-bit payloads (element handles), N = 4 consumers/inputs for the
// routers, 2 inputs for Zip, CW = 8 (Repeat count, Reshape chunk), L = 8 bf16 lanes, T = 4
// (tile side) and NS = 2 (tile Map stages): the defaults of the RTL (rtl/CMakeLists.txt
// Verilates the units with them); and the tile units at T = 16, NS = 2 (rtl/pcu_tile_*_t16.sv).
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "hw/bridge/ag_bridge.h"  // the address generator: the off-chip loads and stores
#include "hw/bridge/bridge_base.h"
#include "hw/bridge/pmu_bridge.h"  // the memory unit: a Bufferize -> Streamify pair on one PMU
#include "hw/bridge/unit_bridge.h"
#include "hw/bridge/unit_kinds.h"  // generated from rtl/units.list
#include "hw/bridge/unit_ops.h"
#include "hw/stream/bf16.h"
#include "hw/stream/tile.h"
#include "hw/units/protocol.h"  // not the units: the generated source of a kind includes those it uses

namespace stepsim::bridge {

constexpr int kN = 4;  // router consumers / inputs
// The routers once more with 8 outputs / inputs (an 8-expert MoE): the manifest's
// router_partition8 and router_reassemble8 lines.
constexpr int kN8 = manifest::router_partition8_N;
static_assert(manifest::router_reassemble8_N == kN8, "rtl/units.list: Partition8 and Reassemble8 differ in N");
constexpr int kZipN = 2;
// kL, kT, kTS, kT16: the compute units' lanes and tile sides, in unit_ops.h.
// Accumulator bank entries of the tile Accum units (RTL: pcu_tile_accum's default NB, and
// pcu_tile_accum_t16's: tiles (64, 256, *) give 4 x 16 output blocks of 16 x 16).
constexpr int kTileAccumBank = 16;
constexpr int kTileAccumBank16 = 64;

template <int N, int W>
std::vector<PinIn*> lanes_of(InPins<N, W>& g) {
  std::vector<PinIn*> v;
  for (int i = 0; i < N; ++i) v.push_back(&g.lanes[i]);
  return v;
}

// ---------------------------------------------------------------- shape units
template <class Dut>
class FlattenBridge : public BridgeBase {
 public:
  FlattenBridge(const OpConfig& cfg, const std::string& impl) : BridgeBase(cfg, impl), dut_(unit_name().c_str()) {
    bind_clock(dut_);
    dut_.cfg_min_i(min_);
    dut_.cfg_max_i(max_);
    STEPSIM_BRIDGE_IN(dut_, in, in_);
    STEPSIM_BRIDGE_OUT(dut_, out, out_);
    min_.write(stop_t(cfg.params.get(param::kMin)));
    max_.write(stop_t(cfg.params.get(param::kMax)));
    add_group(&in_, "in");
    add_group(&out_, "out");
    add_input(0, &in_.lanes[0], handles());
    add_output(0, &out_.consumers[0], elements());
  }

 private:
  sc_core::sc_signal<stop_t> min_, max_;
  InPins<1, kW> in_;
  OutPins<1, kW> out_;
  Dut dut_;
};

template <class Dut>
class PromoteBridge : public BridgeBase {
 public:
  PromoteBridge(const OpConfig& cfg, const std::string& impl) : BridgeBase(cfg, impl), dut_(unit_name().c_str()) {
    bind_clock(dut_);
    dut_.cfg_outer_i(outer_);
    dut_.cfg_rank_i(rank_);
    STEPSIM_BRIDGE_IN(dut_, in, in_);
    STEPSIM_BRIDGE_OUT(dut_, out, out_);
    const int64_t r = cfg.params.get(param::kRank);
    outer_.write(r < 0);
    rank_.write(stop_t(r < 0 ? 0 : r));
    add_group(&in_, "in");
    add_group(&out_, "out");
    add_input(0, &in_.lanes[0], handles());
    add_output(0, &out_.consumers[0], elements());
  }

 private:
  sc_core::sc_signal<bool> outer_;
  sc_core::sc_signal<stop_t> rank_;
  InPins<1, kW> in_;
  OutPins<1, kW> out_;
  Dut dut_;
};

template <class Dut>
class RepeatBridge : public BridgeBase {
 public:
  RepeatBridge(const OpConfig& cfg, const std::string& impl) : BridgeBase(cfg, impl), dut_(unit_name().c_str()) {
    bind_clock(dut_);
    dut_.cfg_count_i(count_);
    STEPSIM_BRIDGE_IN(dut_, in, in_);
    STEPSIM_BRIDGE_OUT(dut_, out, out_);
    count_.write(bits_t<kCW>(uint64_t(cfg.params.get(param::kCount))));
    add_group(&in_, "in");
    add_group(&out_, "out");
    add_input(0, &in_.lanes[0], handles());
    add_output(0, &out_.consumers[0], elements());
  }

 private:
  sc_core::sc_signal<bits_t<kCW>> count_;
  InPins<1, kW> in_;
  OutPins<1, kW> out_;
  Dut dut_;
};

template <class Dut>
class ExpandBridge : public BridgeBase {
 public:
  ExpandBridge(const OpConfig& cfg, const std::string& impl) : BridgeBase(cfg, impl), dut_(unit_name().c_str()) {
    bind_clock(dut_);
    dut_.cfg_rank_i(rank_);
    STEPSIM_BRIDGE_IN(dut_, in, in_);
    STEPSIM_BRIDGE_IN(dut_, ref, ref_);
    STEPSIM_BRIDGE_OUT(dut_, out, out_);
    rank_.write(stop_t(cfg.params.get(param::kRank)));
    add_group(&in_, "in");
    add_group(&ref_, "ref");
    add_group(&out_, "out");
    add_input(0, &in_.lanes[0], handles());
    add_input(1, &ref_.lanes[0], handles());
    add_output(0, &out_.consumers[0], elements());
  }

 private:
  sc_core::sc_signal<stop_t> rank_;
  InPins<1, kW> in_, ref_;
  OutPins<1, kW> out_;
  Dut dut_;
};

// Reshape: the padding element is a handle in cfg_pad_i. `pad: zero` pads with zeros shaped like
// the last element before the padding (hw/ops/shape_ops.cpp), which is known only at run time:
// the bridge passes a placeholder handle and substitutes the zero element when it leaves.
template <class Dut>
class ReshapeBridge : public BridgeBase {
 public:
  ReshapeBridge(const OpConfig& cfg, const std::string& impl) : BridgeBase(cfg, impl), dut_(unit_name().c_str()) {
    bind_clock(dut_);
    dut_.cfg_chunk_i(chunk_);
    dut_.cfg_rank_i(rank_);
    dut_.cfg_pad_i(pad_value_);
    STEPSIM_BRIDGE_IN(dut_, in, in_);
    STEPSIM_BRIDGE_OUT(dut_, out, out_);
    STEPSIM_BRIDGE_OUT(dut_, pad, pad_);
    chunk_.write(bits_t<kCW>(uint64_t(cfg.params.get(param::kChunk))));
    rank_.write(stop_t(cfg.params.get(param::kRank)));
    const std::string pad = cfg.params.get(param::kPad);
    zero_pad_ = pad == "zero";
    pad_handle_ = handle(zero_pad_ ? Element(Scalar{0}) : parse_element(pad));
    pad_value_.write(bits_t<kW>(uint64_t(pad_handle_)));
    add_group(&in_, "in");
    add_group(&out_, "out");
    add_group(&pad_, "pad");
    add_input(0, &in_.lanes[0], handles());
    add_output(0, &out_.consumers[0], [this](Payload p) {
      if (zero_pad_ && p == pad_handle_) return zero_like(last_);
      last_ = element(p);
      seen_ = true;
      return last_;
    });
    add_output(1, &pad_.consumers[0], [](Payload p) { return Element(Scalar{int64_t(p & 1)}); });
  }

 private:
  Element zero_like(const Element& last) const {
    if (seen_ && last.is_tile()) {
      const Tile& t = last.tile();
      if (t.has_data()) {
        if (t.dtype == DType::INT32) return Element(make_int_tile(t.rows, t.cols, std::vector<int32_t>(t.elems(), 0)));
        return Element(make_tile(t.rows, t.cols, t.dtype, std::vector<float>(t.elems(), 0.0f)));
      }
      return Element(shape_tile(t.rows, t.cols, t.dtype));
    }
    return Element(Scalar{0});
  }
  sc_core::sc_signal<bits_t<kCW>> chunk_;
  sc_core::sc_signal<stop_t> rank_;
  sc_core::sc_signal<bits_t<kW>> pad_value_;
  InPins<1, kW> in_;
  OutPins<1, kW> out_;
  OutPins<1, 1> pad_;
  Dut dut_;
  bool zero_pad_ = false, seen_ = false;
  Payload pad_handle_ = 0;
  Element last_;
};

template <class Dut>
class ZipBridge : public BridgeBase {
 public:
  ZipBridge(const OpConfig& cfg, const std::string& impl) : BridgeBase(cfg, impl), dut_(unit_name().c_str()) {
    bind_clock(dut_);
    STEPSIM_BRIDGE_IN(dut_, in, in_);
    STEPSIM_BRIDGE_OUT(dut_, out, out_);
    add_group(&in_, "in");
    add_group(&out_, "out");
    for (int i = 0; i < kZipN; ++i) add_input(i, &in_.lanes[i], handles());
    add_output(0, &out_.consumers[0], [this](Payload p) {
      auto t = std::make_shared<std::vector<Element>>();
      for (int i = 0; i < kZipN; ++i) t->push_back(element((p >> (kW * i)) & mask_bits(kW)));
      return Element(Tuple(t));
    });
  }

 private:
  InPins<kZipN, kW> in_;
  OutPins<1, kZipN * kW> out_;
  Dut dut_;
};

// ---------------------------------------------------------------- routers
template <class Dut>
class BroadcastBridge : public BridgeBase {
 public:
  BroadcastBridge(const OpConfig& cfg, const std::string& impl) : BridgeBase(cfg, impl), dut_(unit_name().c_str()) {
    bind_clock(dut_);
    STEPSIM_BRIDGE_IN(dut_, in, in_);
    STEPSIM_BRIDGE_OUT(dut_, out, out_);
    add_group(&in_, "in");
    add_group(&out_, "out");
    add_input(0, &in_.lanes[0], handles());
    for (int k = 0; k < kN; ++k) add_output(k < int(cfg.num_outputs) ? k : -1, &out_.consumers[k], elements());
  }

 private:
  InPins<1, kW> in_;
  OutPins<kN, kW> out_;
  Dut dut_;
};

template <class Dut, int N = kN>
class PartitionBridge : public BridgeBase {
 public:
  PartitionBridge(const OpConfig& cfg, const std::string& impl) : BridgeBase(cfg, impl), dut_(unit_name().c_str()) {
    bind_clock(dut_);
    dut_.cfg_rank_i(rank_);
    STEPSIM_BRIDGE_IN(dut_, in, in_);
    STEPSIM_BRIDGE_IN(dut_, sel, sel_);
    STEPSIM_BRIDGE_OUT(dut_, out, out_);
    rank_.write(stop_t(cfg.params.get(param::kRank)));
    add_group(&in_, "in");
    add_group(&sel_, "sel");
    add_group(&out_, "out");
    add_input(0, &in_.lanes[0], handles());
    add_input(1, &sel_.lanes[0], selectors(int(cfg.num_outputs)));
    for (int k = 0; k < N; ++k) add_output(k < int(cfg.num_outputs) ? k : -1, &out_.consumers[k], elements());
  }

 private:
  sc_core::sc_signal<stop_t> rank_;
  InPins<1, kW> in_;
  InPins<1, N> sel_;
  OutPins<N, kW> out_;
  Dut dut_;
};

template <class Dut, int N = kN>
class ReassembleBridge : public BridgeBase {
 public:
  ReassembleBridge(const OpConfig& cfg, const std::string& impl) : BridgeBase(cfg, impl), dut_(unit_name().c_str()) {
    bind_clock(dut_);
    dut_.cfg_rank_i(rank_);
    STEPSIM_BRIDGE_IN(dut_, in, in_);
    STEPSIM_BRIDGE_IN(dut_, sel, sel_);
    STEPSIM_BRIDGE_OUT(dut_, out, out_);
    rank_.write(stop_t(cfg.params.get(param::kRank)));
    add_group(&in_, "in");
    add_group(&sel_, "sel");
    add_group(&out_, "out");
    const int n = int(cfg.num_inputs) - 1;  // in0..in(n-1), then sel
    for (int i = 0; i < N; ++i)
      if (i < n)
        add_input(i, &in_.lanes[i], handles());
      else
        add_input(-1, &in_.lanes[i], handles(), empty_stream());
    add_input(n, &sel_.lanes[0], selectors(n));
    add_output(0, &out_.consumers[0], elements());
  }

 private:
  sc_core::sc_signal<stop_t> rank_;
  InPins<N, kW> in_;
  InPins<1, N> sel_;
  OutPins<1, kW> out_;
  Dut dut_;
};

template <class Dut>
class EagerMergeBridge : public BridgeBase {
 public:
  EagerMergeBridge(const OpConfig& cfg, const std::string& impl) : BridgeBase(cfg, impl), dut_(unit_name().c_str()) {
    bind_clock(dut_);
    dut_.cfg_rank_i(rank_);
    STEPSIM_BRIDGE_IN(dut_, in, in_);
    STEPSIM_BRIDGE_OUT(dut_, out, out_);
    STEPSIM_BRIDGE_OUT(dut_, sel, sel_);
    rank_.write(stop_t(cfg.params.get(param::kRank)));
    add_group(&in_, "in");
    add_group(&out_, "out");
    add_group(&sel_, "sel");
    const int n = int(cfg.num_inputs);
    for (int i = 0; i < kN; ++i)
      if (i < n)
        add_input(i, &in_.lanes[i], handles());
      else
        add_input(-1, &in_.lanes[i], handles(), empty_stream());
    add_output(0, &out_.consumers[0], elements());
    add_output(1, &sel_.consumers[0], selector_out(kN));
  }

 private:
  sc_core::sc_signal<stop_t> rank_;
  InPins<kN, kW> in_;
  OutPins<1, kW> out_;
  OutPins<1, kN> sel_;
  Dut dut_;
};

// ---------------------------------------------------------------- compute units
// The tile units (pcu_tile_map, pcu_tile_accum) of one tile side T, their pins and their clock.
// Map / Accum are void when the build has no unit of that side (the RTL without its T = 16
// library, STEPSIM_RTL_T16), or Direct models (driven without SystemC: direct_pins.h).
template <class Map, class Accum, int T>
struct TileSide {
  static constexpr int kSide = T;
  static constexpr int kW = units::TileBits<T>::W;  // lanes and the tile header
  static constexpr bool kAvailable = !std::is_void_v<Map> && !std::is_void_v<Accum>;
  static constexpr bool kDirect = is_direct_v<Map>;
  static_assert(kDirect == is_direct_v<Accum>, "rtl/units.list: both tile units of a side are direct, or neither");
  using MapUnit = std::conditional_t<kAvailable, Map, int>;
  using AccumUnit = std::conditional_t<kAvailable, Accum, int>;
  using InPins = std::conditional_t<kDirect, DirectWideIn, WideInPins<kW>>;
  using OutPins = std::conditional_t<kDirect, DirectWideOut, WideOutPins<kW>>;
  std::unique_ptr<MapUnit> map;
  std::unique_ptr<AccumUnit> accum;
  InPins a, b;
  OutPins out;
  sc_core::sc_signal<bool> clk;
  sc_core::sc_signal<bool> err;  // the Accum's err_o (its accumulator bank)
  bool elaborated() const { return map || accum; }
};

// One bridge for every compute node (Map, Accum). It elaborates the units the node's function
// can run on: the vector units (pcu_ew, pcu_reduce, pcu_accum) for [1 x kL] tiles and the tile
// units (pcu_tile_map, pcu_tile_accum) for [kT x kT] tiles and, where the build has them, for
// [kT16 x kT16] tiles. The first beat to arrive (in model time, on any input: the operands have
// one tile shape) decides, before the first cycle: a square tile
// of a side with units selects those, anything else the vector unit (whose encoder then reports
// a tile of another shape), or the [kT x kT] units when the function has no vector unit. Each
// unit has its own clock and only the chosen one is clocked: the others stay idle, never
// clocked, and cost nothing.
template <class U>
class PcuBridge : public BridgeBase {
 public:
  PcuBridge(const OpConfig& cfg, OpMode mode, const std::string& impl)
      : BridgeBase(cfg, impl),
        scan_(mode == OpMode::kScan),
        accum_(mode == OpMode::kAccum || scan_),
        fn_(compute_function(cfg.params.get(param::kFn), accum_)) {
    // Pcu::unsupported checked that the lanes the function names have a code for its op.
    const std::string n = unit_name();
    const VectorLanes vector = fn_.lanes.vector;
    if (accum_) {
      if (vector == VectorLanes::kAccum) {
        vaccum_ = std::make_unique<typename U::PcuAccum>((n + "_vec").c_str());
        bind_unit_clock(*vaccum_, clk_);
        vaccum_->cfg_op_i(op_);
        vaccum_->cfg_rank_i(rank_);
        vaccum_->cfg_scan_i(scan_sig_);
        STEPSIM_BRIDGE_IN(*vaccum_, in, va_);
        STEPSIM_BRIDGE_OUT(*vaccum_, out, vout_);
      }
    } else if (vector == VectorLanes::kReduce) {
      reduce_ = std::make_unique<typename U::PcuReduce>((n + "_vec").c_str());
      bind_unit_clock(*reduce_, clk_);
      reduce_->cfg_op_i(op_);
      STEPSIM_BRIDGE_IN(*reduce_, in, va_);
      STEPSIM_BRIDGE_OUT(*reduce_, out, rout_);
    } else if (vector == VectorLanes::kEw) {
      ew_ = std::make_unique<typename U::PcuEw>((n + "_vec").c_str());
      bind_unit_clock(*ew_, clk_);
      ew_->cfg_op_i(op_);
      STEPSIM_BRIDGE_IN(*ew_, a, va_);
      STEPSIM_BRIDGE_IN(*ew_, b, vb_);
      STEPSIM_BRIDGE_OUT(*ew_, out, vout_);
    }
    if (fn_.lanes.tile) {
      elaborate_tile(t4_, n + "_tile");
      elaborate_tile(t16_, n + "_tile16");
    }
  }

 protected:
  void run() override {
    const int side = tile_side();
    if (side == kT16)
      attach_tile(t16_);
    else if (side == kT)
      attach_tile(t4_);
    else
      attach_vector();
    UnitBridge::run();
    check_err();
  }
  void on_output_element(int, Element&) override { check_err(); }

 private:
  template <class D>
  void bind_unit_clock(D& d, sc_core::sc_signal<bool>& clk) {
    d.clk_i(clk);
    d.rst_ni(rst_n_);
  }
  template <class S>
  void elaborate_tile(S& s, const std::string& name) {
    if constexpr (S::kDirect) {
      auto bind = [&s](auto& m) {  // both units have the pins a, b and out
        STEPSIM_DIRECT_IN(m, a, s.a, S::kW);
        STEPSIM_DIRECT_IN(m, b, s.b, S::kW);
        STEPSIM_DIRECT_OUT(m, out, s.out, S::kW);
      };
      if (accum_) {
        s.accum = std::make_unique<typename S::AccumUnit>(name.c_str());
        bind(s.accum->model());
      } else {
        s.map = std::make_unique<typename S::MapUnit>(name.c_str());
        bind(s.map->model());
      }
      s.a.expand = [this](Payload h, uint32_t* w) { square_words<S::kSide>(h, w); };
      s.b.expand = [this](Payload h, uint32_t* w) { square_words<S::kSide>(h, w); };
    } else if constexpr (S::kAvailable) {
      if (accum_) {
        s.accum = std::make_unique<typename S::AccumUnit>(name.c_str());
        bind_unit_clock(*s.accum, s.clk);
        s.accum->cfg_op_i(top2_);
        s.accum->cfg_rank_i(rank_);
        s.accum->cfg_bank_i(bank_);
        s.accum->cfg_scan_i(scan_sig_);
        STEPSIM_BRIDGE_IN(*s.accum, a, s.a);
        STEPSIM_BRIDGE_IN(*s.accum, b, s.b);
        STEPSIM_BRIDGE_OUT(*s.accum, out, s.out);
        s.accum->err_o(s.err);
      } else {
        s.map = std::make_unique<typename S::MapUnit>(name.c_str());
        bind_unit_clock(*s.map, s.clk);
        s.map->cfg_op_i(top3_);
        STEPSIM_BRIDGE_IN(*s.map, a, s.a);
        STEPSIM_BRIDGE_IN(*s.map, b, s.b);
        STEPSIM_BRIDGE_OUT(*s.map, out, s.out);
      }
      s.a.expand = [this](Payload h) { return square_bits<S::kSide>(h); };
      s.b.expand = [this](Payload h) { return square_bits<S::kSide>(h); };
    }
  }
  bool has_vector() const { return ew_ || reduce_ || vaccum_; }
  // The side of the tile units to use (kT or kT16), or 0 for the vector unit.
  int tile_side() {
    const bool t4 = t4_.elaborated(), t16 = t16_.elaborated();
    if (!t4 && !t16) return 0;
    if (!has_vector() && !t16) return kT;
    // The operands of every function have one tile shape: the first tile to arrive decides.
    int side = 0;
    if (const Tile* first = first_tile()) {
      // [r x T] with r <= T: a whole tile or a dynamic one (docs/unit-protocol.md, the tile header).
      const Tile& t = *first;
      if (t.cols == uint32_t(kT) && t.rows <= t.cols && t4) side = kT;
      if (t.cols == uint32_t(kT16) && t.rows <= t.cols && t16) side = kT16;
    }
    if (side == 0 && !has_vector()) side = kT;  // its encoder reports the tile
    return side;
  }
  // Accum's bank_rank (0 for Map and Scan).
  int bank_rank() const { return accum_ && !scan_ ? int(cfg_.params.get(param::kBankRank)) : 0; }
  void attach_vector() {
    if (vaccum_) {
      if (bank_rank() != 0)
        fail("impl: " + impl() + ": Accum bank_rank " + std::to_string(bank_rank()) +
             " needs the tile unit's accumulator bank ([4 x 4] or [16 x 16] bf16 tiles); the vector unit has none");
      op_.write(*vector_op_code(VectorLanes::kAccum, fn_.lanes.op));
      rank_.write(stop_t(cfg_.params.get(param::kRank)));
      scan_sig_.write(scan_);
      add_group(&va_, "in");
      add_group(&vout_, "out");
      add_input(0, &va_.lanes[0], tiles(kL));
      add_output(0, &vout_.consumers[0], tile_out(kL));
    } else if (reduce_) {
      op_.write(*vector_op_code(VectorLanes::kReduce, fn_.lanes.op));
      add_group(&va_, "in");
      add_group(&rout_, "out");
      add_input(0, &va_.lanes[0], tiles(kL));
      add_output(0, &rout_.consumers[0], tile_out(1));
    } else {
      op_.write(*vector_op_code(VectorLanes::kEw, fn_.lanes.op));
      add_group(&va_, "a");
      add_group(&vb_, "b");
      add_group(&vout_, "out");
      add_input(0, &va_.lanes[0], tiles(kL));
      add_input(1, &vb_.lanes[0], tiles(kL));
      add_output(0, &vout_.consumers[0], tile_out(kL));
    }
  }
  template <class S>
  void attach_tile(S& s) {
    const bool two = fn_.arity == 2;  // the matmul forms and Map's binary functions
    if (accum_) {
      top2_.write(bits_t<2>(*tile_accum_op_code(fn_.lanes.op)));
      rank_.write(stop_t(cfg_.params.get(param::kRank)));
      bank_.write(stop_t(bank_rank()));  // 0..13: unit_unsupported() checked it
      scan_sig_.write(scan_);
      bank_size_ = S::kSide == kT ? kTileAccumBank : kTileAccumBank16;
      err_raised_ = [&s] { return s.err.read(); };
    } else {
      top3_.write(bits_t<3>(*tile_map_op_code(fn_.lanes.op)));
    }
    if constexpr (S::kDirect) {
      // The configuration fields, with the values the signals above carry to a SystemC unit.
      if (accum_) {
        auto& m = s.accum->model();
        m.cfg_op_i = *tile_accum_op_code(fn_.lanes.op);
        m.cfg_rank_i = uint8_t(cfg_.params.get(param::kRank));
        m.cfg_bank_i = uint8_t(bank_rank());
        m.cfg_scan_i = scan_;
        err_raised_ = [&m] { return m.err_o != 0; };
        direct_ = s.accum.get();
      } else {
        s.map->model().cfg_op_i = *tile_map_op_code(fn_.lanes.op);
        direct_ = s.map.get();
      }
      add_output(0, &s.out.consumers[0], [this, &s](Payload) { return square_from_words<S::kSide>(s.out.data); });
    } else {
      clk_used_ = &s.clk;
      add_output(0, &s.out.consumers[0], [this, &s](Payload) { return square_out<S::kSide>(s.out.data.read()); });
    }
    add_group(&s.a, "a");
    if (two) add_group(&s.b, "b");
    add_group(&s.out, "out");
    add_input(0, &s.a.lanes[0], squares(S::kSide));
    if (two) add_input(1, &s.b.lanes[0], squares(S::kSide));
  }
  void check_err() {
    if (err_raised_ && err_raised_())
      fail("the tile Accum unit raised err_o (accumulator bank, bank_rank " + std::to_string(bank_rank()) + ", rank " +
           std::to_string(cfg_.params.get(param::kRank)) + "): more than " + std::to_string(bank_size_) +
           " bank entries, a chunk whose bank structure differs from the first, a bare stop in bank mode, a "
           "stream ending inside a group, or a rank other than 2");
  }
  bool scan_;            // Scan: the Accum units with cfg_scan_i
  bool accum_;           // Accum or Scan
  ComputeFunction fn_;   // the node's function: its lanes and operands
  sc_core::sc_signal<bool> op_, scan_sig_;
  sc_core::sc_signal<stop_t> rank_;
  sc_core::sc_signal<stop_t> bank_;                     // the tile Accum's cfg_bank_i (bank_rank)
  std::function<bool()> err_raised_;  // the chosen tile Accum's err_o
  int bank_size_ = 0;
  sc_core::sc_signal<bits_t<2>> top2_;
  sc_core::sc_signal<bits_t<3>> top3_;
  InPins<1, 16 * kL> va_, vb_;
  OutPins<1, 16 * kL> vout_;
  OutPins<1, 16> rout_;
  std::unique_ptr<typename U::PcuEw> ew_;
  std::unique_ptr<typename U::PcuReduce> reduce_;
  std::unique_ptr<typename U::PcuAccum> vaccum_;
  TileSide<typename U::PcuTileMap, typename U::PcuTileAccum, kT> t4_;
  TileSide<typename U::PcuTileMap16, typename U::PcuTileAccum16, kT16> t16_;
};

// Accum retile_row and FlatMap retile_streamify_row on the retile unit (pcu_retile) over [r x T]
// tiles: the [r x kT] unit and, where the build has it, the [r x kT16] one. As PcuBridge, the
// first beat picks (a tile of kT16 columns the kT16 unit, anything else the kT one, whose encoder
// then names a tile it cannot take); only the chosen unit is clocked.
template <class R, class R16>
class RetileBridge : public BridgeBase {
 public:
  RetileBridge(const OpConfig& cfg, OpMode mode, const std::string& impl) : BridgeBase(cfg, impl) {
    const bool flat = mode == OpMode::kRetileStreamifyRow;
    mode_.write(flat);
    rank_.write(stop_t(flat ? 1 : cfg.params.get(param::kRank)));
    elaborate(s4_, unit_name() + "_tile");
    elaborate(s16_, unit_name() + "_tile16");
  }

 protected:
  void run() override {
    bool wide = false;
    if constexpr (Side<R16, kT16>::kAvailable) {
      const Tile* first = first_tile();
      wide = first && first->cols == uint32_t(kT16);
    }
    if (wide)
      attach(s16_);
    else
      attach(s4_);
    UnitBridge::run();
    check_err();
  }
  void on_output_element(int, Element&) override { check_err(); }

 private:
  template <class Unit, int T>
  struct Side {
    static constexpr int kSide = T;
    static constexpr int kW = units::TileBits<T>::W;
    static constexpr bool kAvailable = !std::is_void_v<Unit>;
    static constexpr bool kDirect = is_direct_v<Unit>;  // driven without SystemC (direct_pins.h)
    std::unique_ptr<std::conditional_t<kAvailable, Unit, int>> unit;
    std::conditional_t<kDirect, DirectWideIn, WideInPins<kW>> in;
    std::conditional_t<kDirect, DirectWideOut, WideOutPins<kW>> out;
    sc_core::sc_signal<bool> clk, err;
  };
  template <class S>
  void elaborate(S& s, const std::string& name) {
    if constexpr (S::kDirect) {
      s.unit = std::make_unique<std::remove_reference_t<decltype(*s.unit)>>(name.c_str());
      auto& m = s.unit->model();
      STEPSIM_DIRECT_IN(m, in, s.in, S::kW);
      STEPSIM_DIRECT_OUT(m, out, s.out, S::kW);
      s.in.expand = [this](Payload h, uint32_t* w) { square_words<S::kSide>(h, w); };
    } else if constexpr (S::kAvailable) {
      s.unit = std::make_unique<std::remove_reference_t<decltype(*s.unit)>>(name.c_str());
      s.unit->clk_i(s.clk);
      s.unit->rst_ni(rst_n_);
      s.unit->cfg_mode_i(mode_);
      s.unit->cfg_rank_i(rank_);
      STEPSIM_BRIDGE_IN(*s.unit, in, s.in);
      STEPSIM_BRIDGE_OUT(*s.unit, out, s.out);
      s.unit->err_o(s.err);
      s.in.expand = [this](Payload h) { return square_bits<S::kSide>(h); };
    }
  }
  template <class S>
  void attach(S& s) {
    if constexpr (S::kDirect) {
      auto& m = s.unit->model();
      m.cfg_mode_i = mode_.read();  // the values the signals carry to a SystemC unit
      m.cfg_rank_i = uint8_t(rank_.read().to_uint());
      err_raised_ = [&m] { return m.err_o != 0; };
      direct_ = s.unit.get();
      add_output(0, &s.out.consumers[0], [this, &s](Payload) { return square_from_words<S::kSide>(s.out.data); });
    } else {
      clk_used_ = &s.clk;
      err_raised_ = [&s] { return s.err.read(); };
      add_output(0, &s.out.consumers[0], [this, &s](Payload) { return square_out<S::kSide>(s.out.data.read()); });
    }
    add_group(&s.in, "in");
    add_group(&s.out, "out");
    add_input(0, &s.in.lanes[0], squares(S::kSide));
  }
  void check_err() {
    if (err_raised_ && err_raised_())
      fail("the retile unit raised err_o: " +
           std::string(mode_.read() ? "" : "more rows than the tile holds in one group, or ") +
           "a stream ending inside a group");
  }

  sc_core::sc_signal<bool> mode_;  // 0 Accum retile_row, 1 FlatMap retile_streamify_row
  sc_core::sc_signal<stop_t> rank_;
  std::function<bool()> err_raised_;  // the chosen unit's err_o
  Side<R, kT> s4_;
  Side<R16, kT16> s16_;
};

// The factories of the bridge kinds (kinds::KIND::create<U>: the node passed the kind's
// `unsupported`). U is the kind's unit table.
template <class U>
std::unique_ptr<Op> kinds::Flatten::create(const OpConfig& cfg, OpMode, const std::string& impl) {
  return std::make_unique<FlattenBridge<typename U::Flatten>>(cfg, impl);
}
template <class U>
std::unique_ptr<Op> kinds::Promote::create(const OpConfig& cfg, OpMode, const std::string& impl) {
  return std::make_unique<PromoteBridge<typename U::Promote>>(cfg, impl);
}
template <class U>
std::unique_ptr<Op> kinds::Repeat::create(const OpConfig& cfg, OpMode, const std::string& impl) {
  return std::make_unique<RepeatBridge<typename U::Repeat>>(cfg, impl);
}
template <class U>
std::unique_ptr<Op> kinds::Expand::create(const OpConfig& cfg, OpMode, const std::string& impl) {
  return std::make_unique<ExpandBridge<typename U::Expand>>(cfg, impl);
}
template <class U>
std::unique_ptr<Op> kinds::Reshape::create(const OpConfig& cfg, OpMode, const std::string& impl) {
  return std::make_unique<ReshapeBridge<typename U::Reshape>>(cfg, impl);
}
template <class U>
std::unique_ptr<Op> kinds::Zip::create(const OpConfig& cfg, OpMode, const std::string& impl) {
  return std::make_unique<ZipBridge<typename U::Zip>>(cfg, impl);
}
template <class U>
std::unique_ptr<Op> kinds::Broadcast::create(const OpConfig& cfg, OpMode, const std::string& impl) {
  return std::make_unique<BroadcastBridge<typename U::Broadcast>>(cfg, impl);
}
// Up to kN outputs / inputs on the default router, up to kN8 on the 8-way one.
template <class U>
std::unique_ptr<Op> kinds::Partition::create(const OpConfig& cfg, OpMode, const std::string& impl) {
  if (cfg.num_outputs > size_t(kN)) return std::make_unique<PartitionBridge<typename U::Partition8, kN8>>(cfg, impl);
  return std::make_unique<PartitionBridge<typename U::Partition>>(cfg, impl);
}
template <class U>
std::unique_ptr<Op> kinds::Reassemble::create(const OpConfig& cfg, OpMode, const std::string& impl) {
  if (cfg.num_inputs - 1 > size_t(kN))
    return std::make_unique<ReassembleBridge<typename U::Reassemble8, kN8>>(cfg, impl);
  return std::make_unique<ReassembleBridge<typename U::Reassemble>>(cfg, impl);
}
template <class U>
std::unique_ptr<Op> kinds::EagerMerge::create(const OpConfig& cfg, OpMode, const std::string& impl) {
  return std::make_unique<EagerMergeBridge<typename U::EagerMerge>>(cfg, impl);
}
template <class U>
std::unique_ptr<Op> kinds::Pcu::create(const OpConfig& cfg, OpMode mode, const std::string& impl) {
  return std::make_unique<PcuBridge<U>>(cfg, mode, impl);
}
template <class U>
std::unique_ptr<Op> kinds::Retile::create(const OpConfig& cfg, OpMode mode, const std::string& impl) {
  return std::make_unique<RetileBridge<typename U::Retile, typename U::Retile16>>(cfg, mode, impl);
}
template <class U>
std::unique_ptr<Op> kinds::PmuWrite::create(const OpConfig& cfg, OpMode, const std::string& impl) {
  return std::make_unique<PmuWritePort>(cfg, impl);
}
template <class U>
std::unique_ptr<Op> kinds::Pmu::create(const OpConfig& cfg, OpMode, const std::string& impl) {
  return std::make_unique<PmuBridge<typename U::Pmu>>(cfg, impl);
}
// The instance from the node's tile (ag_setup): [4 x 4] one lane, [16 x 16] kAgP16 lanes.
template <class U>
std::unique_ptr<Op> kinds::Ag::create(const OpConfig& cfg, OpMode mode, const std::string& impl) {
  if (ag_setup(cfg, mode).t != kT16) return std::make_unique<AgBridge<typename U::Ag>>(cfg, mode, impl);
  if constexpr (std::is_void_v<typename U::Ag16>)
    throw std::invalid_argument("node '" + cfg.name +
                                "': this build has no Verilated [16 x 16] address generator (STEPSIM_RTL_T16=OFF)");
  else
    return std::make_unique<AgBridge<typename U::Ag16, kT16, kAgP16>>(cfg, mode, impl);
}

}  // namespace stepsim::bridge
