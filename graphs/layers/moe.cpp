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
// summed over the top-k experts (Accum add) and stored as y[B, D].
//
// Symbols: n_route_out<e> = P_e, the tokens routed to expert e (values from the trace); the
// dynamic variant adds a_e<e> (1 if P_e > 0).
#include <algorithm>

#include "graphs/layers/blocks.h"
#include "graphs/layers/layer.h"
#include "sim/frontend/builder.h"
#include "sim/graph/loader.h"

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
      {"mixtral",
       {8, 2, 4096, 14336, "shared:traces/moe/mixtral8x7b_b64_iter008_layer010.csv",
        "shared:traces/moe/mixtral8x7b_b1024_iter019_layer009.csv"}},
      {"qwen",
       {128, 8, 2048, 768, "shared:traces/moe/qwen3_30b_a3b_b64_iter032_layer012.csv",
        "shared:traces/moe/qwen3_30b_a3b_b1024_iter022_layer016.csv"}},
  };
  return m;
}

// What the MoE variants share: parameters, the routing trace's bin counts, FIFO depths.
struct MoeSetup {
  std::string model, trace;
  int64_t B, D, F, E, topk, tn, tf, N;
  uint64_t bw, seed;
  bool dynamic;
  std::vector<int64_t> bins;
  uint32_t deep;  // FIFO depth where a stream waits for the slowest expert
};

MoeSetup setup(const Params& p, const std::string& layer) {
  MoeSetup s;
  s.model = p.get_string("model");
  auto mit = models().find(s.model);
  if (mit == models().end())
    throw std::invalid_argument("layer " + layer + ": model must be mixtral or qwen, got '" + s.model + "'");
  const ModelPreset& mp = mit->second;
  s.B = p.get_int("batch");
  s.D = p.get_int("hidden") ? p.get_int("hidden") : mp.hidden;
  s.F = p.get_int("inter") ? p.get_int("inter") : mp.inter;
  s.E = mp.experts;
  s.topk = mp.topk;
  s.tn = p.get_int("tile_n");
  s.tf = p.get_int("tile_f");
  s.trace = p.get_string("trace");
  if (s.trace.empty()) s.trace = s.B <= 64 ? mp.trace_b64 : mp.trace_b1024;
  if (s.B < 1 || s.D < 1 || s.F < 1 || s.tf < 1 || s.tn < 0)
    throw std::invalid_argument("layer " + layer + ": sizes must be >= 1 (tile_n >= 0)");
  if (s.F % s.tf)
    throw std::invalid_argument("layer " + layer + ": tile_f " + std::to_string(s.tf) + " does not divide inter " +
                                std::to_string(s.F));
  s.N = s.F / s.tf;
  s.bw = uint64_t(p.get_int("compute_bw"));
  s.seed = uint64_t(p.get_int("seed"));
  s.dynamic = s.tn == 0;
  s.bins = expert_bins(resolve_path(s.trace, "."), size_t(s.E), size_t(s.B));
  int64_t rows_in_trace = 0;
  for (int64_t v : s.bins) rows_in_trace += v;
  if (rows_in_trace != s.B * s.topk)
    throw std::invalid_argument("layer " + layer + ": trace " + s.trace + " has " +
                                std::to_string(rows_in_trace / s.topk) + " tokens, batch is " + std::to_string(s.B));
  const int64_t maxbin = *std::max_element(s.bins.begin(), s.bins.end());
  // Reassemble takes the experts' rows in token order: room for every row an expert holds back.
  s.deep = uint32_t((s.dynamic ? maxbin : (maxbin + s.tn - 1) / s.tn * s.tn) + 2);
  return s;
}

std::string describe(const MoeSetup& s) {
  return s.model + " (" + std::to_string(s.E) + " experts, top-" + std::to_string(s.topk) + ", hidden " +
         std::to_string(s.D) + ", intermediate " + std::to_string(s.F) + "), batch " + std::to_string(s.B) + ", " +
         (s.dynamic ? "dynamic tiling" : "static tile " + std::to_string(s.tn)) + ", tile_f " + std::to_string(s.tf) +
         ", routing " + s.trace;
}

// Tokens, routing and per-expert packing: packed[e] = [C_e] of [tile_n x D] (static; pad[e] the
// padding flags) or [a_e] of [P_e x D] (dynamic).
struct Front {
  Stream sel_merge;
  std::vector<Stream> packed, pad;
  std::vector<std::string> routed;  // P_e: the symbol of expert e's token count
};

