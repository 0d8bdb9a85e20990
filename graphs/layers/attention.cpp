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

// Longest KV cache a request may have (tokens): 16 Mi, far beyond any context window, and small
// enough that the cache tensor and the tile count of one request stay host-sized.
constexpr int64_t kMaxKvTokens = int64_t(1) << 24;

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

}  // namespace

std::vector<Stream> add_attention(GraphBuilder& b, const AttentionSpec& a) {
  const int64_t G = a.kv_heads, N = int64_t(a.len.size()), B = N / G, R = a.regions, tn = a.tile_n, hd = a.head_dim,
                qpk = a.q_per_kv;
  if (G < 1 || N % G) throw std::invalid_argument("layer attention: kv_heads must divide the number of items");
  const bool grouped = G > 1;  // requests of several items: one more stream dimension
  const std::string& par = a.parallel;
  const uint64_t bw = a.compute_bw;
  const uint32_t meta_depth = a.metadata_depth;
  // Sequencing after an earlier phase: the metadata sources and the query loads wait for it.
  const std::optional<Stream> go = phase_token(b, "start", a.after);
  const std::vector<Stream> after = go ? std::vector<Stream>{*go} : std::vector<Stream>{};
  auto source = [&](const std::string& name, uint32_t depth = 0) { return b.source(name, name, depth, after); };
  // Item indices and lengths of requests first..first+n-1 ("S1" between requests when grouped).
  auto item_text = [&](int64_t first, int64_t n, bool lengths) {
    std::string t;
    for (int64_t i = first; i < first + n; ++i)
      for (int64_t h = 0; h < G; ++h)
        t += std::to_string(lengths ? a.len[size_t(i * G + h)] : i * G + h) +
             (grouped && h == G - 1 && i < first + n - 1 ? " S1 " : " ");
    return t;
  };

  // Per region: its queries [P_r(, G), 1] (the inner 1 is what Expand repeats over the KV
  // tiles), item indices and KV lengths [P_r(, G)], and (grouped) request indices [P_r].
  std::vector<Stream> qs, ids, lens, reqs;
  int64_t regions = R;
  if (par == "coarse") {
    const int64_t per = a.per_region;
    if (per < 1) throw std::invalid_argument("layer attention: per_region must be >= 1");
    if (grouped) throw std::invalid_argument("layer attention: coarse parallelization takes one item per request");
    regions = (B + per - 1) / per;
    for (int64_t r = 0; r < regions; ++r) {
      const std::string id = std::to_string(r);
      const int64_t first = r * per, n = std::min(per, B - first);
      b.literal_stream("idx" + id, item_text(first, n, false) + "D");
      b.literal_stream("kv_len" + id, item_text(first, n, true) + "D");
      // Each region's queries are their own tensor (the artifact's coarse builder).
      b.tensor(a.q + id, uint64_t(n * qpk), uint64_t(hd), DType::BF16, a.seed + 10 + uint64_t(r));
      Stream qr = b.load("q" + id + "_load", a.q + id, {qpk, hd}, {n, 1}, {}, go);
      qs.push_back(b.flatten("q" + id + "_flat", qr, 1, 2));
      ids.push_back(source("idx" + id, meta_depth));
      lens.push_back(source("kv_len" + id, meta_depth));
    }
  } else {
    const std::string close = grouped ? "S2 D" : "S1 D";
    b.literal_stream("idx", item_text(0, B, false) + close);
    b.literal_stream("kv_len", item_text(0, B, true) + close);
    // The dispatch selector (one per request): literal (round-robin) for interleaved, fed back for dynamic.
    Stream dispatch;
    if (par == "dynamic") {
      shape::StreamType t{{shape::Dim::fixed(1), shape::Dim::fixed(B)}, shape::ElemType::selector()};
      dispatch = b.forward("dispatch", "out", t);
    } else {
      std::vector<int64_t> region;
      for (int64_t i = 0; i < B; ++i) region.push_back(i % R);
      b.literal_stream("assign", selectors(region, true));
      dispatch = source("assign", meta_depth);
    }
    // [1, B(, G), 1]: a request's queries move together.
    Stream q =
        b.load("q_load", a.q, {qpk, hd}, grouped ? std::vector<int64_t>{B, G, 1} : std::vector<int64_t>{B, 1}, {}, go);
    Stream idx = source("idx", meta_depth);
    Stream kvl = source("kv_len", meta_depth);
    qs = b.partition("q_route", q, dispatch, size_t(R), grouped ? 2 : 1);
    ids = b.partition("idx_route", idx, dispatch, size_t(R), grouped ? 1 : 0);
    lens = b.partition("len_route", kvl, dispatch, size_t(R), grouped ? 1 : 0);
    for (const char* n : {"idx_route", "len_route"}) b.set_depth(n, meta_depth);
    // A region holds all query tiles of its current request: Partition moves the request as
    // one chunk and would otherwise block the other regions' queries until the last head.
    if (grouped) b.set_depth("q_route", uint32_t(G));
    if (grouped) {
      std::string rt;
      for (int64_t i = 0; i < B; ++i) rt += std::to_string(i) + " ";
      b.literal_stream("req", rt + "S1 D");
      reqs = b.partition("req_route", source("req", meta_depth), dispatch, size_t(R));
      b.set_depth("req_route", meta_depth);
    }
    for (int64_t r = 0; r < R; ++r) {  // routed by the same selectors: as many requests as the queries
      ids[size_t(r)].set_dim(0, qs[size_t(r)].type().dims[0].size);
      lens[size_t(r)].set_dim(0, qs[size_t(r)].type().dims[0].size);
      if (grouped) reqs[size_t(r)].set_dim(0, qs[size_t(r)].type().dims[0].size);
    }
  }

  std::vector<Stream> acks;
  for (int64_t r = 0; r < regions; ++r) {
    const std::string pre = "r" + std::to_string(r) + "_";
    auto gen =
        b.add(pre + "addr", OpKind::kKvCacheAddrGen,
              {{param::kTileRows.name, std::to_string(tn)}, {param::kMaxTiles.name, std::to_string(a.max_tiles)}},
              {{"idx", ids[size_t(r)]}, {"kv_len", lens[size_t(r)]}});
    Stream addr = gen.at("addr"), last = gen.at("last"), valid = gen.at("valid");
    // Static schemes: the KV tiles each region reads are known from the trace.
    if (par != "dynamic") {
      int64_t tiles = 0;
      for (int64_t i = 0; i < B; ++i) {
        const bool mine = par == "interleaved" ? i % R == r : i / a.per_region == r;
        for (int64_t h = 0; mine && h < G; ++h) tiles += (a.len[size_t(i * G + h)] + tn - 1) / tn;
      }
      b.symbol(shape::to_string(addr.type().dims.back().size), std::to_string(tiles));
    }
    Stream k = b.random_load(pre + "k", a.kcache, {tn, hd}, addr);
    Stream v = b.random_load(pre + "v", a.vcache, {tn, hd}, addr);
    Stream qe = b.expand(pre + "qe", qs[size_t(r)], k, 1);
    Stream s = b.map(pre + "qk", "matmul_t_f32", {qe, k}, bw);
    Stream sm = b.map(pre + "mask", "mask_cols", {s, valid}, bw);  // key positions past kv_len
    Stream o = b.accum(pre + "attn", "flash_attn_update", 1, {sm, v}, bw);
    if (grouped)  // one output tile per request, its heads' rows stacked: one store and one completion per request
      acks.push_back(b.add1(pre + "store", OpKind::kRandomOffChipStore,
                            {{param::kTensor.name, a.out}, {param::kTile.name, frontend::int_list({G * qpk, hd})}},
                            {{"waddr", reqs[size_t(r)]}, {"wdata", b.accum(pre + "heads", "retile_row", 1, {o}, bw)}}));
    else
      acks.push_back(b.add1(pre + "store", OpKind::kRandomOffChipStore,
                            {{param::kTensor.name, a.out}, {param::kTile.name, frontend::int_list({qpk, hd})}},
                            {{"waddr", ids[size_t(r)]}, {"wdata", o}}));
    if (!a.writeback) {
      b.sink(pre + "last", last);
      continue;
    }
    if (grouped) throw std::invalid_argument("layer attention: the KV write-back takes one item per request");
    // Write back each request's last K and V tile (where the new token goes).
    // One last tile per request: as many as the region's requests, the rest are the others.
    const shape::ex requests = qs[size_t(r)].type().dims[0].size, tiles = addr.type().dims.back().size;  // (items)
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
                           {{param::kTensor.name, t}, {param::kTile.name, frontend::int_list({tn, hd})}},
                           {{"waddr", ka[1]}, {"wdata", parts[1]}});
      b.sink(pre + kv + "_wb_done", done);
    }
    b.sink(pre + "addr_rest", ka[0]);
  }

  if (par == "dynamic") {
    // Region completions, in completion order, become the dispatch decisions of requests R..B-1.
    auto [done, who] = b.eager_merge("completed", acks, 0);
    acks = {done};
    who.set_dim(0, std::to_string(B));  // every request completes once
    std::vector<int64_t> keep(size_t(B), 0);
    for (int64_t i = B - R; i < B; ++i) keep[size_t(i)] = 1;  // the last R completions start nothing
    b.literal_stream("keep_first", selectors(keep, false));
    std::vector<Stream> kept = b.partition("next", who, source("keep_first", meta_depth), 2);
    b.sink("unused", kept[1]);
    std::vector<int64_t> first(static_cast<size_t>(R));
    for (int64_t i = 0; i < R; ++i) first[size_t(i)] = i;
    b.literal_stream("first", selectors(first, false));
    std::vector<int64_t> order(size_t(B), 1);
    for (int64_t i = 0; i < R; ++i) order[size_t(i)] = 0;  // R initial round-robin picks, then the fed-back ones
    b.literal_stream("order", selectors(order, true));
    Stream sel = b.reassemble("dispatch_merge", {source("first"), kept[0]}, source("order"), 0);
    b.flatten("dispatch", sel, 0, 1);
    b.set_depth("dispatch", meta_depth);
  }
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
