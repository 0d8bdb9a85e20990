// Pins of a bridged unit (docs/cosim.md): the sc_signals a UnitBridge drives and samples, with
// the unit's port types (hw/units/types.h, which Verilated models share), and a uniform view
// of one input stream or one output consumer for the bridge engine.
//
// A payload is at most 128 bits (a [1 x 8] bf16 tile, four 32-bit handles of an input group),
// held as an unsigned __int128 on the bridge side. Wider ports (a [T x T] bf16 tile of the tile
// compute units) use WideInPins / WideOutPins: the bridge side carries an element handle and
// the port's own conversion writes or reads the wide payload.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <systemc>
#include <vector>

#include "hw/units/types.h"

namespace stepsim::bridge {

using units::bits_t;
using units::stop_t;
using Payload = unsigned __int128;

// One beat on the pins of one stream.
struct PinBeat {
  Payload data = 0;
  bool elem = false;
  uint8_t stop = 0;
  bool done = false;
};

template <int W>
Payload to_payload(const bits_t<W>& v) {
  static_assert(W <= 128, "bridged payloads are at most 128 bits");
  if constexpr (W == 1) {
    return v ? 1 : 0;
  } else if constexpr (W <= 64) {
    return Payload(v.to_uint64());
  } else {
    Payload lo = Payload(v.range(63, 0).to_uint64());
    Payload hi = Payload(v.range(W - 1, 64).to_uint64());
    return lo | (hi << 64);
  }
}

template <int W>
bits_t<W> from_payload(Payload p) {
  static_assert(W <= 128, "bridged payloads are at most 128 bits");
  if constexpr (W == 1) {
    return (p & 1) != 0;
  } else if constexpr (W <= 64) {
    return bits_t<W>(uint64_t(p));
  } else {
    bits_t<W> v = 0;
    v.range(63, 0) = uint64_t(p);
    v.range(W - 1, 64) = uint64_t(p >> 64);
    return v;
  }
}

inline Payload mask_bits(int w) { return w >= 128 ? ~Payload(0) : (Payload(1) << w) - 1; }

// The bridge's view of one input stream of the unit (a plain port, or lane i of a group).
struct PinIn {
  virtual ~PinIn() = default;
  virtual bool ready() const = 0;                        // the unit's <p>_ready_o (this lane)
  virtual void drive(bool valid, const PinBeat& b) = 0;  // staged; written by flush()
};

// The bridge's view of one consumer of an output port (a multicast port has N).
struct PinOut {
  virtual ~PinOut() = default;
  virtual bool valid() const = 0;
  virtual PinBeat beat() const = 0;
  virtual void set_ready(bool r) = 0;  // staged; written by flush()
};

// One pin for a waveform dump.
struct PinTrace {
  std::string name;
  int width;
  std::function<Payload()> value;
};

struct PinGroup {
  virtual ~PinGroup() = default;
  virtual void flush() = 0;                                                 // writes the staged values to the signals
  virtual void traces(const std::string& p, std::vector<PinTrace>& t) = 0;  // its pins, named <p>_<pin>
};

// A wide value and its 32-bit words, least significant first (the layout of a Verilated wide
// port, and of bytes in memory on this little-endian host: byte i at bits 8 i).
template <int W>
bits_t<W> bits_from_words(const uint32_t* w) {
  bits_t<W> v;
  for (int k = 0; k < (W + 31) / 32; ++k) v.set_word(k, w[k]);
  return v;
}
template <int W>
void words_from_bits(const bits_t<W>& v, uint32_t* w) {
  for (int k = 0; k < (W + 31) / 32; ++k) w[k] = uint32_t(v.get_word(k));
}

// Bits [128c + 127 : 128c] of a wide value, as a Payload (for waveforms).
template <int W>
Payload chunk_of(const bits_t<W>& v, int c) {
  const int lo = 128 * c, hi = std::min(W - 1, lo + 127);
  Payload p = 0;
  for (int b = lo; b <= hi; b += 64) {
    const int top = std::min(hi, b + 63);
    p |= Payload(v.range(top, b).to_uint64()) << (b - lo);
  }
  return p;
}
template <int W>
void wide_traces(const std::string& name, const sc_core::sc_signal<bits_t<W>>& sig, std::vector<PinTrace>& t) {
  for (int c = 0; 128 * c < W; ++c)
    t.push_back(
        {name + "_" + std::to_string(c), std::min(128, W - 128 * c), [&sig, c] { return chunk_of<W>(sig.read(), c); }});
}

// An input port group of N streams of W payload bits (N = 1: a plain stream port; the types
// then are exactly those of STEPSIM_STREAM_IN, otherwise those of STEPSIM_STREAMS_IN).
// Groups wider than 128 bits (8 routed handles) are assembled lane by lane (W <= 64 then).
template <int N, int W>
struct InPins : PinGroup {
  static_assert(N * W <= 128 || W <= 64, "bridged input groups: at most 128 payload bits, or lanes of at most 64");
  sc_core::sc_signal<bits_t<N>> valid, ready, elem, done;
  sc_core::sc_signal<bits_t<N * W>> data;
  sc_core::sc_signal<bits_t<4 * N>> stop;