Front front(GraphBuilder& b, const MoeSetup& s, const MoeIo& io) {
  if (io.declare_io) {
    b.tensor(io.x, uint64_t(s.B), uint64_t(s.D), DType::BF16, s.seed);
    b.output_tensor(io.y, uint64_t(s.B), uint64_t(s.D));
  }
  b.trace_stream("routing", "{trace: '" + s.trace + "', kind: selector, rank: 1, limit: " + std::to_string(s.B) + "}");
  Front f;
  Stream x = b.load("tokens", io.x, {1, s.D}, {s.B}, {}, phase_token(b, "start", io.after));
  Stream sel = b.source("routing", "routing");
  f.sel_merge = b.source("routing_merge", "routing", uint32_t(s.B) + 1);
  std::vector<Stream> routed = b.partition("route", x, sel, size_t(s.E));
  b.set_depth("route", s.deep);
  for (int64_t e = 0; e < s.E; ++e) {
    const std::string id = std::to_string(e), pre = "e" + id + "_";
    f.routed.push_back(shape::to_string(routed[size_t(e)].type().dims.back().size));
    if (s.dynamic) {
      Stream one = b.promote(pre + "one", routed[size_t(e)]);
      b.symbol("a_e" + id, s.bins[size_t(e)] > 0 ? "1" : "0");
      one.set_dim(0, "a_e" + id);  // an expert without tokens packs no tile
      f.packed.push_back(b.accum(pre + "pack", "retile_row", 1, {one}, s.bw));
      f.pad.emplace_back();
    } else {
      auto [chunks, padflags] = b.reshape(pre + "chunk", routed[size_t(e)], s.tn);
      b.set_depth(pre + "chunk", s.deep);
      f.packed.push_back(b.accum(pre + "pack", "retile_row", 1, {chunks}, s.bw));
      f.pad.push_back(padflags);
    }
  }
  return f;
}

// The SwiGLU FFN of one packed-tile stream: x [C] of [rows x D] repeated over the F/tile_f
// intermediate tiles, weights [C, F/tile_f]; returns [C] of [rows x D].
Stream ffn(GraphBuilder& b, const MoeSetup& s, const std::string& pre, const Stream& x, const Stream& w1,
           const Stream& w3, const Stream& w2) {
  Stream xr = b.repeat(pre + "xrep", x, s.N);
  Stream gate = b.map(pre + "gate", "matmul", {xr, w1}, s.bw);
  Stream up = b.map(pre + "up", "matmul", {xr, w3}, s.bw);
  Stream act = b.map(pre + "act", "silu", {gate}, s.bw);
  Stream h = b.map(pre + "h", "mul", {act, up}, s.bw);
  return b.accum(pre + "down", "matmul_acc", 1, {h, w2}, s.bw);
}

// Unpacks every expert's output tiles to rows (dropping padding), reassembles them in token
// order and stores them.
void back(GraphBuilder& b, const MoeSetup& s, const Front& f, const std::vector<Stream>& expert_out, const MoeIo& io) {
  std::vector<Stream> outs;
  for (int64_t e = 0; e < s.E; ++e) {
    const std::string id = std::to_string(e), pre = "e" + id + "_";
    Stream rows = b.flatmap(pre + "rows", "retile_streamify_row", 1, {expert_out[size_t(e)]});
    // Dynamic tiling: each tile has the expert's tokens as rows (said explicitly, because a
    // time-multiplexed region's output tiles have varying rows until they are split).
    if (s.dynamic) rows.set_dim(1, f.routed[size_t(e)]);
    Stream flat = b.flatten(pre + "flat", rows, 0, 1);
    if (s.dynamic) {
      b.set_depth(pre + "flat", s.deep);
      outs.push_back(flat);
    } else {
      Stream padf = b.flatten(pre + "padf", f.pad[size_t(e)], 0, 1);
      b.set_depth(pre + "padf", s.deep);
      Stream out = b.flatmap(pre + "out", "filter_padding", 0, {flat, padf});
      out.set_dim(0, f.routed[size_t(e)]);  // padding removed: the expert's tokens again
      b.set_depth(pre + "out", s.deep);
      outs.push_back(out);
    }
  }
  Stream merged = b.reassemble("merge", outs, f.sel_merge, 0);  // [1, B, topk~] of [1 x D]
  // The token's output: the sum of its top-k expert outputs (the artifact's final Accum; the
  // traces carry no router weights, so the weights are 1).
  Stream y = b.accum("combine", "add", 1, {merged}, s.bw);
  b.store("store", io.y, {1, s.D}, y, {s.B});
}

