// Internal helpers shared by the tile-function sources (not part of the public API).
#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "hw/functions/flops.h"
#include "hw/functions/unit_lanes.h"
#include "hw/stream/tile.h"

namespace stepsim::detail {

inline std::string shapes_str(const std::vector<Tile>& in) {
  std::string s;
  for (size_t k = 0; k < in.size(); ++k) s += (k ? ", " : "") + in[k].to_string();
  return s;
}

[[noreturn]] inline void fail(const std::string& kind, const std::string& name, const std::string& what) {
  throw std::invalid_argument(kind + " function '" + name + "': " + what);
}

inline void check_arity(const std::string& kind, const std::string& name, int arity, const std::vector<Tile>& in) {
  if (int(in.size()) != arity)
    fail(
        kind, name,
        "takes " + std::to_string(arity) + " input(s), got " + std::to_string(in.size()) + " (" + shapes_str(in) + ")");
}

inline void check_float(const std::string& kind, const std::string& name, const Tile& t) {
  if (t.dtype == DType::INT32) fail(kind, name, "needs bf16 or fp32 input, got " + t.to_string());
}

// Adds function `f` to its registry with the unit lanes that compute it (unit_lanes.h; none by
// default).
template <class F>
void register_function(std::map<std::string, F>& registry, F f, UnitLanes lanes = {}) {
  f.lanes = lanes;
  registry.emplace(f.name, std::move(f));
}

inline DType promote(DType a, DType b) { return (a == DType::BF16 && b == DType::BF16) ? DType::BF16 : DType::FP32; }

// True if every tile carries a payload, false if none does; throws if mixed.
inline bool payload_mode(const std::string& kind, const std::string& name, const std::vector<Tile>& in) {
  size_t with = 0;
  for (const Tile& t : in) with += t.has_data() ? 1 : 0;
  if (with != 0 && with != in.size())
    fail(kind, name, "inputs mix payload and shape-only tiles (" + shapes_str(in) + ")");
  return with != 0 && !in.empty();
}

// The concrete shapes a FLOP rule reads (flops.h): operand 0, the output, and the output columns
// operand 1 contributes (a matmul's output columns; attention's V columns).
inline Arithmetic arithmetic_of(const FlopRule& r, const std::vector<Tile>& in, const Tile& out) {
  const Tile& a = in.at(0);
  uint64_t n = 0;
  if (r.kind == FlopRule::Kind::kMatmul) n = out.cols;
  if (r.kind == FlopRule::Kind::kFlashAttention) n = in.at(1).cols;
  return tile_arithmetic(r, {a.rows, a.cols, n, out.rows, out.cols});
}

// Output tile from fp32 values (rounded once to bf16 when dtype is BF16).
inline Tile finish(uint32_t rows, uint32_t cols, DType dtype, std::vector<float> v) {
  return make_tile(rows, cols, dtype, std::move(v));
}

// A payload the caller may modify: the tile's own if it is not shared, else a copy.
inline TileData& mutable_payload(Tile& t) {
  if (!t.data || t.data.use_count() != 1) {
    auto copy = t.data ? std::make_shared<TileData>(*t.data) : std::make_shared<TileData>();
    t.data = copy;
    return *copy;
  }
  return *std::const_pointer_cast<TileData>(t.data);
}

}  // namespace stepsim::detail

namespace stepsim::detail {

struct MatmulDims {
  uint32_t M, K, N;
};
// Checks A[MxK] x B[KxN] (or B[NxK] when bt) and float dtypes; `kind`/`name` for messages.
MatmulDims matmul_dims(const std::string& kind, const std::string& name, const Tile& a, const Tile& b, bool bt);
// out[MxN] (row-major fp32): for each (i,j) in k order, first ? s = p_0 : s = out[i][j],
// then s = s + p_k. With first and K = 0, out = +0.
void matmul_accumulate(const Tile& a, const Tile& b, bool bt, float* out, bool first);
// The same on row-major arrays: out [M x N] (+)= A [M x K] B [K x N].
void matmul_accumulate(const float* A, const float* B, uint32_t M, uint32_t K, uint32_t N, float* out, bool first);

}  // namespace stepsim::detail
