// One Transformer decoder layer in prefill: a chunk of `tokens` prompt tokens of ONE request, at
// positions offset..offset+tokens-1 (the `offset` tokens before are prefilled: their K and V are
// in the cache). The same model family, phases and hand-over as the decoder (decoder.cpp; each
// phase starts when the previous one's stores are acknowledged), over query blocks instead of
// requests:
//
//   The chunk is J = ceil(tokens / tile_n) query blocks of tile_n tokens (the last one padded:
//   x, q, attn and h have J*tile_n rows, the padding rows are computed like the others and never
//   read by the MoE). Region r takes a contiguous run of blocks (an uneven split when R does not
//   divide J; min(R, J) regions are built).
//   qkv_   per region and block j: x_j [tile_n x D] times every head column of wqkv (the weights
//          are re-streamed per block: they do not stay on chip), Map matmul -> [tile_n x hd] per
//          head column, stored as whole tiles: q to tile j*Hq + head of q ([tile_n x hd] tiles),
//          k and v of KV head h into the caches at row h*max_tiles*tile_n + offset + j*tile_n
//          (hence offset is a multiple of tile_n: a block fills whole cache tiles).
//   attn_  causal flash attention (attention.cpp) with the J blocks as its requests and items
//          (block j, KV head h): query tile = the block's q_per_kv heads x tile_n tokens,
//          [q_per_kv*tile_n x hd], KV length offset + min((j+1)*tile_n, tokens) (the block sees the
//          keys up to its last token), KV-cache slot h (all blocks of a head read the same cache);
//          output stored per block, attn laid out like q. A timing model: the key columns past the
//          block's length are masked, the triangle inside the diagonal block is not (functional
//          mode computes its rows over the whole block).
//   oproj_ per region and block: the block's attention tiles of every head times wo's [hd x D]
//          row blocks (Accum matmul_acc; wo re-streamed per block), plus the residual x_j, stored
//          to h [J*tile_n, D].
//   moe_   the MoE layer (moe.cpp) on the first `tokens` rows of h (exactly the chunk's tokens),
//          output y [tokens, D]; its routing trace needs >= tokens rows (moe_trace).
#include <algorithm>

#include "graphs/layers/blocks.h"
#include "graphs/layers/layer.h"

