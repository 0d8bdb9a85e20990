// GQA decode attention over a real KV-cache trace (step-paper-notes §4.4; the artifact's
// dynamic_par/flashattn.py): one KV head group, every request of the batch decodes one token.
// Per request: its query tile [q_per_kv x head_dim], the KV-cache tiles holding its kv_len =
// context + 1 tokens (KvCacheAddrGen + RandomOffChipLoad, tile_n tokens per tile), S = Q K^T
// (Map matmul_t_f32) with the positions past kv_len in the last tile masked (Map mask_cols) and
// FlashAttention's online softmax with V (Accum flash_attn_update), the
// output tile stored at the request's row, and the last K and V tiles written back (the new
// token's key and value are taken to be in the cache already: the write-back carries the
// traffic of the append, not its data movement).
//
// Parallelization over regions, as the artifact builds it (dynamic_par/*.py):
//   interleaved  one dispatcher sends request i to region i mod R (static round-robin, like the
//                artifact's Parallelize): a region that is still busy blocks the dispatch of the
//                requests behind it, the regions progress in near lock-step;
//   coarse       ceil(batch / per_region) regions with their own per_region requests, queries and
//                metadata (no dispatcher; batch 16 runs on one region);
//   dynamic      the first R requests round-robin, then each request to the region that just
//                finished one: region completions (the output stores' acks) are merged by an
//                EagerMerge whose selector is fed back to the dispatch (a cyclic graph; the
//                last R completions are dropped).
#include <algorithm>
#include <cmath>

#include "graphs/layers/blocks.h"
#include "graphs/layers/layer.h"
#include "hw/stream/number_text.h"
#include "sim/frontend/builder.h"
#include "sim/graph/loader.h"

namespace stepsim::layers {

std::vector<int64_t> kv_lengths(const std::string& file, int64_t first, int64_t n) {
  CsvTable t = read_csv(resolve_path(file, "."));
  const size_t col = t.column("ContextTokens", file);
  if (first < 1 || first + n - 1 > int64_t(t.rows.size()))
    throw std::invalid_argument("layer attention: rows " + std::to_string(first) + ".." +
                                std::to_string(first + n - 1) + " are outside the " + std::to_string(t.rows.size()) +
                                " rows of " + file);
  std::vector<int64_t> v;
  for (int64_t r = first; r < first + n; ++r) {
    const std::string& cell = t.rows[size_t(r - 1)][col];
    int64_t len = 0;
    if (!parse_int64(cell, len) || len < 0 || len > kMaxKvTokens)
      throw std::invalid_argument(file + ": data row " + std::to_string(r) + ": ContextTokens '" + cell +
                                  "' is not a KV length in 0.." + std::to_string(kMaxKvTokens) + " tokens");
    v.push_back(len);
  }
  return v;
}

namespace {

using frontend::GraphBuilder;
using frontend::Stream;
using T = ParamSpec::Type;

std::string selectors(const std::vector<int64_t>& regions, bool stop) {
  std::string s;
  for (int64_t r : regions) s += "{" + std::to_string(r) + "} ";
  return s + (stop ? "S1 D" : "D");
}

// What the parts of one attention block share: the spec, its request count, and the sequencing
// after an earlier phase (the metadata sources and the query loads wait for it).
struct AttentionBuild {
  GraphBuilder& b;
  const AttentionSpec& a;
  int64_t requests;
  bool grouped;  // requests of several items, or items sharing KV slots: one more stream dimension
  std::optional<Stream> go;
  std::vector<Stream> after;

  Stream source(const std::string& name, uint32_t depth = 0) const { return b.source(name, name, depth, after); }

