// MoE layer with SwiGLU experts (step-paper-notes §2.7(a), §4.2): tokens are routed by a real
// routing trace (Partition), packed into tiles per expert, pass through the expert's SwiGLU
// FFN with its weights streamed from HBM once per packed tile, are unpacked and reassembled
// in token order, and stored.
//
// Static tiling (tile_n > 0): the expert's tokens are padded to a multiple of tile_n
//   route_e [P_e] -> Reshape(tile_n) [C_e, tile_n] -> Accum(retile_row) [C_e] of [tile_n x D]
//   with C_e = ceil(P_e / tile_n); padding rows are computed and then filtered out.
// Dynamic tiling (tile_n = 0, paper §5.2): Promote instead of Reshape, so each active expert
//   packs ONE tile of exactly P_e rows: [a_e] of [P_e x D] (a_e = 1 if the expert has tokens).
// Per packed tile, for the F/tile_f intermediate tiles (Repeat keeps x on chip):
//   gate = x W1[:, f], up = x W3[:, f], h = SiLU(gate) * up, y += h W2[f, :]  (Accum over f)
// then RetileStreamify back to rows, Reassemble by the same selectors: [1, B, topk] of [1 x D],
// stored as y[B * topk, D] (row t*topk + j = token t's j-th expert, experts in id order).
//
// Symbols: n_route_out<e> = P_e, the tokens routed to expert e (values from the trace); the
// dynamic variant adds a_e<e> (1 if P_e > 0).
#include <algorithm>

#include "graphs/layers/layer.h"
#include "sim/frontend/builder.h"
#include "sim/loader.h"

