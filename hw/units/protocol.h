// The unit protocol (docs/unit-protocol.md): valid/ready streams carrying one beat per cycle.
//
// A stream port <p> of a unit has, in SystemC and in the RTL alike (lowRISC names):
//   <p>_valid_i / <p>_valid_o      the producer offers a beat
//   <p>_ready_o / <p>_ready_i      the consumer takes it; a beat moves at a rising clk_i edge
//                                  where valid && ready
//   <p>_data_*  [W-1:0]            payload (scalar, selector bits, packed tile, ...)
//   <p>_elem_*                     the beat carries an element (0: bare stop / bare done beat)
//   <p>_stop_*  [3:0]              stop level riding on the beat (0 = none, else S1..S15)
//   <p>_done_*                     the stream ends with this beat
// Rules: valid never depends combinationally on ready; once valid is high the beat is held
// until taken; units drive data = 0 on beats without an element; every unit output
// (valid, payload, ready) is a register (no combinational path from any input pin to any
// output pin).
//
// Every unit input goes through the same two-entry skid buffer with a bypass (InBuf): its
// ready is registered (ready = fewer than 2 beats stored), a beat accepted at edge t can be
// consumed by the unit's core at the same edge, and back-to-back beats flow at one per
// cycle. Every output is one register stage (valid_q + payload_q), reloaded when it is
// empty or being taken. Together: latency 1 cycle (a beat taken at edge t is offered from
// edge t on, and can be taken at t+1), throughput 1 beat per cycle per port.
//
// rtl/stream_in_buf.sv is the same InBuf in SystemVerilog.
#pragma once

#include <systemc>

#include "hw/units/types.h"

namespace stepsim::units {

// One beat as a unit's core sees it.
template <int W>
struct UBeat {
  bits_t<W> data = 0;
  bool elem = false;
  stop_t stop = 0;
  bool done = false;
};

// Stream input port group: <p>_valid_i, _ready_o, _data_i, _elem_i, _stop_i, _done_i.
#define STEPSIM_STREAM_IN(p, W)                                         \
  sc_core::sc_in<bool> p##_valid_i{#p "_valid_i"};                      \
  sc_core::sc_out<bool> p##_ready_o{#p "_ready_o"};                     \
  sc_core::sc_in<::stepsim::units::bits_t<W>> p##_data_i{#p "_data_i"}; \
  sc_core::sc_in<bool> p##_elem_i{#p "_elem_i"};                        \
  sc_core::sc_in<::stepsim::units::stop_t> p##_stop_i{#p "_stop_i"};    \
  sc_core::sc_in<bool> p##_done_i { #p "_done_i" }

// N input streams packed into one flat port group: stream i in slice i of every pin
// (<p>_valid_i[i], <p>_data_i[W*i +: W], <p>_stop_i[4*i +: 4], ...). Used by the units with a
// parametric number of inputs; the RTL twins declare the same flat pins.
#define STEPSIM_STREAMS_IN(p, N, W)                                             \
  sc_core::sc_in<::stepsim::units::bits_t<N>> p##_valid_i{#p "_valid_i"};       \
  sc_core::sc_out<::stepsim::units::bits_t<N>> p##_ready_o{#p "_ready_o"};      \
  sc_core::sc_in<::stepsim::units::bits_t<(N) * (W)>> p##_data_i{#p "_data_i"}; \
  sc_core::sc_in<::stepsim::units::bits_t<N>> p##_elem_i{#p "_elem_i"};         \
  sc_core::sc_in<::stepsim::units::bits_t<4 * (N)>> p##_stop_i{#p "_stop_i"};   \
  sc_core::sc_in<::stepsim::units::bits_t<N>> p##_done_i { #p "_done_i" }

// Stream output port group with N consumers sharing one payload (N = 1: a plain stream;
// N > 1: lock-step multicast, one valid and one ready bit per consumer).
#define STEPSIM_STREAM_OUT(p, N, W)                                        \
  sc_core::sc_out<::stepsim::units::bits_t<N>> p##_valid_o{#p "_valid_o"}; \
  sc_core::sc_in<::stepsim::units::bits_t<N>> p##_ready_i{#p "_ready_i"};  \
  sc_core::sc_out<::stepsim::units::bits_t<W>> p##_data_o{#p "_data_o"};   \
  sc_core::sc_out<bool> p##_elem_o{#p "_elem_o"};                          \
  sc_core::sc_out<::stepsim::units::stop_t> p##_stop_o{#p "_stop_o"};      \
  sc_core::sc_out<bool> p##_done_o { #p "_done_o" }

// The input skid buffer of one stream port: state and next-state logic. Use per clock:
//   sample(valid, in_beat) -> head_valid(), head()   (combinational, bypass when empty)
//   core decides `consume` from the head
//   update(consume)                                  (registers for the next cycle)
//   ready()                                          (drive <p>_ready_o)
template <int W>
struct InBuf {
  UBeat<W> b0, b1;    // stored beats, b0 = oldest
  bits_t<2> cnt = 0;  // 0..2
  bool ready_q = false;
  // Per-cycle sampled values.
  bool fire = false;
  UBeat<W> in;