  struct Lane : PinIn {
    InPins* g = nullptr;
    int i = 0;
    bool ready() const override { return units::bit_of<N>(g->ready.read(), i); }
    void drive(bool v, const PinBeat& b) override {
      g->s_valid[i] = v;
      g->s_beat[i] = b;
    }
  };
  Lane lanes[N];
  bool s_valid[N] = {};
  PinBeat s_beat[N];

  InPins() {
    for (int i = 0; i < N; ++i) {
      lanes[i].g = this;
      lanes[i].i = i;
    }
  }
  void flush() override {
    bits_t<N> v = 0, e = 0, d = 0;
    Payload x = 0;
    [[maybe_unused]] bits_t<N* W> wide = 0;
    bits_t<4 * N> s = 0;
    for (int i = 0; i < N; ++i) {
      units::set_bit<N>(v, i, s_valid[i]);
      units::set_bit<N>(e, i, s_beat[i].elem);
      units::set_bit<N>(d, i, s_beat[i].done);
      if constexpr (N * W <= 128)
        x |= (s_beat[i].data & mask_bits(W)) << (W * i);
      else
        wide.range(W * i + W - 1, W * i) = uint64_t(s_beat[i].data & mask_bits(W));
      s.range(4 * i + 3, 4 * i) = s_beat[i].stop & 0xF;
    }
    valid.write(v);
    elem.write(e);
    done.write(d);
    if constexpr (N * W <= 128)
      data.write(from_payload<N * W>(x));
    else
      data.write(wide);
    stop.write(s);
  }
  void traces(const std::string& p, std::vector<PinTrace>& t) override {
    t.push_back({p + "_valid_i", N, [this] { return to_payload<N>(valid.read()); }});
    t.push_back({p + "_ready_o", N, [this] { return to_payload<N>(ready.read()); }});
    if constexpr (N * W <= 128)
      t.push_back({p + "_data_i", N * W, [this] { return to_payload<N * W>(data.read()); }});
    else
      wide_traces<N * W>(p + "_data_i", data, t);
    t.push_back({p + "_elem_i", N, [this] { return to_payload<N>(elem.read()); }});
    t.push_back({p + "_stop_i", 4 * N, [this] { return to_payload<4 * N>(stop.read()); }});
    t.push_back({p + "_done_i", N, [this] { return to_payload<N>(done.read()); }});
  }
};

// An output port with N consumers sharing one payload of W bits.
template <int N, int W>
struct OutPins : PinGroup {
  sc_core::sc_signal<bits_t<N>> valid, ready;
  sc_core::sc_signal<bits_t<W>> data;
  sc_core::sc_signal<bool> elem, done;
  sc_core::sc_signal<stop_t> stop;

  struct Consumer : PinOut {
    OutPins* g = nullptr;
    int i = 0;
    bool valid() const override { return units::bit_of<N>(g->valid.read(), i); }
    PinBeat beat() const override {
      PinBeat b;
      b.data = to_payload<W>(g->data.read());
      b.elem = g->elem.read();
      b.stop = uint8_t(g->stop.read().to_uint());
      b.done = g->done.read();
      return b;
    }
    void set_ready(bool r) override { g->s_ready[i] = r; }
  };
  Consumer consumers[N];
  bool s_ready[N] = {};

  OutPins() {
    for (int i = 0; i < N; ++i) {
      consumers[i].g = this;
      consumers[i].i = i;
    }
  }
  void flush() override {
    bits_t<N> r = 0;
    for (int i = 0; i < N; ++i) units::set_bit<N>(r, i, s_ready[i]);
    ready.write(r);
  }
  void traces(const std::string& p, std::vector<PinTrace>& t) override {
    t.push_back({p + "_valid_o", N, [this] { return to_payload<N>(valid.read()); }});
    t.push_back({p + "_ready_i", N, [this] { return to_payload<N>(ready.read()); }});
    t.push_back({p + "_data_o", W, [this] { return to_payload<W>(data.read()); }});
    t.push_back({p + "_elem_o", 1, [this] { return to_payload<1>(elem.read()); }});
    t.push_back({p + "_stop_o", 4, [this] { return to_payload<4>(stop.read()); }});
    t.push_back({p + "_done_o", 1, [this] { return to_payload<1>(done.read()); }});
  }
};

// The one lane of a single-stream input group G (WideInPins, the direct pins): the beat is staged
// in G (s_valid, s_beat) and G::unit_ready() reads the unit's ready.
template <class G>
struct StagedLane : PinIn {
  G* g = nullptr;
  bool ready() const override { return g->unit_ready(); }
  void drive(bool v, const PinBeat& b) override {
    g->s_valid = v;
    g->s_beat = b;
  }
};

// A wide port's payload is the expansion of an element handle, written only when the handle
// changes (a tile held on the pins for several cycles is expanded once).
struct PayloadCache {
  bool valid = false;
  Payload handle = 0;
  // Whether beat b's payload must be written now.
  bool stale(const PinBeat& b) {
    if (!b.elem || (valid && b.data == handle)) return false;
    valid = true;
    handle = b.data;
    return true;
  }
};

// One input stream port with a payload wider than 128 bits. The bridge drives an element handle
// (PinBeat::data); `expand` gives the payload bits of a handle when the pins are written.
template <int W>
struct WideInPins : PinGroup {
  static_assert(W > 128, "narrow ports use InPins");
  sc_core::sc_signal<bool> valid, ready, elem, done;
  sc_core::sc_signal<bits_t<W>> data;
  sc_core::sc_signal<stop_t> stop;
  std::function<bits_t<W>(Payload)> expand;