namespace stepsim::layers {

namespace {

using frontend::GraphBuilder;
using frontend::Stream;
using T = ParamSpec::Type;

struct ModelPreset {
  int64_t experts, topk, hidden, inter;
  const char* trace_b64;
  const char* trace_b1024;
};

const std::map<std::string, ModelPreset>& models() {
  static const std::map<std::string, ModelPreset> m = {
      {"mixtral", {8, 2, 4096, 14336, "shared:traces/moe/mixtral8x7b_b64_iter008_layer010.csv",
                   "shared:traces/moe/mixtral8x7b_b1024_iter019_layer009.csv"}},
      {"qwen", {128, 8, 2048, 768, "shared:traces/moe/qwen3_30b_a3b_b64_iter032_layer012.csv",
                "shared:traces/moe/qwen3_30b_a3b_b1024_iter022_layer016.csv"}},
  };
  return m;
}

std::string resolve(const std::string& p) { return p.rfind("shared:", 0) == 0 ? shared_dir() + "/" + p.substr(7) : p; }

Graph build_moe(const Params& p) {
  const std::string model = p.get_string("model");
  auto mit = models().find(model);
  if (mit == models().end()) throw std::invalid_argument("layer moe: model must be mixtral or qwen, got '" + model + "'");
  const ModelPreset& mp = mit->second;
  const int64_t B = p.get_int("batch");
  const int64_t D = p.get_int("hidden") ? p.get_int("hidden") : mp.hidden;
  const int64_t F = p.get_int("inter") ? p.get_int("inter") : mp.inter;
  const int64_t E = mp.experts, topk = mp.topk;
  const int64_t tn = p.get_int("tile_n"), tf = p.get_int("tile_f");
  std::string trace = p.get_string("trace");
  if (trace.empty()) {
    if (B <= 64) trace = mp.trace_b64;
    else trace = mp.trace_b1024;
  }
  if (B < 1 || D < 1 || F < 1 || tf < 1 || tn < 0) throw std::invalid_argument("layer moe: sizes must be >= 1 (tile_n >= 0)");
  if (F % tf) throw std::invalid_argument("layer moe: tile_f " + std::to_string(tf) + " does not divide inter " + std::to_string(F));
  const int64_t N = F / tf;
  const uint64_t bw = uint64_t(p.get_int("compute_bw"));
  const bool dynamic = tn == 0;

  const std::vector<int64_t> bins = expert_bins(resolve(trace), size_t(E), size_t(B));
  int64_t rows_in_trace = 0;
  for (int64_t v : bins) rows_in_trace += v;
  if (rows_in_trace != B * topk)
    throw std::invalid_argument("layer moe: trace " + trace + " has " + std::to_string(rows_in_trace / topk) +
                                " tokens, batch is " + std::to_string(B));
  const int64_t maxbin = *std::max_element(bins.begin(), bins.end());
  // Deep FIFOs where a stream waits for the slowest expert (Reassemble takes the experts'
  // rows in token order): room for every row an expert can hold back.
  const uint32_t deep = uint32_t((dynamic ? maxbin : (maxbin + tn - 1) / tn * tn) + 2);

  GraphBuilder b("moe_" + model + (dynamic ? "_dynamic" : "_static" + std::to_string(tn)),
                 "MoE layer, " + model + " (" + std::to_string(E) + " experts, top-" + std::to_string(topk) +
                     ", hidden " + std::to_string(D) + ", intermediate " + std::to_string(F) + "), batch " +
                     std::to_string(B) + ", " + (dynamic ? "dynamic tiling" : "static tile " + std::to_string(tn)) +
                     ", tile_f " + std::to_string(tf) + ", routing " + trace);
  const uint64_t seed = uint64_t(p.get_int("seed"));
  b.tensor("x", uint64_t(B), uint64_t(D), DType::BF16, seed);
  for (int64_t e = 0; e < E; ++e) {
    const std::string s = std::to_string(e);
    b.tensor("w1_" + s, uint64_t(D), uint64_t(F), DType::BF16, seed + 1000 + uint64_t(3 * e));
    b.tensor("w3_" + s, uint64_t(D), uint64_t(F), DType::BF16, seed + 1001 + uint64_t(3 * e));
    b.tensor("w2_" + s, uint64_t(F), uint64_t(D), DType::BF16, seed + 1002 + uint64_t(3 * e));
  }
  b.output_tensor("y", uint64_t(B * topk), uint64_t(D));
  b.trace_stream("routing", "{trace: '" + trace + "', kind: selector, rank: 1, limit: " + std::to_string(B) + "}");

  Stream x = b.load("tokens", "x", {1, D}, {B});
  Stream sel = b.source("routing", "routing");
  Stream sel_merge = b.source("routing_merge", "routing", uint32_t(B) + 1);
  std::vector<Stream> routed = b.partition("route", x, sel, size_t(E));
  b.set_depth("route", deep);
  std::vector<Stream> outs;
  for (int64_t e = 0; e < E; ++e) {
    const std::string s = std::to_string(e), pre = "e" + s + "_";
    const std::string P = "n_route_out" + s;
    Stream packed, pad;
    if (dynamic) {
      Stream one = b.promote(pre + "one", routed[size_t(e)]);
      b.symbol("a_e" + s, bins[size_t(e)] > 0 ? "1" : "0");
      one.set_dim(0, "a_e" + s);  // an expert without tokens packs no tile
      packed = b.accum(pre + "pack", "retile_row", 1, {one});
    } else {
      auto [chunks, padflags] = b.reshape(pre + "chunk", routed[size_t(e)], tn);
      b.set_depth(pre + "chunk", deep);
      packed = b.accum(pre + "pack", "retile_row", 1, {chunks});
      pad = padflags;
    }
    Stream xr = b.repeat(pre + "xrep", packed, N);
    Stream w1 = b.load(pre + "w1", "w1_" + s, {D, tf}, {N}, {}, packed);
    Stream w3 = b.load(pre + "w3", "w3_" + s, {D, tf}, {N}, {}, packed);
    Stream w2 = b.load(pre + "w2", "w2_" + s, {tf, D}, {N}, {}, packed);
    Stream gate = b.map(pre + "gate", "matmul", {xr, w1}, bw);
    Stream up = b.map(pre + "up", "matmul", {xr, w3}, bw);
    Stream act = b.map(pre + "act", "silu", {gate}, bw);
    Stream h = b.map(pre + "h", "mul", {act, up}, bw);
    Stream y = b.accum(pre + "down", "matmul_acc", 1, {h, w2}, bw);
    Stream rows = b.flatmap(pre + "rows", "retile_streamify_row", 1, {y});
    Stream flat = b.flatten(pre + "flat", rows, 0, 1);
    if (dynamic) {
      b.set_depth(pre + "flat", deep);
      outs.push_back(flat);
    } else {
      Stream padf = b.flatten(pre + "padf", pad, 0, 1);
      b.set_depth(pre + "padf", deep);
      Stream out = b.flatmap(pre + "out", "filter_padding", 0, {flat, padf});
      out.set_dim(0, P);  // padding removed: the expert's tokens again
      b.set_depth(pre + "out", deep);
      outs.push_back(out);
    }
  }
  Stream merged = b.reassemble("merge", outs, sel_merge, 0);
  b.store("store", "y", {1, D}, merged, {B * topk});
  return b.graph();
}

}  // namespace

void register_moe(LayerRegistry& r) {
  r.add({"moe",
         "MoE layer with SwiGLU experts routed by a real trace (Mixtral-8x7B or Qwen3-30B-A3B); static tiling "
         "(tile_n) or dynamic tiling (tile_n = 0)",
         {{"model", T::kString, "mixtral", "mixtral (8 experts, top-2, 4096/14336) or qwen (128 experts, top-8, 2048/768)"},
          {"batch", T::kInt, "64", "tokens; the first `batch` rows of the trace"},
          {"tile_n", T::kInt, "16", "static tile of the per-expert token dimension; 0 = dynamic tiling"},
          {"tile_f", T::kInt, "64", "intermediate tile"},
          {"hidden", T::kInt, "0", "hidden dimension (0 = the model's)"},
          {"inter", T::kInt, "0", "intermediate dimension (0 = the model's)"},
          {"trace", T::kString, "", "routing trace CSV (default: the model's b64 or b1024 trace in ../shared/traces/moe)"},
          {"compute_bw", T::kInt, "0", "FLOPs/cycle per higher-order node (0 = the preset's compute_bw)"},
          {"seed", T::kInt, "1", "seed of the random tensors"}},
         build_moe});
}

}  // namespace stepsim::layers
