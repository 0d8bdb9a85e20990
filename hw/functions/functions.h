// The tile-function library: the functions that STeP's higher-order operators (Map,
// Accum, FlatMap) take as arguments, looked up by name. One definition serves the
// functional model, the timing model (shapes and FLOP counts) and the RTL checks.
//
// Numerics (the scalar kernels are in numerics.h):
//  * Inputs are bf16 or fp32 tiles (int32 only where stated). bf16 payloads hold the fp32
//    value they represent exactly, so products of two bf16 values are exact in fp32.
//  * All arithmetic is IEEE binary32 with round-to-nearest-even, one operation at a time
//    (-ffp-contract=off: no FMA). Sums run in a fixed order, stated per function.
//  * Output dtype: bf16 when every floating input is bf16, fp32 otherwise, unless the
//    function name ends in "_f32" (always fp32). A bf16 output is the fp32 result rounded
//    to bf16 once, at the end (bf16.h: round_to_bf16, ties to even).
//  * NaN and Inf follow IEEE through every operation.
//
// Timing mode: tiles carry no payload. Every `apply` / `update` / `finalize` accepts
// shape-only inputs and then returns shape-only results (equal to out_shape / acc_shape /
// out_shapes); inputs that mix payload and shape-only tiles are rejected. Shape errors throw
// std::invalid_argument naming the function and the offending shapes.
//
// Which functions there are: docs/operators.md, "Tile functions", which `stepsim ops --markdown`
// (scripts/gen_docs.sh) generates from the registrations in map_functions.cpp,
// accum_functions.cpp and flatmap_functions.cpp: each function's name, arity, one-line
// definition, FLOP count and units. The comments below do not list them again (a second list
// goes stale); they give what those lines leave out: the order of every sum, the empty cases
// and how an accumulator updates.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hw/functions/flops.h"
#include "hw/functions/unit_lanes.h"
#include "hw/stream/tile.h"

