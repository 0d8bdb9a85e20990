// Stream elements, logical tokens and the physical beat encoding.
//
// Logical model (the paper's): a rank-r stream is a sequence of elements, stop tokens
// S1..Sr (only the highest where several dimensions end together) and a final done token D.
// Physical model (channels and RTL): a Beat = optional element + 4-bit stop level + done
// flag. A stop rides on the beat of the element it follows, so stop tokens cost no extra
// transfer; a bare stop beat (no element) expresses empty dimensions. `to_beats` and
// `to_tokens` are the only place where the two views are converted.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "hw/stream/tile.h"

namespace stepsim {

// Scalars and addresses (also booleans such as Reshape's padding flags).
struct Scalar {
  int64_t v = 0;
};

// Multi-hot selector, up to kMaxSelectorBits outputs (Qwen3 has 128 experts).
struct Selector {
  static constexpr int kMaxBits = 256;
  std::array<uint64_t, kMaxBits / 64> w{};
  void set(int i) { w[size_t(i) >> 6] |= uint64_t(1) << (i & 63); }
  bool test(int i) const { return (w[size_t(i) >> 6] >> (i & 63)) & 1u; }
  int count() const;
  std::vector<int> indices() const;  // ascending
  static Selector one_hot(int i) {
    Selector s;
    s.set(i);
    return s;
  }
  bool operator==(const Selector& o) const { return w == o.w; }
};

struct Beat;
struct Element;

// A reference to on-chip data produced by Bufferize: the stored portion of a stream
// (elements and inner stop levels) and its shape, shared read-only with Streamify.
struct Buffer {
  std::vector<Beat> beats;     // stored elements with their (inner) stop levels
  std::vector<int64_t> shape;  // buffered dimensions, outermost first; -1 where ragged
  uint64_t bytes = 0;          // on-chip bytes occupied
  uint32_t rank = 0;           // number of buffered dimensions
};
using BufferRef = std::shared_ptr<const Buffer>;

using Tuple = std::shared_ptr<const std::vector<Element>>;

struct Element {
  std::variant<Scalar, Tile, Selector, BufferRef, Tuple> v;

  Element() = default;
  Element(Scalar s) : v(s) {}
  // Two overloads rather than one by-value parameter: a moved tile is not moved twice (every
  // channel hop moves one).
  Element(const Tile& t) : v(t) {}
  Element(Tile&& t) : v(std::move(t)) {}
  Element(Selector s) : v(s) {}
  Element(BufferRef b) : v(std::move(b)) {}
  Element(Tuple t) : v(std::move(t)) {}

  bool is_scalar() const { return v.index() == 0; }
  bool is_tile() const { return v.index() == 1; }
  bool is_selector() const { return v.index() == 2; }
  bool is_buffer() const { return v.index() == 3; }
  bool is_tuple() const { return v.index() == 4; }
  int64_t scalar() const { return std::get<Scalar>(v).v; }
  const Tile& tile() const { return std::get<Tile>(v); }
  const Selector& selector() const { return std::get<Selector>(v); }
  const BufferRef& buffer() const { return std::get<BufferRef>(v); }
  const Tuple& tuple() const { return std::get<Tuple>(v); }
  // Bytes this element occupies on a link or in memory (tiles: rows*cols*dtype).
  uint64_t bytes() const;
  // The text notation (parse_element reads it back).
  std::string to_string() const;
  // For messages: to_string() without a buffer's contents ("Buf[2x3](...)").
  std::string brief() const;
};

// One transfer on a channel.
struct Beat {
  Element elem;
  bool has_elem = false;
  uint8_t stop = 0;  // 0 = no stop token, else S<stop>
  bool done = false;

