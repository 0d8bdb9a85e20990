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

// The layer's sizes, the model's with the parameters' overrides, checked once for every phase.
struct DecoderShape {
  std::string model, attention;  // attention: its parallelization
  int64_t batch, regions, hidden, q_heads, kv_heads, head_dim, tile_n;
  int64_t region_tokens, qkv_cols;  // tokens per batch region; head columns of wqkv (Hq + 2 Hkv)
  uint64_t seed, proj_bw;
  std::vector<int64_t> context;  // per request: its KV length before the decoded token
};

std::string text_list(const std::vector<int64_t>& v, const std::string& fmt_open = "",
                      const std::string& fmt_close = "") {
  std::string s;
  for (int64_t x : v) s += fmt_open + std::to_string(x) + fmt_close + " ";
  return s + "D";
}

DecoderModel model_sizes(const Params& p, const std::string& model) {
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
  return m;
}

DecoderShape decoder_shape(const Params& p) {
  DecoderShape s;
  s.model = p.get_string("model");
  const DecoderModel m = model_sizes(p, s.model);
  s.batch = p.get_int("batch");
  s.regions = p.get_int("regions");
  s.hidden = m.hidden;
  s.head_dim = m.head_dim;
  s.q_heads = m.q_heads;
  s.kv_heads = m.kv_heads;
  s.tile_n = p.get_int("tile_n");
  const int64_t B = s.batch, R = s.regions, Hq = s.q_heads, Hkv = s.kv_heads;
  if (B < 1 || R < 1 || s.hidden < 1 || s.head_dim < 1 || Hq < 1 || Hkv < 1 || s.tile_n < 1)
    throw std::invalid_argument("layer decoder: sizes must be >= 1");
  if (B % R)
    throw std::invalid_argument("layer decoder: regions " + std::to_string(R) + " must divide batch " +
                                std::to_string(B));
  if (Hq % Hkv)
    throw std::invalid_argument("layer decoder: kv_heads " + std::to_string(Hkv) + " must divide q_heads " +
                                std::to_string(Hq));
  s.region_tokens = B / R;
  s.qkv_cols = Hq + 2 * Hkv;
  s.attention = p.get_string("attention");
  if (s.attention != "interleaved" && s.attention != "dynamic")
    throw std::invalid_argument("layer decoder: attention must be interleaved or dynamic, got '" + s.attention + "'");
  s.seed = uint64_t(p.get_int("seed"));
  s.proj_bw = uint64_t(p.get_int("proj_compute_bw"));
  s.context = kv_lengths(p.get_string("kv_trace"), p.get_int("kv_first_row"), B);
  return s;
}

// The attention over the B*Hkv (request, KV head) items; its max_tiles also lays out the KV caches.
AttentionSpec decoder_attention(const Params& p, const DecoderShape& s) {
  AttentionSpec a;
  a.head_dim = s.head_dim;
  a.q_per_kv = s.q_heads / s.kv_heads;
  a.kv_heads = s.kv_heads;  // a region takes all KV heads of the requests it gets
  a.regions = s.regions;
  a.tile_n = s.tile_n;
  a.parallel = s.attention;
  a.q = "q";
  a.out = "attn";
  a.writeback = false;  // the QKV phase writes the new token's k and v
  a.compute_bw = uint64_t(p.get_int("attn_compute_bw"));
  a.metadata_depth = uint32_t(p.get_int("metadata_depth"));
  a.seed = s.seed;
  for (int64_t i = 0; i < s.batch; ++i)
    for (int64_t h = 0; h < s.kv_heads; ++h) {
      a.len.push_back(s.context[size_t(i)] + 1);
      a.max_tiles = std::max(a.max_tiles, (s.context[size_t(i)] + 1 + s.tile_n - 1) / s.tile_n);
    }
  return a;
}

std::string decoder_name(const Params& p, const DecoderShape& s) {
  const int64_t moe_regions = p.get_int("moe_regions"), moe_tile = p.get_int("moe_tile_n");
  return "decoder_" + s.model + "_b" + std::to_string(s.batch) + "_" + s.attention + "_" +
         (moe_tile ? "static" + std::to_string(moe_tile) : std::string("dynamic")) +
         (moe_regions ? "_tm" + std::to_string(moe_regions) : "");
}

std::string decoder_description(const Params& p, const DecoderShape& s) {
  const int64_t moe_regions = p.get_int("moe_regions"), moe_tile = p.get_int("moe_tile_n");
  return "decoder layer of " + s.model + " (hidden " + std::to_string(s.hidden) + ", " + std::to_string(s.q_heads) +
         " query / " + std::to_string(s.kv_heads) + " KV heads of " + std::to_string(s.head_dim) + "), batch " +
         std::to_string(s.batch) + " in " + std::to_string(s.regions) + " regions, KV lengths from rows " +
         std::to_string(p.get_int("kv_first_row")) + ".. of " + p.get_string("kv_trace") + ", " + s.attention +
         " attention, MoE " + (moe_tile ? "static tile " + std::to_string(moe_tile) : std::string("dynamic tiling")) +
         (moe_regions ? ", time-multiplexed over " + std::to_string(moe_regions) + " regions" : "");
}

