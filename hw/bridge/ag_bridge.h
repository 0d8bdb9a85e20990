// LinearOffChipLoad / LinearOffChipStore and RandomOffChipLoad / RandomOffChipStore on the
// address generator unit (hw/units/ag_offchip.h) in co-simulation (docs/cosim.md, "The address
// generator: the memory port").
//
// The unit walks the node's tiled view itself and issues a bundle of up to P 64-byte requests
// per cycle on its P request lanes. Two instances: tile [r, 4] -> T = 4, P = 1; tile [r, 16]
// -> T = 16, P = 4 (the node's par_dispatch, else the preset's, must be 4); r = 1..T rows go
// to cfg_tile_rows_i and travel in the tile header. The bridge turns
// every request lane taken at cycle c into one request of the TLM-2.0 HBM model
// (OffChipMemory::request, the request mode's path), in lane order (= request order): at model
// time c, in the node's turn among the off-chip clients (Context::wait_for_turn, so the HBM
// model sees every client's requests in model-time order), moving the request's bytes. The
// bundle's response is offered on rsp_valid_i from the completion of its slowest request on, in
// request order (a later bundle that completes earlier waits for the ones before it), and taken
// when the unit's rsp_ready_o is high. req_ready_i is always high: the HBM model queues
// requests in time.
//
// Configuration: the view as the approximate operator builds it (tile [r, T] bf16;
// out_shape, stride, offset; empty out_shape = the whole tensor row-major); offset and strides
// split into (q, r) by tiles_c; the burst geometry (rows, row_bytes, pitch) and the tile steps
// A, B from the tensor's layout (OffChipTensor::tile_burst, as the approximate operator uses it;
// row-major: rows = r, row_bytes = 2 T, pitch = the tensor's row bytes, A = r * pitch, B = 2 T;
// [r x T] blocks: rows = 1, row_bytes = 2 r T).
// Load: static (no ref input; cfg_ref_i = 0) or one pass per element of the ref input 0
// (cfg_ref_i = 1, the elements' contents ignored); the tiles, and with a ref stream the raised
// bare stops and the done, go to output 0. Store: the tiles of input 0;
// the unit's final bare done (every write acknowledged) ends the node and is not sent anywhere
// (the operator has no output). err_o (a tile beyond the view) fails the run.
// Random access (cfg_random_i = 1): the tile indices (input 0, raddr / waddr; scalars or 1x1
// int32 tiles, checked against the tensor as the approximate operator does) go to the ref pins;
// a RandomOffChipStore's tiles (input 1, wdata) to `in`, its acknowledgements (the element 1)
// to output 0; err_o (wdata and waddr differ in length) fails the run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <systemc>

#include "hw/bridge/bridge_base.h"
#include "hw/bridge/direct_pins.h"
#include "hw/bridge/pins.h"
#include "hw/bridge/unit_bridge.h"
#include "hw/bridge/unit_ops.h"  // kT, kT16
#include "hw/memory/offchip.h"
#include "hw/ops/op.h"
#include "hw/stream/tile.h"
#include "hw/units/protocol.h"