namespace stepsim {

// The output tile of a Map or Accum function as data: how its shape and dtype follow from the
// operands. The symbolic shape rules (sim/shape/rules.cpp) read it; the concrete out_shape /
// acc_shape below compute the same on concrete tiles, with every check.
struct TileSignature {
  enum class Shape : uint8_t {
    kBroadcast,       // element-wise over two operands, dimensions broadcast (equal or 1)
    kRowOperand,      // x[MxN] with a row vector r[Mx1]: x's shape
    kSameAsFirst,     // operand 0's shape
    kRowReduce,       // [MxN] -> [Mx1]
    kMatmul,          // A[MxK] x B[KxN] (transposed_b: B[NxK]) -> [MxN]
    kRetileRows,      // Accum: the reduced tiles stacked vertically
    kRetileCols,      // Accum: side by side
    kFlashAttention,  // Accum: S[MxT], V[TxD] -> [MxD]
    kSelect,          // (cond, a, b) element-wise, all three broadcast; the dtype rule reads a and b
    kConcatRows,      // A[M1xN] over B[M2xN] -> [(M1+M2)xN]
    kConcatCols,      // A[MxN1] beside B[MxN2] -> [Mx(N1+N2)]
  };
  enum class DTypeRule : uint8_t {
    kPromote,  // bf16 when every operand is bf16, else fp32
    kFirst,    // operand 0's dtype
    kBf16,
    kFp32,
  };
  Shape shape = Shape::kSameAsFirst;
  DTypeRule dtype = DTypeRule::kFirst;
  bool transposed_b = false;  // kMatmul: B is stored [NxK]
};

// ---------------------------------------------------------------------------------------
// Map functions: `arity` input tiles -> one output tile.
//  * Matmul forms (matmul; matmul_t with B stored [NxK]; their _f32 forms give fp32 output):
//      out[i][j] = p_0 + p_1 + ... + p_{K-1} summed left to right in fp32 (s = p_0;
//      s = s + p_k for k = 1..K-1; K = 0 gives +0), p_k = A[i][k] * B[k][j] (fp32 RNE
//      product, exact for bf16 inputs); then rounded to bf16 once if the output is bf16.
//  * Element-wise functions of two operands broadcast them per dimension: equal, or one of them
//    is 1. This covers row broadcasting ([Mx1] with [MxN]), column broadcasting ([1xN] with
//    [MxN]) and scalars ([1x1]), so row-vector and scalar operands need no functions of their
//    own; select broadcasts its three operands the same way. max/min propagate NaN;
//    max(+0,-0) = +0, min(+0,-0) = -0.
//  * Row reductions, [MxN] -> [Mx1], every sum left to right: row_sum s = x_0; s = s + x_j
//    (N = 0 gives +0); row_max the same with max_f32 (N = 0 gives -Inf); row_mean row_sum's s / N
//    (one fp32 division, N as fp32, exact up to 2^24; N = 0 gives NaN); row_var the population
//    variance: m = row_mean's fp32 mean (not rounded to bf16), d_j = x_j - m, q_j = d_j * d_j,
//    the q_j summed as row_sum's, / N (N = 0 gives NaN).
//  * Data movement (cat_rows, cat_cols, rotate_pairs, rotate_half, the casts) is exact and
//    costs 0 FLOPs. A rotation charges nothing for its sign flips: a per-element FLOP rule would
//    make it look element-wise to down-tiling (sim/transform/downtile.cpp), which it is not (an
//    output column reads another input column).
//  * Unary and row functions keep the input dtype (bf16 or fp32), except the casts.
struct MapFunction {
  std::string name, description;
  int arity = 0;
  bool matmul = false;  // a matmul form: the on-chip formulas count its operand tiles
  // A matmul form: the Accum function that sums its products over k (matmul -> matmul_acc), with
  // the same operands and output dtype; down-tiling splits K with it. "" otherwise.
  std::string accum_form;
  FlopRule flop_rule;   // the FLOPs of one application (hw/functions/flops.h)
  TileSignature signature;
  UnitLanes lanes;  // the units that compute it (unit_lanes.h)
  // Output tile shape/dtype (no payload). Throws std::invalid_argument on a bad input
  // count, dtype or shape.
  std::function<Tile(const std::vector<Tile>&)> out_shape;
  // FLOPs the timing model charges for one application, by kind (flops.h).
  std::function<Arithmetic(const std::vector<Tile>&)> arithmetic;
  uint64_t flops(const std::vector<Tile>& in) const { return arithmetic(in).flops(); }
  // The output tile with payload (shape-only if the inputs are shape-only).
  std::function<Tile(const std::vector<Tile>&)> apply;
};
// Throws std::invalid_argument("unknown map function 'x'; known: ...").
const MapFunction& map_function(const std::string& name);
std::vector<std::string> map_function_names();  // sorted

// ---------------------------------------------------------------------------------------
// Accum functions: acc = init(); acc = update(acc, inputs) per input element;
// emitted tile = finalize(acc) at the end of each reduction.
//
// The accumulator is a Tile. init() returns the empty accumulator (a 0x0 tile, see
// is_empty_acc); the first update sizes it from its inputs (dynamically sized accumulators:
// dynamic tiling), later updates check that the inputs match it. Arithmetic accumulators
// are fp32 tiles internally; finalize rounds to the output dtype.
//
//  * matmul_acc and its forms: acc fp32 [MxN]; acc[i][j] = acc[i][j] + p_k for k = 0..K-1 in
//    order (the first update starts from p_0). A K-tiled reduction therefore gives exactly the
//    fp32 sums of the untiled matmul. FLOPs 2*M*K*N per update (the accumulate-adds are not
//    charged, like the reference simulator).
//  * add: acc fp32 = acc + x (first update: acc = x). max: acc = max_f32(acc, x), bf16 while
//    every input was bf16, fp32 otherwise (max is exact).
//
// flash_attn_update: inputs (S[MxT] scores = scaled Q K^T for one KV tile, V[TxD]).
//   Accumulator: fp32 tile [M x (D+2)]: columns 0..D-1 hold o (unnormalised output), column D
//   holds m (running row max), column D+1 holds l (running row sum of exp). Per row i,
//   with every sum left to right (t = 0..T-1, first term as initial value):
//     mt   = row max of S[i][*] (max_f32);    m' = max_f32(m, mt)  (first update: m' = mt)
//     p_t  = exp_f32(S[i][t] - m')            (p_t = 0 for every t if m' = -Inf)
//     a    = exp_f32(m - m')                  (a = 1 if m' = -Inf; not used in the first update)
//     ls   = sum_t p_t;                       l' = a*l + ls        (first update: l' = ls)
//     pv_j = sum_t p_t * V[t][j] (fp32 RNE products); o'_j = a*o_j + pv_j (first: o'_j = pv_j)
//   FLOPs per update: 7*M*T (max, sub, exp 4, sum) + 2*M*T*D (P·V)
//   + 6*M (m' max; a: sub, exp 4) + 2*M (l') + 2*M*D (o').
//   finalize: out[i][j] = o_j / l (fp32 division), rounded to bf16: [MxD] bf16, M*D FLOPs.
//   Masked KV positions can be given as S = -Inf (p_t = 0); a short last KV tile can simply
//   have fewer rows/cols (T is taken per update).
// Decode attention over a request's KV cache: S = matmul_t_f32(Q*scale, K_tile) per KV tile
// (Map), then Accum(flash_attn_update) over the KV tiles of the request. The same result can
// also be composed from Map functions (row_max, max, sub_row, exp, row_sum, mul, add, div).
struct AccumFunction {
  std::string name, description;
  int arity = 0;
  bool matmul = false;      // a matmul form (matmul_acc...)
  FlopRule flop_rule;       // the FLOPs of one update (hw/functions/flops.h)
  TileSignature signature;  // of the emitted tile
  UnitLanes lanes;          // the units that compute it (unit_lanes.h)
  // FLOPs of finalize per element of the emitted tile (flash_attn_update's division: 1; else 0).
  uint8_t finalize_flops_per_out_elem = 0;
  // The value a state that has seen nothing holds in every element, where the function has one:
  // +0 for the sums (matmul_acc..., add, add_f32), -Inf for max. An exclusive Scan emits it first.
  std::optional<float> identity;
  std::function<Tile()> init;  // the empty accumulator
  // Accumulator shape/dtype after one update (shape only; acc may be empty). Throws
  // std::invalid_argument on bad inputs or a mismatch with the accumulator.
  std::function<Tile(const Tile& acc, const std::vector<Tile>& inputs)> acc_shape;
  // FLOPs charged for one update, by kind (flops.h).
  std::function<Arithmetic(const Tile& acc, const std::vector<Tile>& inputs)> arithmetic;
  uint64_t flops(const Tile& acc, const std::vector<Tile>& inputs) const { return arithmetic(acc, inputs).flops(); }
  // One update with payloads. Pass the accumulator by std::move: when its payload is not
  // shared it is updated in place (no copy); a shared payload is never modified.
  std::function<Tile(Tile acc, const std::vector<Tile>& inputs)> update;
  // Shape/dtype of the emitted tile for a final accumulator shape (empty acc -> empty).
  std::function<Tile(const Tile& acc)> out_shape;
  // FLOPs charged for finalize (0 except flash_attn_update).
  std::function<uint64_t(const Tile& acc)> finalize_flops;
  // The emitted tile (empty acc -> empty tile: a reduction that saw no element).
  std::function<Tile(const Tile& acc)> finalize;
};
inline bool is_empty_acc(const Tile& acc) { return acc.rows == 0 && acc.cols == 0; }
// What `f` emits for a state that has seen nothing, shaped as after an update with `inputs`: the
// identity in every element (a payload when `inputs` carry one, else shape only). Throws
// std::invalid_argument for a function without an identity (retile_row, flash_attn_update).
Tile identity_output(const AccumFunction& f, const std::vector<Tile>& inputs);
const AccumFunction& accum_function(const std::string& name);
std::vector<std::string> accum_function_names();  // sorted

// ---------------------------------------------------------------------------------------
// FlatMap functions: one tile (plus an optional int32 control tile) -> a list of tiles,
// i.e. a rank-1 stream. All cost 0 FLOPs. The int32 control tile must carry its payload even
// in timing mode (the output count depends on it).
struct FlatMapFunction {
  std::string name, description;
  int arity = 0;
  // What one tile expands into, for the symbolic shape rules: its rows, its columns, or the rows
  // a mask keeps (a count only the data knows).
  enum class Expansion : uint8_t {
    kRows,          // one [1xC] tile per row
    kCols,          // one [Rx1] tile per column
    kFilteredRows,  // the rows the mask keeps, as [1xC] tiles
    kFiltered,      // the tile itself, or nothing (filter_padding)
  };
  Expansion expansion = Expansion::kRows;
  UnitLanes lanes;  // the units that compute it (unit_lanes.h)
  std::function<std::vector<Tile>(const std::vector<Tile>&)> out_shapes;  // shape-only
  std::function<uint64_t(const std::vector<Tile>&)> flops;
  std::function<std::vector<Tile>(const std::vector<Tile>&)> apply;
};
const FlatMapFunction& flatmap_function(const std::string& name);
std::vector<std::string> flatmap_function_names();  // sorted

// Drops the tiles whose flag is set. Throws std::invalid_argument if the sizes differ.
std::vector<Tile> filter_padding(const std::vector<Tile>& tiles, const std::vector<bool>& is_padding);

// ---------------------------------------------------------------------------------------
// Address generation. An "address" is base + index * stride, where index counts tiles in
// the tensor's tile order; use stride = 1, base = 0 for tile indices, or stride = tile
// bytes for byte addresses. All arguments must be >= 0 (stride > 0 for the tile sizes);
// violations throw std::invalid_argument.

// Expert weights: the E experts' weight tiles are stored back to back, expert e owning
// tile indices [e*tiles_per_expert, (e+1)*tiles_per_expert) in the order the expert consumes
// them. Returns the tiles_per_expert addresses of expert `expert_id`, in order.
std::vector<int64_t> expert_tile_addresses(int64_t expert_id, int64_t tiles_per_expert, int64_t base = 0,
                                           int64_t stride = 1);

// KV cache: request r owns max_tiles_per_request consecutive tile slots of tile_rows tokens
// each (slot index r*max_tiles_per_request + t holds tokens [t*tile_rows, (t+1)*tile_rows)).
// Returns the addresses of the ceil(kv_len / tile_rows) tiles that hold tokens 0..kv_len-1
// (kv_len = 0 -> none). For decode, pass kv_len = cached length + 1 to include the new
// token. Throws if the tiles exceed max_tiles_per_request.
std::vector<int64_t> kv_cache_tile_addresses(int64_t request_id, int64_t kv_len, int64_t tile_rows,
                                             int64_t max_tiles_per_request, int64_t base = 0, int64_t stride = 1);

// Where token `position` of request r is written: the tile address (as above) and the row
// inside that tile.
struct KvWriteAddress {
  int64_t tile_address;
  uint32_t row;
};
KvWriteAddress kv_cache_write_address(int64_t request_id, int64_t position, int64_t tile_rows,
                                      int64_t max_tiles_per_request, int64_t base = 0, int64_t stride = 1);

// Addresses as a stream of int32 [1x1] tiles. Throws if a value does not fit in int32.
std::vector<Tile> address_tiles(const std::vector<int64_t>& addresses);

}  // namespace stepsim
