// Building blocks that the layers share, so that a decoder layer can compose the attention and
// MoE layers into one graph (decoder.cpp). Each block adds its nodes to a GraphBuilder (under
// the builder's current name prefix) and can be sequenced after earlier phases: `after` streams
// (usually store acknowledgements) gate the block's sources and its first loads, so the block
// reads what the earlier phase wrote.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hw/ops/params.h"
#include "sim/frontend/builder.h"

namespace stepsim::layers {

// Longest KV cache a request may have (tokens): 16 Mi, far beyond any context window, and small
// enough that the cache tensor and the tile count of one request stay host-sized.
constexpr int64_t kMaxKvTokens = int64_t(1) << 24;

// KV lengths before the decoded token: ContextTokens of data rows first..first+n-1 (1-based)
// of an Azure LLM inference trace.
std::vector<int64_t> kv_lengths(const std::string& trace_file, int64_t first, int64_t n);

// Where a region's projected Q, K and V pieces go, in the order the projection emits them: the
// destination of each (0 = q, 1 = kcache, 2 = vcache) and each destination's tile indices, in
// tiles of the store's tile shape (the decoder's [1 x head_dim] rows, the prefill's
// [tile_n x head_dim] blocks).
struct QkvScatter {
  std::vector<int64_t> which, q, k, v;
};

// Partitions `pieces` by `d.which` and stores each part to q, kcache or vcache at its indices,
// in tiles of `tile` (nodes part<id>, split<id>, {q,kcache,vcache}<id>_addr and _store).
// Returns the three stores' acks.
std::vector<frontend::Stream> store_qkv(frontend::GraphBuilder& b, const std::string& id,
                                        const frontend::Stream& pieces, const QkvScatter& d,
                                        const std::vector<int64_t>& tile);

// A phase's sequencing token: one element that arrives once every `after` stream has ended
// (a Source gated by them). Empty `after`: no token (the phase starts at cycle 0).
std::optional<frontend::Stream> phase_token(frontend::GraphBuilder& b, const std::string& name,
                                            const std::vector<frontend::Stream>& after);

// Decode attention over items, each with one query tile [q_per_kv x head_dim] (tile `i` of
// tensor q) and `len[i]` tokens of KV cache (tiles slot*max_tiles .. of kcache/vcache, tile_n rows
// each, slot = slot[i], or i when `slot` is empty); the output tile goes to tile `i` of tensor out
// (grouped: tile `request` of the request's stacked items). A request is `kv_heads` consecutive
// items (its KV heads), and requests are what the regions share (interleaved | coarse |
// dynamic, see attention.cpp): a region processes all heads of the requests it gets.
struct AttentionSpec {
  std::vector<int64_t> len;  // KV length per item, the decoded token included
  // KV-cache slot per item (empty: the item index). Items may share a slot (prefill: every query
  // block of a KV head reads that head's cache); the outputs then go per request (grouped path).
  std::vector<int64_t> slot;
  int64_t kv_heads = 1;  // items per request
  int64_t head_dim = 64, q_per_kv = 8, regions = 4, tile_n = 32, per_region = 16, max_tiles = 1;
  std::string parallel = "dynamic";
  std::string q = "q", kcache = "kcache", vcache = "vcache", out = "out";
  bool writeback = true;  // write each item's last K and V tile back (the traffic of the append)
  uint64_t compute_bw = 0, seed = 1;
  uint32_t metadata_depth = 16, writeback_depth = 4;
  std::vector<frontend::Stream> after;  // start once these streams have ended
};
// Returns the output stores' acknowledgement streams (one per region).
std::vector<frontend::Stream> add_attention(frontend::GraphBuilder& b, const AttentionSpec& a);

// MoE (one SwiGLU pipeline per expert) or, with `layer` = "moe_tm", the time-multiplexed MoE;
// `params` are that layer's parameters. Tokens come from tensor x_tensor [batch, hidden], the
// output goes to y_tensor (both declared by the caller when `declare_io` is false).
struct MoeIo {
  std::string x = "x", y = "y";
  bool declare_io = true;
  std::vector<frontend::Stream> after;
};
void add_moe(frontend::GraphBuilder& b, const std::string& layer, const Params& params, const MoeIo& io);

// ---- The decoder-layer family (decoder.cpp: decode; prefill.cpp: one request's prompt chunk).
// Both share the model table, the parameters below, the tensors and the MoE hookup.

// Sizes and settings the family's layers share, checked once (errors name `layer`).
struct LayerShape {
  std::string layer, model, attention;  // attention: its parallelization (interleaved | dynamic)
  int64_t regions, hidden, q_heads, kv_heads, head_dim, tile_n;
  int64_t qkv_cols;  // head columns of wqkv: Hq + 2 Hkv
  uint64_t seed, proj_bw;
};
LayerShape layer_shape(const Params& p, const std::string& layer);

// The family's parameters: `model`, then `own` (the layer's), then the shared ones (regions,
// attention, tile_n, MoE, size overrides, bandwidths, FIFO depths, seed).
std::vector<ParamSpec> layer_params(const std::vector<ParamSpec>& own);

// The attention settings the family shares (output to tensor attn, no KV write-back: the QKV
// phase writes the cache); the caller adds the items.
AttentionSpec layer_attention(const Params& p, const LayerShape& s);

// The tensors: x and h [tokens_rows, D], the weights wqkv [D, (Hq+2Hkv) hd] and wo [Hq hd, D],
// the caches [slots*max_tiles*tile_n, hd], q and attn [tokens_rows*Hq, hd], y [y_rows, D].
void declare_layer_tensors(frontend::GraphBuilder& b, const LayerShape& s, int64_t tokens_rows, int64_t slots,
                           int64_t max_tiles, int64_t y_rows);

// The MoE layer on the first `batch` rows of h (moe_* parameters), output y, starting once
// `after` (the h stores' acks) have ended.
void add_layer_moe(frontend::GraphBuilder& b, const Params& p, const LayerShape& s, int64_t batch,
                   const std::vector<frontend::Stream>& after);

// The phases after the QKV generation (whose acks are a.after), each starting once the previous
// one's stores are acknowledged: the attention (prefix attn_), the output projection `oproj`
// (oproj_; given the attention's acks, returns the h stores' acks) and the MoE on the first
// `moe_batch` rows of h (moe_).
void add_layer_phases(frontend::GraphBuilder& b, const Params& p, const LayerShape& s, const AttentionSpec& a,
                      int64_t moe_batch,
                      const std::function<std::vector<frontend::Stream>(const std::vector<frontend::Stream>&)>& oproj);

// "v0 v1 ... D": a literal stream of integers, each wrapped in open/close ("{", "}": selectors).
std::string text_list(const std::vector<int64_t>& v, const std::string& open = "", const std::string& close = "");

}  // namespace stepsim::layers
