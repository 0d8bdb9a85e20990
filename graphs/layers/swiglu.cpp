// SwiGLU expert, y = (SiLU(x W1) * (x W3)) W2, with the HDL-validation schedule "mn_mk"
// (step-paper-notes §5; reference-simulator-notes §4.2 "Fig 8"): the gate and up matmuls are
// tiled on M (batch) and N (intermediate), the down matmul on M and K (intermediate), the hidden
// dimension is the matmuls' reduction (tile_h = hidden: one tile, as in all 15 points of Fig. 8;
// a smaller tile_h reduces over hidden tiles with an Accum and replays the x tiles from a
// memory unit).
//
// Streams (M = batch/tile_b, N = inter/tile_f, K = hidden/tile_h):
//   x     [1, M] of [tile_b x hidden]          (tile_h = hidden; else [1, M, N, K] of [tile_b x tile_h])
//   x_rep [1, M, N]                             Repeat N (x stays on chip)
//   w1,w3 [1, M, N] of [hidden x tile_f]        re-read for every batch tile (stride 0)
//   gate, up, act, h   [1, M, N] of [tile_b x tile_f]
//   w2    [1, M, N] of [tile_f x hidden]
//   y     [1, M] of [tile_b x hidden]           Accum(matmul_acc) over the N intermediate tiles
#include "graphs/layers/layer.h"
#include "sim/frontend/builder.h"

namespace stepsim::layers {

namespace {

using frontend::GraphBuilder;
using frontend::Stream;
using T = ParamSpec::Type;

int64_t positive(const Params& p, const std::string& k) { return positive_param(p, "swiglu", k); }

void divides(int64_t tile, int64_t dim, const std::string& what) {
  if (dim % tile != 0)
    throw std::invalid_argument("layer swiglu: " + what + " tile " + std::to_string(tile) + " does not divide " +
                                std::to_string(dim));
}

Graph build_swiglu(const Params& p) {
  const int64_t B = positive(p, "batch"), D = positive(p, "hidden"), F = positive(p, "inter");
  const int64_t tb = positive(p, "tile_b"), tf = positive(p, "tile_f");
  const int64_t th = p.get_int("tile_h") ? positive(p, "tile_h") : D;
  divides(tb, B, "batch");
  divides(tf, F, "intermediate");
  divides(th, D, "hidden");
  const int64_t M = B / tb, N = F / tf, K = D / th;
  const uint64_t bw = uint64_t(p.get_int("compute_bw"));

  GraphBuilder b("swiglu", "SwiGLU expert, schedule mn_mk: batch " + std::to_string(B) + ", hidden " +
                               std::to_string(D) + ", intermediate " + std::to_string(F) + ", tiles [" +
                               std::to_string(tb) + ", " + std::to_string(th) + ", " + std::to_string(tf) + "]");
  const uint64_t seed = uint64_t(p.get_int("seed"));
  const int64_t block = p.get_int("block");
  if (block < 0) throw std::invalid_argument("layer swiglu: block must be >= 0, got " + std::to_string(block));
  b.set_tensor_block(uint64_t(block), uint64_t(block));
  b.tensor("x", uint64_t(B), uint64_t(D), DType::BF16, seed);
  b.tensor("w1", uint64_t(D), uint64_t(F), DType::BF16, seed + 1);
  b.tensor("w3", uint64_t(D), uint64_t(F), DType::BF16, seed + 2);
  b.tensor("w2", uint64_t(F), uint64_t(D), DType::BF16, seed + 3);
  b.output_tensor("y", uint64_t(B), uint64_t(D));

  Stream gate, up;
  if (K == 1) {
    Stream x = b.load("x_load", "x", {tb, D}, {M});
    Stream xr = b.repeat("x_rep", x, N);
    Stream w1 = b.load("w1_load", "w1", {D, tf}, {M, N}, {0, 1});
    Stream w3 = b.load("w3_load", "w3", {D, tf}, {M, N}, {0, 1});
    gate = b.map("gate", "matmul", {xr, w1}, bw);
    up = b.map("up", "matmul", {xr, w3}, bw);
  } else {
    // Tiled reduction over hidden: x tiles of one batch tile are kept in a memory unit and
    // replayed for every intermediate tile.
    Stream x = b.load("x_load", "x", {tb, th}, {M, K});
    Stream xbuf = b.bufferize("x_buf", x, 1);
    Stream xr = b.streamify("x_rep", xbuf, {N});
    Stream w1 = b.load("w1_load", "w1", {th, tf}, {M, N, K}, {0, 1, N});
    Stream w3 = b.load("w3_load", "w3", {th, tf}, {M, N, K}, {0, 1, N});
    gate = b.accum("gate", "matmul_acc", 1, {xr, w1}, bw);
    up = b.accum("up", "matmul_acc", 1, {xr, w3}, bw);
  }
  Stream act = b.map("act", "silu", {gate}, bw);
  Stream h = b.map("h", "mul", {act, up}, bw);
  Stream w2 = b.load("w2_load", "w2", {tf, D}, {M, N}, {0, 1});
  Stream y = b.accum("down", "matmul_acc", 1, {h, w2}, bw);
  b.store("y_store", "y", {tb, D}, y, {M});
  return b.graph();
}

}  // namespace

void register_swiglu(LayerRegistry& r) {
  r.add({"swiglu",
         "SwiGLU expert (SiLU(x W1) * (x W3)) W2 with the HDL-validation schedule mn_mk (paper Fig. 8); "
         "x, W1, W3, W2 random bf16 in HBM, y stored to HBM",
         {{"batch", T::kInt, "64", "tokens (rows of x)"},
          {"hidden", T::kInt, "256", "hidden dimension D"},
          {"inter", T::kInt, "512", "intermediate dimension F"},
          {"tile_b", T::kInt, "16", "batch tile (M tile)"},
          {"tile_h", T::kInt, "0", "hidden tile (0 = hidden: untiled reduction, as in Fig. 8)"},
          {"tile_f", T::kInt, "64", "intermediate tile (N tile of gate/up, K tile of down)"},
          {"compute_bw", T::kInt, "0", "FLOPs/cycle per higher-order node (0 = the preset's compute_bw)"},
          {"seed", T::kInt, "1", "seed of the random tensors (x; W1, W3, W2 use seed+1..3)"},
          {"block", T::kInt, "0",
           "store every tensor in [block x block] blocks, each contiguous (0 = row-major); the HDL validation "
           "uses 16, the compute units' tile"}},
         build_swiglu});
}

}  // namespace stepsim::layers
