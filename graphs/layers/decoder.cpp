// One Transformer decoder layer in decode (paper §5.5, Fig. 17): QKV generation, GQA attention
// over every KV head, the output projection with the residual, and the MoE, fused into one STeP
// graph. The phases hand their results over through HBM tensors, and each phase starts when the
// previous one's stores are acknowledged (phase_token: a Source gated by the acks), so it reads
// what was written; the weight loads are not gated and may prefetch.
//
//   qkv_   per batch region r (batch/regions tokens): x_r [Bt x D] repeated over the
//          (Hq + 2 Hkv) head columns of wqkv (loaded once, broadcast to the regions), Map matmul
//          -> [Bt x hd] per head column, split into rows and scattered by RandomOffChipStore: q
//          rows to q [B*Hq, hd] (row token*Hq + head), the new token's k and v rows into the KV
//          caches at row item*max_tiles*tile_n + context (item = token*Hkv + kv head).
//   attn_  decode attention (attention.cpp) over the B*Hkv (request, KV head) items: query tile
//          [q_per_kv x hd] = tile `item` of q, KV tiles from the caches (the new token included),
//          output tile `item` of attn [B*Hq, hd]; interleaved or dynamic over the regions.
//   oproj_ per region: the attention rows of its tokens, head by head ([1 x hd] rows gathered into
//          [Bt x hd] tiles), Accum matmul_acc with wo's [hd x D] row blocks, plus the residual x_r,
//          stored to h [B, D].
//   moe_   the MoE layer (moe.cpp) on h, output y [B, D]: one pipeline per expert, or
//          time-multiplexed over moe_regions (moe_tm).
// Not modelled: RMSNorm, rotary embedding and the router's gating matmul (the routing comes from
// the trace) — element-wise or small next to the matmuls above.
#include <algorithm>

#include "graphs/layers/blocks.h"
#include "graphs/layers/layer.h"