  // KV-cache slots or KV lengths of requests first..first+n-1 ("S1" between requests when grouped).
  std::string item_text(int64_t first, int64_t n, bool lengths) const {
    const int64_t G = a.kv_heads;
    std::string t;
    for (int64_t i = first; i < first + n; ++i)
      for (int64_t h = 0; h < G; ++h) {
        const size_t item = size_t(i * G + h);
        const int64_t slot = a.slot.empty() ? int64_t(item) : a.slot[item];
        t += std::to_string(lengths ? a.len[item] : slot) + (grouped && h == G - 1 && i < first + n - 1 ? " S1 " : " ");
      }
    return t;
  }
};

// Per region: its queries [P_r(, G), 1] (the inner 1 is what Expand repeats over the KV
// tiles), item indices and KV lengths [P_r(, G)], and (grouped) request indices [P_r].
struct RegionInputs {
  std::vector<Stream> qs, ids, lens, reqs;
};

// Coarse: ceil(batch / per_region) regions, each with its own queries and metadata.
RegionInputs coarse_inputs(const AttentionBuild& c) {
  GraphBuilder& b = c.b;
  const AttentionSpec& a = c.a;
  const int64_t per = a.per_region, B = c.requests;
  if (per < 1) throw std::invalid_argument("layer attention: per_region must be >= 1");
  if (c.grouped) throw std::invalid_argument("layer attention: coarse parallelization takes one item per request");
  RegionInputs in;
  for (int64_t r = 0; r < (B + per - 1) / per; ++r) {
    const std::string id = std::to_string(r);
    const int64_t first = r * per, n = std::min(per, B - first);
    b.literal_stream("idx" + id, c.item_text(first, n, false) + "D");
    b.literal_stream("kv_len" + id, c.item_text(first, n, true) + "D");
    // Each region's queries are their own tensor (the artifact's coarse builder).
    b.tensor(a.q + id, uint64_t(n * a.q_per_kv), uint64_t(a.head_dim), DType::BF16, a.seed + 10 + uint64_t(r));
    Stream qr = b.load("q" + id + "_load", a.q + id, {a.q_per_kv, a.head_dim}, {n, 1}, {}, c.go);
    in.qs.push_back(b.flatten("q" + id + "_flat", qr, 1, 2));
    in.ids.push_back(c.source("idx" + id, a.metadata_depth));
    in.lens.push_back(c.source("kv_len" + id, a.metadata_depth));
  }
  return in;
}

// The region of each request: literal (round-robin) for interleaved; for dynamic, fed back from
// the region completions (close_dynamic_dispatch adds the node).
Stream dispatch_selector(const AttentionBuild& c) {
  if (c.a.parallel == "dynamic") {
    shape::StreamType t{{shape::Dim::fixed(1), shape::Dim::fixed(c.requests)}, shape::ElemType::selector()};
    return c.b.forward("dispatch", "out", t);
  }
  std::vector<int64_t> region;
  for (int64_t i = 0; i < c.requests; ++i) region.push_back(i % c.a.regions);
  c.b.literal_stream("assign", selectors(region, true));
  return c.source("assign", c.a.metadata_depth);
}

// Interleaved or dynamic: one dispatcher routes each request's queries and metadata to a region.
RegionInputs dispatched_inputs(const AttentionBuild& c) {
  GraphBuilder& b = c.b;
  const AttentionSpec& a = c.a;
  const int64_t B = c.requests, G = a.kv_heads;
  const size_t R = size_t(a.regions);
  const bool grouped = c.grouped;
  const uint32_t meta_depth = a.metadata_depth;
  const std::string close = grouped ? "S2 D" : "S1 D";
  b.literal_stream("idx", c.item_text(0, B, false) + close);
  b.literal_stream("kv_len", c.item_text(0, B, true) + close);
  Stream dispatch = dispatch_selector(c);
  // [1, B(, G), 1]: a request's queries move together.
  Stream q = b.load("q_load", a.q, {a.q_per_kv, a.head_dim},
                    grouped ? std::vector<int64_t>{B, G, 1} : std::vector<int64_t>{B, 1}, {}, c.go);
  Stream idx = c.source("idx", meta_depth);
  Stream kvl = c.source("kv_len", meta_depth);
  RegionInputs in;
  in.qs = b.partition("q_route", q, dispatch, R, grouped ? 2 : 1);
  in.ids = b.partition("idx_route", idx, dispatch, R, grouped ? 1 : 0);
  in.lens = b.partition("len_route", kvl, dispatch, R, grouped ? 1 : 0);
  for (const char* n : {"idx_route", "len_route"}) b.set_depth(n, meta_depth);
  // A region holds all query tiles of its current request: Partition moves the request as
  // one chunk and would otherwise block the other regions' queries until the last head.
  if (grouped) b.set_depth("q_route", uint32_t(G));
  if (grouped) {
    std::string rt;
    for (int64_t i = 0; i < B; ++i) rt += std::to_string(i) + " ";
    b.literal_stream("req", rt + "S1 D");
    in.reqs = b.partition("req_route", c.source("req", meta_depth), dispatch, R);
    b.set_depth("req_route", meta_depth);
  }
  for (size_t r = 0; r < R; ++r) {  // routed by the same selectors: as many requests as the queries
    in.ids[r].set_dim(0, in.qs[r].type().dims[0].size);
    in.lens[r].set_dim(0, in.qs[r].type().dims[0].size);
    if (grouped) in.reqs[r].set_dim(0, in.qs[r].type().dims[0].size);
  }
  return in;
}

// KV tiles region r reads under a static scheme, known from the trace.
int64_t static_tiles(const AttentionBuild& c, int64_t r) {
  const AttentionSpec& a = c.a;
  const int64_t G = a.kv_heads, tn = a.tile_n;
  int64_t tiles = 0;
  for (int64_t i = 0; i < c.requests; ++i) {
    const bool mine = a.parallel == "interleaved" ? i % a.regions == r : i / a.per_region == r;
    for (int64_t h = 0; mine && h < G; ++h) tiles += (a.len[size_t(i * G + h)] + tn - 1) / tn;
  }
  return tiles;
}

// Writes back each request's last K and V tile (where the new token goes); the region's other
// tiles and addresses are dropped.
void add_kv_writeback(const AttentionBuild& c, const std::string& pre, const Stream& queries, const Stream& addr,
                      const Stream& last, const Stream& k, const Stream& v) {
  GraphBuilder& b = c.b;
  const AttentionSpec& a = c.a;
  if (c.grouped) throw std::invalid_argument("layer attention: the KV write-back takes one item per request");
  // One last tile per request: as many as the region's requests, the rest are the others.
  const shape::ex requests = queries.type().dims[0].size, tiles = addr.type().dims.back().size;  // (items)
  std::vector<Stream> ka = b.partition(pre + "last_addr", addr, last, 2);
  ka[0].set_dim(0, tiles - requests);
  ka[1].set_dim(0, requests);
  for (const char* kv : {"k", "v"}) {
    const std::string t = std::string(kv) == "k" ? a.kcache : a.vcache;
    std::vector<Stream> parts = b.partition(pre + kv + "_last", std::string(kv) == "k" ? k : v, last, 2);
    parts[0].set_dim(0, tiles - requests);
    parts[1].set_dim(0, requests);
    b.sink(pre + kv + "_rest", parts[0]);
    b.set_depth(pre + kv + "_last", a.writeback_depth);
    Stream done = b.add1(pre + kv + "_wb", OpKind::kRandomOffChipStore,
                         {{param::kTensor.name, t}, {param::kTile.name, frontend::int_list({a.tile_n, a.head_dim})}},
                         {{"waddr", ka[1]}, {"wdata", parts[1]}});
    b.sink(pre + kv + "_wb_done", done);
  }
  b.sink(pre + "addr_rest", ka[0]);
}

// Region r: the KV tiles of its items, S = Q K^T masked past kv_len, the online softmax with V,
// and the output store. Returns the store's ack.
Stream add_region(const AttentionBuild& c, const RegionInputs& in, int64_t r) {
  GraphBuilder& b = c.b;
  const AttentionSpec& a = c.a;
  const int64_t G = a.kv_heads, tn = a.tile_n, hd = a.head_dim, qpk = a.q_per_kv;
  const uint64_t bw = a.compute_bw;
  const std::string pre = "r" + std::to_string(r) + "_";
  auto gen = b.add(pre + "addr", OpKind::kKvCacheAddrGen,
                   {{param::kTileRows.name, std::to_string(tn)}, {param::kMaxTiles.name, std::to_string(a.max_tiles)}},
                   {{"idx", in.ids[size_t(r)]}, {"kv_len", in.lens[size_t(r)]}});
  Stream addr = gen.at("addr"), last = gen.at("last"), valid = gen.at("valid");
  if (a.parallel != "dynamic")
    b.symbol(shape::to_string(addr.type().dims.back().size), std::to_string(static_tiles(c, r)));
  Stream k = b.random_load(pre + "k", a.kcache, {tn, hd}, addr);
  Stream v = b.random_load(pre + "v", a.vcache, {tn, hd}, addr);
  Stream qe = b.expand(pre + "qe", in.qs[size_t(r)], k, 1);
  Stream s = b.map(pre + "qk", "matmul_t_f32", {qe, k}, bw);
  Stream sm = b.map(pre + "mask", "mask_cols", {s, valid}, bw);  // key positions past kv_len
  Stream o = b.accum(pre + "attn", "flash_attn_update", 1, {sm, v}, bw);
  Stream ack;
  if (c.grouped)  // one output tile per request, its heads' rows stacked: one store and one completion per request
    ack = b.add1(pre + "store", OpKind::kRandomOffChipStore,
                 {{param::kTensor.name, a.out}, {param::kTile.name, frontend::int_list({G * qpk, hd})}},
                 {{"waddr", in.reqs[size_t(r)]}, {"wdata", b.accum(pre + "heads", "retile_row", 1, {o}, bw)}});
  else
    ack = b.add1(pre + "store", OpKind::kRandomOffChipStore,
                 {{param::kTensor.name, a.out}, {param::kTile.name, frontend::int_list({qpk, hd})}},
                 {{"waddr", in.ids[size_t(r)]}, {"wdata", o}});
  if (a.writeback)
    add_kv_writeback(c, pre, in.qs[size_t(r)], addr, last, k, v);
  else
    b.sink(pre + "last", last);
  return ack;
}

// Dynamic: region completions, in completion order, become the dispatch decisions of requests
// R..B-1 (closing the cycle dispatch_selector opened). Returns the merged completions.
Stream close_dynamic_dispatch(const AttentionBuild& c, const std::vector<Stream>& acks) {
  GraphBuilder& b = c.b;
  const int64_t B = c.requests, R = c.a.regions;
  auto [done, who] = b.eager_merge("completed", acks, 0);
  who.set_dim(0, std::to_string(B));  // every request completes once
  std::vector<int64_t> keep(size_t(B), 0);
  for (int64_t i = B - R; i < B; ++i) keep[size_t(i)] = 1;  // the last R completions start nothing
  b.literal_stream("keep_first", selectors(keep, false));
  std::vector<Stream> kept = b.partition("next", who, c.source("keep_first", c.a.metadata_depth), 2);
  b.sink("unused", kept[1]);
  std::vector<int64_t> first(static_cast<size_t>(R));
  for (int64_t i = 0; i < R; ++i) first[size_t(i)] = i;
  b.literal_stream("first", selectors(first, false));
  std::vector<int64_t> order(size_t(B), 1);
  for (int64_t i = 0; i < R; ++i) order[size_t(i)] = 0;  // R initial round-robin picks, then the fed-back ones
  b.literal_stream("order", selectors(order, true));
  Stream sel = b.reassemble("dispatch_merge", {c.source("first"), kept[0]}, c.source("order"), 0);
  b.flatten("dispatch", sel, 0, 1);
  b.set_depth("dispatch", c.a.metadata_depth);
  return done;
}

}  // namespace

std::vector<Stream> add_attention(GraphBuilder& b, const AttentionSpec& a) {
  const int64_t G = a.kv_heads, N = int64_t(a.len.size());
  if (G < 1 || N % G) throw std::invalid_argument("layer attention: kv_heads must divide the number of items");
  if (!a.slot.empty() && int64_t(a.slot.size()) != N)
    throw std::invalid_argument("layer attention: " + std::to_string(a.slot.size()) + " KV slots for " +
                                std::to_string(N) + " items");
  const std::optional<Stream> go = phase_token(b, "start", a.after);
  // Shared slots: the item index cannot address the output, the request index does (grouped).
  const bool grouped = G > 1 || !a.slot.empty();
  const AttentionBuild c{b, a, N / G, grouped, go, go ? std::vector<Stream>{*go} : std::vector<Stream>{}};
  const RegionInputs in = a.parallel == "coarse" ? coarse_inputs(c) : dispatched_inputs(c);
  std::vector<Stream> acks;
  for (size_t r = 0; r < in.qs.size(); ++r) acks.push_back(add_region(c, in, int64_t(r)));
  if (a.parallel == "dynamic") acks = {close_dynamic_dispatch(c, acks)};
  return acks;
}

namespace {

Graph build_attention(const Params& p) {
  const std::string model = p.get_string("model");
  AttentionSpec a;
  if (model == "mixtral")
    a.head_dim = 128, a.q_per_kv = 4;
  else if (model != "qwen")
    throw std::invalid_argument("layer attention: model must be qwen or mixtral, got '" + model + "'");
  if (p.get_int("head_dim")) a.head_dim = p.get_int("head_dim");
  if (p.get_int("q_per_kv")) a.q_per_kv = p.get_int("q_per_kv");
  const int64_t B = p.get_int("batch"), hd = a.head_dim, qpk = a.q_per_kv;
  a.regions = p.get_int("regions");
  a.tile_n = p.get_int("tile_n");
  a.per_region = p.get_int("per_region");
  a.parallel = p.get_string("parallel");
  if (B < 1 || a.regions < 1 || a.tile_n < 1 || hd < 1 || qpk < 1)
    throw std::invalid_argument("layer attention: sizes must be >= 1");
  if (a.parallel != "interleaved" && a.parallel != "coarse" && a.parallel != "dynamic")
    throw std::invalid_argument("layer attention: parallel must be interleaved, coarse or dynamic, got '" + a.parallel +
                                "'");
  if (a.parallel == "dynamic" && B < a.regions)
    throw std::invalid_argument("layer attention: dynamic parallelization needs batch >= regions");
  for (int64_t c : kv_lengths(p.get_string("kv_trace"), p.get_int("kv_first_row"), B)) {
    a.len.push_back(c + 1);  // the token being decoded
    a.max_tiles = std::max(a.max_tiles, (c + 1 + a.tile_n - 1) / a.tile_n);
  }
  a.compute_bw = uint64_t(p.get_int("compute_bw"));
  a.metadata_depth = uint32_t(p.get_int("metadata_depth"));
  a.writeback_depth = uint32_t(p.get_int("writeback_depth"));
  a.seed = uint64_t(p.get_int("seed"));

  GraphBuilder b("attention_" + model + "_" + a.parallel + "_b" + std::to_string(B),
                 "GQA decode attention (" + model + ": head_dim " + std::to_string(hd) + ", " + std::to_string(qpk) +
                     " queries per KV head), batch " + std::to_string(B) + ", KV lengths from rows " +
                     std::to_string(p.get_int("kv_first_row")) + ".. of " + p.get_string("kv_trace") + ", " +
                     std::to_string(a.regions) + " regions, " + a.parallel + " parallelization, KV tile " +
                     std::to_string(a.tile_n));
  const uint64_t rows = uint64_t(B * a.max_tiles * a.tile_n);
  b.tensor("kcache", rows, uint64_t(hd), DType::BF16, a.seed + 1);
  b.tensor("vcache", rows, uint64_t(hd), DType::BF16, a.seed + 2);
  b.output_tensor("out", uint64_t(B * qpk), uint64_t(hd));
  if (a.parallel != "coarse") b.tensor("q", uint64_t(B * qpk), uint64_t(hd), DType::BF16, a.seed);
  std::vector<Stream> acks = add_attention(b, a);
  if (a.parallel == "dynamic") b.sink("completed_acks", acks[0]);  // (static: the acks are left unconnected)
  return b.graph();
}

}  // namespace

void register_attention(LayerRegistry& r) {
  r.add({"attention",
         "GQA decode attention (one KV head group) over real Azure KV-cache lengths, KV tiles streamed from HBM, "
         "FlashAttention online softmax, parallelized over regions: interleaved, coarse or dynamic (cyclic EagerMerge)",
         {{"model", T::kString, "qwen", "qwen (head_dim 64, 8 queries per KV head) or mixtral (128, 4)"},
          {"batch", T::kInt, "64", "requests"},
          {"kv_trace", T::kString, "shared:traces/azure/AzureLLMInferenceTrace_conv.csv",
           "Azure LLM inference trace (ContextTokens = KV length before the decoded token)"},
          {"kv_first_row", T::kInt, "4007",
           "first data row (1-based) of the batch in kv_trace (4007: the artifact's "
           "medium-variability B=64 batch)"},
          {"parallel", T::kString, "dynamic", "interleaved, coarse or dynamic"},
          {"regions", T::kInt, "4", "parallel regions"},
          {"per_region", T::kInt, "16", "requests per region for coarse parallelization"},
          {"tile_n", T::kInt, "32", "tokens per KV tile"},
          {"head_dim", T::kInt, "0", "head dimension (0 = the model's)"},
          {"q_per_kv", T::kInt, "0", "query heads per KV head (0 = the model's)"},
          {"compute_bw", T::kInt, "2048", "FLOPs/cycle per higher-order node (the artifact's attention runs: 2048)"},
          {"metadata_depth", T::kInt, "16", "FIFO depth of the request metadata and dispatch streams"},
          {"writeback_depth", T::kInt, "4", "FIFO depth in front of the KV-cache write-back"},
          {"seed", T::kInt, "1", "seed of the random tensors"}},
         build_attention});
}

}  // namespace stepsim::layers
