// Building blocks that the layers share, so that a decoder layer can compose the attention and
// MoE layers into one graph (decoder.cpp). Each block adds its nodes to a GraphBuilder (under
// the builder's current name prefix) and can be sequenced after earlier phases: `after` streams
// (usually store acknowledgements) gate the block's sources and its first loads, so the block
// reads what the earlier phase wrote.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hw/ops/params.h"
#include "sim/frontend/builder.h"

namespace stepsim::layers {

// KV lengths before the decoded token: ContextTokens of data rows first..first+n-1 (1-based)
// of an Azure LLM inference trace.
std::vector<int64_t> kv_lengths(const std::string& trace_file, int64_t first, int64_t n);

// A phase's sequencing token: one element that arrives once every `after` stream has ended
// (a Source gated by them). Empty `after`: no token (the phase starts at cycle 0).
std::optional<frontend::Stream> phase_token(frontend::GraphBuilder& b, const std::string& name,
                                            const std::vector<frontend::Stream>& after);

// Decode attention over items, each with one query tile [q_per_kv x head_dim] (tile `i` of
// tensor q) and `len[i]` tokens of KV cache (tiles i*max_tiles .. of kcache/vcache, tile_n rows
// each); the output tile goes to tile `i` of tensor out. A request is `kv_heads` consecutive
// items (its KV heads), and requests are what the regions share (interleaved | coarse |
// dynamic, see attention.cpp): a region processes all heads of the requests it gets.
struct AttentionSpec {
  std::vector<int64_t> len;  // KV length per item, the decoded token included
  int64_t kv_heads = 1;      // items per request
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

}  // namespace stepsim::layers