namespace stepsim::layers {

namespace {

using frontend::GraphBuilder;
using frontend::Stream;
using T = ParamSpec::Type;

struct DecoderModel {
  int64_t hidden, q_heads, kv_heads, head_dim;
};

std::string text_list(const std::vector<int64_t>& v, const std::string& fmt_open = "",
                      const std::string& fmt_close = "") {
  std::string s;
  for (int64_t x : v) s += fmt_open + std::to_string(x) + fmt_close + " ";
  return s + "D";
}

Graph build_decoder(const Params& p) {
  const std::string model = p.get_string("model");
  DecoderModel m;
  if (model == "qwen")
    m = {2048, 32, 4, 64};
  else if (model == "mixtral")
    m = {4096, 32, 8, 128};
  else
    throw std::invalid_argument("layer decoder: model must be qwen or mixtral, got '" + model + "'");
  if (p.get_int("hidden")) m.hidden = p.get_int("hidden");
  if (p.get_int("head_dim")) m.head_dim = p.get_int("head_dim");
  if (p.get_int("q_heads")) m.q_heads = p.get_int("q_heads");
  if (p.get_int("kv_heads")) m.kv_heads = p.get_int("kv_heads");
  const int64_t B = p.get_int("batch"), R = p.get_int("regions"), D = m.hidden, hd = m.head_dim, Hq = m.q_heads,
                Hkv = m.kv_heads, tn = p.get_int("tile_n");
  if (B < 1 || R < 1 || D < 1 || hd < 1 || Hq < 1 || Hkv < 1 || tn < 1)
    throw std::invalid_argument("layer decoder: sizes must be >= 1");
  if (B % R)
    throw std::invalid_argument("layer decoder: regions " + std::to_string(R) + " must divide batch " +
                                std::to_string(B));
  if (Hq % Hkv)
    throw std::invalid_argument("layer decoder: kv_heads " + std::to_string(Hkv) + " must divide q_heads " +
                                std::to_string(Hq));
  const int64_t Bt = B / R, qpk = Hq / Hkv, cols = Hq + 2 * Hkv;
  const std::string attn_par = p.get_string("attention");
  if (attn_par != "interleaved" && attn_par != "dynamic")
    throw std::invalid_argument("layer decoder: attention must be interleaved or dynamic, got '" + attn_par + "'");
  const uint64_t seed = uint64_t(p.get_int("seed")), proj_bw = uint64_t(p.get_int("proj_compute_bw"));

  // KV lengths: request i's context (before the decoded token), the same for each of its KV heads.
  const std::vector<int64_t> ctx = kv_lengths(p.get_string("kv_trace"), p.get_int("kv_first_row"), B);
  AttentionSpec a;
  a.head_dim = hd;
  a.q_per_kv = qpk;
  a.kv_heads = Hkv;  // a region takes all KV heads of the requests it gets
  a.regions = R;
  a.tile_n = tn;
  a.parallel = attn_par;
  a.q = "q";
  a.out = "attn";
  a.writeback = false;  // the QKV phase writes the new token's k and v
  a.compute_bw = uint64_t(p.get_int("attn_compute_bw"));
  a.metadata_depth = uint32_t(p.get_int("metadata_depth"));
  a.seed = seed;
  for (int64_t i = 0; i < B; ++i)
    for (int64_t h = 0; h < Hkv; ++h) {
      a.len.push_back(ctx[size_t(i)] + 1);
      a.max_tiles = std::max(a.max_tiles, (ctx[size_t(i)] + 1 + tn - 1) / tn);
    }
  const int64_t items = B * Hkv, cache_rows = items * a.max_tiles * tn;

  const int64_t moe_regions = p.get_int("moe_regions"), moe_tile = p.get_int("moe_tile_n");
  const std::string moe_layer = moe_regions ? "moe_tm" : "moe";
  GraphBuilder b("decoder_" + model + "_b" + std::to_string(B) + "_" + attn_par + "_" +
                     (moe_tile ? "static" + std::to_string(moe_tile) : std::string("dynamic")) +
                     (moe_regions ? "_tm" + std::to_string(moe_regions) : ""),
                 "decoder layer of " + model + " (hidden " + std::to_string(D) + ", " + std::to_string(Hq) +
                     " query / " + std::to_string(Hkv) + " KV heads of " + std::to_string(hd) + "), batch " +
                     std::to_string(B) + " in " + std::to_string(R) + " regions, KV lengths from rows " +
                     std::to_string(p.get_int("kv_first_row")) + ".. of " + p.get_string("kv_trace") + ", " + attn_par +
                     " attention, MoE " +
                     (moe_tile ? "static tile " + std::to_string(moe_tile) : std::string("dynamic tiling")) +
                     (moe_regions ? ", time-multiplexed over " + std::to_string(moe_regions) + " regions" : ""));
  b.tensor("x", uint64_t(B), uint64_t(D), DType::BF16, seed);
  b.tensor("wqkv", uint64_t(D), uint64_t(cols * hd), DType::BF16, seed + 1);
  b.tensor("kcache", uint64_t(cache_rows), uint64_t(hd), DType::BF16, seed + 2);
  b.tensor("vcache", uint64_t(cache_rows), uint64_t(hd), DType::BF16, seed + 3);
  b.tensor("wo", uint64_t(Hq * hd), uint64_t(D), DType::BF16, seed + 4);
  // Written during the run (and saved in functional mode, for inspection).
  b.output_tensor("q", uint64_t(B * Hq), uint64_t(hd));
  b.output_tensor("attn", uint64_t(B * Hq), uint64_t(hd));
  b.output_tensor("h", uint64_t(B), uint64_t(D));
  b.output_tensor("y", uint64_t(B), uint64_t(D));

  // ---- QKV generation.
  b.set_prefix("qkv_");
  const uint64_t bw = proj_bw;
  Stream w = b.load("w", "wqkv", {D, hd}, {1, cols}, {0, 1});  // [1, 1, cols] of [D x hd]
  std::vector<Stream> wr = b.broadcast("w_bc", w, size_t(R));
  std::vector<Stream> qkv_acks;
  for (int64_t r = 0; r < R; ++r) {
    const std::string id = std::to_string(r);
    Stream xr = b.add1("x" + id, OpKind::kLinearOffChipLoad,
                       {{param::kTensor.name, "x"},
                        {param::kTile.name, frontend::int_list({Bt, D})},
                        {param::kOutShape.name, "[1]"},
                        {param::kOffset.name, id}},
                       {});
    Stream m1 = b.map("proj" + id, "matmul", {b.repeat("xrep" + id, xr, cols), wr[size_t(r)]}, bw);       // [1,1,cols]
    Stream rows = b.flatten("flat" + id, b.flatmap("rows" + id, "retile_streamify_row", 1, {m1}), 0, 3);  // [cols*Bt]
    std::vector<int64_t> which, qa, ka, va;
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t t = 0; t < Bt; ++t) {
        const int64_t tok = r * Bt + t;
        if (c < Hq) {
          which.push_back(0);
          qa.push_back(tok * Hq + c);
        } else {
          const bool is_k = c < Hq + Hkv;
          const int64_t item = tok * Hkv + (is_k ? c - Hq : c - Hq - Hkv);
          which.push_back(is_k ? 1 : 2);
          (is_k ? ka : va).push_back(item * a.max_tiles * tn + ctx[size_t(tok)]);  // the new token's row
        }
      }
    b.literal_stream("part" + id, text_list(which, "{", "}"));
    std::vector<Stream> parts = b.partition("split" + id, rows, b.source("part" + id, "part" + id), 3);
    const std::vector<std::pair<std::string, std::vector<int64_t>>> dests = {{"q", qa}, {"kcache", ka}, {"vcache", va}};
    for (size_t k = 0; k < 3; ++k) {
      const std::string name = dests[k].first + id;
      parts[k].set_dim(0, std::to_string(dests[k].second.size()));
      b.literal_stream(name + "_addr", text_list(dests[k].second));
      qkv_acks.push_back(
          b.add1(name + "_store", OpKind::kRandomOffChipStore,
                 {{param::kTensor.name, dests[k].first}, {param::kTile.name, frontend::int_list({1, hd})}},
                 {{"waddr", b.source(name + "_addr", name + "_addr")}, {"wdata", parts[k]}}));
    }
  }

