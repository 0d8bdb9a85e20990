// Map functions (see functions.h for the definitions and FLOP counts).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "hw/functions/detail.h"
#include "hw/functions/functions.h"
#include "hw/functions/numerics.h"
#include "hw/stream/simd.h"

namespace stepsim {

namespace detail {

MatmulDims matmul_dims(const std::string& kind, const std::string& name, const Tile& a, const Tile& b, bool bt) {
  check_float(kind, name, a);
  check_float(kind, name, b);
  const uint32_t kb = bt ? b.cols : b.rows;
  if (a.cols != kb)
    fail(kind, name,
         std::string("inner dimensions differ: A ") + a.to_string() + " vs B " + b.to_string() +
             (bt ? " (expects A[MxK] x B[NxK]^T)" : " (expects A[MxK] x B[KxN])"));
  return {a.rows, a.cols, bt ? b.rows : b.cols};
}

namespace {

// Compiled per instruction set (hw/stream/simd.h). The vectors run across an output row's
// columns j; each out[i][j] still takes its products in increasing k, one multiply and one add
// each, so every version gives the scalar loop's bits.
//
// Blocking (the classic one, with the order of each sum kept):
// - registers: a block of kRows output rows x V vectors of 16 columns stays in registers over a
//   run of k; each k loads B's V vectors once for all kRows rows. (One row at a time read B once
//   per row, and each vector's additions waited on each other.)
// - cache: the columns go in panels of 64, and k in runs of kDepth: B's [kDepth x 64] piece (32
//   KiB) is read from the L1 cache by every row block. A sum interrupted between runs is stored
//   and reloaded, which changes no bit. (Run whole, a 4096-row B tile of 1 MiB left the cache
//   between row blocks.)

using Vec = float __attribute__((vector_size(64), aligned(4)));  // 16 floats: one AVX-512 register
constexpr uint32_t kLanes = 16;
constexpr uint32_t kRows = 4;     // output rows per register block
constexpr uint32_t kVectors = 4;  // vectors of columns per register block: a panel of 64 columns
constexpr uint32_t kDepth = 128;  // k per run

// (By reference: a vector argument or result by value would change the baseline version's ABI.)
STEPSIM_INLINE void load(Vec& v, const float* p) { std::memcpy(&v, p, sizeof v); }
STEPSIM_INLINE void store(float* p, const Vec& v) { std::memcpy(p, &v, sizeof v); }

// out [M x N] (+)= A [M x K] B [K x N], all row-major.
struct Product {
  const float* A;
  const float* B;
  uint32_t M, K, N;
  float* out;
};

// Products k0 .. k1 - 1 into rows i0 .. i0 + R - 1, columns j0 .. j0 + 16 V - 1. `start`: the
// sums start with product k0 (not 0 + p: a -0 product stays -0); else they continue from out.
template <uint32_t R, uint32_t V>
STEPSIM_INLINE void block(const Product& p, uint32_t i0, uint32_t j0, uint32_t k0, uint32_t k1, bool start,
                          bool prefetch) {
  const float* a = p.A + size_t(i0) * p.K;
  float* o = p.out + size_t(i0) * p.N + j0;
  Vec acc[R][V];
  uint32_t k = k0;
  if (start) {
    for (uint32_t v = 0; v < V; ++v) {
      Vec b;
      load(b, p.B + size_t(k0) * p.N + j0 + kLanes * v);
      for (uint32_t r = 0; r < R; ++r) acc[r][v] = a[size_t(r) * p.K + k0] * b;
    }
    ++k;
  } else {
    for (uint32_t r = 0; r < R; ++r)
      for (uint32_t v = 0; v < V; ++v) load(acc[r][v], o + size_t(r) * p.N + kLanes * v);
  }
  for (; k < k1; ++k) {
    const float* bk = p.B + size_t(k) * p.N + j0;
    Vec b[V];
    for (uint32_t v = 0; v < V; ++v) load(b[v], bk + kLanes * v);
    if (prefetch && k + kDepth < p.K)
      for (uint32_t v = 0; v < V; ++v) __builtin_prefetch(bk + size_t(kDepth) * p.N + kLanes * v);
    for (uint32_t r = 0; r < R; ++r) {
      const float ark = a[size_t(r) * p.K + k];
      for (uint32_t v = 0; v < V; ++v) acc[r][v] = acc[r][v] + ark * b[v];
    }
  }
  for (uint32_t r = 0; r < R; ++r)
    for (uint32_t v = 0; v < V; ++v) store(o + size_t(r) * p.N + kLanes * v, acc[r][v]);
}

// The last `rows` (< R) rows from i0: one block of exactly that many rows.
template <uint32_t R, uint32_t V>
STEPSIM_INLINE void last_rows(const Product& p, uint32_t i0, uint32_t rows, uint32_t j0, uint32_t k0, uint32_t k1,
                              bool start) {
  if constexpr (R > 0) {
    if (rows == R) return block<R, V>(p, i0, j0, k0, k1, start, false);
    last_rows<R - 1, V>(p, i0, rows, j0, k0, k1, start);
  }
}

// Columns j0 .. j0 + 16 V - 1 of every row, k in runs.
template <uint32_t V>
STEPSIM_INLINE void panel(const Product& p, uint32_t j0, bool first) {
  for (uint32_t k0 = 0; k0 < p.K; k0 += kDepth) {
    const uint32_t k1 = std::min(p.K, k0 + kDepth);
    const bool start = first && k0 == 0;
    uint32_t i0 = 0;
    for (; i0 + kRows <= p.M; i0 += kRows) block<kRows, V>(p, i0, j0, k0, k1, start, i0 == 0);
    last_rows<kRows - 1, V>(p, i0, p.M - i0, j0, k0, k1, start);
  }
}

// One output of a column narrower than a vector, the same order of operations.
STEPSIM_INLINE void single(const Product& p, uint32_t i, uint32_t j, bool first) {
  const float* a = p.A + size_t(i) * p.K;
  float s = first ? a[0] * p.B[j] : p.out[size_t(i) * p.N + j];
  for (uint32_t k = first ? 1 : 0; k < p.K; ++k) s = s + a[k] * p.B[size_t(k) * p.N + j];
  p.out[size_t(i) * p.N + j] = s;
}

// out (+)= A B: panels of 64 columns, then of 16, then single columns. `first`: out starts with
// the k = 0 product.
STEPSIM_SIMD_CLONES void matmul_rows(const Product& p, bool first) {
  if (first && p.K == 0) {
    std::fill(p.out, p.out + size_t(p.M) * p.N, 0.0f);
    return;
  }
  if (p.K == 0) return;
  uint32_t j0 = 0;
  for (; j0 + kVectors * kLanes <= p.N; j0 += kVectors * kLanes) panel<kVectors>(p, j0, first);
  for (; j0 + kLanes <= p.N; j0 += kLanes) panel<1>(p, j0, first);
  for (; j0 < p.N; ++j0)
    for (uint32_t i = 0; i < p.M; ++i) single(p, i, j0, first);
}

// A 16 x 16 square of floats in registers, x[r] its row r, transposed in place: four rounds,
// each interleaving pairs of rows 1, 2, 4 and 8 apart in blocks of 1, 2, 4 and 8 elements.
// (__builtin_shufflevector: GCC and Clang; one permute instruction each with AVX-512.)
STEPSIM_INLINE void transpose_square(Vec* x) {
#define STEPSIM_SHUFFLE(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
  Vec y[16];
  for (int i = 0; i < 16; i += 2) {
    y[i] = STEPSIM_SHUFFLE(x[i], x[i + 1], 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
    y[i + 1] = STEPSIM_SHUFFLE(x[i], x[i + 1], 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
  }
  for (int i = 0; i < 16; i += 4)
    for (int k = i; k < i + 2; ++k) {
      x[k] = STEPSIM_SHUFFLE(y[k], y[k + 2], 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29);
      x[k + 2] = STEPSIM_SHUFFLE(y[k], y[k + 2], 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31);
    }
  for (int i = 0; i < 16; i += 8)
    for (int k = i; k < i + 4; ++k) {
      y[k] = STEPSIM_SHUFFLE(x[k], x[k + 4], 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
      y[k + 4] = STEPSIM_SHUFFLE(x[k], x[k + 4], 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
    }
  for (int k = 0; k < 8; ++k) {
    x[k] = STEPSIM_SHUFFLE(y[k], y[k + 8], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
    x[k + 8] = STEPSIM_SHUFFLE(y[k], y[k + 8], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  }
#undef STEPSIM_SHUFFLE
}

// dst [cols x rows] = src [rows x cols] transposed, in 16 x 16 squares: whole squares through
// registers (4.7 times the element-by-element copy on a 64 x 64 tile), the edges element by
// element.
STEPSIM_SIMD_CLONES void transpose(const float* src, uint32_t rows, uint32_t cols, float* dst) {
  for (uint32_t r0 = 0; r0 < rows; r0 += kLanes)
    for (uint32_t c0 = 0; c0 < cols; c0 += kLanes) {
      const uint32_t r1 = std::min(rows, r0 + kLanes), c1 = std::min(cols, c0 + kLanes);
      if (r1 - r0 == kLanes && c1 - c0 == kLanes) {
        Vec x[kLanes];
        for (uint32_t r = 0; r < kLanes; ++r) load(x[r], src + size_t(r0 + r) * cols + c0);
        transpose_square(x);
        for (uint32_t c = 0; c < kLanes; ++c) store(dst + size_t(c0 + c) * rows + r0, x[c]);
        continue;
      }
      for (uint32_t c = c0; c < c1; ++c)
        for (uint32_t r = r0; r < r1; ++r) dst[size_t(c) * rows + r] = src[size_t(r) * cols + c];
    }
}

// ---- out = A B^T taken transposed, stored back through registers ----
// For a few rows of A against a tall B [N x K] (B's rows are out's columns), the product is taken
// transposed, out^T = B A^T: A^T's rows (16 of out's rows to a vector) are the vectors, B's
// elements the scalars; each sum still runs over k in order, a multiply then an add. A register
// block is a 16 x 16 square of out^T (16 of B's rows x one vector of A^T): 16 accumulators, 16
// independent additions per k. (matmul_rows on the 16-column out^T had 4-row blocks: 4 additions
// per k, each waiting 4 cycles on its previous one, so the two vector ports were barely fed.) At
// the end the square is transposed in registers (transpose_square) and stored as 16 rows of out:
// no out^T [N x M] to allocate and transpose back afterwards, a fifth of the time of 16x64 x
// (4096x64)^T before. With -ffp-contract=off the ceiling is still half the FMA peak.

// out [M x N] (+)= A B^T with B stored [N x K], from B and A^T [K x Mp] (Mp: M rounded up to
// whole vectors, the padding columns 0; their products are computed and dropped).
struct TransposedProduct {
  const float* B;
  const float* At;
  uint32_t M, K, N, Mp;
  float* out;
};

// x[r] = out's column j0 + r, rows i0 .. i0 + 15; what lies past out's edges reads as 0.
STEPSIM_INLINE void load_square_t(const TransposedProduct& p, uint32_t i0, uint32_t j0, Vec* x) {
  const float* o = p.out + size_t(i0) * p.N + j0;
  const uint32_t rows = std::min(kLanes, p.M - i0), cols = std::min(kLanes, p.N - j0);
  if (rows == kLanes && cols == kLanes) {
    for (uint32_t i = 0; i < kLanes; ++i) load(x[i], o + size_t(i) * p.N);
  } else {
    float t[kLanes][kLanes] = {};
    for (uint32_t i = 0; i < rows; ++i) std::copy(o + size_t(i) * p.N, o + size_t(i) * p.N + cols, t[i]);
    for (uint32_t i = 0; i < kLanes; ++i) load(x[i], t[i]);
  }
  transpose_square(x);
}

// The inverse: out's rows i0 .. i0 + 15, columns j0 .. j0 + 15 (within its edges) = x transposed.
STEPSIM_INLINE void store_square_t(const TransposedProduct& p, uint32_t i0, uint32_t j0, Vec* x) {
  float* o = p.out + size_t(i0) * p.N + j0;
  const uint32_t rows = std::min(kLanes, p.M - i0), cols = std::min(kLanes, p.N - j0);
  transpose_square(x);
  if (rows == kLanes && cols == kLanes) {
    for (uint32_t i = 0; i < kLanes; ++i) store(o + size_t(i) * p.N, x[i]);
  } else {
    float t[kLanes][kLanes];
    for (uint32_t i = 0; i < kLanes; ++i) store(t[i], x[i]);
    for (uint32_t i = 0; i < rows; ++i) std::copy(t[i], t[i] + cols, o + size_t(i) * p.N);
  }
}

// Products k0 .. k1 - 1 into out's square at rows i0, columns j0; b: B's 16 rows from j0 (row
// stride K). `start` as in block(). B's rows are read as two groups of eight, from b and b + 8 K:
// indexed from b alone, GCC kept 16 row offsets (multiples of the run time K) in general
// registers, spilled some and reloaded them on every k (some through port 0, one of the two
// vector ports); as two groups it keeps eight row pointers and no spill.
STEPSIM_INLINE void square_t(const TransposedProduct& p, const float* b, uint32_t i0, uint32_t j0, uint32_t k0,
                             uint32_t k1, bool start) {
  const float* at = p.At + i0;
  Vec acc[kLanes];
  uint32_t k = k0;
  if (start) {
    Vec a;
    load(a, at + size_t(k0) * p.Mp);
    for (uint32_t r = 0; r < kLanes; ++r) acc[r] = b[size_t(r) * p.K + k0] * a;
    ++k;
  } else {
    load_square_t(p, i0, j0, acc);
  }
  const float* b8 = b + size_t(8) * p.K;
  for (; k < k1; ++k) {
    Vec a;
    load(a, at + size_t(k) * p.Mp);
    for (uint32_t r = 0; r < 8; ++r) {
      acc[r] = acc[r] + b[size_t(r) * p.K + k] * a;
      acc[r + 8] = acc[r + 8] + b8[size_t(r) * p.K + k] * a;
    }
  }
  store_square_t(p, i0, j0, acc);
}

// out (+)= A B^T in squares: per vector of out's rows and run of k, every 16 rows of B (A^T's
// run, kDepth x 16, stays in the L1 cache; a sum interrupted between runs is stored and
// reloaded, as in matmul_rows). B's last rows, if fewer than 16, are copied into 16 rows padded
// with 0, so every square runs the same code; their products are dropped.
STEPSIM_SIMD_CLONES void matmul_transposed(const TransposedProduct& p, bool first) {
  if (p.K == 0) {
    if (first) std::fill(p.out, p.out + size_t(p.M) * p.N, 0.0f);
    return;
  }
  const uint32_t whole = p.N / kLanes * kLanes;
  std::unique_ptr<float[]> edge;
  if (whole < p.N) {
    edge.reset(new float[size_t(kLanes) * p.K]());
    std::copy(p.B + size_t(whole) * p.K, p.B + size_t(p.N) * p.K, edge.get());
  }
  for (uint32_t i0 = 0; i0 < p.M; i0 += kLanes)
    for (uint32_t k0 = 0; k0 < p.K; k0 += kDepth) {
      const uint32_t k1 = std::min(p.K, k0 + kDepth);
      const bool start = first && k0 == 0;
      for (uint32_t j0 = 0; j0 < p.N; j0 += kLanes)
        square_t(p, j0 < whole ? p.B + size_t(j0) * p.K : edge.get(), i0, j0, k0, k1, start);
    }
}

}  // namespace

void matmul_accumulate(const float* A, const float* B, uint32_t M, uint32_t K, uint32_t N, float* out, bool first) {
  matmul_rows({A, B, M, K, N, out}, first);
}

void matmul_accumulate(const Tile& a, const Tile& b, bool bt, float* out, bool first) {
  const uint32_t M = a.rows, K = a.cols, N = bt ? b.rows : b.cols;
  const float* B = b.data->f.data();
  if (!bt) return matmul_rows({a.data->f.data(), B, M, K, N, out}, first);
  // B stored [N x K]: the kernel needs the operand it vectorizes over laid out along the output
  // columns, so one side is transposed; the sums keep their order over k, so the result is the
  // dot products' bits either way. Either B^T [K x N] (out = A B^T as it stands), or A^T with the
  // product taken transposed (out^T = B A^T, matmul_transposed, which stores out^T's squares
  // transposed back into out), whichever moves fewer values: for a few rows of A against a tall
  // B, the second. A^T's rows are padded to whole vectors so that its squares need no edge code.
  const float* A = a.data->f.data();
  if (uint64_t(N) * K <= uint64_t(M) * K + uint64_t(M) * N) {
    std::unique_ptr<float[]> bk(new float[size_t(K) * N]);  // every element written below
    transpose(B, N, K, bk.get());
    return matmul_rows({A, bk.get(), M, K, N, out}, first);
  }
  const uint32_t Mp = (M + kLanes - 1) / kLanes * kLanes;
  std::unique_ptr<float[]> ak(new float[size_t(K) * Mp]);
  if (Mp == M) {
    transpose(A, M, K, ak.get());
  } else {  // A's rows padded with rows of 0 to Mp, then transposed
    std::unique_ptr<float[]> padded(new float[size_t(Mp) * K]());
    std::copy(A, A + size_t(M) * K, padded.get());
    transpose(padded.get(), Mp, K, ak.get());
  }
  matmul_transposed({B, ak.get(), M, K, N, Mp, out}, first);
}

}  // namespace detail

namespace {

using detail::check_arity;
using detail::check_float;
using detail::fail;
using detail::finish;
using detail::payload_mode;
using detail::promote;

const std::string kMap = "map";

// Wraps shape/apply so both check arity and the payload mode.
MapFunction make_map(const std::string& name, const std::string& desc, int arity,
                     std::function<Tile(const std::vector<Tile>&)> shape, FlopRule flop_rule,
                     std::function<Tile(const std::vector<Tile>&, const Tile&)> compute) {
  MapFunction f;
  f.name = name;
  f.description = desc;
  f.arity = arity;
  f.matmul = flop_rule.kind == FlopRule::Kind::kMatmul;
  f.flop_rule = flop_rule;
  f.out_shape = [name, arity, shape](const std::vector<Tile>& in) {
    check_arity(kMap, name, arity, in);
    return shape(in);
  };
  f.arithmetic = [name, arity, shape, flop_rule](const std::vector<Tile>& in) {
    check_arity(kMap, name, arity, in);
    return detail::arithmetic_of(flop_rule, in, shape(in));
  };
  f.apply = [name, arity, shape, compute](const std::vector<Tile>& in) {
    check_arity(kMap, name, arity, in);
    Tile out = shape(in);
    if (!payload_mode(kMap, name, in)) return out;
    return compute(in, out);
  };
  return f;
}

// ---- matmul ----
MapFunction matmul_fn(const std::string& name, bool bt, bool f32_out) {
  auto shape = [name, bt, f32_out](const std::vector<Tile>& in) {
    auto d = detail::matmul_dims(kMap, name, in[0], in[1], bt);
    return shape_tile(d.M, d.N, f32_out ? DType::FP32 : promote(in[0].dtype, in[1].dtype));
  };
  auto compute = [bt](const std::vector<Tile>& in, const Tile& out) {
    std::vector<float> v(out.elems());
    detail::matmul_accumulate(in[0], in[1], bt, v.data(), true);
    return finish(out.rows, out.cols, out.dtype, std::move(v));
  };
  std::string desc = bt ? "A[MxK] x B[NxK]^T -> [MxN]" : "A[MxK] x B[KxN] -> [MxN]";
  desc += f32_out ? ", fp32 output" : ", bf16 output if both inputs bf16";
  desc += "; fp32 sum over k in increasing order; 2*M*K*N FLOPs";
  MapFunction f = make_map(name, desc, 2, shape, {FlopRule::Kind::kMatmul}, compute);
  f.accum_form = std::string(bt ? "matmul_t_acc" : "matmul_acc") + (f32_out ? "_f32" : "");
  f.signature = {TileSignature::Shape::kMatmul,
                 f32_out ? TileSignature::DTypeRule::kFp32 : TileSignature::DTypeRule::kPromote, bt};
  return f;
}

// ---- elementwise binary with broadcasting ----
uint32_t bdim(const std::string& name, const Tile& a, const Tile& b, uint32_t x, uint32_t y) {
  if (x == y || y == 1) return x;
  if (x == 1) return y;
  fail(kMap, name,
       "shapes " + a.to_string() + " and " + b.to_string() +
           " are not broadcast-compatible (each dimension must match or be 1)");
}

// The element-wise loops, compiled per instruction set (hw/stream/simd.h) with the function
// inlined: each output is the scalar function of its inputs, so every version gives its bits.

// out[i][j] = op(a[i'][j'], b[i''][j'']), an operand of one row or one column broadcast.
template <class Op>
STEPSIM_SIMD_CLONES void binary_rows(Op op, const Tile& a, const Tile& b, uint32_t rows, uint32_t cols, float* out) {
  const float* pa = a.data->f.data();
  const float* pb = b.data->f.data();
  for (uint32_t i = 0; i < rows; ++i) {
    const float* ra = pa + size_t(a.rows == 1 ? 0 : i) * a.cols;
    const float* rb = pb + size_t(b.rows == 1 ? 0 : i) * b.cols;
    float* o = out + size_t(i) * cols;
    if (a.cols == cols && b.cols == cols)
      for (uint32_t j = 0; j < cols; ++j) o[j] = op(ra[j], rb[j]);
    else if (a.cols == cols)
      for (uint32_t j = 0; j < cols; ++j) o[j] = op(ra[j], rb[0]);
    else if (b.cols == cols)
      for (uint32_t j = 0; j < cols; ++j) o[j] = op(ra[0], rb[j]);
    else
      for (uint32_t j = 0; j < cols; ++j) o[j] = op(ra[0], rb[0]);
  }
}

template <class Op>
STEPSIM_SIMD_CLONES void unary_elements(Op op, const float* x, size_t n, float* out) {
  for (size_t k = 0; k < n; ++k) out[k] = op(x[k]);
}

// out[i] = x[i][0] op x[i][1] op ... left to right: x transposed ([N x M]), so that the vector
// runs over the rows and each row's sum or max keeps its order.
template <class Op>
STEPSIM_SIMD_CLONES void row_fold(Op op, const float* xt, uint32_t rows, uint32_t cols, float* out) {
  std::copy(xt, xt + rows, out);
  for (uint32_t j = 1; j < cols; ++j) {
    const float* column = xt + size_t(j) * rows;
    for (uint32_t i = 0; i < rows; ++i) out[i] = op(out[i], column[i]);
  }
}

template <class Op>
MapFunction binary_fn(const std::string& name, const std::string& desc, Op op, bool row_only = false) {
  auto shape = [name, row_only](const std::vector<Tile>& in) {
    const Tile &a = in[0], &b = in[1];
    check_float(kMap, name, a);
    check_float(kMap, name, b);
    if (row_only && (b.rows != a.rows || b.cols != 1))
      fail(kMap, name, "expects x[MxN] and a row vector r[Mx1], got " + a.to_string() + " and " + b.to_string());
    return shape_tile(bdim(name, a, b, a.rows, b.rows), bdim(name, a, b, a.cols, b.cols), promote(a.dtype, b.dtype));
  };
  auto compute = [op](const std::vector<Tile>& in, const Tile& out) {
    std::vector<float> v(out.elems());
    binary_rows(op, in[0], in[1], out.rows, out.cols, v.data());
    return finish(out.rows, out.cols, out.dtype, std::move(v));
  };
  MapFunction f = make_map(name, desc, 2, shape, {FlopRule::Kind::kPerOutputElement, 1}, compute);
  f.signature = row_only ? TileSignature{TileSignature::Shape::kRowOperand, TileSignature::DTypeRule::kFirst}
                         : TileSignature{TileSignature::Shape::kBroadcast, TileSignature::DTypeRule::kPromote};
  return f;
}

// ---- elementwise unary ----
// `exps_per_elem`: exponentials among an element's FLOPs (flops.h, FlopRule::exps_per_element).
template <class Op>
MapFunction unary_fn(const std::string& name, const std::string& desc, Op op, uint8_t flops_per_elem,
                     uint8_t exps_per_elem = 0) {
  auto shape = [name](const std::vector<Tile>& in) {
    check_float(kMap, name, in[0]);
    return shape_tile(in[0].rows, in[0].cols, in[0].dtype);
  };
  auto compute = [op](const std::vector<Tile>& in, const Tile& out) {
    std::vector<float> v(out.elems());
    unary_elements(op, in[0].data->f.data(), v.size(), v.data());
    return finish(out.rows, out.cols, out.dtype, std::move(v));
  };
  return make_map(name, desc, 1, shape, {FlopRule::Kind::kPerOutputElement, flops_per_elem, exps_per_elem}, compute);
}

// ---- row reductions ----
// `empty`: the value of a row of no columns.
template <class Op>
MapFunction row_fn(const std::string& name, const std::string& desc, Op op, float empty) {
  auto shape = [name](const std::vector<Tile>& in) {
    check_float(kMap, name, in[0]);
    return shape_tile(in[0].rows, 1, in[0].dtype);
  };
  auto compute = [op, empty](const std::vector<Tile>& in, const Tile& out) {
    const Tile& x = in[0];
    std::vector<float> v(x.rows, empty);
    if (x.cols > 0) {
      std::unique_ptr<float[]> xt(new float[x.elems()]);  // every element written
      detail::transpose(x.data->f.data(), x.rows, x.cols, xt.get());
      row_fold(op, xt.get(), x.rows, x.cols, v.data());
    }
    return finish(out.rows, out.cols, out.dtype, std::move(v));
  };
  MapFunction f = make_map(name, desc, 1, shape, {FlopRule::Kind::kPerInputElement, 1}, compute);
  f.signature = {TileSignature::Shape::kRowReduce, TileSignature::DTypeRule::kFirst};
  return f;
}

// ---- masking ----
// mask_cols(x[MxN], n int32 [1x1]): the columns j >= n set to -Inf, so that a softmax (e.g.
// flash_attn_update) gives them no weight: the key positions past a request's KV length in its
// last tile. A select per element, no arithmetic: 0 FLOPs.
MapFunction mask_cols_fn() {
  const std::string name = "mask_cols";
  auto shape = [name](const std::vector<Tile>& in) {
    check_float(kMap, name, in[0]);
    if (in[1].dtype != DType::INT32 || in[1].rows != 1 || in[1].cols != 1)
      fail(kMap, name,
           "expects x[MxN] and a count int32 [1x1], got " + in[0].to_string() + " and " + in[1].to_string());
    return shape_tile(in[0].rows, in[0].cols, in[0].dtype);
  };
  auto compute = [](const std::vector<Tile>& in, const Tile& out) {
    const int32_t n = in[1].i(0, 0);
    std::vector<float> v(in[0].data->f);
    for (uint32_t i = 0; i < out.rows; ++i)
      for (uint32_t j = 0; j < out.cols; ++j)
        if (int64_t(j) >= n) v[size_t(i) * out.cols + j] = -INFINITY;
    return finish(out.rows, out.cols, out.dtype, std::move(v));
  };
  return make_map(name, "x[MxN] with columns j >= n set to -Inf (n: int32 [1x1]); 0 FLOPs (a select)", 2, shape,
                  {FlopRule::Kind::kNone}, compute);
}

// ---- select ----
// select(cond, a, b) = cond != 0 ? a : b per element, the three operands broadcast per dimension
// (equal, or 1). The chosen value is exact in the output dtype (bf16 only when a and b are both
// bf16), so nothing is rounded. 0 FLOPs (a select).
MapFunction select_fn() {
  const std::string name = "select";
  auto shape = [name](const std::vector<Tile>& in) {
    const Tile &c = in[0], &a = in[1], &b = in[2];
    check_float(kMap, name, a);
    check_float(kMap, name, b);
    auto dim = [&](uint32_t x, uint32_t y, uint32_t z) {
      uint32_t d = 1;
      for (uint32_t v : {x, y, z}) {
        if (v == d || v == 1) continue;
        if (d != 1)
          fail(kMap, name,
               "shapes " + c.to_string() + ", " + a.to_string() + " and " + b.to_string() +
                   " are not broadcast-compatible (each dimension must match or be 1)");
        d = v;
      }
      return d;
    };
    return shape_tile(dim(c.rows, a.rows, b.rows), dim(c.cols, a.cols, b.cols), promote(a.dtype, b.dtype));
  };
  auto compute = [](const std::vector<Tile>& in, const Tile& out) {
    const Tile &c = in[0], &a = in[1], &b = in[2];
    auto at = [](const Tile& t, uint32_t i, uint32_t j) {
      return size_t(t.rows == 1 ? 0 : i) * t.cols + (t.cols == 1 ? 0 : j);
    };
    const bool int_cond = c.dtype == DType::INT32;
    std::vector<float> v(out.elems());
    for (uint32_t i = 0; i < out.rows; ++i)
      for (uint32_t j = 0; j < out.cols; ++j) {
        const bool yes = int_cond ? c.data->i[at(c, i, j)] != 0 : c.data->f[at(c, i, j)] != 0.0f;  // NaN: true
        v[size_t(i) * out.cols + j] = yes ? a.data->f[at(a, i, j)] : b.data->f[at(b, i, j)];
      }
    return finish(out.rows, out.cols, out.dtype, std::move(v));
  };
  MapFunction f = make_map(name,
                           "(cond, a, b) -> cond != 0 ? a : b elementwise (torch.where); cond int32 or float; all "
                           "three broadcast; output dtype from a and b; 0 FLOPs (a select)",
                           3, shape, {FlopRule::Kind::kNone}, compute);
  f.signature = {TileSignature::Shape::kSelect, TileSignature::DTypeRule::kPromote};
  return f;
}

// ---- casts ----
// To fp32 (exact) or to bf16 (rounded once, RNE). A cast that changes no value keeps the payload.
MapFunction cast_fn(const std::string& name, DType to, const std::string& desc) {
  auto shape = [name, to](const std::vector<Tile>& in) {
    check_float(kMap, name, in[0]);
    return shape_tile(in[0].rows, in[0].cols, to);
  };
  auto compute = [](const std::vector<Tile>& in, const Tile& out) {
    if (out.dtype == DType::FP32 || in[0].dtype == out.dtype) {  // every value as it is
      Tile t = out;
      t.data = in[0].data;
      return t;
    }
    return finish(out.rows, out.cols, out.dtype, in[0].data->f);  // fp32 -> bf16, rounded once
  };
  MapFunction f = make_map(name, desc, 1, shape, {FlopRule::Kind::kNone}, compute);
  f.signature = {TileSignature::Shape::kSameAsFirst,
                 to == DType::FP32 ? TileSignature::DTypeRule::kFp32 : TileSignature::DTypeRule::kBf16};
  return f;
}

// ---- RoPE rotations ----
// x[MxN], N even. pairs: out[2i] = -x[2i+1], out[2i+1] = x[2i]; else (rotate-half) out[i] =
// -x[i+N/2], out[i+N/2] = x[i]. A permutation with sign flips: exact, 0 FLOPs (functions.h).
MapFunction rotate_fn(const std::string& name, bool pairs, const std::string& desc) {
  auto shape = [name](const std::vector<Tile>& in) {
    check_float(kMap, name, in[0]);
    if (in[0].cols % 2 != 0) fail(kMap, name, "needs an even number of columns, got " + in[0].to_string());
    return shape_tile(in[0].rows, in[0].cols, in[0].dtype);
  };
  auto compute = [pairs](const std::vector<Tile>& in, const Tile& out) {
    const uint32_t n = out.cols, h = n / 2;
    std::vector<float> v(out.elems());
    for (uint32_t i = 0; i < out.rows; ++i) {
      const float* x = in[0].data->f.data() + size_t(i) * n;
      float* o = v.data() + size_t(i) * n;
      for (uint32_t k = 0; k < h; ++k) {
        if (pairs) {
          o[2 * k] = -x[2 * k + 1];
          o[2 * k + 1] = x[2 * k];
        } else {
          o[k] = -x[h + k];
          o[h + k] = x[k];
        }
      }
    }
    return finish(out.rows, out.cols, out.dtype, std::move(v));
  };
  return make_map(name, desc, 1, shape, {FlopRule::Kind::kNone}, compute);
}

// ---- row mean and variance (LayerNorm) ----
// mean = (x_0 + x_1 + ... left to right) / N; var = the same sum of (x_j - mean)^2, / N, with the
// fp32 mean. Both sums run as row_sum's (row_fold over the transposed tile).
MapFunction row_moment_fn(const std::string& name, bool var, const std::string& desc) {
  auto shape = [name](const std::vector<Tile>& in) {
    check_float(kMap, name, in[0]);
    return shape_tile(in[0].rows, 1, in[0].dtype);
  };
  auto compute = [var](const std::vector<Tile>& in, const Tile& out) {
    const Tile& x = in[0];
    const uint32_t rows = x.rows, cols = x.cols;
    const float n = float(cols);
    auto add = [](float a, float b) { return a + b; };
    std::vector<float> mean(rows, 0.0f);
    std::unique_ptr<float[]> xt(new float[x.elems()]);  // every element written
    if (cols > 0) {
      detail::transpose(x.data->f.data(), rows, cols, xt.get());
      row_fold(add, xt.get(), rows, cols, mean.data());
    }
    for (float& m : mean) m = m / n;  // N = 0: 0 / 0 = NaN
    if (!var) return finish(out.rows, out.cols, out.dtype, std::move(mean));
    for (uint32_t j = 0; j < cols; ++j) {
      float* column = xt.get() + size_t(j) * rows;
      for (uint32_t i = 0; i < rows; ++i) {
        const float d = column[i] - mean[i];
        column[i] = d * d;
      }
    }
    std::vector<float> s(rows, 0.0f);
    if (cols > 0) row_fold(add, xt.get(), rows, cols, s.data());
    for (float& q : s) q = q / n;
    return finish(out.rows, out.cols, out.dtype, std::move(s));
  };
  MapFunction f = make_map(name, desc, 1, shape, {FlopRule::Kind::kPerInputElement, uint8_t(var ? 4 : 1)}, compute);
  f.signature = {TileSignature::Shape::kRowReduce, TileSignature::DTypeRule::kFirst};
  return f;
}

// ---- concatenation (KV caches, torch.cat) ----
// A then B along the rows (cat_rows) or the columns (cat_cols); the other dimension must agree.
MapFunction concat_fn(const std::string& name, bool rows, const std::string& desc) {
  auto shape = [name, rows](const std::vector<Tile>& in) {
    const Tile &a = in[0], &b = in[1];
    check_float(kMap, name, a);
    check_float(kMap, name, b);
    if (rows ? a.cols != b.cols : a.rows != b.rows)
      fail(kMap, name,
           std::string(rows ? "needs equal columns" : "needs equal rows") + ", got " + a.to_string() + " and " +
               b.to_string());
    return rows ? shape_tile(a.rows + b.rows, a.cols, promote(a.dtype, b.dtype))
                : shape_tile(a.rows, a.cols + b.cols, promote(a.dtype, b.dtype));
  };
  auto compute = [rows](const std::vector<Tile>& in, const Tile& out) {
    const Tile &a = in[0], &b = in[1];
    std::vector<float> v(out.elems());
    if (rows) {
      std::copy(a.data->f.begin(), a.data->f.begin() + a.elems(), v.begin());
      std::copy(b.data->f.begin(), b.data->f.begin() + b.elems(), v.begin() + a.elems());
    } else {
      for (uint32_t i = 0; i < out.rows; ++i) {
        std::copy_n(a.data->f.data() + size_t(i) * a.cols, a.cols, v.data() + size_t(i) * out.cols);
        std::copy_n(b.data->f.data() + size_t(i) * b.cols, b.cols, v.data() + size_t(i) * out.cols + a.cols);
      }
    }
    return finish(out.rows, out.cols, out.dtype, std::move(v));
  };
  MapFunction f = make_map(name, desc, 2, shape, {FlopRule::Kind::kNone}, compute);
  f.signature = {rows ? TileSignature::Shape::kConcatRows : TileSignature::Shape::kConcatCols,
                 TileSignature::DTypeRule::kPromote};
  return f;
}

// min(a, b): NaN-propagating as max_f32 (the first NaN operand, quieted); min(+0, -0) = -0.
inline float min_f32(float a, float b) {
  const float equal = std::signbit(a) ? a : b;  // prefers -0 over +0
  const float smaller = a == b ? equal : a < b ? a : b;
  return (a != a || b != b) ? max_f32(a, b) : smaller;
}

std::map<std::string, MapFunction> build() {
  std::map<std::string, MapFunction> m;
  // `lanes`: the units that compute the function bit for bit (none by default).
  auto add = [&m](MapFunction f, UnitLanes lanes = {}) { detail::register_function(m, std::move(f), lanes); };
  using V = VectorLanes;
  add(matmul_fn("matmul", false, false), {UnitOp::kMatmul, V::kNone, true});
  add(matmul_fn("matmul_t", true, false), {UnitOp::kMatmulT, V::kNone, true});
  add(matmul_fn("matmul_f32", false, true));
  add(matmul_fn("matmul_t_f32", true, true));
  const std::string bc = " elementwise with row/column/scalar broadcasting; output elements FLOPs";
  add(binary_fn("add", "a + b" + bc, [](float a, float b) { return a + b; }), {UnitOp::kAdd, V::kEw, true});
  add(binary_fn("sub", "a - b" + bc, [](float a, float b) { return a - b; }));
  add(binary_fn("mul", "a * b" + bc, [](float a, float b) { return a * b; }), {UnitOp::kMul, V::kEw, true});
  add(binary_fn("div", "a / b (IEEE fp32 division)" + bc, [](float a, float b) { return a / b; }));
  add(binary_fn("max", "max(a, b), NaN-propagating" + bc, [](float a, float b) { return max_f32(a, b); }));
  add(binary_fn("min", "min(a, b), NaN-propagating" + bc, [](float a, float b) { return min_f32(a, b); }));
  // Comparisons (torch.gt and the like, for masks and torch.where): 1 where true, 0 where false
  // (NaN compares false but for ne), exact.
  const std::string cmp = ": 1 where true, else 0 (IEEE comparison; NaN compares false, ne true)" + bc;
  add(binary_fn("gt", "a > b" + cmp, [](float a, float b) { return a > b ? 1.0f : 0.0f; }));
  add(binary_fn("ge", "a >= b" + cmp, [](float a, float b) { return a >= b ? 1.0f : 0.0f; }));
  add(binary_fn("lt", "a < b" + cmp, [](float a, float b) { return a < b ? 1.0f : 0.0f; }));
  add(binary_fn("le", "a <= b" + cmp, [](float a, float b) { return a <= b ? 1.0f : 0.0f; }));
  add(binary_fn("eq", "a == b" + cmp, [](float a, float b) { return a == b ? 1.0f : 0.0f; }));
  add(binary_fn("ne", "a != b" + cmp, [](float a, float b) { return a != b ? 1.0f : 0.0f; }));
  add(binary_fn(
      "sub_row", "x[MxN] - r[Mx1] (r broadcast along the row); M*N FLOPs", [](float a, float b) { return a - b; },
      true));
  add(unary_fn(
          "exp", "exp_f32 per element (table + polynomial); 4 FLOPs/element", [](float x) { return exp_f32(x); }, 4, 1),
      {UnitOp::kExp, V::kNone, true});
  add(unary_fn(
          "sigmoid", "sigmoid_f32 per element; 7 FLOPs/element", [](float x) { return sigmoid_f32(x); }, 7, 1),
      {UnitOp::kSigmoid, V::kNone, true});
  add(unary_fn(
          "silu", "silu_f32 = x * sigmoid(x) per element; 8 FLOPs/element", [](float x) { return silu_f32(x); }, 8, 1),
      {UnitOp::kSilu, V::kNone, true});
  add(unary_fn(
      "rsqrt", "1 / sqrt(x) per element (IEEE fp32 sqrt, then division); 2 FLOPs/element",
      [](float x) { return rsqrt_f32(x); }, 2));
  add(unary_fn(
      "gelu_tanh", "GELU, tanh form (gelu_tanh_f32) per element; 16 FLOPs/element",
      [](float x) { return gelu_tanh_f32(x); }, 16, 1));
  add(row_fn(
          "row_sum", "[MxN] -> [Mx1], fp32 sum left to right; M*N FLOPs", [](float a, float b) { return a + b; }, 0.0f),
      {UnitOp::kRowSum, V::kReduce, false});
  add(row_fn(
          "row_max", "[MxN] -> [Mx1], NaN-propagating max; M*N FLOPs", [](float a, float b) { return max_f32(a, b); },
          -INFINITY),
      {UnitOp::kRowMax, V::kReduce, false});
  add(mask_cols_fn());
  // For PyTorch programs (stepsim.torch): the approximate model only (no unit computes them).
  add(unary_fn(
      "neg", "-x per element (the sign bit flipped; exact); 1 FLOP/element", [](float x) { return -x; }, 1));
  add(unary_fn(
      "abs", "|x| per element (the sign bit cleared; exact); 1 FLOP/element", [](float x) { return std::fabs(x); }, 1));
  add(unary_fn(
      "sqrt", "sqrt(x) per element (IEEE fp32 square root); 1 FLOP/element", [](float x) { return sqrt_f32(x); }, 1));
  add(unary_fn(
      "tanh", "tanh_f32 per element (polynomial below 0.75, exp_f32 above); 14 FLOPs/element",
      [](float x) { return tanh_f32(x); }, 14, 1));
  add(unary_fn(
      "erf", "erf_f32 per element (polynomial below 1, exp_f32 of a polynomial to 4); 18 FLOPs/element",
      [](float x) { return erf_f32(x); }, 18, 1));
  add(unary_fn(
      "gelu", "GELU, exact form: (0.5 * x) * (1 + erf_f32(x * 0.70710677f)) per element; 22 FLOPs/element",
      [](float x) { return gelu_f32(x); }, 22, 1));
  add(select_fn());
  add(cast_fn("cast_f32", DType::FP32, "any float tile -> fp32, the same values (exact); 0 FLOPs"));
  add(cast_fn("cast_bf16", DType::BF16, "-> bf16: fp32 rounded once to bf16 (RNE), bf16 unchanged; 0 FLOPs"));
  add(rotate_fn("rotate_pairs", true,
                "x[MxN], N even: out[:, 2i] = -x[:, 2i+1], out[:, 2i+1] = x[:, 2i] (interleaved RoPE); exact; 0 FLOPs "
                "(data movement)"));
  add(rotate_fn("rotate_half", false,
                "x[MxN], N even: out[:, :N/2] = -x[:, N/2:], out[:, N/2:] = x[:, :N/2] (rotate-half RoPE); exact; 0 "
                "FLOPs (data movement)"));
  add(concat_fn("cat_rows", true,
                "(A[M1xN], B[M2xN]) -> [(M1+M2)xN]: A's rows then B's (a KV cache and the new keys); exact; 0 FLOPs "
                "(data movement)"));
  add(concat_fn("cat_cols", false,
                "(A[MxN1], B[MxN2]) -> [Mx(N1+N2)]: A's columns then B's (torch.cat on the last dim); exact; 0 FLOPs "
                "(data movement)"));
  add(row_moment_fn("row_mean", false, "[MxN] -> [Mx1]: fp32 sum left to right, then / N; M*N FLOPs"));
  add(row_moment_fn("row_var", true,
                    "[MxN] -> [Mx1], population variance: the fp32 mean as row_mean, the sum of (x - mean)^2 left to "
                    "right, / N; 4*M*N FLOPs"));
  return m;
}

const std::map<std::string, MapFunction>& registry() {
  static const std::map<std::string, MapFunction> r = build();
  return r;
}

}  // namespace

const MapFunction& map_function(const std::string& name) {
  const auto& r = registry();
  auto it = r.find(name);
  if (it == r.end()) {
    std::string known;
    for (const auto& [k, v] : r) known += (known.empty() ? "" : ", ") + k;
    throw std::invalid_argument("unknown map function '" + name + "'; known: " + known);
  }
  return it->second;
}

std::vector<std::string> map_function_names() {
  std::vector<std::string> v;
  for (const auto& [k, f] : registry()) v.push_back(k);
  return v;
}

}  // namespace stepsim