namespace stepsim::layers {

namespace {

using frontend::GraphBuilder;
using frontend::Stream;
using T = ParamSpec::Type;

// The layer's sizes: the family's (blocks.h), the chunk, its query blocks and their regions.
struct PrefillShape : LayerShape {
  int64_t tokens, offset;
  int64_t blocks;     // J: query blocks of tile_n tokens
  int64_t max_tiles;  // KV-cache tiles per KV head: ceil((offset + tokens) / tile_n)
  // Region r (r < regions, the regions built: min(asked, J)) takes blocks first[r]..first[r+1]-1.
  std::vector<int64_t> first;
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

PrefillShape prefill_shape(const Params& p) {
  PrefillShape s;
  static_cast<LayerShape&>(s) = layer_shape(p, "prefill");
  s.tokens = p.get_int("tokens");
  s.offset = p.get_int("offset");
  if (s.tokens < 1) throw std::invalid_argument("layer prefill: tokens must be >= 1, got " + std::to_string(s.tokens));
  if (s.offset < 0 || s.offset % s.tile_n)
    throw std::invalid_argument("layer prefill: offset " + std::to_string(s.offset) +
                                " must be a non-negative multiple of tile_n " + std::to_string(s.tile_n) +
                                " (a query block fills whole KV-cache tiles)");
  if (s.offset + s.tokens > kMaxKvTokens)
    throw std::invalid_argument("layer prefill: offset + tokens " + std::to_string(s.offset + s.tokens) +
                                " exceeds the longest KV cache, " + std::to_string(kMaxKvTokens) + " tokens");
  s.blocks = ceil_div(s.tokens, s.tile_n);
  s.max_tiles = ceil_div(s.offset + s.tokens, s.tile_n);
  s.regions = std::min(s.regions, s.blocks);  // a region without a block is not built
  const int64_t base = s.blocks / s.regions, extra = s.blocks % s.regions;
  for (int64_t r = 0; r <= s.regions; ++r) s.first.push_back(r * base + std::min(r, extra));
  return s;
}

// The attention over the J*Hkv (block, KV head) items.
AttentionSpec prefill_attention(const Params& p, const PrefillShape& s) {
  AttentionSpec a = layer_attention(p, s);
  a.q_per_kv *= s.tile_n;  // a query tile: the group's heads, tile_n tokens each
  a.kv_heads = s.kv_heads;
  a.max_tiles = s.max_tiles;
  for (int64_t j = 0; j < s.blocks; ++j)
    for (int64_t h = 0; h < s.kv_heads; ++h) {
      a.len.push_back(s.offset + std::min((j + 1) * s.tile_n, s.tokens));
      a.slot.push_back(h);
    }
  return a;
}

std::string prefill_name(const PrefillShape& s) {
  return "prefill_" + s.model + "_t" + std::to_string(s.tokens) + "_o" + std::to_string(s.offset) + "_" + s.attention;
}

std::string prefill_description(const Params& p, const PrefillShape& s) {
  const int64_t moe_regions = p.get_int("moe_regions"), moe_tile = p.get_int("moe_tile_n");
  return "decoder layer of " + s.model + " (hidden " + std::to_string(s.hidden) + ", " + std::to_string(s.q_heads) +
         " query / " + std::to_string(s.kv_heads) + " KV heads of " + std::to_string(s.head_dim) +
         ") in prefill: " + std::to_string(s.tokens) + " prompt tokens of one request at positions " +
         std::to_string(s.offset) + ".., " + std::to_string(s.blocks) + " query blocks of " + std::to_string(s.tile_n) +
         " (the last padded) in " + std::to_string(s.regions) + " regions, causal " + s.attention +
         " attention (timing model: the triangle inside the diagonal block is not masked), MoE " +
         (moe_tile ? "static tile " + std::to_string(moe_tile) : std::string("dynamic tiling")) +
         (moe_regions ? ", time-multiplexed over " + std::to_string(moe_regions) + " regions" : "");
}

// Region r's query blocks of x, [1, n] of [tile_n x D].
Stream load_x_blocks(GraphBuilder& b, const PrefillShape& s, const std::string& name, int64_t r,
                     const frontend::Inputs& inputs) {
  const int64_t j0 = s.first[size_t(r)], n = s.first[size_t(r) + 1] - j0;
  return b.add1(name, OpKind::kLinearOffChipLoad,
                {{param::kTensor.name, "x"},
                 {param::kTile.name, frontend::int_list({s.tile_n, s.hidden})},
                 {param::kOutShape.name, frontend::int_list({n})},
                 {param::kOffset.name, std::to_string(j0)}},
                inputs);
}

// Where region r's projected tiles go, in the order they come (block, then head column).
QkvScatter qkv_scatter(const PrefillShape& s, int64_t r) {
  const int64_t Hq = s.q_heads, Hkv = s.kv_heads, past = s.offset / s.tile_n;
  QkvScatter d;
  for (int64_t j = s.first[size_t(r)]; j < s.first[size_t(r) + 1]; ++j)
    for (int64_t c = 0; c < s.qkv_cols; ++c) {
      if (c < Hq) {
        d.which.push_back(0);
        d.q.push_back(j * Hq + c);
      } else {
        const bool is_k = c < Hq + Hkv;
        const int64_t h = is_k ? c - Hq : c - Hq - Hkv;
        d.which.push_back(is_k ? 1 : 2);
        (is_k ? d.k : d.v).push_back(h * s.max_tiles + past + j);
      }
    }
  return d;
}

// Region r: each block times every head column of wqkv, the tiles scattered to q and the caches.
// Returns the three stores' acks.
std::vector<Stream> add_qkv_region(GraphBuilder& b, const PrefillShape& s, int64_t r) {
  const std::string id = std::to_string(r);
  const int64_t cols = s.qkv_cols, n = s.first[size_t(r) + 1] - s.first[size_t(r)];
  Stream xr = load_x_blocks(b, s, "x" + id, r, {});
  Stream w = b.load("w" + id, "wqkv", {s.hidden, s.head_dim}, {n, cols}, {0, 1});  // [1, n, cols] of [D x hd]
  Stream m = b.map("proj" + id, "matmul", {b.repeat("xrep" + id, xr, cols), w}, s.proj_bw);
  Stream tiles = b.flatten("flat" + id, m, 0, 2);  // [n*cols] of [tile_n x hd]
  return store_qkv(b, id, tiles, qkv_scatter(s, r), {s.tile_n, s.head_dim});
}

// Per region and block: the block's attention tiles of every head times wo, plus the residual,
// stored to h. Starts once the attention's stores are acknowledged; returns the h stores' acks.
std::vector<Stream> add_output_projection(GraphBuilder& b, const PrefillShape& s,
                                          const std::vector<Stream>& attn_acks) {
  const int64_t D = s.hidden, hd = s.head_dim, Hq = s.q_heads;
  const std::optional<Stream> go = phase_token(b, "start", attn_acks);
  std::vector<Stream> h_acks;
  for (int64_t r = 0; r < s.regions; ++r) {
    const std::string id = std::to_string(r);
    const int64_t j0 = s.first[size_t(r)], n = s.first[size_t(r) + 1] - j0;
    // Block j's head k is tile j*Hq + k of attn: [1, n, Hq] of [tile_n x hd].
    Stream o = b.add1("o" + id, OpKind::kLinearOffChipLoad,
                      {{param::kTensor.name, "attn"},
                       {param::kTile.name, frontend::int_list({s.tile_n, hd})},
                       {param::kOutShape.name, frontend::int_list({n, Hq})},
                       {param::kOffset.name, std::to_string(j0 * Hq)}},
                      {{"ref", *go}});
    Stream wo = b.load("wo" + id, "wo", {hd, D}, {n, Hq}, {0, 1});            // [1, n, Hq] of [hd x D]
    Stream proj = b.accum("proj" + id, "matmul_acc", 1, {o, wo}, s.proj_bw);  // [1, n] of [tile_n x D]
    Stream xr = load_x_blocks(b, s, "x" + id, r, {{"ref", *go}});
    Stream hr = b.map("residual" + id, "add", {proj, xr}, s.proj_bw);
    std::vector<int64_t> rows(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) rows[size_t(j)] = j0 + j;
    b.literal_stream("h" + id + "_addr", text_list(rows));
    h_acks.push_back(b.add1(
        "h" + id + "_store", OpKind::kRandomOffChipStore,
        {{param::kTensor.name, "h"}, {param::kTile.name, frontend::int_list({s.tile_n, D})}},
        {{"waddr", b.source("h" + id + "_addr", "h" + id + "_addr")}, {"wdata", b.flatten("hflat" + id, hr, 0, 1)}}));
  }
  return h_acks;
}

Graph build_prefill(const Params& p) {
  const PrefillShape s = prefill_shape(p);
  AttentionSpec a = prefill_attention(p, s);
  GraphBuilder b(prefill_name(s), prefill_description(p, s));
  declare_layer_tensors(b, s, s.blocks * s.tile_n, s.kv_heads, s.max_tiles, s.tokens);

  b.set_prefix("qkv_");
  for (int64_t r = 0; r < s.regions; ++r)
    for (const Stream& ack : add_qkv_region(b, s, r)) a.after.push_back(ack);

  add_layer_phases(b, p, s, a, s.tokens,
                   [&](const std::vector<Stream>& acks) { return add_output_projection(b, s, acks); });
  return b.graph();
}

}  // namespace

void register_prefill(LayerRegistry& r) {
  r.add({"prefill",
         "One Transformer decoder layer in prefill: a chunk of `tokens` prompt tokens of one request after `offset` "
         "prefilled ones, in query blocks of tile_n tokens (the last padded) spread over regions; QKV and output "
         "projection per block (weights re-streamed per block), causal flash attention over the KV cache (timing "
         "model: the diagonal block's triangle is not masked in functional mode), MoE on the chunk's tokens; phases "
         "hand over through HBM like the decoder's",
         layer_params({{"tokens", T::kInt, "64", "prompt tokens of this chunk"},
                       {"offset", T::kInt, "0",
                        "tokens of the request already prefilled (their K/V in the cache); a multiple of tile_n"}}),
         build_prefill});
}

}  // namespace stepsim::layers