void declare_tensors(GraphBuilder& b, const DecoderShape& s, int64_t max_tiles) {
  const int64_t B = s.batch, D = s.hidden, hd = s.head_dim, Hq = s.q_heads;
  const int64_t cache_rows = B * s.kv_heads * max_tiles * s.tile_n;
  b.tensor("x", uint64_t(B), uint64_t(D), DType::BF16, s.seed);
  b.tensor("wqkv", uint64_t(D), uint64_t(s.qkv_cols * hd), DType::BF16, s.seed + 1);
  b.tensor("kcache", uint64_t(cache_rows), uint64_t(hd), DType::BF16, s.seed + 2);
  b.tensor("vcache", uint64_t(cache_rows), uint64_t(hd), DType::BF16, s.seed + 3);
  b.tensor("wo", uint64_t(Hq * hd), uint64_t(D), DType::BF16, s.seed + 4);
  // Written during the run (and saved in functional mode, for inspection).
  b.output_tensor("q", uint64_t(B * Hq), uint64_t(hd));
  b.output_tensor("attn", uint64_t(B * Hq), uint64_t(hd));
  b.output_tensor("h", uint64_t(B), uint64_t(D));
  b.output_tensor("y", uint64_t(B), uint64_t(D));
}

// Region r's tokens x_r [Bt x D], in one tile.
Stream load_region_x(GraphBuilder& b, const DecoderShape& s, int64_t r, const frontend::Inputs& inputs) {
  const std::string id = std::to_string(r);
  return b.add1("x" + id, OpKind::kLinearOffChipLoad,
                {{param::kTensor.name, "x"},
                 {param::kTile.name, frontend::int_list({s.region_tokens, s.hidden})},
                 {param::kOutShape.name, "[1]"},
                 {param::kOffset.name, id}},
                inputs);
}

// Where region r's projected rows go, in the order they come (head column, then token): the
// destination of each (0 = q, 1 = kcache, 2 = vcache) and each destination's rows.
struct QkvScatter {
  std::vector<int64_t> which, q_rows, k_rows, v_rows;
};

QkvScatter qkv_scatter(const DecoderShape& s, int64_t r, int64_t max_tiles) {
  const int64_t Bt = s.region_tokens, Hq = s.q_heads, Hkv = s.kv_heads;
  QkvScatter d;
  for (int64_t c = 0; c < s.qkv_cols; ++c)
    for (int64_t t = 0; t < Bt; ++t) {
      const int64_t tok = r * Bt + t;
      if (c < Hq) {
        d.which.push_back(0);
        d.q_rows.push_back(tok * Hq + c);
      } else {
        const bool is_k = c < Hq + Hkv;
        const int64_t item = tok * Hkv + (is_k ? c - Hq : c - Hq - Hkv);
        d.which.push_back(is_k ? 1 : 2);
        (is_k ? d.k_rows : d.v_rows).push_back(item * max_tiles * s.tile_n + s.context[size_t(tok)]);  // new token
      }
    }
  return d;
}

// Region r: x_r times every head column of wqkv, the rows scattered to q and the KV caches.
// Returns the three stores' acks.
std::vector<Stream> add_qkv_region(GraphBuilder& b, const DecoderShape& s, int64_t r, const Stream& w,
                                   int64_t max_tiles) {
  const std::string id = std::to_string(r);
  const int64_t cols = s.qkv_cols;
  Stream xr = load_region_x(b, s, r, {});
  Stream m1 = b.map("proj" + id, "matmul", {b.repeat("xrep" + id, xr, cols), w}, s.proj_bw);            // [1,1,cols]
  Stream rows = b.flatten("flat" + id, b.flatmap("rows" + id, "retile_streamify_row", 1, {m1}), 0, 3);  // [cols*Bt]
  const QkvScatter d = qkv_scatter(s, r, max_tiles);
  b.literal_stream("part" + id, text_list(d.which, "{", "}"));
  std::vector<Stream> parts = b.partition("split" + id, rows, b.source("part" + id, "part" + id), 3);
  const std::vector<std::pair<std::string, std::vector<int64_t>>> dests = {
      {"q", d.q_rows}, {"kcache", d.k_rows}, {"vcache", d.v_rows}};
  std::vector<Stream> acks;
  for (size_t k = 0; k < 3; ++k) {
    const std::string name = dests[k].first + id;
    parts[k].set_dim(0, std::to_string(dests[k].second.size()));
    b.literal_stream(name + "_addr", text_list(dests[k].second));
    acks.push_back(
        b.add1(name + "_store", OpKind::kRandomOffChipStore,
               {{param::kTensor.name, dests[k].first}, {param::kTile.name, frontend::int_list({1, s.head_dim})}},
               {{"waddr", b.source(name + "_addr", name + "_addr")}, {"wdata", parts[k]}}));
  }
  return acks;
}

