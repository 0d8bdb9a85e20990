// Hierarchical tiling (paper App. B.2 / Fig. 18, the authors' HDL flow `passes/downtiler.rs`):
// rewrites a graph whose tiles are large logical tiles into one whose tiles are T x T physical
// tiles, the size the fabric's compute units take, using only STeP operators. Every logical tile
// [R x C] becomes a rank-2 sub-stream of [R/T, C/T] blocks (row-major), so every tile stream gains
// two inner dimensions. A side below T stays whole: a [1 x C] row is [1, C/T] blocks of [1 x T], an
// [R x 1] column [R/T, 1] blocks of [T x 1] (a side above T must be a multiple of it).
//
//   LinearOffChipLoad/Store  the same affine view at block granularity, plus the two block dims
//                            (a load's ref stream is read at its logical tiles: only its shape counts);
//   Repeat count n           Bufferize(rank 2) -> Streamify(repeat [n]): the block group is replayed;
//   Map matmul(_t)(_f32)     both operands Bufferize(rank 2) -> Streamify through an affine view
//                            that walks (i, j, k), Accum matmul(_t)_acc(_f32) over k on blocks;
//   Accum matmul(_t)_acc, rank 1   the same views per logical tile, and an Accum with an
//                            accumulator bank (bank_rank 2) over (C, k): one partial sum per output
//                            block, kept across the reduced logical dim C;
//   Accum matmul(_t)_acc, rank r > 1   the r reduced logical dims buffered too (Bufferize rank
//                            r+2) and walked inside (i, j), the Accum over them and k;
//   Map of an element-wise function (add, sub, mul, div, max, min, the comparisons, select,
//                            sub_row, the unary functions and casts, rotate_pairs)  on blocks; an operand that
//                            broadcasts is widened to the blocks: a [1 x 1] tile by two Repeats, an
//                            [R x 1] column by Repeat + Flatten, a [1 x C] row by Bufferize ->
//                            Streamify (view [R/T, C/T], stride [0, 1]);
//   Map row_max              row_max per block, Accum max over the column blocks, Promote;
//   Accum add, add_f32, max  an accumulator bank over the blocks (Promote, Accum bank_rank 2);
//   Accum retile_row         Flatten of the reduced dims with the row blocks (rows of fewer than T
//                            rows are first packed: Reshape, a transposing Streamify view and an
//                            Accum retile_row on blocks);
//   Accum retile_col         Bufferize -> Streamify (view [R/T, D, C/T]) -> Flatten;
//   FlatMap retile_streamify_row  retile_streamify_row per block, a transposing Streamify view,
//                            Flatten and Promote;
//   Bufferize rank b, Streamify   rank b + 2; the affine view's strides times the blocks of a
//                            tile, plus the two block dims;
//   Flatten, Promote, Reshape (no padding), Broadcast, Partition, Reassemble   the same operator
//                            two levels deeper on block streams (Partition and Reassemble keep
//                            their selectors);
//   Sink, Source (of non-tiles)  unchanged.
//
// Every rewrite computes the logical graph's values bit for bit: the block Accum's fp32
// accumulator takes the products in the logical k order and rounds to the logical output dtype
// once, as the logical matmul does; the element-wise functions and max are per element. Row sums
// and means (their fp32 sum would take the blocks' partial sums in another order), concatenations,
// rotate_half, mask_cols, TopK, Zip, Scan, Expand and the random-access operators are not
// rewritten. Off-chip payload bytes are the same; the graph needs memory units (the buffers) and
// more firings.
//
// Strict (downtile(), `stepsim downtile`): anything else is an error naming the node. Partial
// (DowntileOptions::partial, `stepsim downtile --partial`, `stepsim run --downtile`): such a node
// stays at its logical tiles, and the streams between the two kinds of node are converted by
// retiling nodes (blocks -> logical: Accum retile_col, then retile_row; logical -> blocks: FlatMap
// retile_streamify_row, Reshape, Accum retile_row, then the same by columns), so any graph the
// pass reads can be down-tiled where it can be, and the result says which nodes were and why not.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw/presets/hardware.h"
#include "sim/graph/graph.h"

namespace stepsim {

struct DowntileOptions {
  // Keep a node the pass cannot rewrite at its logical tiles, converted at its edges, instead of
  // failing.
  bool partial = false;
  // > 0: the FIFO depth (beats) of the run; a node whose channels carry blocks gets that depth
  // times the blocks of its tiles, so that each channel holds the logical tiles it held before (a
  // node's own `depth:` and `input_depth:` are scaled alike either way).
  uint32_t fifo_depth = 0;
};

// One node of the input graph, and what it became.
struct DowntileNode {
  std::string name, op, fn;        // fn: the node's tile function, if it has one
  bool blocked = false;            // rewritten onto blocks (or, carrying no tiles, copied)
  std::string reason;              // kept at its logical tiles: why
  std::vector<std::string> nodes;  // its nodes in the down-tiled graph (the last one carries its name)
};

// Retiling nodes between a blocked and a logical node.
struct DowntileConversion {
  std::string stream;      // "node.port" of the input graph
  bool to_blocks = false;  // logical tiles -> blocks; else blocks -> logical tiles
  std::string consumer;    // the node of the input graph that needed it
  std::vector<std::string> nodes;
};

struct DowntileResult {
  Graph graph;
  int64_t tile = 0;
  std::vector<DowntileNode> nodes;  // the input graph's, in its order
  std::vector<DowntileConversion> conversions;
  // The most blocks of one logical tile: a channel of blocks carries that many beats where the
  // logical one carried one (a run down-tiled on the fly scales the FIFO depth by it).
  uint64_t max_blocks = 1;
  size_t blocked_nodes() const;
};

// Strict: throws std::invalid_argument (naming the node) for an operator, function or view the
// pass does not handle, or a tile side above T that T does not divide.
Graph downtile(const Graph& g, int64_t T);
// Strict or partial (options). Throws std::invalid_argument as downtile() does in strict mode;
// in partial mode only for a graph that does not type or a T below 1.
DowntileResult downtile_graph(const Graph& g, int64_t T, const DowntileOptions& options);

// Down-tiling before a co-simulation (`stepsim run --downtile`, Graph.run(downtile=...)): partial,
// with the FIFO depths of `hw` scaled to the blocks. `spec` is a side T ("4", "16") or "auto": the
// sides of the tile units (16, then 4) are tried and the one that puts the most nodes on the units
// of `impl` (hls when "" or approx) is kept, a tie going to the larger (fewer beats). Throws
// std::invalid_argument for a bad spec.
DowntileResult downtile_for_units(const Graph& g, const std::string& spec, const std::string& impl,
                                  const HardwareParams& hw);

}  // namespace stepsim
