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
// Included by unit_bridges.h (after BridgeBase); include that header, not this one.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "hw/memory/offchip.h"

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

// The memory port's pins (P lanes).
template <int P>
struct MemPortPins : PinGroup {
  sc_core::sc_signal<bool> req_ready, req_write, rsp_valid, rsp_ready, err;
  sc_core::sc_signal<bits_t<P>> req_valid;
  sc_core::sc_signal<bits_t<P * kAgAW>> req_addr;
  sc_core::sc_signal<bits_t<P * 7>> req_len;
  sc_core::sc_signal<bits_t<P * 512>> req_wdata, rsp_data;
  bool s_rsp_valid = false;
  bits_t<P* 512> s_rsp_data = 0;
  void flush() override {
    req_ready.write(true);
    rsp_valid.write(s_rsp_valid);
    if (s_rsp_valid) rsp_data.write(s_rsp_data);
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

template <class Dut, int T = kT, int P = 1>
class AgBridge : public BridgeBase {
 public:
  static constexpr int kTB = 2 * T * T;              // bytes of a full [T x T] tile
  static constexpr int kPW = units::TileBits<T>::W;  // the tile payload: lanes, header (docs/unit-protocol.md)
  static constexpr int kGW = units::clog2(kTB + 1);

  AgBridge(const OpConfig& cfg, OpMode mode, const std::string& impl)
      : BridgeBase(cfg, impl), setup_(ag_setup(cfg, mode)), dut_(unit_name().c_str()) {
    if (!setup_.error.empty()) throw std::invalid_argument(setup_.error);
    if (setup_.t != T || setup_.p != P)
      throw std::logic_error("AgBridge: the wrong instance for node '" + cfg.name + "'");
    memory_ = cfg.env->memory;
    memory_->add_client(&ctx());
    bind_clock(dut_);
    dut_.cfg_write_i(write_);
    dut_.cfg_rank_i(rank_);
    dut_.cfg_shape_i(shape_);
    dut_.cfg_stride_q_i(stride_q_);
    dut_.cfg_stride_r_i(stride_r_);
    dut_.cfg_offset_q_i(offset_q_);
    dut_.cfg_offset_r_i(offset_r_);
    dut_.cfg_tiles_c_i(tiles_c_);
    dut_.cfg_base_i(base_);
    dut_.cfg_a_i(a_);
    dut_.cfg_b_i(b_);
    dut_.cfg_rows_i(rows_);
    dut_.cfg_row_bytes_i(row_bytes_);
    dut_.cfg_pitch_i(pitch_);
    dut_.cfg_tile_rows_i(tile_rows_);
    dut_.cfg_ref_i(ref_mode_);
    dut_.cfg_random_i(random_);
    dut_.cfg_tiles_i(tiles_);
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
    tin_.expand = [this](Payload h) { return tile_bits(h); };
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
      add_output(0, &tout_.consumers[0], [this](Payload) { return ack_out(tout_.data.read()); });
      setup_.tensor->written = true;
    } else if (setup_.write) {
      add_input(0, &tin_.lanes[0], tiles_in());
      add_output(-1, &tout_.consumers[0], [](Payload) { return Element(); });
      setup_.tensor->written = true;
    } else {
      PinBeat done;
      done.done = true;
      add_input(-1, &tin_.lanes[0], [](const Element&) { return Payload(0); }, {done});
      add_output(0, &tout_.consumers[0], [this](Payload) { return tile_out(tout_.data.read()); });
    }
    UnitBridge::run();
  }

  bool side_ports(uint64_t c, uint64_t& next_event) override {
    if (mem_.err.read())
      fail(setup_.random ? "wdata and waddr differ in their number of tiles (one wdata tile per waddr element)"
                         : "more tiles arrived than the store's view of tensor '" + setup_.tensor->name + "' holds");
    bool active = false;
    mem_.s_rsp_valid = !rsp_.empty() && rsp_.front().at <= c;
    if (mem_.s_rsp_valid) {
      mem_.s_rsp_data = rsp_.front().data;
      if (mem_.rsp_ready.read()) {
        rsp_.pop_front();
        active = true;
      }
    } else if (!rsp_.empty()) {
      next_event = std::min(next_event, rsp_.front().at);
    }
    const bits_t<P> lanes = mem_.req_valid.read();
    if (units::bit_of<P>(lanes, 0)) {  // a bundle taken at this edge (req_ready_i is always high)
      const bool write = mem_.req_write.read();
      const bool data = functional();
      const bits_t<P* kAgAW> addrs = mem_.req_addr.read();
      const bits_t<P* 7> lens = mem_.req_len.read();
      const bits_t<P* 512> w = mem_.req_wdata.read();
      Rsp r;
      r.at = std::max(c + 1, last_at_);
      r.data = 0;
      for (int k = 0; k < P && units::bit_of<P>(lanes, k); ++k) {  // lane order = request order
        const uint64_t addr = units::slice<kAgAW, P * kAgAW>(addrs, kAgAW * k).to_uint64();
        const uint32_t len = uint32_t(units::slice<7, P * 7>(lens, 7 * k).to_uint());
        uint8_t bytes[64] = {};
        if (write && data)
          for (uint32_t i = 0; i < len; ++i)
            bytes[i] = uint8_t(w.range(512 * k + 8 * int(i) + 7, 512 * k + 8 * int(i)).to_uint());
        const uint64_t done = memory_->request(ctx(), addr, write, data ? bytes : nullptr, len);
        r.at = std::max(r.at, done);
        if (!write && data)
          for (uint32_t i = 0; i < len; ++i) r.data.range(512 * k + 8 * int(i) + 7, 512 * k + 8 * int(i)) = bytes[i];
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
  // A store's [r x T] tile: its r rows of lanes and the header r.
  bits_t<kPW> tile_bits(Payload h) const {
    bits_t<kPW> v = 0;
    const Tile& t = element(h).tile();
    units::set_tile_rows<T>(v, units::tile_rows_t<T>(t.rows));
    if (!t.has_data()) return v;
    const int n = 2 * int(t.elems());
    uint8_t bytes[kTB];
    pack_elements(*t.data, t.elems(), DType::BF16, bytes);
    for (int i = 0; i < n; ++i) v.range(8 * i + 7, 8 * i) = bytes[i];
    return v;
  }
  // A random store's acknowledgement: the element 1.
  Element ack_out(const bits_t<kPW>& v) const {
    if (v != bits_t<kPW>(1)) fail("the address generator's write acknowledgement is not the element 1");
    return Element(Scalar{1});
  }
  // A loaded tile: [r x T] from the header's r rows (the unit drives the other lanes 0).
  Element tile_out(const bits_t<kPW>& v) const {
    const uint32_t r = uint32_t(units::tile_rows<T>(v).to_uint());
    if (r != uint32_t(setup_.r))
      fail("the address generator emitted a tile of " + std::to_string(r) + " rows, not " + std::to_string(setup_.r));
    Tile t = shape_tile(r, uint32_t(T), DType::BF16);
    t.in_memory_unit = true;  // staged in the load's memory unit, as the approximate load marks it
    if (functional()) {
      const int n = 2 * int(t.elems());
      uint8_t bytes[kTB];
      for (int i = 0; i < n; ++i) bytes[i] = uint8_t(v.range(8 * i + 7, 8 * i).to_uint());
      auto d = std::make_shared<TileData>();
      unpack_elements(bytes, t.elems(), DType::BF16, *d);
      t.data = std::move(d);
    }
    return Element(std::move(t));
  }

  struct Rsp {
    uint64_t at;
    bits_t<P * 512> data;
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
  WideInPins<kPW> tin_;
  WideOutPins<kPW> tout_;
  InPins<1, kAgIW> tref_;
  MemPortPins<P> mem_;
  std::deque<Rsp> rsp_;
  uint64_t last_at_ = 0, requests_ = 0;
};

}  // namespace stepsim::bridge
