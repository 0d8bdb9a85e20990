// Pins of a unit driven without SystemC (issue 23, docs/cosim.md): a Verilated model built with
// --cc, whose ports are plain fields (rtl/units.list, flag `direct`; Direct<V> in
// hw/bridge/rtl/direct_unit.h). The bridge writes the input fields before an edge and reads the
// output fields after it, and clocks the model itself (DirectClock): no SystemC signal per pin and
// no delta cycles. Through sc_signal<sc_bv<4101>> a [16 x 16] tile was copied into an sc_bv, then
// by the Verilated wrapper into the model, on every evaluation, and each clock took three delta
// cycles.
//
// The fields have Verilator's types: ports of 1 to 8 bits are uint8_t (CData); ports wider than
// 64 bits are arrays of 32-bit words (VlWide, least significant word first). No Verilator header
// is needed here, so the bridges compile without Verilator (the HLS build).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "hw/bridge/pins.h"

namespace stepsim::bridge {

// A unit the bridge clocks itself (UnitBridge::direct_).
struct DirectClock {
  virtual ~DirectClock() = default;
  virtual void set_reset(bool rst_n) = 0;  // the reset input (active low)
  // Evaluates the model with the input fields as written (no edge).
  virtual void settle() = 0;
  // One clock: the clock low, then its rising edge.
  virtual void edge() = 0;
};

// Whether unit type T is driven directly (Direct<V> has kDirect).
template <class T, class = void>
struct is_direct : std::false_type {};
template <class T>
struct is_direct<T, std::void_t<decltype(T::kDirect)>> : std::true_type {};
template <class T>
inline constexpr bool is_direct_v = is_direct<T>::value;
// The Verilated model of a direct unit (Direct<V>::Model), int for other units.
template <class T, class = void>
struct direct_model {
  using type = int;
};
template <class T>
struct direct_model<T, std::enable_if_t<is_direct_v<T>>> {
  using type = typename T::Model;
};

// Bits [128 c + 127 : 128 c] of a wide field of `words` 32-bit words (for waveforms).
inline Payload words_chunk(const uint32_t* w, int words, int c) {
  Payload p = 0;
  for (int k = 0; k < 4 && 4 * c + k < words; ++k) p |= Payload(w[4 * c + k]) << (32 * k);
  return p;
}

// Fields of any width: an integer (up to 64 bits) or a VlWide (its data(): 32-bit words).
template <class F>
inline constexpr bool is_wide_field_v = !std::is_integral_v<F>;
// Bits [lo, lo + w) of a field, w <= 64.
template <class F>
uint64_t field_bits(const F& f, int lo, int w) {
  const uint64_t mask = w >= 64 ? ~uint64_t(0) : (uint64_t(1) << w) - 1;
  if constexpr (!is_wide_field_v<F>) {
    return lo >= 64 ? 0 : (uint64_t(f) >> lo) & mask;
  } else {
    uint64_t v = 0;
    for (int i = 0; i < w;) {
      const int bit = lo + i, take = std::min(32 - bit % 32, w - i);
      v |= (uint64_t(f.data()[bit / 32] >> (bit % 32)) & ((uint64_t(1) << take) - 1)) << i;
      i += take;
    }
    return v & mask;
  }
}
template <class F>
void set_field(F& f, uint64_t v) {
  static_assert(!is_wide_field_v<F>, "configuration fields are at most 64 bits");
  f = static_cast<F>(v);
}
// The waveform of a field of `bits` bits, named as the SystemC pins' (wide_traces): one Payload up
// to 64 bits, 128-bit chunks <name>_<c> above.
inline void direct_wide_traces(const std::string& name, const uint32_t* w, int bits, std::vector<PinTrace>& t) {
  const int words = (bits + 31) / 32;
  for (int c = 0; 128 * c < bits; ++c)
    t.push_back({name + "_" + std::to_string(c), std::min(128, bits - 128 * c),
                 [w, words, c] { return words_chunk(w, words, c); }});
}
template <class F>
void direct_trace(const std::string& name, const F& f, int bits, std::vector<PinTrace>& t) {
  if constexpr (!is_wide_field_v<F>)
    t.push_back({name, bits, [&f] { return Payload(f); }});
  else
    direct_wide_traces(name, f.data(), bits, t);
}

// The control pins of one input stream port (valid, ready, elem, stop, done) and the beat the
// bridge stages on them; the payload field is the derived group's.
struct DirectStreamIn : PinGroup {
  uint8_t *valid = nullptr, *elem = nullptr, *stop = nullptr, *done = nullptr;
  const uint8_t* ready_o = nullptr;

  StagedLane<DirectStreamIn> lanes[1];
  bool s_valid = false;
  PinBeat s_beat;