namespace stepsim::bridge {

constexpr int kAgMR = 4, kAgIW = 16, kAgAW = 32, kAgMaxo = 64;  // the RTL defaults (T = kT)
constexpr int kAgP16 = 4;  // request lanes of the T = 16 instance (rtl/ag_offchip_t16.sv)

// The unit's configuration for a node (checked by kinds::Ag::unsupported).
struct AgSetup {
  int t = kT, p = 1;  // the instance: tile columns, request lanes
  int r = kT;         // the tile's rows (1..t)
  bool write = false;
  bool random = false;                 // RandomOffChipLoad / Store: one tile per index
  std::vector<int64_t> shape, stride;  // outermost first ({1} for random access)
  uint64_t tiles = 0;                  // stored tiles
  uint64_t offset = 0, tiles_c = 1, base = 0, a = 0, b = 0, pitch = 0;
  uint64_t rows = 0, row_bytes = 0;  // the tile's burst (OffChipTensor::tile_burst)
  OffChipTensor* tensor = nullptr;
  std::string error;  // "" when the unit can run the node
};
// `mode`: the node's route (rtl/units.list): kLoad, kStore, kRandomLoad or kRandomStore.
AgSetup ag_setup(const OpConfig& cfg, OpMode mode);
// A random access's tile index l for the pins; an error ("" if none) as the approximate operator's.
std::string ag_index(const AgSetup& s, const Element& e, uint64_t& l);

// A pin's trace: one Payload up to 64 bits, 128-bit chunks above.
template <int N>
void ag_trace(const std::string& name, const sc_core::sc_signal<bits_t<N>>& sig, std::vector<PinTrace>& t) {
  if constexpr (N == 1)
    t.push_back({name, 1, [&sig] { return Payload(sig.read()); }});
  else if constexpr (N <= 64)
    t.push_back({name, N, [&sig] { return Payload(sig.read().to_uint64()); }});
  else
    wide_traces<N>(name, sig, t);
}

// The memory port's pins (P lanes). The bridge reads and stages them through the same calls as
// DirectMemPort's (side_ports): the lanes' requests, and a response as P x 64 bytes.
template <int P>
struct MemPortPins : PinGroup {
  static constexpr int kBytes = P * 64;
  sc_core::sc_signal<bool> req_ready, req_write, rsp_valid, rsp_ready, err;
  sc_core::sc_signal<bits_t<P>> req_valid;
  sc_core::sc_signal<bits_t<P * kAgAW>> req_addr;
  sc_core::sc_signal<bits_t<P * 7>> req_len;
  sc_core::sc_signal<bits_t<P * 512>> req_wdata, rsp_data;
  bool s_rsp_valid = false;
  uint8_t s_rsp_data[kBytes] = {};

  bool error() const { return err.read(); }
  bool rsp_taken() const { return rsp_ready.read(); }
  bool lane_valid(int k) const { return units::bit_of<P>(req_valid.read(), k); }
  bool write() const { return req_write.read(); }
  uint64_t addr(int k) const { return units::slice<kAgAW, P * kAgAW>(req_addr.read(), kAgAW * k).to_uint64(); }
  uint32_t len(int k) const { return uint32_t(units::slice<7, P * 7>(req_len.read(), 7 * k).to_uint()); }
  void wdata(int k, uint32_t n, uint8_t* bytes) const {
    uint32_t w[kBytes / 4];
    words_from_bits<P * 512>(req_wdata.read(), w);
    std::memcpy(bytes, reinterpret_cast<const uint8_t*>(w) + 64 * k, n);
  }
  void flush() override {
    req_ready.write(true);
    rsp_valid.write(s_rsp_valid);
    if (s_rsp_valid) {
      uint32_t w[kBytes / 4];
      std::memcpy(w, s_rsp_data, kBytes);
      rsp_data.write(bits_from_words<P * 512>(w));
    }
  }
  void traces(const std::string& p, std::vector<PinTrace>& t) override {
    ag_trace<P>(p + "req_valid_o", req_valid, t);
    t.push_back({p + "req_ready_i", 1, [this] { return Payload(req_ready.read()); }});
    ag_trace<P * kAgAW>(p + "req_addr_o", req_addr, t);
    t.push_back({p + "req_write_o", 1, [this] { return Payload(req_write.read()); }});
    ag_trace<P * 7>(p + "req_len_o", req_len, t);
    wide_traces<P * 512>(p + "req_wdata_o", req_wdata, t);
    t.push_back({p + "rsp_valid_i", 1, [this] { return Payload(rsp_valid.read()); }});
    t.push_back({p + "rsp_ready_o", 1, [this] { return Payload(rsp_ready.read()); }});
    wide_traces<P * 512>(p + "rsp_data_i", rsp_data, t);
    t.push_back({p + "err_o", 1, [this] { return Payload(err.read()); }});
  }
};

// The memory port of a direct model M (direct_pins.h): MemPortPins' calls on the model's fields.
template <class M, int P>
struct DirectMemPort : PinGroup {
  static constexpr int kBytes = P * 64;
  M* m = nullptr;
  bool s_rsp_valid = false;
  uint8_t s_rsp_data[kBytes] = {};

