// Helpers of the shape tests: the type a rule infers for a node against the type of the beats
// the simulator really produced on the same inputs.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/shape/infer.h"

namespace stepsim::shape::testing {

// What a concrete stream looks like at a given rank: per dimension (outermost first) the size of
// every instance being equal (-1 when ragged) and the total over all outer indices.
//
// `ambiguous`: the stream has a bare stop S_j (j >= 2) right after another stop or at its start.
// The encoding cannot tell "a level-j unit holding one empty level-(j-1) unit" from "a level-j
// unit holding none" (only the highest stop is sent), and observe_shape reads the first; an
// operator that raises stops (Repeat of an empty row, a load under a ref with an empty row)
// means the second. For such streams only the rank, the element count and the element types are
// compared.
struct Concrete {
  std::vector<int64_t> size, total;
  int64_t elements = 0;
  bool ambiguous = false;
};

inline Concrete concrete(const std::vector<Beat>& beats, size_t rank) {
  Concrete c;
  const ObservedShape obs = observe_shape(to_tokens(beats), int(rank));
  c.size = obs.dims;
  c.total.assign(rank + 1, 0);
  bool after_stop = true;
  for (const Beat& b : beats) {
    if (b.has_elem) ++c.elements;
    if (!b.has_elem && b.stop >= 2 && after_stop) c.ambiguous = true;
    if (b.has_elem || b.stop) after_stop = !b.has_elem || b.stop > 0;
    for (size_t k = 1; k <= std::min<size_t>(b.stop, rank); ++k) ++c.total[rank - k];
  }
  c.total[rank] = c.elements;
  return c;
}

inline int max_stop(const std::vector<Beat>& beats) {
  int r = 0;
  for (const Beat& b : beats) r = std::max(r, int(b.stop));
  return r;
}

// Whether `want` (a rule's element type, symbols substituted) describes element `e`.
inline std::string elem_mismatch(const ElemType& want, const Element& e, const GiNaC::exmap& subs) {
  if (want.kind == ElemType::Buffer) {
    if (!e.is_buffer()) return "expected a buffer reference, got " + e.to_string();
    const Buffer& b = *e.buffer();
    if (b.shape.size() != want.buffer_dims.size())
      return "buffer of " + std::to_string(b.shape.size()) + " dims, rule says " + want.str();
    for (size_t i = 0; i < b.shape.size(); ++i) {
      const Dim& d = want.buffer_dims[i];
      const ex v = d.size.subs(subs).expand();
      if (d.kind == DimKind::Static && !(GiNaC::is_a<GiNaC::numeric>(v) && v == b.shape[i]))
        return "buffer dim " + std::to_string(i) + " is " + std::to_string(b.shape[i]) + ", rule says " + want.str();
      if (b.shape[i] < 0 && d.kind != DimKind::Ragged)
        return "buffer dim " + std::to_string(i) + " is ragged, rule says " + want.str();
    }
    for (const Beat& x : b.beats)
      if (x.has_elem) return elem_mismatch(want.members.at(0), x.elem, subs);
    return "";
  }
  auto size_differs = [&](const ex& w, uint32_t h) {
    const ex v = w.subs(subs).expand();
    return GiNaC::is_a<GiNaC::numeric>(v) && !(v == int64_t(h));
  };
  switch (want.kind) {
    case ElemType::Tile:
      if (!e.is_tile()) return "expected " + want.str() + ", got " + e.to_string();
      if (e.tile().dtype != want.dtype || size_differs(want.rows, e.tile().rows) ||
          size_differs(want.cols, e.tile().cols))
        return "rule " + want.str() + ", run " + e.to_string();
      return "";
    case ElemType::Scalar:
      return e.is_scalar() ? "" : "expected a scalar, got " + e.to_string();
    case ElemType::Selector:
      return e.is_selector() ? "" : "expected a selector, got " + e.to_string();
    case ElemType::Tuple: {
      if (!e.is_tuple() || e.tuple()->size() != want.members.size())
        return "expected " + want.str() + ", got " + e.to_string();
      for (size_t i = 0; i < want.members.size(); ++i) {
        std::string m = elem_mismatch(want.members[i], (*e.tuple())[i], subs);
        if (!m.empty()) return "tuple member " + std::to_string(i) + ": " + m;
      }
      return "";
    }
    default:
      return "?";
  }
}

// Checks the rule's type `want` of a stream against the beats the run produced. Sizes with
// unknown symbols must be dynamic or ragged dims; ragged dims' symbols are totals.
inline void expect_matches(const StreamType& want, const std::vector<Beat>& beats, const SymbolTable& syms,
                           const std::string& what) {
  SCOPED_TRACE(what + ": rule " + want.str() + ", run " + format_beats(beats));
  const GiNaC::exmap subs = syms.substitution();
  ASSERT_GE(want.rank(), 1u);
  const size_t rank = want.rank() - 1;
  ASSERT_LE(max_stop(beats), int(rank)) << "the run's stream has a higher rank than the rule's";
  Concrete c;
  try {
    c = concrete(beats, rank);
  } catch (const std::exception& e) {
    FAIL() << "the run's stream is not a rank-" << rank << " stream: " << e.what();
  }
  // literal_type agrees with the concrete shape whenever the stream shows its full rank.
  if (max_stop(beats) == int(rank)) {
    StreamType lit = literal_type(beats);
    ASSERT_EQ(lit.rank(), want.rank());
    for (size_t i = 0; i < lit.rank(); ++i) {
      EXPECT_EQ(lit.dims[i].kind == DimKind::Ragged, c.size[i] < 0) << "dim " << i;
      EXPECT_TRUE(lit.dims[i].size == (c.size[i] < 0 ? c.total[i] : c.size[i])) << "dim " << i;
    }
  }
  for (size_t i = 0; i < want.rank() && !c.ambiguous; ++i) {
    // Instances of dimension i: 1 for the outermost, else the units of the dimension outside it.
    if (i > 0 && c.total[i - 1] == 0) continue;  // no instance: any size holds
    const Dim& d = want.dims[i];
    const ex v = d.size.subs(subs).expand();
    const bool ragged = c.size[i] < 0;
    if (ragged) {
      EXPECT_EQ(d.kind, DimKind::Ragged) << "dim " << i << " is ragged in the run";
    }
    if (GiNaC::is_a<GiNaC::numeric>(v)) {
      if (d.kind == DimKind::Ragged)
        EXPECT_TRUE(v == c.total[i]) << "dim " << i << ": rule total " << v << ", run total " << c.total[i];
      else
        EXPECT_TRUE(!ragged && v == c.size[i]) << "dim " << i << ": rule " << v << ", run " << c.size[i];
    } else {
      EXPECT_NE(d.kind, DimKind::Static) << "dim " << i << " has a symbolic size " << v << " but is static";
    }
  }
  const ex card = want.card().subs(subs).expand();
  if (GiNaC::is_a<GiNaC::numeric>(card)) {
    EXPECT_TRUE(card == c.elements) << "card " << card << " vs " << c.elements;
  }
  for (const Beat& b : beats)  // the first element that does not match
    if (b.has_elem) {
      // An Accum whose reduction saw no element emits an empty (0x0) accumulator tile.
      if (b.elem.is_tile() && b.elem.tile().rows == 0 && b.elem.tile().cols == 0) continue;
      const std::string m = elem_mismatch(want.elem, b.elem, subs);
      EXPECT_EQ(m, "") << "element " << b.elem.to_string();
      if (!m.empty()) break;
    }
}

}  // namespace stepsim::shape::testing