  DirectStreamIn() { lanes[0].g = this; }
  bool unit_ready() const { return *ready_o != 0; }
  DirectStreamIn(const DirectStreamIn&) = delete;
  DirectStreamIn& operator=(const DirectStreamIn&) = delete;
  void bind_control(uint8_t* v, const uint8_t* r, uint8_t* e, uint8_t* s, uint8_t* dn) {
    valid = v, ready_o = r, elem = e, stop = s, done = dn;
  }
  void flush_control() {
    *valid = s_valid;
    *elem = s_beat.elem;
    *done = s_beat.done;
    *stop = s_beat.stop & 0xF;
  }
  // The pins in the order of InPins / WideInPins, the payload's traces added by `data`.
  template <class Data>
  void traces_around(const std::string& p, std::vector<PinTrace>& t, Data data) {
    t.push_back({p + "_valid_i", 1, [this] { return Payload(*valid); }});
    t.push_back({p + "_ready_o", 1, [this] { return Payload(*ready_o); }});
    data();
    t.push_back({p + "_elem_i", 1, [this] { return Payload(*elem); }});
    t.push_back({p + "_stop_i", 4, [this] { return Payload(*stop); }});
    t.push_back({p + "_done_i", 1, [this] { return Payload(*done); }});
  }
};

// An input stream port with a narrow payload field F (an integer): the payload as driven.
template <class F>
struct DirectIn : DirectStreamIn {
  F* data = nullptr;
  int bits = 0;
  void bind(uint8_t* v, const uint8_t* r, F* d, int width, uint8_t* e, uint8_t* s, uint8_t* dn) {
    bind_control(v, r, e, s, dn);
    data = d, bits = width;
  }
  void flush() override {
    flush_control();
    *data = static_cast<F>(s_beat.data);
  }
  void traces(const std::string& p, std::vector<PinTrace>& t) override {
    traces_around(p, t, [&] { direct_trace(p + "_data_i", *data, bits, t); });
  }
};

// An input stream port with a wide payload (VlWide words). As WideInPins, the bridge drives an
// element handle and `expand` writes its payload words, only when the handle changes.
struct DirectWideIn : DirectStreamIn {
  uint32_t* data = nullptr;
  int bits = 0;
  std::function<void(Payload, uint32_t*)> expand;
  PayloadCache cache;  // of `data`

  template <class F>
  void bind(uint8_t* v, const uint8_t* r, F* d, int width, uint8_t* e, uint8_t* s, uint8_t* dn) {
    static_assert(is_wide_field_v<F>, "a narrow payload: DirectIn");
    bind_control(v, r, e, s, dn);
    data = d->data(), bits = width;
  }
  void flush() override {
    flush_control();
    if (cache.stale(s_beat)) expand(s_beat.data, data);
  }
  void traces(const std::string& p, std::vector<PinTrace>& t) override {
    traces_around(p, t, [&] { direct_wide_traces(p + "_data_i", data, bits, t); });
  }
};

// One output stream port (one consumer) with a wide payload. As WideOutPins, beat() leaves the
// Payload 0: the port's decoder reads `data` (the beat being taken).
struct DirectWideOut : PinGroup {
  const uint8_t *valid = nullptr, *elem = nullptr, *stop = nullptr, *done = nullptr;
  uint8_t* ready_i = nullptr;
  const uint32_t* data = nullptr;
  int bits = 0;

  struct Consumer : PinOut {
    DirectWideOut* g = nullptr;
    bool valid() const override { return *g->valid != 0; }
    PinBeat beat() const override {
      PinBeat b;
      b.elem = *g->elem != 0;
      b.stop = *g->stop;
      b.done = *g->done != 0;
      return b;
    }
    void set_ready(bool r) override { g->s_ready = r; }
  };
  Consumer consumers[1];
  bool s_ready = false;

  DirectWideOut() { consumers[0].g = this; }
  DirectWideOut(const DirectWideOut&) = delete;
  DirectWideOut& operator=(const DirectWideOut&) = delete;
  template <class F>
  void bind(const uint8_t* v, uint8_t* r, const F* d, int width, const uint8_t* e, const uint8_t* s,
            const uint8_t* dn) {
    static_assert(is_wide_field_v<F>, "wide payloads only");
    valid = v, ready_i = r, data = d->data(), bits = width, elem = e, stop = s, done = dn;
  }
  void flush() override { *ready_i = s_ready; }
  void traces(const std::string& p, std::vector<PinTrace>& t) override {
    t.push_back({p + "_valid_o", 1, [this] { return Payload(*valid); }});
    t.push_back({p + "_ready_i", 1, [this] { return Payload(*ready_i); }});
    direct_wide_traces(p + "_data_o", data, bits, t);
    t.push_back({p + "_elem_o", 1, [this] { return Payload(*elem); }});
    t.push_back({p + "_stop_o", 4, [this] { return Payload(*stop); }});
    t.push_back({p + "_done_o", 1, [this] { return Payload(*done); }});
  }
};

// Binds a direct model's stream ports to bridge pins (as STEPSIM_BRIDGE_IN / _OUT, pins.h); W:
// the payload's width in bits.
#define STEPSIM_DIRECT_IN(model, p, pins, W)                                                            \
  (pins).bind(&(model).p##_valid_i, &(model).p##_ready_o, &(model).p##_data_i, (W), &(model).p##_elem_i, \
              &(model).p##_stop_i, &(model).p##_done_i)
#define STEPSIM_DIRECT_OUT(model, p, pins, W)                                                           \
  (pins).bind(&(model).p##_valid_o, &(model).p##_ready_i, &(model).p##_data_o, (W), &(model).p##_elem_o, \
              &(model).p##_stop_o, &(model).p##_done_o)

}  // namespace stepsim::bridge