  bool error() const { return m->err_o != 0; }
  bool rsp_taken() const { return m->rsp_ready_o != 0; }
  bool lane_valid(int k) const { return field_bits(m->req_valid_o, k, 1) != 0; }
  bool write() const { return m->req_write_o != 0; }
  uint64_t addr(int k) const { return field_bits(m->req_addr_o, kAgAW * k, kAgAW); }
  uint32_t len(int k) const { return uint32_t(field_bits(m->req_len_o, 7 * k, 7)); }
  void wdata(int k, uint32_t n, uint8_t* bytes) const {
    static_assert(is_wide_field_v<decltype(m->req_wdata_o)>, "512-bit lanes");
    std::memcpy(bytes, reinterpret_cast<const uint8_t*>(m->req_wdata_o.data()) + 64 * k, n);  // little-endian
  }
  void flush() override {
    m->req_ready_i = 1;
    m->rsp_valid_i = s_rsp_valid;
    if (s_rsp_valid) std::memcpy(m->rsp_data_i.data(), s_rsp_data, kBytes);
  }
  void traces(const std::string& p, std::vector<PinTrace>& t) override {
    direct_trace(p + "req_valid_o", m->req_valid_o, P, t);
    direct_trace(p + "req_ready_i", m->req_ready_i, 1, t);
    direct_trace(p + "req_addr_o", m->req_addr_o, P * kAgAW, t);
    direct_trace(p + "req_write_o", m->req_write_o, 1, t);
    direct_trace(p + "req_len_o", m->req_len_o, P * 7, t);
    direct_trace(p + "req_wdata_o", m->req_wdata_o, P * 512, t);
    direct_trace(p + "rsp_valid_i", m->rsp_valid_i, 1, t);
    direct_trace(p + "rsp_ready_o", m->rsp_ready_o, 1, t);
    direct_trace(p + "rsp_data_i", m->rsp_data_i, P * 512, t);
    direct_trace(p + "err_o", m->err_o, 1, t);
  }
};

// The address generator's configuration ports and the bridge's signals for them (SystemC units
// bind them; direct models get the signals' values).
#define STEPSIM_AG_CONFIG(X)                                                                                      \
  X(cfg_write_i, write_) X(cfg_rank_i, rank_) X(cfg_shape_i, shape_) X(cfg_stride_q_i, stride_q_)                 \
  X(cfg_stride_r_i, stride_r_) X(cfg_offset_q_i, offset_q_) X(cfg_offset_r_i, offset_r_) X(cfg_tiles_c_i, tiles_c_) \
  X(cfg_base_i, base_) X(cfg_a_i, a_) X(cfg_b_i, b_) X(cfg_rows_i, rows_) X(cfg_row_bytes_i, row_bytes_)          \
  X(cfg_pitch_i, pitch_) X(cfg_tile_rows_i, tile_rows_) X(cfg_ref_i, ref_mode_) X(cfg_random_i, random_)           \
  X(cfg_tiles_i, tiles_)

template <class Dut, int T = kT, int P = 1>
class AgBridge : public BridgeBase {
 public:
  static constexpr int kTB = 2 * T * T;              // bytes of a full [T x T] tile
  static constexpr int kPW = units::TileBits<T>::W;  // the tile payload: lanes, header (docs/unit-protocol.md)
  static constexpr int kGW = units::clog2(kTB + 1);
  static constexpr int kWords = (kPW + 31) / 32;  // the tile payload's 32-bit words
  static constexpr int kHeaderWord = units::TileBits<T>::kLanes / 32;
  static constexpr bool kDirect = is_direct_v<Dut>;  // driven without SystemC (direct_pins.h)
  using DirectModel = typename direct_model<Dut>::type;

