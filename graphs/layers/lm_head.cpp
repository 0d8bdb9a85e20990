// The model's two ends for `tokens` tokens (the serving run adds them to the decoder layers):
//   embed_  the embedding lookup: one [1 x D] row of embed [vocab, D] per token
//           (RandomOffChipLoad at the token ids), stored to x [tokens, D];
//   head_   once x is stored (phase_token): the LM head, x [tokens x D] times w_head [D, vocab]
//           in column tiles of tile_v spread over `regions` regions (w_head streamed once), logits
//           stored to [tokens, vocab_padded].
// vocab_padded is vocab rounded up to a multiple of tile_v: w_head and the logits have that many
// columns, so the last tile is whole (its padding columns are computed and stored like the others).
// The token ids are placeholders, (i * 7919 + seed) mod vocab for token i: the traffic and cycles
// do not depend on which rows are read. Decode: tokens = the batch; prefill: tokens = 1 (the last
// prompt token's logits).
#include <algorithm>

#include "graphs/layers/blocks.h"
#include "graphs/layers/layer.h"

namespace stepsim::layers {

namespace {

using frontend::GraphBuilder;
using frontend::Stream;
using T = ParamSpec::Type;

int64_t positive(const Params& p, const std::string& k) { return positive_param(p, "lm_head", k); }

// The embedding rows of the tokens, stored to x; returns the store's ack.
Stream add_embedding(GraphBuilder& b, int64_t tokens, int64_t D, int64_t vocab, uint64_t seed) {
  std::vector<int64_t> ids, rows;
  for (int64_t i = 0; i < tokens; ++i) {
    ids.push_back(int64_t((uint64_t(i) * 7919 + seed) % uint64_t(vocab)));
    rows.push_back(i);
  }
  b.literal_stream("ids", text_list(ids));
  b.literal_stream("x_addr", text_list(rows));
  Stream e = b.random_load("rows", "embed", {1, D}, b.source("ids", "ids"));  // [tokens] of [1 x D]
  return b.add1("x_store", OpKind::kRandomOffChipStore,
                {{param::kTensor.name, "x"}, {param::kTile.name, frontend::int_list({1, D})}},
                {{"waddr", b.source("x_addr", "x_addr")}, {"wdata", e}});
}

Graph build_lm_head(const Params& p) {
  const int64_t tokens = positive(p, "tokens"), D = positive(p, "hidden"), vocab = positive(p, "vocab");
  const int64_t tv = positive(p, "tile_v");
  const int64_t tiles = (vocab + tv - 1) / tv, padded = tiles * tv;
  const uint64_t bw = uint64_t(p.get_int("compute_bw")), seed = uint64_t(p.get_int("seed"));
  GraphBuilder b("lm_head_t" + std::to_string(tokens) + "_v" + std::to_string(vocab),
                 "embedding lookup and LM head for " + std::to_string(tokens) + " tokens: hidden " + std::to_string(D) +
                     ", vocabulary " + std::to_string(vocab) + " (padded to " + std::to_string(padded) +
                     " columns: " + std::to_string(tiles) + " tiles of " + std::to_string(tv) + ")");
  b.tensor("embed", uint64_t(vocab), uint64_t(D), DType::BF16, seed);
  b.tensor("w_head", uint64_t(D), uint64_t(padded), DType::BF16, seed + 1);
  b.output_tensor("x", uint64_t(tokens), uint64_t(D));
  b.output_tensor("logits", uint64_t(tokens), uint64_t(padded));

  b.set_prefix("embed_");
  const Stream x_ack = add_embedding(b, tokens, D, vocab, seed);

  b.set_prefix("head_");
  const std::optional<Stream> go = phase_token(b, "start", {x_ack});
  Stream x = b.load("x", "x", {tokens, D}, {1}, {}, go);  // [1, 1] of [tokens x D], loaded once
  // The column tiles spread over the regions contiguously (region r: tiles first..first+n-1), each
  // region streaming its slice of w_head: one address generator alone would bound the head by its
  // request rate, where the vocabulary's weights are the largest single matrix of a model.
  const int64_t regions = std::min(positive(p, "regions"), tiles);
  std::vector<Stream> xr = b.broadcast("x_bc", x, size_t(regions));
  for (int64_t r = 0, first = 0; r < regions; ++r) {
    const int64_t n = tiles / regions + (r < tiles % regions ? 1 : 0);
    const std::string id = std::to_string(r);
    Stream w = b.add1("w" + id, OpKind::kLinearOffChipLoad,
                      {{param::kTensor.name, "w_head"},
                       {param::kTile.name, frontend::int_list({D, tv})},
                       {param::kOutShape.name, frontend::int_list({1, n})},
                       {param::kOffset.name, std::to_string(first)}},
                      {});  // [1, n] of [D x tile_v]
    Stream y = b.map("matmul" + id, "matmul", {b.repeat("xrep" + id, xr[size_t(r)], n), w}, bw);
    b.add("store" + id, OpKind::kLinearOffChipStore,
          {{param::kTensor.name, "logits"},
           {param::kTile.name, frontend::int_list({tokens, tv})},
           {param::kOutShape.name, frontend::int_list({1, n})},
           {param::kOffset.name, std::to_string(first)}},
          {{"in", y}});
    first += n;
  }
  b.set_prefix("");
  return b.graph();
}

}  // namespace

void register_lm_head(LayerRegistry& r) {
  r.add({"lm_head",
         "The model's two ends: the embedding lookup of `tokens` token ids (one [1 x hidden] row each, random "
         "reads of embed) stored to x, then the LM head x times w_head in column tiles of tile_v (the vocabulary "
         "padded to a multiple of tile_v), logits stored to HBM",
         {{"tokens", T::kInt, "64", "tokens (decode: the batch; prefill: 1, the last prompt token)"},
          {"hidden", T::kInt, "4096", "hidden dimension D (Mixtral 4096, Qwen3-30B-A3B 2048)"},
          {"vocab", T::kInt, "32000", "vocabulary size (Mixtral 32000, Qwen3 151936)"},
          {"tile_v", T::kInt, "1024", "LM head column tile (the vocabulary is padded to a multiple of it)"},
          {"regions", T::kInt, "4", "regions the column tiles are spread over (each streams its slice of w_head)"},
          {"compute_bw", T::kInt, "0", "FLOPs/cycle of the LM head's matmul (0 = the preset's compute_bw)"},
          {"seed", T::kInt, "1", "seed of the random tensors and the placeholder token ids"}},
         build_lm_head});
}

}  // namespace stepsim::layers
