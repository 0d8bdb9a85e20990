// BridgeBase: what every bridge of unit_bridges.h, pmu_bridge.h and ag_bridge.h shares (the
// clock and reset binding, the element codecs of the pins), apart so that each of those headers
// can include it on its own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hw/bridge/pins.h"
#include "hw/bridge/unit_bridge.h"
#include "hw/stream/bf16.h"
#include "hw/stream/tile.h"
#include "hw/units/protocol.h"

namespace stepsim::bridge {

constexpr int kW = 32;  // opaque payloads: an element handle
constexpr int kCW = 8;  // count and chunk fields (Repeat, Reshape; the PMU's repeat counts)

// Common: clock/reset binding, element codecs.
class BridgeBase : public UnitBridge {
 public:
  BridgeBase(const OpConfig& cfg, const std::string& impl) : UnitBridge(cfg, impl) {}

 protected:
  template <class D>
  void bind_clock(D& d) {
    d.clk_i(clk_);
    d.rst_ni(rst_n_);
  }
  std::string unit_name() const { return sc_safe_name(cfg_.name) + "_unit"; }
  Encoder handles() {
    return [this](const Element& e) { return handle(e); };
  }
  Decoder elements() {
    return [this](Payload p) { return element(p); };
  }
  Encoder selectors(int n) {
    return [this, n](const Element& e) {
      if (!e.is_selector()) fail("the selector input carries " + e.to_string() + ", not a selector");
      Payload p = 0;
      for (int i : e.selector().indices()) {
        if (i >= n)
          fail("selector " + e.to_string() + " names output " + std::to_string(i) + "; the unit has " +
               std::to_string(n));
        p |= Payload(1) << i;
      }
      return p;
    };
  }
  Decoder selector_out(int n) {
    return [n](Payload p) {
      Selector s;
      for (int i = 0; i < n; ++i)
        if ((p >> i) & 1) s.set(i);
      return Element(s);
    };
  }
  // [1 x L] bf16 tiles as L 16-bit lanes. In timing mode tiles carry no values: the lanes are 0
  // and the outputs are shape-only tiles again.
  Encoder tiles(int lanes) {
    return [this, lanes](const Element& e) {
      if (!e.is_tile())
        fail("the compute unit needs [1 x " + std::to_string(lanes) + "] bf16 tiles, got " + e.to_string());
      const Tile& t = e.tile();
      if (t.rows != 1 || t.cols != uint32_t(lanes) || t.dtype != DType::BF16)
        fail("the compute unit needs [1 x " + std::to_string(lanes) + "] bf16 tiles, got [" + std::to_string(t.rows) +
             " x " + std::to_string(t.cols) + "] " + dtype_name(t.dtype));
      Payload p = 0;
      if (t.has_data()) {
        values_ = true;
        for (int j = 0; j < lanes; ++j) p |= Payload(f32_bits(t.f(0, uint32_t(j))) >> 16) << (16 * j);
      }
      return p;
    };
  }
  Decoder tile_out(int lanes) {
    return [this, lanes](Payload p) {
      Tile t = shape_tile(1, uint32_t(lanes), DType::BF16);
      if (values_) {
        auto d = std::make_shared<TileData>();
        for (int j = 0; j < lanes; ++j) d->f.push_back(f32_from_bf16_bits(uint16_t(p >> (16 * j))));
        t.data = d;
      }
      return Element(t);
    };
  }
  // [r x T] bf16 tiles, r <= T: the bridge carries a handle; the pins get lane (i, j) in bits
  // [16(i T + j) +: 16] and r in the tile header (units::TileBits). In timing mode the lanes are
  // 0 and the outputs are shape-only tiles.
  // The tile of the first beat to arrive on any input (nullptr: it carries no tile), for a bridge
  // that picks its unit by the tile shape before its first cycle. The unit cannot act before that
  // beat, which is what select_earliest tells the other contexts while the bridge waits.
  const Tile* first_tile() {
    const std::vector<Channel*>& ins = ctx().inputs();
    const int first = ctx().select_earliest(ins);
    if (first < 0) return nullptr;
    const Beat& head = ins[size_t(first)]->head();
    return head.has_elem && head.elem.is_tile() ? &head.elem.tile() : nullptr;
  }
  Encoder squares(int side) {
    return [this, side](const Element& e) {
      const std::string want = "[r x " + std::to_string(side) + "] bf16 tiles (r <= " + std::to_string(side) + ")";
      if (!e.is_tile()) fail("the tile compute unit needs " + want + ", got " + e.to_string());
      const Tile& t = e.tile();
      if (t.rows > uint32_t(side) || t.cols != uint32_t(side) || t.dtype != DType::BF16)
        fail("the tile compute unit needs " + want + ", got [" + std::to_string(t.rows) + " x " +
             std::to_string(t.cols) + "] " + dtype_name(t.dtype));
      if (t.has_data()) values_ = true;
      return handle(e);
    };
  }
  // The payload of a [r x T] tile as 32-bit words, least significant first (the layout of a
  // Verilated wide port): two bf16 lanes per word, lane 2i in the low half (a word at a time: a
  // range assignment per lane was 5 % of a T = 16 co-simulation), then the header r.
  template <int T>
  static constexpr int kSquareWords = (units::TileBits<T>::W + 31) / 32;
  template <int T>
  void square_words(Payload h, uint32_t* w) const {
    static_assert(units::TileBits<T>::kLanes % 32 == 0, "the header starts a word");
    std::fill(w, w + kSquareWords<T>, 0u);
    const Tile& t = element(h).tile();
    if (t.has_data()) {
      const size_t n = t.elems();
      auto lane = [&](size_t l) { return l < n ? f32_bits(t.data->f[l]) >> 16 : 0u; };
      for (size_t k = 0; 2 * k < n; ++k) w[k] = lane(2 * k) | (lane(2 * k + 1) << 16);
    }
    w[units::TileBits<T>::kLanes / 32] = t.rows;
  }
  template <int T>
  Element square_from_words(const uint32_t* w) const {
    const uint32_t header = w[units::TileBits<T>::kLanes / 32] & ((1u << units::TileBits<T>::kRowsW) - 1);
    const uint32_t rows = std::min(uint32_t(T), header);
    Tile t = shape_tile(rows, uint32_t(T), DType::BF16);
    if (values_) {
      auto d = std::make_shared<TileData>();
      for (uint32_t l = 0; l < rows * T; ++l) d->f.push_back(f32_from_bf16_bits(uint16_t(w[l / 2] >> (16 * (l % 2)))));
      t.data = d;
    }
    return Element(t);
  }
  // The same through the SystemC pins' sc_bv.
  template <int T>
  bits_t<units::TileBits<T>::W> square_bits(Payload h) const {
    uint32_t w[kSquareWords<T>];
    square_words<T>(h, w);
    return bits_from_words<units::TileBits<T>::W>(w);
  }
  template <int T>
  Element square_out(const bits_t<units::TileBits<T>::W>& v) const {
    uint32_t w[kSquareWords<T>];
    words_from_bits<units::TileBits<T>::W>(v, w);
    return square_from_words<T>(w);
  }

  bool values_ = false;  // the inputs carried tile values (functional mode)
};

// An unused lane of an input group carries an empty stream (a bare done).
inline std::vector<PinBeat> empty_stream() {
  PinBeat d;
  d.done = true;
  return {d};
}

}  // namespace stepsim::bridge