  AgBridge(const OpConfig& cfg, OpMode mode, const std::string& impl)
      : BridgeBase(cfg, impl), setup_(ag_setup(cfg, mode)), dut_(unit_name().c_str()) {
    if (!setup_.error.empty()) throw std::invalid_argument(setup_.error);
    if (setup_.t != T || setup_.p != P)
      throw std::logic_error("AgBridge: the wrong instance for node '" + cfg.name + "'");
    memory_ = cfg.env->memory;
    memory_->add_client(&ctx());
    if constexpr (kDirect) {
      auto& m = dut_.model();
      STEPSIM_DIRECT_IN(m, in, tin_, kPW);
      STEPSIM_DIRECT_IN(m, ref, tref_, kAgIW);
      STEPSIM_DIRECT_OUT(m, out, tout_, kPW);
      mem_.m = &m;
      tin_.expand = [this](Payload h, uint32_t* w) { tile_words(h, w); };
    } else {
      bind_clock(dut_);
#define STEPSIM_AG_BIND(port, signal) dut_.port(signal);
      STEPSIM_AG_CONFIG(STEPSIM_AG_BIND)
#undef STEPSIM_AG_BIND
      STEPSIM_BRIDGE_IN(dut_, in, tin_);
      STEPSIM_BRIDGE_IN(dut_, ref, tref_);
      STEPSIM_BRIDGE_OUT(dut_, out, tout_);
      dut_.req_valid_o(mem_.req_valid);
      dut_.req_ready_i(mem_.req_ready);
      dut_.req_addr_o(mem_.req_addr);
      dut_.req_write_o(mem_.req_write);
      dut_.req_len_o(mem_.req_len);
      dut_.req_wdata_o(mem_.req_wdata);
      dut_.rsp_valid_i(mem_.rsp_valid);
      dut_.rsp_ready_o(mem_.rsp_ready);
      dut_.rsp_data_i(mem_.rsp_data);
      dut_.err_o(mem_.err);
      tin_.expand = [this](Payload h) {
        uint32_t w[kWords];
        tile_words(h, w);
        return bits_from_words<kPW>(w);
      };
    }
  }

  uint64_t requests() const { return requests_; }
  // A load's output channel is as deep as the approximate load's (load_buffer_tiles tiles in its
  // memory unit), so both runs see the same channel behind the address generator.
  uint32_t output_depth(size_t, uint32_t fifo_depth) const override {
    return setup_.write ? fifo_depth : hw().load_output_depth(uint64_t(2 * setup_.r * T), fifo_depth);
  }

