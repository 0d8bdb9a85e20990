// Symbolic stream types (paper §1.3, §6): the shape a stream has at every point of a graph,
// with sizes as GiNaC expressions, so that a producer/consumer mismatch is caught before a
// run and the metrics of step-paper-notes §3.4 can be written in the graph's symbols.
//
// A rank-r stream has dims [D_r-1 .. D_0] (outermost first, as the paper writes them; index 0
// of `dims` is the OUTERMOST). Each dimension is
//   static   a number known when the graph is built;
//   dynamic  one size for the whole stream, known only at run time (a fresh symbol);
//   ragged   a size that differs per outer index; its symbol stands for the SUM of the
//            dimension over all outer indices (paper §3.4, "absorbing" the outer dimensions),
//            so card() multiplies it by the inner dimensions only.
#pragma once

#include <string>
#include <vector>

#include <ginac/ginac.h>

#include "hw/stream/token.h"

namespace stepsim::shape {

using GiNaC::ex;

enum class DimKind { Static, Dynamic, Ragged };

struct Dim {
  ex size;
  DimKind kind = DimKind::Static;
  static Dim fixed(int64_t n) { return {ex(n), DimKind::Static}; }
};

// The type of one stream element.
struct ElemType {
  enum Kind { Tile, Scalar, Selector, Buffer, Tuple } kind = Scalar;
  ex rows = 0, cols = 0;  // Tile (rows: the largest tile's, when tiles differ)
  // Tiles whose row count differs from element to element (EagerMerge of dynamically sized
  // tiles): `rows` is the largest, `rows_mean` the mean over the stream's elements, which the
  // traffic and FLOP totals use (card x mean; every tile function's FLOPs are linear in the
  // rows). Copies and reshapes keep the mean; operators that pick a subset (Partition) drop it.
  bool has_rows_mean = false;
  ex rows_mean = 0;
  DType dtype = DType::BF16;      // Tile
  std::vector<Dim> buffer_dims;   // Buffer: the stored dims (outermost first)
  std::vector<ElemType> members;  // Tuple members; Buffer: members[0] = stored element

  static ElemType tile(ex r, ex c, DType d) {
    ElemType e;
    e.kind = Tile;
    e.rows = r;
    e.cols = c;
    e.dtype = d;
    return e;
  }
  static ElemType scalar() { return ElemType{}; }
  static ElemType selector() {
    ElemType e;
    e.kind = Selector;
    return e;
  }
  // Bytes of one element (tiles: rows x cols x dtype; tuples: sum; buffer ref 8 B; scalar and
  // selector 8 B and 32 B as the channel counts them).
  ex bytes() const;
  std::string str() const;
};

struct StreamType {
  std::vector<Dim> dims;  // outermost first
  ElemType elem;

  size_t rank() const { return dims.size(); }
  // Paper dimension index k (0 = innermost) -> position in dims.
  const Dim& dim(size_t k) const { return dims[dims.size() - 1 - k]; }
  Dim& dim(size_t k) { return dims[dims.size() - 1 - k]; }
  // Number of elements: the product of the dims, where a ragged dim's symbol (its sum over the
  // outer dims) replaces everything outside it.
  ex card() const;
  // "[4, n_route_out0] of T[16x64:bf16]"
  std::string str() const;
};

// Cardinality of a list of dims (outermost first), with the ragged rule of StreamType::card.
ex card_of(const std::vector<Dim>& dims);

// Two sizes are the same when their difference simplifies to 0.
bool same_size(const ex& a, const ex& b);
// "" when equal, else what differs ("dimension 1: 4 vs n", "element: T[1x64] vs T[1x32]").
std::string difference(const StreamType& a, const StreamType& b);
std::string difference(const ElemType& a, const ElemType& b);

std::string to_string(const ex& e);

// ceil(a / b) for positive integers, kept symbolic while either is a symbol.
ex ceil_div(const ex& a, const ex& b);
// max(a, b), kept symbolic while either is a symbol.
ex max_size(const ex& a, const ex& b);

// Bytes a stream carries in total: card x element bytes (for tiles of varying rows, the mean
// rows: ElemType::rows_mean).
ex stream_bytes(const StreamType& t);

}  // namespace stepsim::shape