  void reset() {
    cnt = 0;
    ready_q = false;
    fire = false;
    b0 = UBeat<W>();
    b1 = UBeat<W>();
    in = UBeat<W>();
  }
  void sample(bool valid, const UBeat<W>& beat) {
    fire = valid && ready_q;
    in = beat;
  }
  bool head_valid() const { return cnt != 0 || fire; }
  const UBeat<W>& head() const { return cnt != 0 ? b0 : in; }
  void update(bool consume) {
    bits_t<2> n = cnt;
    const bool bypass = consume && cnt == 0;
    if (consume && cnt != 0) {
      b0 = b1;
      n = n - 1;
    }
    if (fire && !bypass) {
      if (n == 0)
        b0 = in;
      else
        b1 = in;
      n = n + 1;
    }
    cnt = n;
    ready_q = n < 2;
  }
  bool ready() const { return ready_q; }
};

// Reads an input port group into a beat.
#define STEPSIM_READ_IN(p, beat)   \
  do {                             \
    beat.data = p##_data_i.read(); \
    beat.elem = p##_elem_i.read(); \
    beat.stop = p##_stop_i.read(); \
    beat.done = p##_done_i.read(); \
  } while (0)

// Reads stream i of an N-stream input group into a beat.
#define STEPSIM_READ_LANE(p, N, W, i, beat)                                                                \
  do {                                                                                                     \
    beat.data = ::stepsim::units::slice<W, (N) * (W)>(p##_data_i.read(), (W) * (i));                       \
    beat.elem = ::stepsim::units::bit_of<N>(p##_elem_i.read(), i);                                         \
    beat.stop = ::stepsim::units::slice<::stepsim::units::kStopBits, 4 * (N)>(p##_stop_i.read(), 4 * (i)); \
    beat.done = ::stepsim::units::bit_of<N>(p##_done_i.read(), i);                                         \
  } while (0)

// The skid buffers of an N-stream input group: sample all, then update with a consume mask.
template <int N, int W>
struct InBufs {
  InBuf<W> b[N];
  void reset() {
    for (int i = 0; i < N; ++i) b[i].reset();
  }
  void update(const bits_t<N>& consume) {
    for (int i = 0; i < N; ++i) b[i].update(bit_of<N>(consume, i));
  }
  bits_t<N> head_valid() const {
    bits_t<N> v = 0;
    for (int i = 0; i < N; ++i) set_bit<N>(v, i, b[i].head_valid());
    return v;
  }
  bits_t<N> ready() const {
    bits_t<N> v = 0;
    for (int i = 0; i < N; ++i) set_bit<N>(v, i, b[i].ready());
    return v;
  }
  // The head of the stream named by a one-hot pick (an empty beat when pick is 0).
  UBeat<W> head_of(const bits_t<N>& pick) const {
    UBeat<W> r;
    for (int i = 0; i < N; ++i)
      if (bit_of<N>(pick, i)) r = b[i].head();
    return r;
  }
};

// Samples every stream of group p into bufs (an InBufs<N, W>).
#define STEPSIM_SAMPLE_GROUP(p, N, W, bufs)                                       \
  do {                                                                            \
    for (int i_ = 0; i_ < (N); ++i_) {                                            \
      ::stepsim::units::UBeat<W> b_;                                              \
      STEPSIM_READ_LANE(p, N, W, i_, b_);                                         \
      bufs.b[i_].sample(::stepsim::units::bit_of<N>(p##_valid_i.read(), i_), b_); \
    }                                                                             \
  } while (0)

// Output register of a port group with N consumers: valid bits and the shared payload.
template <int N, int W>
struct OutReg {
  bits_t<N> valid = 0;
  UBeat<W> q;

  void reset() {
    valid = 0;
    q = UBeat<W>();
  }
  // The register can take a new beat this cycle: every consumer's pending beat is taken.
  bool can_load(const bits_t<N>& ready) const {
    bool f = true;
    for (int i = 0; i < N; ++i) f = f && (!bit_of<N>(valid, i) || bit_of<N>(ready, i));
    return f;
  }
  // emit: load `beat` for the consumers in `mask` (only when can_load()); else drop taken bits.
  void update(const bits_t<N>& ready, bool emit, const UBeat<W>& beat, const bits_t<N>& mask) {
    if (emit) {
      valid = mask;
      q.elem = beat.elem;
      q.data = beat.elem ? beat.data : bits_t<W>(0);
      q.stop = beat.stop;
      q.done = beat.done;
    } else {
      for (int i = 0; i < N; ++i) set_bit<N>(valid, i, bit_of<N>(valid, i) && !bit_of<N>(ready, i));
    }
  }
};

// A [r x T] bf16 tile on the pins (docs/unit-protocol.md, "How elements travel on the pins"):
// T^2 lanes of 16 bits, lane (i, j) in bits [16(iT+j) +: 16], then the tile header, the row
// count r = 0..T, in bits [16T^2 +: kRowsW]. Lanes of rows >= r are don't-care.
template <int T>
struct TileBits {
  static constexpr int kLanes = 16 * T * T;    // lane bits
  static constexpr int kRowsW = clog2(T + 1);  // header bits
  static constexpr int W = kLanes + kRowsW;    // the payload
};
template <int T>
using tile_rows_t = bits_t<TileBits<T>::kRowsW>;
template <int T>
inline tile_rows_t<T> tile_rows(const bits_t<TileBits<T>::W>& v) {
  return tile_rows_t<T>(v.range(TileBits<T>::W - 1, TileBits<T>::kLanes).to_uint());
}
template <int T>
inline void set_tile_rows(bits_t<TileBits<T>::W>& v, const tile_rows_t<T>& r) {
  v.range(TileBits<T>::W - 1, TileBits<T>::kLanes) = r.to_uint();
}

// cfg_op_i of PcuTileMap (pcu_tile_map.h). Here, with the tile payload, so that its users (the
// bridges) need not include the unit.
constexpr int kTileMatmul = 0;
constexpr int kTileMatmulT = 1;
constexpr int kTileMul = 2;
constexpr int kTileAdd = 3;
constexpr int kTileSilu = 4;  // 4..7: unary
constexpr int kTileExp = 5;
constexpr int kTileSigmoid = 6;
// cfg_op_i of PcuTileAccum (pcu_tile_accum.h), likewise.
constexpr int kTileAccAdd = 0;
constexpr int kTileAccMax = 1;
constexpr int kTileAccMatmul = 2;
constexpr int kTileAccMatmulT = 3;

#define STEPSIM_WRITE_OUT(p, reg) \
  do {                            \
    p##_valid_o.write(reg.valid); \
    p##_data_o.write(reg.q.data); \
    p##_elem_o.write(reg.q.elem); \
    p##_stop_o.write(reg.q.stop); \
    p##_done_o.write(reg.q.done); \
  } while (0)

}  // namespace stepsim::units