  StagedLane<WideInPins> lanes[1];
  bool s_valid = false;
  PinBeat s_beat;
  PayloadCache cache;  // of `data`

  WideInPins() { lanes[0].g = this; }
  bool unit_ready() const { return ready.read(); }
  void flush() override {
    valid.write(s_valid);
    elem.write(s_beat.elem);
    done.write(s_beat.done);
    stop.write(stop_t(s_beat.stop & 0xF));
    if (cache.stale(s_beat)) data.write(expand(s_beat.data));
  }
  void traces(const std::string& p, std::vector<PinTrace>& t) override {
    t.push_back({p + "_valid_i", 1, [this] { return Payload(valid.read()); }});
    t.push_back({p + "_ready_o", 1, [this] { return Payload(ready.read()); }});
    wide_traces<W>(p + "_data_i", data, t);
    t.push_back({p + "_elem_i", 1, [this] { return Payload(elem.read()); }});
    t.push_back({p + "_stop_i", 4, [this] { return Payload(stop.read().to_uint()); }});
    t.push_back({p + "_done_i", 1, [this] { return Payload(done.read()); }});
  }
};

// One output stream port (one consumer) with a payload wider than 128 bits. beat() leaves the
// Payload 0: the port's decoder reads `data` itself (it holds the beat being taken).
template <int W>
struct WideOutPins : PinGroup {
  static_assert(W > 128, "narrow ports use OutPins");
  sc_core::sc_signal<bool> valid, ready, elem, done;
  sc_core::sc_signal<bits_t<W>> data;
  sc_core::sc_signal<stop_t> stop;

  struct Consumer : PinOut {
    WideOutPins* g = nullptr;
    bool valid() const override { return g->valid.read(); }
    PinBeat beat() const override {
      PinBeat b;
      b.elem = g->elem.read();
      b.stop = uint8_t(g->stop.read().to_uint());
      b.done = g->done.read();
      return b;
    }
    void set_ready(bool r) override { g->s_ready = r; }
  };
  Consumer consumers[1];
  bool s_ready = false;

  WideOutPins() { consumers[0].g = this; }
  void flush() override { ready.write(s_ready); }
  void traces(const std::string& p, std::vector<PinTrace>& t) override {
    t.push_back({p + "_valid_o", 1, [this] { return Payload(valid.read()); }});
    t.push_back({p + "_ready_i", 1, [this] { return Payload(ready.read()); }});
    wide_traces<W>(p + "_data_o", data, t);
    t.push_back({p + "_elem_o", 1, [this] { return Payload(elem.read()); }});
    t.push_back({p + "_stop_o", 4, [this] { return Payload(stop.read().to_uint()); }});
    t.push_back({p + "_done_o", 1, [this] { return Payload(done.read()); }});
  }
};

// Binds a unit's (or its Verilated twin's) stream ports to bridge pins.
#define STEPSIM_BRIDGE_IN(dut, p, pins) \
  do {                                  \
    (dut).p##_valid_i((pins).valid);    \
    (dut).p##_ready_o((pins).ready);    \
    (dut).p##_data_i((pins).data);      \
    (dut).p##_elem_i((pins).elem);      \
    (dut).p##_stop_i((pins).stop);      \
    (dut).p##_done_i((pins).done);      \
  } while (0)
#define STEPSIM_BRIDGE_OUT(dut, p, pins) \
  do {                                   \
    (dut).p##_valid_o((pins).valid);     \
    (dut).p##_ready_i((pins).ready);     \
    (dut).p##_data_o((pins).data);       \
    (dut).p##_elem_o((pins).elem);       \
    (dut).p##_stop_o((pins).stop);       \
    (dut).p##_done_o((pins).done);       \
  } while (0)

}  // namespace stepsim::bridge
