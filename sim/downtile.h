// Hierarchical tiling (paper App. B.2 / Fig. 18, the authors' HDL flow `passes/downtiler.rs`):
// rewrites a graph whose tiles are large logical tiles into one whose tiles are all T x T
// physical tiles, the size the fabric's compute units take, using only STeP operators. Every
// logical tile [R x C] becomes a rank-2 sub-stream of [R/T, C/T] blocks (row-major), so every
// stream gains two inner dimensions:
//
//   LinearOffChipLoad/Store  the same affine view at block granularity, plus the two block dims;
//   Repeat count n           Bufferize(rank 2) -> Streamify(repeat [n]): the block group is replayed;
//   Map matmul(_t)(_f32)     both operands Bufferize(rank 2) -> Streamify through an affine view
//                            that walks (i, j, k), Accum matmul(_t)_acc(_f32) over k on blocks;
//   Accum matmul(_t)_acc, rank 1   the same views per logical tile, and an Accum with an
//                            accumulator bank (bank_rank 2) over (C, k): one partial sum per output
//                            block, kept across the reduced logical dim C;
//   Accum matmul(_t)_acc, rank r > 1   the r reduced logical dims buffered too (Bufferize rank
//                            r+2) and walked inside (i, j), the Accum over them and k;
//   Map of an element-wise or unary function (silu, mul, add, ...)  unchanged;
//   Sink, Source (of non-tiles)  unchanged.
//
// The block Accum's fp32 accumulator takes the products in the logical k order and rounds to the
// logical output dtype once, as the logical matmul does, so the outputs are bit-identical. Off-chip
// payload bytes are the same; the graph needs memory units (the buffers) and more firings.
// Anything else is rejected with an error naming the node.
#pragma once

#include <cstdint>

#include "sim/graph/graph.h"

namespace stepsim {

// Throws std::invalid_argument (naming the node) for an operator, function or view the pass
// does not handle, or a tile that T does not divide.
Graph downtile(const Graph& g, int64_t T);

}  // namespace stepsim
