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
// The requests' KV lengths come from rows of an Azure trace (kv_trace, kv_first_row) or, for the
// serving run (stepsim serve), directly from kv_lengths. The model table, the shared parameters,
// the tensors and the phases after the QKV generation are the family's (blocks.h; the prefill
// layer, prefill.cpp, is the other member), defined at the end of this file.
// Not modelled: RMSNorm, rotary embedding and the router's gating matmul (the routing comes from
// the trace) — element-wise or small next to the matmuls above.
#include <algorithm>
#include <sstream>

#include "graphs/layers/blocks.h"
#include "graphs/layers/layer.h"
#include "hw/stream/number_text.h"

namespace stepsim::layers {

namespace {

using frontend::GraphBuilder;
using frontend::Stream;
using T = ParamSpec::Type;

// The layer's sizes: the family's (blocks.h) and the batch's KV lengths, checked once for every phase.
struct DecoderShape : LayerShape {
  int64_t batch, region_tokens;  // region_tokens: tokens per batch region
  std::vector<int64_t> context;  // per request: its KV length before the decoded token
};

bool lengths_given(const Params& p) {
  return p.get_string("kv_lengths").find_first_not_of(" \t\n") != std::string::npos;
}

// The `kv_lengths` parameter: exactly `batch` whitespace-separated KV lengths in 0..kMaxKvTokens.
std::vector<int64_t> given_kv_lengths(const std::string& text, int64_t batch) {
  std::istringstream in(text);
  std::vector<int64_t> v;
  for (std::string word; in >> word;) {
    int64_t len = 0;
    if (!parse_int64(word, len) || len < 0 || len > kMaxKvTokens)
      throw std::invalid_argument("layer decoder: kv_lengths: '" + word + "' is not a KV length in 0.." +
                                  std::to_string(kMaxKvTokens) + " tokens");
    v.push_back(len);
  }
  if (int64_t(v.size()) != batch)
    throw std::invalid_argument("layer decoder: kv_lengths has " + std::to_string(v.size()) + " lengths, batch is " +
                                std::to_string(batch));
  return v;
}

DecoderShape decoder_shape(const Params& p) {
  DecoderShape s;
  static_cast<LayerShape&>(s) = layer_shape(p, "decoder");
  s.batch = p.get_int("batch");
  const int64_t B = s.batch, R = s.regions;
  if (B < 1) throw std::invalid_argument("layer decoder: sizes must be >= 1");
  if (B % R)
    throw std::invalid_argument("layer decoder: regions " + std::to_string(R) + " must divide batch " +
                                std::to_string(B));
  s.region_tokens = B / R;
  s.context = lengths_given(p) ? given_kv_lengths(p.get_string("kv_lengths"), B)
                               : kv_lengths(p.get_string("kv_trace"), p.get_int("kv_first_row"), B);
  return s;
}

// The attention over the B*Hkv (request, KV head) items; its max_tiles also lays out the KV caches.
AttentionSpec decoder_attention(const Params& p, const DecoderShape& s) {
  AttentionSpec a = layer_attention(p, s);
  a.kv_heads = s.kv_heads;  // a region takes all KV heads of the requests it gets
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
  const std::string lengths = lengths_given(p) ? std::string("KV lengths given")
                                               : "KV lengths from rows " + std::to_string(p.get_int("kv_first_row")) +
                                                     ".. of " + p.get_string("kv_trace");
  return "decoder layer of " + s.model + " (hidden " + std::to_string(s.hidden) + ", " + std::to_string(s.q_heads) +
         " query / " + std::to_string(s.kv_heads) + " KV heads of " + std::to_string(s.head_dim) + "), batch " +
         std::to_string(s.batch) + " in " + std::to_string(s.regions) + " regions, " + lengths + ", " + s.attention +
         " attention, MoE " + (moe_tile ? "static tile " + std::to_string(moe_tile) : std::string("dynamic tiling")) +
         (moe_regions ? ", time-multiplexed over " + std::to_string(moe_regions) + " regions" : "");
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

// Where region r's projected rows go, in the order they come (head column, then token).
QkvScatter qkv_scatter(const DecoderShape& s, int64_t r, int64_t max_tiles) {
  const int64_t Bt = s.region_tokens, Hq = s.q_heads, Hkv = s.kv_heads;
  QkvScatter d;
  for (int64_t c = 0; c < s.qkv_cols; ++c)
    for (int64_t t = 0; t < Bt; ++t) {
      const int64_t tok = r * Bt + t;
      if (c < Hq) {
        d.which.push_back(0);
        d.q.push_back(tok * Hq + c);
      } else {
        const bool is_k = c < Hq + Hkv;
        const int64_t item = tok * Hkv + (is_k ? c - Hq : c - Hq - Hkv);
        d.which.push_back(is_k ? 1 : 2);
        (is_k ? d.k : d.v).push_back(item * max_tiles * s.tile_n + s.context[size_t(tok)]);  // new token
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
  return store_qkv(b, id, rows, qkv_scatter(s, r, max_tiles), {1, s.head_dim});
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

Graph build_decoder(const Params& p) {
  const DecoderShape s = decoder_shape(p);
  AttentionSpec a = decoder_attention(p, s);
  GraphBuilder b(decoder_name(p, s), decoder_description(p, s));
  declare_layer_tensors(b, s, s.batch, s.batch * s.kv_heads, a.max_tiles, s.batch);

  b.set_prefix("qkv_");
  a.after = add_qkv_generation(b, s, a.max_tiles);

  add_layer_phases(b, p, s, a, s.batch,
                   [&](const std::vector<Stream>& acks) { return add_output_projection(b, s, acks); });
  return b.graph();
}

}  // namespace

// ---- The decoder-layer family (blocks.h) -------------------------------------------------------

namespace {

struct ModelSizes {
  int64_t hidden, q_heads, kv_heads, head_dim;
};

ModelSizes model_sizes(const Params& p, const std::string& layer, const std::string& model) {
  ModelSizes m;
  if (model == "qwen")
    m = {2048, 32, 4, 64};
  else if (model == "mixtral")
    m = {4096, 32, 8, 128};
  else
    throw std::invalid_argument("layer " + layer + ": model must be qwen or mixtral, got '" + model + "'");
  if (p.get_int("hidden")) m.hidden = p.get_int("hidden");
  if (p.get_int("head_dim")) m.head_dim = p.get_int("head_dim");
  if (p.get_int("q_heads")) m.q_heads = p.get_int("q_heads");
  if (p.get_int("kv_heads")) m.kv_heads = p.get_int("kv_heads");
  return m;
}

}  // namespace

LayerShape layer_shape(const Params& p, const std::string& layer) {
  LayerShape s;
  s.layer = layer;
  s.model = p.get_string("model");
  const ModelSizes m = model_sizes(p, layer, s.model);
  s.regions = p.get_int("regions");
  s.hidden = m.hidden;
  s.head_dim = m.head_dim;
  s.q_heads = m.q_heads;
  s.kv_heads = m.kv_heads;
  s.tile_n = p.get_int("tile_n");
  if (s.regions < 1 || s.hidden < 1 || s.head_dim < 1 || s.q_heads < 1 || s.kv_heads < 1 || s.tile_n < 1)
    throw std::invalid_argument("layer " + layer + ": sizes must be >= 1");
  if (s.q_heads % s.kv_heads)
    throw std::invalid_argument("layer " + layer + ": kv_heads " + std::to_string(s.kv_heads) +
                                " must divide q_heads " + std::to_string(s.q_heads));
  s.qkv_cols = s.q_heads + 2 * s.kv_heads;
  s.attention = p.get_string("attention");
  if (s.attention != "interleaved" && s.attention != "dynamic")
    throw std::invalid_argument("layer " + layer + ": attention must be interleaved or dynamic, got '" + s.attention +
                                "'");
  s.seed = uint64_t(p.get_int("seed"));
  s.proj_bw = uint64_t(p.get_int("proj_compute_bw"));
  return s;
}

AttentionSpec layer_attention(const Params& p, const LayerShape& s) {
  AttentionSpec a;
  a.head_dim = s.head_dim;
  a.q_per_kv = s.q_heads / s.kv_heads;
  a.regions = s.regions;
  a.tile_n = s.tile_n;
  a.parallel = s.attention;
  a.q = "q";
  a.out = "attn";
  a.writeback = false;  // the QKV phase writes the new tokens' k and v
  a.compute_bw = uint64_t(p.get_int("attn_compute_bw"));
  a.metadata_depth = uint32_t(p.get_int("metadata_depth"));
  a.seed = s.seed;
  return a;
}

void declare_layer_tensors(GraphBuilder& b, const LayerShape& s, int64_t tokens_rows, int64_t slots, int64_t max_tiles,
                           int64_t y_rows) {
  const int64_t D = s.hidden, hd = s.head_dim, Hq = s.q_heads;
  const int64_t cache_rows = slots * max_tiles * s.tile_n;
  b.tensor("x", uint64_t(tokens_rows), uint64_t(D), DType::BF16, s.seed);
  b.tensor("wqkv", uint64_t(D), uint64_t(s.qkv_cols * hd), DType::BF16, s.seed + 1);
  b.tensor("kcache", uint64_t(cache_rows), uint64_t(hd), DType::BF16, s.seed + 2);
  b.tensor("vcache", uint64_t(cache_rows), uint64_t(hd), DType::BF16, s.seed + 3);
  b.tensor("wo", uint64_t(Hq * hd), uint64_t(D), DType::BF16, s.seed + 4);
  // Written during the run (and saved in functional mode, for inspection).
  b.output_tensor("q", uint64_t(tokens_rows * Hq), uint64_t(hd));
  b.output_tensor("attn", uint64_t(tokens_rows * Hq), uint64_t(hd));
  b.output_tensor("h", uint64_t(tokens_rows), uint64_t(D));
  b.output_tensor("y", uint64_t(y_rows), uint64_t(D));
}

void add_layer_moe(GraphBuilder& b, const Params& p, const LayerShape& s, int64_t batch,
                   const std::vector<Stream>& after) {
  const int64_t moe_regions = p.get_int("moe_regions");
  const std::string moe_layer = moe_regions ? "moe_tm" : "moe";
  std::map<std::string, std::string> mp = {{"model", s.model},
                                           {"batch", std::to_string(batch)},
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
  io.after = after;
  add_moe(b, moe_layer, Params("layer " + moe_layer, s.layer, &moe_info.params, mp), io);
}

void add_layer_phases(GraphBuilder& b, const Params& p, const LayerShape& s, const AttentionSpec& a, int64_t moe_batch,
                      const std::function<std::vector<Stream>(const std::vector<Stream>&)>& oproj) {
  b.set_prefix("attn_");
  const std::vector<Stream> attn_acks = add_attention(b, a);
  if (p.get_int("attn_fifo_depth")) b.set_prefix_depth(uint32_t(p.get_int("attn_fifo_depth")));

  b.set_prefix("oproj_");
  const std::vector<Stream> h_acks = oproj(attn_acks);

  b.set_prefix("moe_");
  add_layer_moe(b, p, s, moe_batch, h_acks);
  b.set_prefix("");
}

std::string text_list(const std::vector<int64_t>& v, const std::string& open, const std::string& close) {
  std::string s;
  for (int64_t x : v) s += open + std::to_string(x) + close + " ";
  return s + "D";
}

std::vector<ParamSpec> layer_params(const std::vector<ParamSpec>& own) {
  std::vector<ParamSpec> v = {
      {"model", T::kString, "qwen",
       "qwen (hidden 2048, 32 query / 4 KV heads of 64, MoE 128 experts top-8) or mixtral (4096, 32 / 8 of 128, "
       "8 experts top-2)"}};
  v.insert(v.end(), own.begin(), own.end());
  const std::vector<ParamSpec> shared = {
      {"regions", T::kInt, "4",
       "regions of the QKV generation, output projection and attention (decoder: batch regions; prefill: "
       "query-block regions)"},
      {"attention", T::kString, "dynamic", "attention parallelization: interleaved or dynamic"},
      {"tile_n", T::kInt, "32", "tokens per KV-cache tile"},
      {"moe_tile_n", T::kInt, "0", "MoE static tile of the per-expert token dimension; 0 = dynamic tiling"},
      {"moe_tile_f", T::kInt, "64", "MoE intermediate tile"},
      {"moe_regions", T::kInt, "0",
       "time-multiplexed MoE over this many regions (must divide the experts); 0 = one "
       "pipeline per expert"},
      {"moe_trace", T::kString, "",
       "routing trace CSV of this layer, one row per token (default: the model's b64/b1024 trace)"},
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
      {"seed", T::kInt, "1", "seed of the random tensors"}};
  v.insert(v.end(), shared.begin(), shared.end());
  return v;
}

std::vector<Stream> store_qkv(GraphBuilder& b, const std::string& id, const Stream& pieces, const QkvScatter& d,
                              const std::vector<int64_t>& tile) {
  b.literal_stream("part" + id, text_list(d.which, "{", "}"));
  std::vector<Stream> parts = b.partition("split" + id, pieces, b.source("part" + id, "part" + id), 3);
  const std::vector<std::pair<std::string, const std::vector<int64_t>*>> dests = {
      {"q", &d.q}, {"kcache", &d.k}, {"vcache", &d.v}};
  std::vector<Stream> acks;
  for (size_t k = 0; k < 3; ++k) {
    const std::string name = dests[k].first + id;
    parts[k].set_dim(0, std::to_string(dests[k].second->size()));
    b.literal_stream(name + "_addr", text_list(*dests[k].second));
    acks.push_back(b.add1(name + "_store", OpKind::kRandomOffChipStore,
                          {{param::kTensor.name, dests[k].first}, {param::kTile.name, frontend::int_list(tile)}},
                          {{"waddr", b.source(name + "_addr", name + "_addr")}, {"wdata", parts[k]}}));
  }
  return acks;
}

void register_decoder(LayerRegistry& r) {
  r.add({"decoder",
         "One Transformer decoder layer in decode (paper Fig. 17): QKV generation and output projection over batch "
         "regions, GQA attention over every KV head (interleaved or dynamic), MoE (static or dynamic tiling, "
         "optionally time-multiplexed); phases hand over through HBM, each starting when the previous one's stores "
         "are acknowledged",
         layer_params({{"batch", T::kInt, "64", "requests (tokens decoded)"},
                       {"kv_trace", T::kString, "shared:traces/azure/AzureLLMInferenceTrace_conv.csv",
                        "Azure LLM inference trace (ContextTokens = KV length before the decoded token)"},
                       {"kv_first_row", T::kInt, "4007",
                        "first data row (1-based) of the batch in kv_trace (the artifact's "
                        "medium-variability B=64 batch)"},
                       {"kv_lengths", T::kString, "",
                        "the requests' KV lengths before the decoded token, `batch` whitespace-separated integers "
                        "(the serving run's); given, kv_trace and kv_first_row are ignored"}}),
         build_decoder});
}

}  // namespace stepsim::layers
