// The layers a serving run (stepsim serve, issue 36) sums up: the decoder with KV lengths given
// directly, the prefill layer (one request's prompt chunk in query blocks) and lm_head (the
// embedding lookup and the LM head). Off-chip traffic is checked against figures derived by
// hand, per phase from the symbolic metrics and in total from a timing run.
#include <gtest/gtest.h>

#include <cmath>

#include "graphs/layers/blocks.h"
#include "graphs/layers/layer.h"
#include "hw/presets/hardware.h"
#include "sim/engine/simulation.h"
#include "sim/graph/graph_writer.h"
#include "sim/graph/loader.h"
#include "sim/graph/tensors.h"
#include "sim/report/analyze.h"
#include "testbench/layers/reference.h"

namespace stepsim {
namespace {

using LayerParams = std::map<std::string, std::string>;
using reference::Mat;

std::string error_of(const std::string& layer, const LayerParams& p) {
  try {
    layers::build_layer(layer, p);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

SimResult run(const Graph& g, bool functional = false) {
  SimOptions opt;
  opt.hw = load_preset("step-artifact");
  opt.functional = functional;
  opt.keep_stored = functional;
  SimResult r = simulate(g, opt);
  EXPECT_TRUE(r.ok) << r.error;
  return r;
}

bool has_node(const Graph& g, const std::string& name) {
  for (const NodeSpec& n : g.nodes)
    if (n.name == name) return true;
  return false;
}

const NodeSpec& node(const Graph& g, const std::string& name) {
  for (const NodeSpec& n : g.nodes)
    if (n.name == name) return n;
  throw std::runtime_error("no node " + name);
}

size_t nodes_with_prefix(const Graph& g, const std::string& prefix) {
  size_t n = 0;
  for (const NodeSpec& s : g.nodes) n += s.name.rfind(prefix, 0) == 0;
  return n;
}

// Off-chip bytes read and written by the nodes whose names start with one of `prefixes`
// (symbolic metrics, every symbol known).
std::pair<int64_t, int64_t> traffic_of(const Graph& g, const std::vector<std::string>& prefixes) {
  Analysis a = analyze_graph(g, "paper");
  int64_t read = 0, written = 0;
  for (const shape::NodeMetrics& n : a.metrics.nodes)
    for (const std::string& pre : prefixes)
      if (n.name.rfind(pre, 0) == 0) {
        int64_t r = -1, w = -1;
        EXPECT_TRUE(shape::to_int(shape::evaluate(n.read_bytes, a.syms), r)) << n.name;
        EXPECT_TRUE(shape::to_int(shape::evaluate(n.write_bytes, a.syms), w)) << n.name;
        read += r;
        written += w;
      }
  return {read, written};
}

// The artifact's B=64 batch: ContextTokens of rows 4007..4070 of the conversation trace.
std::string trace_lengths(int64_t n) {
  const std::string file = std::string(STEPSIM_SHARED_DIR) + "/traces/azure/AzureLLMInferenceTrace_conv.csv";
  std::string s;
  for (int64_t v : layers::kv_lengths(file, 4007, n)) s += std::to_string(v) + " ";
  return s;
}

TEST(DecoderKvLengths, GivenLengthsBuildTheTraceRowsGraph) {
  for (const char* model : {"qwen", "mixtral"}) {
    SCOPED_TRACE(model);
    Graph from_trace = layers::build_layer("decoder", {{"model", model}});
    Graph given = layers::build_layer("decoder", {{"model", model}, {"kv_lengths", trace_lengths(64)}});
    EXPECT_NE(given.description.find("KV lengths given"), std::string::npos) << given.description;
    given.description = from_trace.description;  // the only difference: where the lengths came from
    EXPECT_EQ(graph_to_yaml(given), graph_to_yaml(from_trace));
  }
  const LayerParams mixtral = {{"model", "mixtral"}};
  LayerParams with_lengths = mixtral;
  with_lengths["kv_lengths"] = "\n " + trace_lengths(64) + "\t";
  const SimResult a = run(layers::build_layer("decoder", mixtral));
  const SimResult b = run(layers::build_layer("decoder", with_lengths));
  EXPECT_EQ(a.cycles, b.cycles);
  EXPECT_EQ(a.offchip_read_bytes, b.offchip_read_bytes);
}

TEST(DecoderKvLengths, BadLengthsAreClearErrors) {
  auto err = [](const std::string& lengths) { return error_of("decoder", {{"batch", "4"}, {"kv_lengths", lengths}}); };
  EXPECT_NE(err("1 2 3").find("layer decoder: kv_lengths has 3 lengths, batch is 4"), std::string::npos)
      << err("1 2 3");
  EXPECT_NE(err("1 2 3 4 5").find("has 5 lengths, batch is 4"), std::string::npos);
  EXPECT_NE(err("1 2 x3 4").find("layer decoder: kv_lengths: 'x3' is not a KV length in 0..16777216"),
            std::string::npos)
      << err("1 2 x3 4");
  EXPECT_NE(err("1 2 2.5 4").find("'2.5' is not a KV length"), std::string::npos);
  EXPECT_NE(err("1 -2 3 4").find("'-2' is not a KV length"), std::string::npos);
  EXPECT_NE(err("1 2 3 16777217").find("'16777217' is not a KV length"), std::string::npos);
  EXPECT_EQ(error_of("decoder", {{"batch", "4"}, {"kv_lengths", "0 1 16777216 5"}}), "no error");
}

// A small model: hidden 64, 4 query / 2 KV heads of 32 (64-byte rows: whole HBM requests), MoE
// intermediate 64.
LayerParams tiny_prefill(int64_t tokens, int64_t offset, const std::string& attention = "interleaved") {
  return {{"hidden", "64"},
          {"q_heads", "4"},
          {"kv_heads", "2"},
          {"head_dim", "32"},
          {"inter", "64"},
          {"moe_tile_f", "32"},
          {"tokens", std::to_string(tokens)},
          {"offset", std::to_string(offset)},
          {"attention", attention}};
}

TEST(Prefill, QueryBlocksSplitContiguouslyOverTheRegions) {
  // 150 tokens: J = 5 blocks of 32 (the last holds 22 tokens and is padded); over 4 regions 2, 1, 1, 1.
  Graph g = layers::build_layer("prefill", tiny_prefill(150, 0));
  EXPECT_EQ(node(g, "qkv_x0").params.at("out_shape"), "[2]");
  EXPECT_EQ(node(g, "qkv_x0").params.at("offset"), "0");
  for (const char* r : {"1", "2", "3"}) EXPECT_EQ(node(g, std::string("qkv_x") + r).params.at("out_shape"), "[1]");
  EXPECT_EQ(node(g, "qkv_x3").params.at("offset"), "4");
  EXPECT_EQ(node(g, "oproj_o1").params.at("offset"), "8");  // block 2's first head tile: 2 * Hq
  // Per region, QKV: x, w, xrep, proj, flat, part, split and per destination an address source
  // and a store (13); output projection: o, wo, proj, x, residual, h_addr, hflat, h_store (8),
  // plus its start token (a gated Source).
  EXPECT_EQ(nodes_with_prefix(g, "qkv_"), 4u * 13u);
  EXPECT_EQ(nodes_with_prefix(g, "oproj_"), 4u * 8u + 1u);
  EXPECT_TRUE(has_node(g, "attn_r3_addr"));
  EXPECT_FALSE(has_node(g, "attn_r4_addr"));
  // 8 regions asked, 5 blocks: 5 regions of one block each.
  LayerParams eight = tiny_prefill(150, 0);
  eight["regions"] = "8";
  Graph g8 = layers::build_layer("prefill", eight);
  EXPECT_EQ(nodes_with_prefix(g8, "qkv_"), 5u * 13u);
  EXPECT_TRUE(has_node(g8, "qkv_x4"));
  EXPECT_FALSE(has_node(g8, "qkv_x5"));
  EXPECT_TRUE(has_node(g8, "attn_r4_addr"));
  EXPECT_FALSE(has_node(g8, "attn_r5_addr"));
  const TensorSpec* h = nullptr;
  for (const TensorSpec& t : g.tensors)
    if (t.name == "h") h = &t;
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->rows, 5u * 32u);  // padded to whole blocks
}

// 40 tokens after 32 prefilled ones: J = 2 blocks of tile_n = 32; KV caches of max_tiles =
// ceil(72 / 32) = 3 tiles per KV head. A [32 x 32] bf16 tile is 2048 B.
TEST(Prefill, OffChipTrafficOfEveryPhaseByHand) {
  Graph g = layers::build_layer("prefill", tiny_prefill(40, 32));
  // QKV: x 2 blocks of [32 x 64] (2 * 4096 B) + wqkv [64 x (4 + 2*2)*32] once per block
  // (2 * 32768 B); writes 2 blocks x 8 head columns of one tile (16 * 2048 B).
  EXPECT_EQ(traffic_of(g, {"qkv_"}), std::make_pair(int64_t(8192 + 65536), int64_t(32768)));
  // Attention: the queries, 2 blocks x 2 KV heads of [2*32 x 32] (8 * 2048 B); K and V tiles per
  // KV head: block 0 sees 32 + 32 = 64 keys (2 tiles), block 1 32 + 40 = 72 (3 tiles): 2 heads x 5
  // tiles x 2 (K, V) = 20 tiles. Writes: one [4*32 x 32] output tile per block (8 * 2048 B).
  EXPECT_EQ(traffic_of(g, {"attn_"}), std::make_pair(int64_t(16384 + 40960), int64_t(16384)));
  const auto kv = traffic_of(g, {"attn_r0_k", "attn_r0_v", "attn_r1_k", "attn_r1_v"});
  EXPECT_EQ(kv.first, 40960);
  // Output projection: attn (8 * 2048 B), wo [4*32 x 64] once per block (2 * 16384 B), the
  // residual x (2 * 4096 B); writes h, 2 blocks of [32 x 64].
  EXPECT_EQ(traffic_of(g, {"oproj_"}), std::make_pair(int64_t(16384 + 32768 + 8192), int64_t(8192)));
  // The whole layer (MoE included): the symbolic total is what a timing run moves.
  Analysis a = analyze_graph(g, "paper");
  int64_t read = -1, written = -1;
  ASSERT_TRUE(shape::to_int(shape::evaluate(a.metrics.read_bytes, a.syms), read));
  ASSERT_TRUE(shape::to_int(shape::evaluate(a.metrics.write_bytes, a.syms), written));
  const SimResult r = run(g);
  EXPECT_EQ(uint64_t(read), r.offchip_read_bytes);
  EXPECT_EQ(uint64_t(written), r.offchip_write_bytes);
}

TEST(Prefill, MoreContextTakesMoreCycles) {
  uint64_t last = 0;
  for (int64_t offset : {0, 64, 512, 2048}) {
    const SimResult r = run(layers::build_layer("prefill", tiny_prefill(64, offset, "dynamic")));
    EXPECT_GT(r.cycles, last) << "offset " << offset;
    last = r.cycles;
  }
}

// Functional mode, one KV head (the grouped attention path with one item per block): q and the
// new cache tiles are x wqkv's head columns; each block's attention output lands at its rows
// (tile j*Hq + head of q's layout) and attends over the keys up to its last token.
TEST(Prefill, FunctionalQkvAndAttentionLandWhereTheyBelong) {
  const int64_t hd = 32, Hq = 4, tn = 32, tokens = 40, offset = 32, J = 2, max_tiles = 3;
  LayerParams p = tiny_prefill(tokens, offset, "dynamic");
  p["kv_heads"] = "1";
  Graph g = layers::build_layer("prefill", p);
  const SimResult r = run(g, true);
  ASSERT_TRUE(r.ok);
  auto stored = [&](const std::string& name) {
    for (const TensorSpec& t : g.tensors)
      if (t.name == name) return reference::from_floats(int64_t(t.rows), int64_t(t.cols), r.stored.at(name).f);
    throw std::runtime_error("no tensor " + name);
  };
  auto initial = [&](const std::string& name) {
    for (const TensorSpec& t : g.tensors)
      if (t.name == name) return reference::from_floats(int64_t(t.rows), int64_t(t.cols), initial_values(t).f);
    throw std::runtime_error("no tensor " + name);
  };
  const Mat qkv = reference::matmul(initial("x"), initial("wqkv"));  // [J*tn, (Hq + 2) hd]
  const Mat q = stored("q"), k = stored("kcache"), v = stored("vcache"), attn = stored("attn");
  ASSERT_EQ(k.rows, max_tiles * tn);
  auto close = [](double got, double want, double scale) { return std::fabs(got - want) <= 0.02 * scale + 1e-6; };
  double scale = 0;
  for (double x : qkv.v) scale = std::max(scale, std::fabs(x));
  size_t wrong = 0;
  for (int64_t t = 0; t < J * tn; ++t)
    for (int64_t d = 0; d < hd; ++d) {
      const int64_t j = t / tn, i = t % tn;
      for (int64_t head = 0; head < Hq; ++head)
        wrong += !close(q.at((j * Hq + head) * tn + i, d), qkv.at(t, head * hd + d), scale);
      wrong += !close(k.at(offset + t, d), qkv.at(t, Hq * hd + d), scale);
      wrong += !close(v.at(offset + t, d), qkv.at(t, (Hq + 1) * hd + d), scale);
    }
  EXPECT_EQ(wrong, 0u);
  // Block j: its Hq*tn query rows over the keys 0..offset + min((j+1) tn, tokens) - 1.
  for (int64_t j = 0; j < J; ++j) {
    const int64_t len = offset + std::min((j + 1) * tn, tokens);
    const Mat want = reference::attention(reference::rows_of(q, j * Hq * tn, Hq * tn), reference::rows_of(k, 0, len),
                                          reference::rows_of(v, 0, len), len);
    const Mat got = reference::rows_of(attn, j * Hq * tn, Hq * tn);
    double worst = 0, ref_scale = 0;
    for (size_t i = 0; i < want.v.size(); ++i) {
      worst = std::max(worst, std::fabs(got.v[i] - want.v[i]));
      ref_scale = std::max(ref_scale, std::fabs(want.v[i]));
    }
    EXPECT_LE(worst, 0.04 * ref_scale) << "block " << j;
  }
  EXPECT_EQ(r.cycles, run(g).cycles);  // functional and timing modes: the same cycles
}

TEST(Prefill, BadParametersAreClearErrors) {
  EXPECT_NE(error_of("prefill", tiny_prefill(40, 16))
                .find("layer prefill: offset 16 must be a non-negative multiple "
                      "of tile_n 32"),
            std::string::npos);
  EXPECT_NE(error_of("prefill", tiny_prefill(0, 0)).find("layer prefill: tokens must be >= 1, got 0"),
            std::string::npos);
  // The default routing trace (qwen's b1024) has 1024 tokens.
  EXPECT_NE(error_of("prefill", tiny_prefill(1025, 0)).find("has 1024 tokens, batch is 1025"), std::string::npos)
      << error_of("prefill", tiny_prefill(1025, 0));
  EXPECT_NE(error_of("prefill", {{"model", "llama"}}).find("layer prefill: model must be qwen or mixtral"),
            std::string::npos);
  EXPECT_NE(error_of("prefill", {{"attention", "coarse"}}).find("layer prefill: attention must be interleaved or"),
            std::string::npos);
}

// 5 tokens, hidden 64, vocabulary 1000 in tiles of 256: padded to 1024 columns.
TEST(LmHead, EmbeddingRowsAndHeadWeightsByHand) {
  Graph g = layers::build_layer("lm_head", {{"tokens", "5"}, {"hidden", "64"}, {"vocab", "1000"}, {"tile_v", "256"}});
  // Embedding: 5 rows of [1 x 64] bf16 read (5 * 128 B) and stored to x.
  EXPECT_EQ(traffic_of(g, {"embed_"}), std::make_pair(int64_t(640), int64_t(640)));
  // Head: x once (640 B), w_head [64 x 1024] once (131072 B); logits [5 x 1024] written (10240 B).
  EXPECT_EQ(traffic_of(g, {"head_w"}).first, 131072);
  EXPECT_EQ(traffic_of(g, {"head_"}), std::make_pair(int64_t(640 + 131072), int64_t(10240)));
  const SimResult r = run(g);
  EXPECT_EQ(r.offchip_read_bytes, 640u + 640u + 131072u);
  EXPECT_EQ(r.offchip_write_bytes, 640u + 10240u);
  EXPECT_NE(error_of("lm_head", {{"tile_v", "0"}}).find("layer lm_head: tile_v must be >= 1, got 0"),
            std::string::npos);
}

// The 4 column tiles over 3 regions: 2, 1 and 1 tiles, each region streaming its own slice of
// w_head (offsets 0, 2, 3); the same bytes as one region, in fewer cycles.
TEST(LmHead, ColumnTilesSpreadOverRegions) {
  const std::map<std::string, std::string> p = {{"tokens", "5"}, {"hidden", "64"}, {"vocab", "1000"}, {"tile_v", "256"}};
  std::map<std::string, std::string> one = p, three = p;
  one["regions"] = "1";
  three["regions"] = "3";
  Graph g1 = layers::build_layer("lm_head", one), g3 = layers::build_layer("lm_head", three);
  std::vector<std::pair<std::string, std::string>> loads;
  for (const auto& n : g3.nodes)
    if (n.op == "LinearOffChipLoad" && n.name.rfind("head_w", 0) == 0)
      loads.emplace_back(n.params.at("offset"), n.params.at("out_shape"));
  EXPECT_EQ(loads, (std::vector<std::pair<std::string, std::string>>{{"0", "[1,2]"}, {"2", "[1,1]"}, {"3", "[1,1]"}}));
  EXPECT_EQ(traffic_of(g3, {"head_w"}).first, 131072);
  const SimResult r1 = run(g1), r3 = run(g3);
  EXPECT_EQ(r3.offchip_read_bytes, r1.offchip_read_bytes);
  EXPECT_EQ(r3.offchip_write_bytes, r1.offchip_write_bytes);
  EXPECT_LT(r3.cycles, r1.cycles);
  // More regions than tiles: one region per tile.
  std::map<std::string, std::string> many = p;
  many["regions"] = "9";
  size_t w_loads = 0;
  for (const auto& n : layers::build_layer("lm_head", many).nodes) w_loads += n.name.rfind("head_w", 0) == 0;
  EXPECT_EQ(w_loads, 4u);
}

}  // namespace
}  // namespace stepsim