// wqkv is loaded once and broadcast to the regions. Returns every store's ack.
std::vector<Stream> add_qkv_generation(GraphBuilder& b, const DecoderShape& s, int64_t max_tiles) {
  Stream w = b.load("w", "wqkv", {s.hidden, s.head_dim}, {1, s.qkv_cols}, {0, 1});  // [1, 1, cols] of [D x hd]
  std::vector<Stream> wr = b.broadcast("w_bc", w, size_t(s.regions));
  std::vector<Stream> acks;
  for (int64_t r = 0; r < s.regions; ++r)
    for (const Stream& ack : add_qkv_region(b, s, r, wr[size_t(r)], max_tiles)) acks.push_back(ack);
  return acks;
}

// Per region: its tokens' attention rows times wo, plus the residual x_r, stored to h. Starts
// once the attention's stores are acknowledged; returns the h stores' acks.
std::vector<Stream> add_output_projection(GraphBuilder& b, const DecoderShape& s,
                                          const std::vector<Stream>& attn_acks) {
  const int64_t Bt = s.region_tokens, D = s.hidden, hd = s.head_dim, Hq = s.q_heads;
  const uint64_t bw = s.proj_bw;
  const std::optional<Stream> go = phase_token(b, "start", attn_acks);
  Stream wo = b.load("wo", "wo", {hd, D}, {Hq});  // [1, Hq] of [hd x D]
  std::vector<Stream> wor = b.broadcast("wo_bc", wo, size_t(s.regions));
  std::vector<Stream> h_acks;
  for (int64_t r = 0; r < s.regions; ++r) {
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
    Stream xr = load_region_x(b, s, r, {{"ref", *go}});
    Stream hr = b.map("residual" + id, "add", {proj, b.flatten("xflat" + id, xr, 0, 1)}, bw);
    b.literal_stream("h" + id + "_addr", id + " D");
    h_acks.push_back(b.add1("h" + id + "_store", OpKind::kRandomOffChipStore,
                            {{param::kTensor.name, "h"}, {param::kTile.name, frontend::int_list({Bt, D})}},
                            {{"waddr", b.source("h" + id + "_addr", "h" + id + "_addr")}, {"wdata", hr}}));
  }
  return h_acks;
}

// The MoE layer on h (its own parameters from the decoder's), output y, starting once h is stored.
void add_decoder_moe(GraphBuilder& b, const Params& p, const DecoderShape& s, const std::vector<Stream>& h_acks) {
  const int64_t moe_regions = p.get_int("moe_regions");
  const std::string moe_layer = moe_regions ? "moe_tm" : "moe";
  std::map<std::string, std::string> mp = {{"model", s.model},
                                           {"batch", std::to_string(s.batch)},
                                           {"tile_n", std::to_string(p.get_int("moe_tile_n"))},
                                           {"tile_f", std::to_string(p.get_int("moe_tile_f"))},
                                           {"hidden", std::to_string(s.hidden)},
                                           {"inter", std::to_string(p.get_int("inter"))},
                                           {"trace", p.get_string("moe_trace")},
                                           {"compute_bw", std::to_string(p.get_int("moe_compute_bw"))},
                                           {"seed", std::to_string(s.seed + 100)}};
  if (moe_regions) mp["regions"] = std::to_string(moe_regions);
  const LayerInfo& moe_info = LayerRegistry::instance().find(moe_layer);
  MoeIo io;
  io.x = "h";
  io.y = "y";
  io.declare_io = false;
  io.after = h_acks;
  add_moe(b, moe_layer, Params("layer " + moe_layer, "decoder", &moe_info.params, mp), io);
}

Graph build_decoder(const Params& p) {
  const DecoderShape s = decoder_shape(p);
  AttentionSpec a = decoder_attention(p, s);
  GraphBuilder b(decoder_name(p, s), decoder_description(p, s));
  declare_tensors(b, s, a.max_tiles);

  b.set_prefix("qkv_");
  a.after = add_qkv_generation(b, s, a.max_tiles);

  b.set_prefix("attn_");
  const std::vector<Stream> attn_acks = add_attention(b, a);
  if (p.get_int("attn_fifo_depth")) b.set_prefix_depth(uint32_t(p.get_int("attn_fifo_depth")));

  b.set_prefix("oproj_");
  const std::vector<Stream> h_acks = add_output_projection(b, s, attn_acks);

  b.set_prefix("moe_");
  add_decoder_moe(b, p, s, h_acks);
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