 protected:
  void run() override {
    // The quasi-static configuration, written before the reset edges.
    const AgSetup& s = setup_;
    const uint64_t tc = s.tiles_c;
    bits_t<kAgMR*kAgIW> sh = 0, sq = 0, sr = 0;
    for (size_t d = 0; d < kAgMR; ++d) {
      const bool used = d < s.shape.size();
      units::set_slice<kAgIW, kAgMR * kAgIW>(sh, kAgIW * int(d), bits_t<kAgIW>(used ? uint64_t(s.shape[d]) : 1));
      units::set_slice<kAgIW, kAgMR * kAgIW>(sq, kAgIW * int(d), bits_t<kAgIW>(used ? uint64_t(s.stride[d]) / tc : 0));
      units::set_slice<kAgIW, kAgMR * kAgIW>(sr, kAgIW * int(d), bits_t<kAgIW>(used ? uint64_t(s.stride[d]) % tc : 0));
    }
    write_.write(s.write);
    rank_.write(stop_t(s.shape.size()));
    shape_.write(sh);
    stride_q_.write(sq);
    stride_r_.write(sr);
    offset_q_.write(bits_t<kAgIW>(s.offset / tc));
    offset_r_.write(bits_t<kAgIW>(s.offset % tc));
    tiles_c_.write(bits_t<kAgIW>(tc));
    base_.write(bits_t<kAgAW>(s.base));
    a_.write(bits_t<kAgAW>(s.a));
    b_.write(bits_t<kAgAW>(s.b));
    rows_.write(bits_t<kGW>(s.rows));
    row_bytes_.write(bits_t<kGW>(s.row_bytes));
    pitch_.write(bits_t<kAgAW>(s.pitch));
    tile_rows_.write(units::tile_rows_t<T>(s.r));
    const bool ref = !s.random && !s.write && has_in(0);
    ref_mode_.write(ref);
    random_.write(s.random);
    tiles_.write(bits_t<kAgIW>(s.random ? s.tiles : 0));
    if constexpr (kDirect) {
      // The signals' values (after their update) in the model's fields.
      sc_core::wait(sc_core::SC_ZERO_TIME);
      auto& m = dut_.model();
#define STEPSIM_AG_SET(port, signal) set_field(m.port, uint64_t(signal.read()));
      STEPSIM_AG_CONFIG(STEPSIM_AG_SET)
#undef STEPSIM_AG_SET
      direct_ = &dut_;
    }
    add_group(&tin_, "in");
    add_group(&tref_, "ref");
    add_group(&tout_, "out");
    add_group(&mem_, "");
    if (ref) add_input(0, &tref_.lanes[0], [](const Element&) { return Payload(0); });  // contents ignored
    if (s.random)
      add_input(0, &tref_.lanes[0], [this](const Element& e) {
        uint64_t l = 0;
        if (const std::string err = ag_index(setup_, e, l); !err.empty()) fail(err);
        return Payload(l);
      });
    if (s.random && s.write) {  // RandomOffChipStore: wdata on in, the acknowledgements on out
      add_input(1, &tin_.lanes[0], tiles_in());
      add_output(0, &tout_.consumers[0], [this](Payload) { return ack_out(out_words()); });
      setup_.tensor->written = true;
    } else if (setup_.write) {
      add_input(0, &tin_.lanes[0], tiles_in());
      add_output(-1, &tout_.consumers[0], [](Payload) { return Element(); });
      setup_.tensor->written = true;
    } else {
      PinBeat done;
      done.done = true;
      add_input(-1, &tin_.lanes[0], [](const Element&) { return Payload(0); }, {done});
      add_output(0, &tout_.consumers[0], [this](Payload) { return tile_out(out_words()); });
    }
    UnitBridge::run();
  }

  bool side_ports(uint64_t c, uint64_t& next_event) override {
    if (mem_.error())
      fail(setup_.random ? "wdata and waddr differ in their number of tiles (one wdata tile per waddr element)"
                         : "more tiles arrived than the store's view of tensor '" + setup_.tensor->name + "' holds");
    bool active = false;
    mem_.s_rsp_valid = !rsp_.empty() && rsp_.front().at <= c;
    if (mem_.s_rsp_valid) {
      std::memcpy(mem_.s_rsp_data, rsp_.front().data, sizeof mem_.s_rsp_data);
      if (mem_.rsp_taken()) {
        rsp_.pop_front();
        active = true;
      }
    } else if (!rsp_.empty()) {
      next_event = std::min(next_event, rsp_.front().at);
    }
    if (mem_.lane_valid(0)) {  // a bundle taken at this edge (req_ready_i is always high)
      const bool write = mem_.write();
      const bool data = functional();
      Rsp r;
      r.at = std::max(c + 1, last_at_);
      for (int k = 0; k < P && mem_.lane_valid(k); ++k) {  // lane order = request order
        const uint64_t addr = mem_.addr(k);
        const uint32_t len = mem_.len(k);
        uint8_t* bytes = r.data + 64 * k;
        if (write && data) mem_.wdata(k, len, bytes);
        const uint64_t done = memory_->request(ctx(), addr, write, data ? bytes : nullptr, len);
        r.at = std::max(r.at, done);
        if (write) std::fill(bytes, bytes + 64, uint8_t(0));  // a write's response carries no data
        ++requests_;
      }
      last_at_ = r.at;
      rsp_.push_back(r);
      active = true;
    }
    return active;
  }