// One configured expert pipeline per expert; its weights are loaded once per packed tile.
void add_moe_per_expert(GraphBuilder& b, const MoeSetup& s, const MoeIo& io) {
  Front f = front(b, s, io);
  std::vector<Stream> y;
  for (int64_t e = 0; e < s.E; ++e) {
    const std::string id = std::to_string(e), pre = "e" + id + "_";
    b.tensor("w1_" + id, uint64_t(s.D), uint64_t(s.F), DType::BF16, s.seed + 1000 + uint64_t(3 * e));
    b.tensor("w3_" + id, uint64_t(s.D), uint64_t(s.F), DType::BF16, s.seed + 1001 + uint64_t(3 * e));
    b.tensor("w2_" + id, uint64_t(s.F), uint64_t(s.D), DType::BF16, s.seed + 1002 + uint64_t(3 * e));
    const Stream& x = f.packed[size_t(e)];
    Stream w1 = b.load(pre + "w1", "w1_" + id, {s.D, s.tf}, {s.N}, {}, x);
    Stream w3 = b.load(pre + "w3", "w3_" + id, {s.D, s.tf}, {s.N}, {}, x);
    Stream w2 = b.load(pre + "w2", "w2_" + id, {s.tf, s.D}, {s.N}, {}, x);
    y.push_back(ffn(b, s, pre, x, w1, w3, w2));
  }
  back(b, s, f, y, io);
}

// Configuration time-multiplexing (paper §5.3): `regions` expert pipelines, each shared by a
// block of E/regions experts. EagerMerge forwards the experts' packed tiles in arrival order,
// ExpertAddrGen + RandomOffChipLoad fetch the weights of the expert each tile belongs to (all
// experts' weights stacked: w1, w3 [E*D, F], w2 [E*F, D]), and a Partition by the same
// selector routes the results back to their experts.
int64_t tm_regions(const MoeSetup& s, const Params& p) {
  const int64_t R = p.get_int("regions");
  if (R < 1 || s.E % R)
    throw std::invalid_argument("layer moe_tm: regions " + std::to_string(R) + " must divide the " +
                                std::to_string(s.E) + " experts");
  return R;
}

void add_moe_tm(GraphBuilder& b, const MoeSetup& s, int64_t R, const MoeIo& io) {
  const int64_t per = s.E / R;
  Front f = front(b, s, io);
  b.tensor("w1", uint64_t(s.E * s.D), uint64_t(s.F), DType::BF16, s.seed + 1000);
  b.tensor("w3", uint64_t(s.E * s.D), uint64_t(s.F), DType::BF16, s.seed + 1001);
  b.tensor("w2", uint64_t(s.E * s.F), uint64_t(s.D), DType::BF16, s.seed + 1002);
  std::vector<Stream> y(size_t(s.E));
  for (int64_t r = 0; r < R; ++r) {
    const std::string pre = "r" + std::to_string(r) + "_";
    std::vector<Stream> ins;
    std::vector<int64_t> experts;
    for (int64_t e = r * per; e < (r + 1) * per; ++e) {
      ins.push_back(f.packed[size_t(e)]);
      experts.push_back(e);
    }
    auto [x, sel] = b.eager_merge(pre + "merge", ins, 0);
    b.set_depth(pre + "merge", s.deep);
    Stream addr = b.add1(
        pre + "addr", OpKind::kExpertAddrGen,
        {{param::kTilesPerExpert.name, std::to_string(s.N)}, {param::kExperts.name, frontend::int_list(experts)}},
        {{"in", sel}});
    Stream w1 = b.random_load(pre + "w1", "w1", {s.D, s.tf}, addr);
    Stream w3 = b.random_load(pre + "w3", "w3", {s.D, s.tf}, addr);
    Stream w2 = b.random_load(pre + "w2", "w2", {s.tf, s.D}, addr);
    Stream out = ffn(b, s, pre, x, w1, w3, w2);
    std::vector<Stream> split = b.partition(pre + "split", out, sel, size_t(per), 0);
    for (int64_t i = 0; i < per; ++i) {
      const int64_t e = r * per + i;
      // Each expert gets back as many tiles as it packed.
      split[size_t(i)].set_dim(0, f.packed[size_t(e)].type().dims[0].size);
      y[size_t(e)] = split[size_t(i)];
    }
  }
  back(b, s, f, y, io);
}