  // ---- Attention over the (request, KV head) items.
  b.set_prefix("attn_");
  a.after = qkv_acks;
  std::vector<Stream> attn_acks = add_attention(b, a);
  if (p.get_int("attn_fifo_depth")) b.set_prefix_depth(uint32_t(p.get_int("attn_fifo_depth")));

  // ---- Output projection and residual.
  b.set_prefix("oproj_");
  const std::optional<Stream> go = phase_token(b, "start", attn_acks);
  Stream wo = b.load("wo", "wo", {hd, D}, {Hq});  // [1, Hq] of [hd x D]
  std::vector<Stream> wor = b.broadcast("wo_bc", wo, size_t(R));
  std::vector<Stream> h_acks;
  for (int64_t r = 0; r < R; ++r) {
    const std::string id = std::to_string(r);
    // Token t's head j is row (r*Bt + t)*Hq + j of attn: [1, Hq, Bt] of [1 x hd], then [1, Hq] of [Bt x hd].
    Stream o = b.add1("o" + id, OpKind::kLinearOffChipLoad,
                      {{param::kTensor.name, "attn"},
                       {param::kTile.name, frontend::int_list({1, hd})},
                       {param::kOutShape.name, frontend::int_list({Hq, Bt})},
                       {param::kStride.name, frontend::int_list({1, Hq})},
                       {param::kOffset.name, std::to_string(r * Bt * Hq)}},
                      {{"ref", *go}});
    Stream ot = b.accum("otile" + id, "retile_row", 1, {o}, bw);
    Stream proj = b.accum("proj" + id, "matmul_acc", 1, {ot, wor[size_t(r)]}, bw);  // [1] of [Bt x D]
    Stream xr = b.add1("x" + id, OpKind::kLinearOffChipLoad,
                       {{param::kTensor.name, "x"},
                        {param::kTile.name, frontend::int_list({Bt, D})},
                        {param::kOutShape.name, "[1]"},
                        {param::kOffset.name, id}},
                       {{"ref", *go}});
    Stream hr = b.map("residual" + id, "add", {proj, b.flatten("xflat" + id, xr, 0, 1)}, bw);
    b.literal_stream("h" + id + "_addr", id + " D");
    h_acks.push_back(b.add1("h" + id + "_store", OpKind::kRandomOffChipStore,
                            {{param::kTensor.name, "h"}, {param::kTile.name, frontend::int_list({Bt, D})}},
                            {{"waddr", b.source("h" + id + "_addr", "h" + id + "_addr")}, {"wdata", hr}}));
  }