  static Beat data(Element e, uint8_t stop = 0) {
    Beat b;
    b.elem = std::move(e);
    b.has_elem = true;
    b.stop = stop;
    return b;
  }
  static Beat bare_stop(uint8_t level) {
    Beat b;
    b.stop = level;
    return b;
  }
  static Beat done_beat() {
    Beat b;
    b.done = true;
    return b;
  }
};

// Moves the beat `from` into `to` by copying its bytes, and leaves `from` the empty beat (its
// old contents now live in `to`, so they are not destroyed). `to` is raw storage, or a beat that
// owns nothing (an empty beat, or one already relocated away). Faster than a move, which
// dispatches on the element's std::variant alternative: the channels move every beat this
// way. Sound because every element alternative (integers, bit arrays, std::shared_ptr) is
// trivially relocatable in libstdc++, and all-zero bytes are the empty beat (Scalar 0, variant
// index 0, no flags); the test Channel.RelocatedBeatsOwnTheirPayloadOnce checks the ownership.
inline void relocate_beat(void* to, Beat& from) {
  std::memcpy(to, static_cast<const void*>(&from), sizeof(Beat));
  std::memset(static_cast<void*>(&from), 0, sizeof(Beat));
}

// Logical token.
struct Token {
  enum Kind : uint8_t { kElem, kStop, kDone } kind = kElem;
  Element elem;       // kElem
  uint8_t level = 0;  // kStop
  static Token e(Element x) { return Token{kElem, std::move(x), 0}; }
  static Token s(uint8_t l) { return Token{kStop, Element{}, l}; }
  static Token d() { return Token{kDone, Element{}, 0}; }
};

constexpr int kMaxStopLevel = 15;  // 4-bit stop field
// Beats of one stream held in host memory at once: a literal, trace or repeat stream of a graph,
// a stream a Sink records, and what one operator may generate from one element (Repeat copies,
// Reshape padding). 2^24 beats, about 1 GiB.
constexpr uint64_t kMaxStreamBeats = uint64_t(1) << 24;

// A well-formed stream (the paper's encoding, step-paper-notes §1.2). Its rank r is its highest
// stop level (0 without stops). It is elements and stop tokens S1..Sr in any order, then one
// done token D, last. A stop Sk closes dimensions 0..k-1 at once; a stop right after a stop
// closes an empty dimension ("1 S1 S1 S2" is a matrix whose second row is empty), and an element
// may follow any stop. Every dimension must be closed before D: a stream that is not empty
// (anything before D) ends with Sr D for r >= 1; a rank-0 stream has no stops. So "1 S2 2 S1 D"
// (rank 2) is malformed at the D: the second matrix was never closed with S2.
//
// Logical <-> physical. to_beats throws std::invalid_argument naming the first bad token (its
// index, counted from 0, and its text) when the sequence is not well-formed.
std::vector<Beat> to_beats(const std::vector<Token>& tokens);
std::vector<Token> to_tokens(const std::vector<Beat>& beats);

// Text notation: "1 2 S1 3 S2 4 S1 5 6 7 S2 D"; scalars are 64-bit integers; selectors
// "{0,7}"; tiles "T[16x64]" (optionally "T[16x64:fp32]"), each dimension 0..kMaxTileDim;
// tuples "(1,T[2x2])"; buffer references "Buf[2x3](1 2 3 S1 4 5 6 S2)": the buffer's shape
// (outermost first, '?' for a ragged dimension) and the stored stream it holds, which closes
// with S<number of dimensions> (Element::to_string prints every element this way, so printed
// streams parse back). parse throws std::invalid_argument with the offending word and its
// position. Tuples and buffers nest at most kMaxElementDepth deep: every reader of an element
// (copy, print, compare) recurses, and an operator's fiber has a small stack.
constexpr uint32_t kMaxTileDim = uint32_t(1) << 20;  // rows or cols of one tile
constexpr int kMaxElementDepth = 16;
std::vector<Token> parse_tokens(const std::string& text);
std::string format_tokens(const std::vector<Token>& tokens);
inline std::string format_beats(const std::vector<Beat>& beats) { return format_tokens(to_tokens(beats)); }
Element parse_element(const std::string& word);

// Rank of a stream = highest stop level seen (a stream without stops has rank 0 unless
// declared otherwise). Shape as static sizes per dimension, outermost first; a dimension whose
// sizes differ between instances is reported as -1 (ragged). Throws on a malformed stream.
struct ObservedShape {
  std::vector<int64_t> dims;  // D_r .. D_0, -1 = ragged
  std::string to_string() const;
};
ObservedShape observe_shape(const std::vector<Token>& tokens, int rank);

}  // namespace stepsim