 private:
  // [T x T] bf16 tiles <-> the packed bytes of their elements (pack_elements).
  Encoder tiles_in() {
    return [this](const Element& e) {
      if (!e.is_tile()) fail("the store takes tiles, got " + e.to_string());
      const Tile& t = e.tile();
      if (t.rows != uint32_t(setup_.r) || t.cols != uint32_t(T) || t.dtype != DType::BF16)
        fail("tile shape mismatch: the store writes [" + std::to_string(setup_.r) + " x " + std::to_string(T) +
             "] bf16 tiles, got " + t.to_string());
      if (functional() && !t.has_data())
        fail("functional mode: tile " + t.to_string() + " carries no values (literal T[RxC] tiles are shapes only)");
      return handle(e);
    };
  }
  // A store's [r x T] tile as the payload's 32-bit words: its r rows of lanes (the packed bytes,
  // little-endian: byte i at bits 8 i), then the header r.
  void tile_words(Payload h, uint32_t* w) const {
    static_assert(units::TileBits<T>::kLanes % 32 == 0 && kTB % 4 == 0, "whole words of lanes, then the header");
    std::fill(w, w + kWords, 0u);
    const Tile& t = element(h).tile();
    w[kHeaderWord] = t.rows;
    if (!t.has_data()) return;
    uint8_t bytes[kTB] = {};
    pack_elements(*t.data, t.elems(), DType::BF16, bytes);
    std::memcpy(w, bytes, 2 * t.elems());
  }
  // The payload on the out pins, as words.
  const uint32_t* out_words() {
    if constexpr (kDirect) {
      return tout_.data;
    } else {
      words_from_bits<kPW>(tout_.data.read(), out_buf_);
      return out_buf_;
    }
  }
  // A random store's acknowledgement: the element 1.
  Element ack_out(const uint32_t* w) const {
    if (w[0] != 1 || std::any_of(w + 1, w + kWords, [](uint32_t x) { return x != 0; }))
      fail("the address generator's write acknowledgement is not the element 1");
    return Element(Scalar{1});
  }
  // A loaded tile: [r x T] from the header's r rows (the unit drives the other lanes 0).
  Element tile_out(const uint32_t* w) const {
    const uint32_t r = w[kHeaderWord] & ((1u << units::TileBits<T>::kRowsW) - 1);
    if (r != uint32_t(setup_.r))
      fail("the address generator emitted a tile of " + std::to_string(r) + " rows, not " + std::to_string(setup_.r));
    Tile t = shape_tile(r, uint32_t(T), DType::BF16);
    t.in_memory_unit = true;  // staged in the load's memory unit, as the approximate load marks it
    if (functional()) {
      uint8_t bytes[kTB];
      std::memcpy(bytes, w, 2 * t.elems());
      auto d = std::make_shared<TileData>();
      unpack_elements(bytes, t.elems(), DType::BF16, *d);
      t.data = std::move(d);
    }
    return Element(std::move(t));
  }

  struct Rsp {
    uint64_t at = 0;
    uint8_t data[P * 64] = {};  // lane k's bytes at 64 k
  };
  AgSetup setup_;
  Dut dut_;
  OffChipMemory* memory_ = nullptr;
  sc_core::sc_signal<bool> write_;
  sc_core::sc_signal<stop_t> rank_;
  sc_core::sc_signal<bits_t<kAgMR * kAgIW>> shape_, stride_q_, stride_r_;
  sc_core::sc_signal<bits_t<kAgIW>> offset_q_, offset_r_, tiles_c_;
  sc_core::sc_signal<bits_t<kAgAW>> base_, a_, b_, pitch_;
  sc_core::sc_signal<bits_t<kGW>> rows_, row_bytes_;
  sc_core::sc_signal<units::tile_rows_t<T>> tile_rows_;
  sc_core::sc_signal<bool> ref_mode_, random_;
  sc_core::sc_signal<bits_t<kAgIW>> tiles_;
  std::conditional_t<kDirect, DirectWideIn, WideInPins<kPW>> tin_;
  std::conditional_t<kDirect, DirectWideOut, WideOutPins<kPW>> tout_;
  std::conditional_t<kDirect, DirectIn<uint16_t>, InPins<1, kAgIW>> tref_;
  std::conditional_t<kDirect, DirectMemPort<DirectModel, P>, MemPortPins<P>> mem_;
  uint32_t out_buf_[kWords] = {};
  std::deque<Rsp> rsp_;
  uint64_t last_at_ = 0, requests_ = 0;
};

}  // namespace stepsim::bridge