  // ---- MoE on h.
  b.set_prefix("moe_");
  std::map<std::string, std::string> mp = {{"model", model},
                                           {"batch", std::to_string(B)},
                                           {"tile_n", std::to_string(moe_tile)},
                                           {"tile_f", std::to_string(p.get_int("moe_tile_f"))},
                                           {"hidden", std::to_string(D)},
                                           {"inter", std::to_string(p.get_int("inter"))},
                                           {"trace", p.get_string("moe_trace")},
                                           {"compute_bw", std::to_string(p.get_int("moe_compute_bw"))},
                                           {"seed", std::to_string(seed + 100)}};
  if (moe_regions) mp["regions"] = std::to_string(moe_regions);
  const LayerInfo& moe_info = LayerRegistry::instance().find(moe_layer);
  MoeIo io;
  io.x = "h";
  io.y = "y";
  io.declare_io = false;
  io.after = h_acks;
  add_moe(b, moe_layer, Params("layer " + moe_layer, "decoder", &moe_info.params, mp), io);
  b.set_prefix("");
  return b.graph();
}

}  // namespace

void register_decoder(LayerRegistry& r) {
  r.add(
      {"decoder",
       "One Transformer decoder layer in decode (paper Fig. 17): QKV generation and output projection over batch "
       "regions, GQA attention over every KV head (interleaved or dynamic), MoE (static or dynamic tiling, optionally "
       "time-multiplexed); phases hand over through HBM, each starting when the previous one's stores are acknowledged",
       {{"model", T::kString, "qwen",
         "qwen (hidden 2048, 32 query / 4 KV heads of 64, MoE 128 experts top-8) or mixtral (4096, 32 / 8 of 128, "
         "8 experts top-2)"},
        {"batch", T::kInt, "64", "requests (tokens decoded)"},
        {"regions", T::kInt, "4", "batch regions of the QKV generation, output projection and attention"},
        {"attention", T::kString, "dynamic", "attention parallelization: interleaved or dynamic"},
        {"tile_n", T::kInt, "32", "tokens per KV-cache tile"},
        {"kv_trace", T::kString, "shared:traces/azure/AzureLLMInferenceTrace_conv.csv",
         "Azure LLM inference trace (ContextTokens = KV length before the decoded token)"},
        {"kv_first_row", T::kInt, "4007",
         "first data row (1-based) of the batch in kv_trace (the artifact's "
         "medium-variability B=64 batch)"},
        {"moe_tile_n", T::kInt, "0", "MoE static tile of the per-expert token dimension; 0 = dynamic tiling"},
        {"moe_tile_f", T::kInt, "64", "MoE intermediate tile"},
        {"moe_regions", T::kInt, "0",
         "time-multiplexed MoE over this many regions (must divide the experts); 0 = one "
         "pipeline per expert"},
        {"moe_trace", T::kString, "", "routing trace CSV of this layer (default: the model's b64/b1024 trace)"},
        {"hidden", T::kInt, "0", "hidden dimension (0 = the model's)"},
        {"inter", T::kInt, "0", "MoE intermediate dimension (0 = the model's)"},
        {"head_dim", T::kInt, "0", "head dimension (0 = the model's)"},
        {"q_heads", T::kInt, "0", "query heads (0 = the model's)"},
        {"kv_heads", T::kInt, "0", "KV heads (0 = the model's)"},
        {"proj_compute_bw", T::kInt, "0", "FLOPs/cycle per QKV / output-projection node (0 = the preset's compute_bw)"},
        {"attn_compute_bw", T::kInt, "2048", "FLOPs/cycle per attention node (the artifact's attention runs: 2048)"},
        {"moe_compute_bw", T::kInt, "0", "FLOPs/cycle per MoE node (0 = the preset's compute_bw)"},
        {"attn_fifo_depth", T::kInt, "1",
         "FIFO depth of the attention's data streams (the artifact's attention runs: 1; 0 "
         "= the preset's fifo_depth)"},
        {"metadata_depth", T::kInt, "16", "FIFO depth of the attention's request metadata and dispatch streams"},
        {"seed", T::kInt, "1", "seed of the random tensors"}},
       build_decoder});
}

}  // namespace stepsim::layers