Graph build_moe(const Params& p) {
  const MoeSetup s = setup(p, "moe");
  GraphBuilder b("moe_" + s.model + (s.dynamic ? "_dynamic" : "_static" + std::to_string(s.tn)),
                 "MoE layer, " + describe(s));
  add_moe_per_expert(b, s, MoeIo{});
  return b.graph();
}

Graph build_moe_tm(const Params& p) {
  const MoeSetup s = setup(p, "moe_tm");
  const int64_t R = tm_regions(s, p);
  GraphBuilder b(
      "moe_tm_" + s.model + "_r" + std::to_string(R) + (s.dynamic ? "_dynamic" : "_static" + std::to_string(s.tn)),
      "time-multiplexed MoE layer, " + std::to_string(R) + " regions of " + std::to_string(s.E / R) + " experts, " +
          describe(s));
  add_moe_tm(b, s, R, MoeIo{});
  return b.graph();
}

}  // namespace

void add_moe(GraphBuilder& b, const std::string& layer, const Params& p, const MoeIo& io) {
  const MoeSetup s = setup(p, layer);
  if (layer == "moe_tm")
    add_moe_tm(b, s, tm_regions(s, p), io);
  else
    add_moe_per_expert(b, s, io);
}

std::map<std::string, MoeFamily> moe_families() {
  std::map<std::string, MoeFamily> out;
  for (const auto& [name, m] : models()) out[name] = {m.experts, m.topk};
  return out;
}

void register_moe(LayerRegistry& r) {
  r.add({"moe",
         "MoE layer with SwiGLU experts routed by a real trace (Mixtral-8x7B or Qwen3-30B-A3B); static tiling "
         "(tile_n) or dynamic tiling (tile_n = 0)",
         {{"model", T::kString, "mixtral",
           "mixtral (8 experts, top-2, 4096/14336) or qwen (128 experts, top-8, 2048/768)"},
          {"batch", T::kInt, "64", "tokens; the first `batch` rows of the trace"},
          {"tile_n", T::kInt, "16", "static tile of the per-expert token dimension; 0 = dynamic tiling"},
          {"tile_f", T::kInt, "64", "intermediate tile"},
          {"hidden", T::kInt, "0", "hidden dimension (0 = the model's)"},
          {"inter", T::kInt, "0", "intermediate dimension (0 = the model's)"},
          {"trace", T::kString, "",
           "routing trace CSV (default: the model's b64 or b1024 trace in ../shared/traces/moe)"},
          {"compute_bw", T::kInt, "0", "FLOPs/cycle per higher-order node (0 = the preset's compute_bw)"},
          {"seed", T::kInt, "1", "seed of the random tensors"}},
         build_moe});
  r.add(
      {"moe_tm",
       "Configuration-time-multiplexed MoE (paper §5.3): `regions` SwiGLU pipelines shared by the experts through "
       "EagerMerge, weights fetched per tile with ExpertAddrGen + RandomOffChipLoad, results partitioned back; "
       "static (tile_n) or dynamic (tile_n = 0) tiling",
       {{"model", T::kString, "qwen", "mixtral (8 experts, top-2, 4096/14336) or qwen (128 experts, top-8, 2048/768)"},
        {"regions", T::kInt, "32", "parallel regions (expert pipelines); must divide the experts"},
        {"batch", T::kInt, "64", "tokens; the first `batch` rows of the trace"},
        {"tile_n", T::kInt, "32", "static tile of the per-expert token dimension; 0 = dynamic tiling"},
        {"tile_f", T::kInt, "48", "intermediate tile"},
        {"hidden", T::kInt, "0", "hidden dimension (0 = the model's)"},
        {"inter", T::kInt, "0", "intermediate dimension (0 = the model's)"},
        {"trace", T::kString, "",
         "routing trace CSV (default: the model's b64 or b1024 trace in ../shared/traces/moe)"},
        {"compute_bw", T::kInt, "0", "FLOPs/cycle per higher-order node (0 = the preset's compute_bw)"},
        {"seed", T::kInt, "1", "seed of the random tensors"}},
       build_moe_tm});
}

}  // namespace stepsim::layers
