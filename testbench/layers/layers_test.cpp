// The layer library (graphs/layers): reduced-size layers run in functional mode and match an
// independent straightforward reference (reference.h, double precision on the same bf16
// inputs) within a stated tolerance; full-size layers build and their symbolic metrics equal
// what a timing run measures; bad parameters are clear errors.
#include <gtest/gtest.h>

#include <unistd.h>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "graphs/layers/layer.h"
#include "hw/presets/hardware.h"
#include "sim/engine/simulation.h"
#include "sim/graph/graph_writer.h"
#include "sim/graph/loader.h"
#include "sim/graph/npy.h"
#include "sim/graph/tensors.h"
#include "sim/report/analyze.h"
#include "testbench/layers/reference.h"

namespace stepsim {
namespace {

namespace fs = std::filesystem;
using reference::Mat;

// Tolerance of the functional checks, relative to the RMS of the reference output (of the
// tensor for SwiGLU, of each token's output row for MoE and attention): every element within
// 4 %, and the mean absolute error within 1 %. The model rounds to bf16 after each matmul, the
// SiLU and the product (8-bit significand: up to 2^-9 relative per rounding, a few roundings
// per element, then summed over the intermediate dimension), and the MoE output adds top-k such
// bf16 expert outputs (measured worst mean: 0.5 % for Qwen3's 8 experts at hidden 16); the
// reference does not round at all. A wrong row, expert or tile is off by ~100 % of the RMS.
constexpr double kTolOfRms = 0.04;
constexpr double kMeanTolOfRms = 0.01;

const TensorSpec& tensor(const Graph& g, const std::string& name) {
  for (const TensorSpec& t : g.tensors)
    if (t.name == name) return t;
  throw std::runtime_error("no tensor " + name);
}

Mat input(const Graph& g, const std::string& name) {
  const TensorSpec& t = tensor(g, name);
  return reference::from_floats(int64_t(t.rows), int64_t(t.cols), initial_values(t).f);
}

// Runs `g` in functional mode and returns every tensor it saved (outputs and written tensors).
std::map<std::string, Mat> run_functional_all(const Graph& g, const std::string& preset) {
  const fs::path dir = fs::temp_directory_path() / ("stepsim_layers_" + g.name + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  SimOptions opt;
  opt.hw = load_preset(preset);
  opt.functional = true;
  opt.output_dir = dir.string();
  SimResult r = simulate(g, opt);
  EXPECT_TRUE(r.ok) << r.error;
  std::map<std::string, Mat> out;
  for (const std::string& f : r.written_files) {
    NpyArray a = read_npy(f);
    out[fs::path(f).stem().string()] = reference::from_floats(int64_t(a.shape[0]), int64_t(a.shape[1]), a.f);
  }
  fs::remove_all(dir);
  return out;
}

Mat run_functional(const Graph& g, const std::string& preset, const std::string& out_name) {
  std::map<std::string, Mat> out = run_functional_all(g, preset);
  EXPECT_TRUE(out.count(out_name)) << out_name;
  return out[out_name];
}

double rms(const Mat& m) {
  double s = 0;
  for (double v : m.v) s += v * v;
  return std::sqrt(s / double(m.v.size()));
}

double mean_abs_diff(const Mat& a, const Mat& b) {
  double d = 0;
  for (size_t i = 0; i < a.v.size(); ++i) d += std::fabs(a.v[i] - b.v[i]);
  return d / double(a.v.size());
}

double max_abs_diff(const Mat& a, const Mat& b) {
  double d = 0;
  for (size_t i = 0; i < a.v.size(); ++i) d = std::max(d, std::fabs(a.v[i] - b.v[i]));
  return d;
}

TEST(Layers, RegistryListsTheLayers) {
  std::set<std::string> names;
  for (const layers::LayerInfo* l : layers::LayerRegistry::instance().all()) {
    names.insert(l->name);
    EXPECT_FALSE(l->description.empty());
    for (const ParamSpec& p : l->params) EXPECT_FALSE(p.doc.empty()) << l->name << "." << p.name;
  }
  EXPECT_TRUE(names.count("swiglu"));
  EXPECT_TRUE(names.count("moe"));
  EXPECT_TRUE(names.count("moe_tm"));
  EXPECT_TRUE(names.count("attention"));
  EXPECT_TRUE(names.count("decoder"));
}

// SwiGLU, both code paths: hidden untiled (Map matmul, Repeat) and hidden tiled (Accum over
// hidden tiles, x replayed from a memory unit).
class SwigluGold : public ::testing::TestWithParam<std::map<std::string, std::string>> {};

TEST_P(SwigluGold, MatchesReference) {
  Graph g = layers::build_layer("swiglu", GetParam());
  Mat y = run_functional(g, "hdl-validation", "y");
  Mat ref = reference::swiglu(input(g, "x"), input(g, "w1"), input(g, "w3"), input(g, "w2"));
  ASSERT_EQ(y.rows, ref.rows);
  ASSERT_EQ(y.cols, ref.cols);
  EXPECT_LE(max_abs_diff(y, ref), kTolOfRms * rms(ref)) << "rms " << rms(ref);
  EXPECT_LE(mean_abs_diff(y, ref), kMeanTolOfRms * rms(ref)) << "rms " << rms(ref);
}

INSTANTIATE_TEST_SUITE_P(Tilings, SwigluGold,
                         ::testing::Values(std::map<std::string, std::string>{{"batch", "32"},
                                                                              {"hidden", "64"},
                                                                              {"inter", "128"},
                                                                              {"tile_b", "16"},
                                                                              {"tile_f", "32"}},
                                           std::map<std::string, std::string>{{"batch", "32"},
                                                                              {"hidden", "64"},
                                                                              {"inter", "128"},
                                                                              {"tile_b", "32"},
                                                                              {"tile_f", "64"},
                                                                              {"tile_h", "16"}}));

// MoE: every token's output row is the sum of the reference outputs of its top-k experts.
void check_moe(const Graph& g, const std::string& trace, size_t experts, size_t topk, int64_t batch,
               const std::map<std::string, Mat>* weights = nullptr) {
  Mat y = run_functional(g, "step-artifact", "y");
  Mat x = input(g, "x");
  ASSERT_EQ(y.rows, batch);
  CsvTable t = read_csv(trace);
  std::map<size_t, std::array<Mat, 3>> w;
  for (size_t e = 0; e < experts; ++e) {
    const std::string s = std::to_string(e);
    if (weights)
      w[e] = {weights->at("w1_" + s), weights->at("w3_" + s), weights->at("w2_" + s)};
    else
      w[e] = {input(g, "w1_" + s), input(g, "w3_" + s), input(g, "w2_" + s)};
  }
  double worst = 0, mean = 0;
  for (int64_t i = 0; i < batch; ++i) {
    Mat ref(1, x.cols);
    ASSERT_EQ(t.header.size(), topk + 1);
    for (size_t c = 1; c < t.header.size(); ++c) {
      const size_t e = std::stoul(t.rows[size_t(i)][c]);
      const Mat o = reference::swiglu(reference::row(x, i), w[e][0], w[e][1], w[e][2]);
      for (size_t k = 0; k < ref.v.size(); ++k) ref.v[k] += o.v[k];
    }
    const Mat got = reference::row(y, i);
    worst = std::max(worst, max_abs_diff(got, ref) / rms(ref));
    mean += mean_abs_diff(got, ref) / rms(ref) / double(batch);
  }
  EXPECT_LE(worst, kTolOfRms) << "worst error relative to the token output's RMS";
  EXPECT_LE(mean, kMeanTolOfRms) << "mean error relative to the token output's RMS";
}

TEST(MoeGold, MixtralStaticTiling) {
  const std::string trace = std::string(STEPSIM_SHARED_DIR) + "/traces/moe/mixtral8x7b_b64_iter008_layer010.csv";
  Graph g = layers::build_layer(
      "moe",
      {{"model", "mixtral"}, {"batch", "24"}, {"hidden", "32"}, {"inter", "64"}, {"tile_f", "32"}, {"tile_n", "4"}});
  check_moe(g, trace, 8, 2, 24);
}

TEST(MoeGold, MixtralDynamicTiling) {
  const std::string trace = std::string(STEPSIM_SHARED_DIR) + "/traces/moe/mixtral8x7b_b64_iter008_layer010.csv";
  Graph g = layers::build_layer(
      "moe",
      {{"model", "mixtral"}, {"batch", "24"}, {"hidden", "32"}, {"inter", "64"}, {"tile_f", "32"}, {"tile_n", "0"}});
  check_moe(g, trace, 8, 2, 24);
}

TEST(MoeGold, QwenStaticAndDynamicTiling) {
  const std::string trace = std::string(STEPSIM_SHARED_DIR) + "/traces/moe/qwen3_30b_a3b_b64_iter032_layer012.csv";
  for (const char* tn : {"8", "0"}) {
    Graph g = layers::build_layer(
        "moe",
        {{"model", "qwen"}, {"batch", "8"}, {"hidden", "16"}, {"inter", "32"}, {"tile_f", "16"}, {"tile_n", tn}});
    check_moe(g, trace, 128, 8, 8);
  }
}

// Time-multiplexed: the weights are one stacked tensor per kind (expert e owns rows
// [e*rows, (e+1)*rows) of w1/w3/w2); experts share regions through EagerMerge.
TEST(MoeGold, QwenTimeMultiplexedStaticAndDynamic) {
  const std::string trace = std::string(STEPSIM_SHARED_DIR) + "/traces/moe/qwen3_30b_a3b_b64_iter032_layer012.csv";
  for (const char* tn : {"8", "0"}) {
    Graph g = layers::build_layer("moe_tm", {{"model", "qwen"},
                                             {"regions", "16"},
                                             {"batch", "8"},
                                             {"hidden", "16"},
                                             {"inter", "32"},
                                             {"tile_f", "16"},
                                             {"tile_n", tn}});
    // Split the stacked weights into per-expert tensors for the reference.
    Graph split = g;
    const Mat w1 = input(g, "w1"), w3 = input(g, "w3"), w2 = input(g, "w2");
    std::map<std::string, Mat> per;
    for (int64_t e = 0; e < 128; ++e) {
      Mat a(16, 32), c(16, 32), d(32, 16);
      for (int64_t i = 0; i < 16; ++i)
        for (int64_t j = 0; j < 32; ++j) a.at(i, j) = w1.at(e * 16 + i, j), c.at(i, j) = w3.at(e * 16 + i, j);
      for (int64_t i = 0; i < 32; ++i)
        for (int64_t j = 0; j < 16; ++j) d.at(i, j) = w2.at(e * 32 + i, j);
      per["w1_" + std::to_string(e)] = a;
      per["w3_" + std::to_string(e)] = c;
      per["w2_" + std::to_string(e)] = d;
    }
    check_moe(g, trace, 128, 8, 8, &per);
  }
}

// Decode attention, all three parallelizations (dynamic: the cyclic graph): every request's
// output rows match softmax(q K^T) V over its KV length (context + 1) in the cache.
TEST(AttentionGold, AllParallelizationsMatchReference) {
  const int64_t B = 8, qpk = 4, hd = 16, tn = 32;
  const std::string trace = std::string(STEPSIM_SHARED_DIR) + "/traces/azure/AzureLLMInferenceTrace_conv.csv";
  CsvTable t = read_csv(trace);
  for (const char* par : {"interleaved", "coarse", "dynamic"}) {
    Graph g = layers::build_layer("attention", {{"parallel", par},
                                                {"batch", std::to_string(B)},
                                                {"head_dim", std::to_string(hd)},
                                                {"q_per_kv", std::to_string(qpk)},
                                                {"per_region", "4"},
                                                {"kv_first_row", "4007"}});
    Mat out = run_functional(g, "step-artifact", "out");
    const Mat k = input(g, "kcache"), v = input(g, "vcache");
    const int64_t max_tiles = k.rows / (B * tn);
    double worst = 0;
    for (int64_t i = 0; i < B; ++i) {
      const int64_t len = std::stoll(t.rows[size_t(4007 - 1 + i)][t.column("ContextTokens", trace)]) + 1;
      // Coarse: region r has its own query tensor q<r> of per_region requests.
      const Mat q = std::string(par) == "coarse"
                        ? reference::rows_of(input(g, "q" + std::to_string(i / 4)), (i % 4) * qpk, qpk)
                        : reference::rows_of(input(g, "q"), i * qpk, qpk);
      const Mat ref = reference::attention(q, reference::rows_of(k, i * max_tiles * tn, len),
                                           reference::rows_of(v, i * max_tiles * tn, len), len);
      const Mat got = reference::rows_of(out, i * qpk, qpk);
      worst = std::max(worst, max_abs_diff(got, ref) / rms(ref));
    }
    EXPECT_LE(worst, kTolOfRms) << par;
  }
}

// Worst |got - ref| over rows, relative to each reference row's RMS.
double worst_row_error(const Mat& got, const Mat& ref) {
  EXPECT_EQ(got.rows, ref.rows);
  EXPECT_EQ(got.cols, ref.cols);
  double worst = 0;
  for (int64_t i = 0; i < ref.rows; ++i) {
    const Mat g = reference::row(got, i), r = reference::row(ref, i);
    worst = std::max(worst, max_abs_diff(g, r) / rms(r));
  }
  return worst;
}

// The decoder layer, phase by phase: each phase's saved output matches the reference computed
// from that phase's inputs as the model saved them (so that bf16 roundings do not compound):
// QKV (q, and the new token's k/v rows in the caches, every other cache row untouched),
// attention over every KV head, output projection + residual, MoE. Both attention schemes.
TEST(DecoderGold, EveryPhaseMatchesReference) {
  const int64_t B = 8, R = 2, D = 32, hd = 16, Hq = 4, Hkv = 2, qpk = Hq / Hkv, F = 32, tn = 32, cols = Hq + 2 * Hkv;
  const std::string kv = std::string(STEPSIM_SHARED_DIR) + "/traces/azure/AzureLLMInferenceTrace_conv.csv";
  const std::string routing = std::string(STEPSIM_SHARED_DIR) + "/traces/moe/qwen3_30b_a3b_b64_iter032_layer012.csv";
  CsvTable t = read_csv(kv);
  std::vector<int64_t> ctx;
  for (int64_t i = 0; i < B; ++i)
    ctx.push_back(std::stoll(t.rows[size_t(4007 - 1 + i)][t.column("ContextTokens", kv)]));
  for (const char* attn : {"interleaved", "dynamic"}) {
    SCOPED_TRACE(attn);
    Graph g = layers::build_layer("decoder", {{"model", "qwen"},
                                              {"batch", std::to_string(B)},
                                              {"regions", std::to_string(R)},
                                              {"hidden", std::to_string(D)},
                                              {"head_dim", std::to_string(hd)},
                                              {"q_heads", std::to_string(Hq)},
                                              {"kv_heads", std::to_string(Hkv)},
                                              {"inter", std::to_string(F)},
                                              {"moe_tile_f", "16"},
                                              {"attention", attn}});
    std::map<std::string, Mat> out = run_functional_all(g, "step-artifact");
    for (const char* n : {"q", "kcache", "vcache", "attn", "h", "y"}) ASSERT_TRUE(out.count(n)) << n;
    const Mat x = input(g, "x"), qkv = reference::matmul(x, input(g, "wqkv"));
    const Mat k0 = input(g, "kcache"), v0 = input(g, "vcache");
    const int64_t max_tiles = k0.rows / (B * Hkv * tn);
    // QKV: q row tok*Hq + j is head j's slice; the new k/v rows of item tok*Hkv + h.
    Mat qref(B * Hq, hd), kref = k0, vref = v0;
    for (int64_t tok = 0; tok < B; ++tok)
      for (int64_t c = 0; c < cols; ++c)
        for (int64_t d = 0; d < hd; ++d) {
          const double val = qkv.at(tok, c * hd + d);
          if (c < Hq)
            qref.at(tok * Hq + c, d) = val;
          else {
            const bool is_k = c < Hq + Hkv;
            const int64_t item = tok * Hkv + (is_k ? c - Hq : c - Hq - Hkv);
            (is_k ? kref : vref).at(item * max_tiles * tn + ctx[size_t(tok)], d) = val;
          }
        }
    EXPECT_LE(worst_row_error(out["q"], qref), kTolOfRms) << "q";
    for (const auto& [name, ref] : {std::pair<std::string, const Mat*>{"kcache", &kref}, {"vcache", &vref}}) {
      const Mat& got = out[name];
      ASSERT_EQ(got.rows, ref->rows);
      for (int64_t item = 0; item < B * Hkv; ++item) {
        const int64_t row = item * max_tiles * tn + ctx[size_t(item / Hkv)];
        const Mat g1 = reference::row(got, row), r1 = reference::row(*ref, row);
        EXPECT_LE(max_abs_diff(g1, r1), kTolOfRms * rms(r1)) << name << " new row of item " << item;
      }
      // Every other row is the initial cache (stored as bf16: within its rounding, 2^-8 relative).
      size_t changed = 0;
      for (size_t i = 0; i < got.v.size(); ++i) changed += std::fabs(got.v[i] - ref->v[i]) > std::fabs(ref->v[i]) / 200;
      EXPECT_LE(changed, size_t(B * Hkv * hd)) << name;
    }
    // Attention: item tok*Hkv + h uses query heads h*qpk.. and the cache rows as the model wrote them.
    const Mat& q = out["q"];
    Mat aref(B * Hq, hd);
    for (int64_t item = 0; item < B * Hkv; ++item) {
      const int64_t len = ctx[size_t(item / Hkv)] + 1, base = item * max_tiles * tn;
      const Mat o =
          reference::attention(reference::rows_of(q, item * qpk, qpk), reference::rows_of(out["kcache"], base, len),
                               reference::rows_of(out["vcache"], base, len), len);
      for (int64_t m = 0; m < qpk; ++m)
        for (int64_t d = 0; d < hd; ++d) aref.at(item * qpk + m, d) = o.at(m, d);
    }
    EXPECT_LE(worst_row_error(out["attn"], aref), kTolOfRms) << "attn";
    // Output projection + residual: token tok's heads side by side times wo, plus x.
    Mat flat(B, Hq * hd);
    for (int64_t tok = 0; tok < B; ++tok)
      for (int64_t j = 0; j < Hq; ++j)
        for (int64_t d = 0; d < hd; ++d) flat.at(tok, j * hd + d) = out["attn"].at(tok * Hq + j, d);
    Mat href = reference::matmul(flat, input(g, "wo"));
    for (size_t i = 0; i < href.v.size(); ++i) href.v[i] += x.v[i];
    EXPECT_LE(worst_row_error(out["h"], href), kTolOfRms) << "h";
    // MoE on h as the model stored it.
    Mat yref(B, D);
    CsvTable rt = read_csv(routing);
    for (int64_t tok = 0; tok < B; ++tok)
      for (size_t c = 1; c < rt.header.size(); ++c) {
        const std::string e = rt.rows[size_t(tok)][c];
        const Mat o = reference::swiglu(reference::row(out["h"], tok), input(g, "w1_" + e), input(g, "w3_" + e),
                                        input(g, "w2_" + e));
        for (int64_t d = 0; d < D; ++d) yref.at(tok, d) += o.v[size_t(d)];
      }
    EXPECT_LE(worst_row_error(out["y"], yref), kTolOfRms) << "y";
  }
}

// The symbolic metrics of the full-size layers (with the trace's bin counts substituted) equal
// what a timing run measures: off-chip bytes read and written, and FLOPs.
void check_symbolic_equals_measured(const Graph& g, const std::string& preset) {
  Analysis a = analyze_graph(g, "paper");
  SimOptions opt;
  opt.hw = load_preset(preset);
  SimResult r = simulate(g, opt);
  ASSERT_TRUE(r.ok) << r.error;
  int64_t read = -1, written = -1, flops = -1;
  ASSERT_TRUE(shape::to_int(shape::evaluate(a.metrics.read_bytes, a.syms), read))
      << shape::to_string(a.metrics.read_bytes);
  ASSERT_TRUE(shape::to_int(shape::evaluate(a.metrics.write_bytes, a.syms), written));
  ASSERT_TRUE(shape::to_int(shape::evaluate(a.metrics.flops, a.syms), flops));
  EXPECT_EQ(uint64_t(read), r.offchip_read_bytes);
  EXPECT_EQ(uint64_t(written), r.offchip_write_bytes);
  uint64_t measured_flops = 0;
  for (const auto& n : r.nodes) measured_flops += n.flops;
  EXPECT_EQ(uint64_t(flops), measured_flops);
}

TEST(LayerMetrics, SwigluFig8PointSymbolicEqualsMeasured) {
  check_symbolic_equals_measured(layers::build_layer("swiglu", {{"tile_b", "32"}, {"tile_f", "128"}}),
                                 "hdl-validation");
}

TEST(LayerMetrics, MixtralMoeSymbolicEqualsMeasured) {
  for (const char* tn : {"16", "0"})
    check_symbolic_equals_measured(layers::build_layer("moe", {{"model", "mixtral"}, {"tile_n", tn}}), "step-artifact");
}

TEST(LayerMetrics, QwenTimeMultiplexedMoeSymbolicEqualsMeasured) {
  for (const char* tn : {"32", "0"})
    // tile_f 64: whole 64-byte requests per weight-tile row, so the measured traffic has no
    // request-granularity overhead (tile_f 48 reads 96-byte rows as 2 requests).
    check_symbolic_equals_measured(layers::build_layer("moe_tm", {{"regions", "32"}, {"tile_n", tn}, {"tile_f", "64"}}),
                                   "step-artifact");
}

TEST(LayerMetrics, AttentionStaticParallelizationsSymbolicEqualsMeasured) {
  for (const char* par : {"interleaved", "coarse"})
    check_symbolic_equals_measured(layers::build_layer("attention", {{"parallel", par}}), "step-artifact");
}

TEST(LayerMetrics, DecoderStaticSchemesSymbolicEqualsMeasured) {
  check_symbolic_equals_measured(
      layers::build_layer("decoder", {{"model", "qwen"}, {"attention", "interleaved"}, {"moe_tile_n", "16"}}),
      "step-artifact");
}

// A cyclic graph (dynamic parallelization) written to YAML carries the declared type of its
// back edge (node types:), so `stepsim analyze` can type it; a wrong declaration is an error.
TEST(LayerMetrics, CyclicAttentionGraphTypesFromItsYaml) {
  Graph g = layers::build_layer("attention", {{"parallel", "dynamic"}, {"batch", "16"}});
  Graph back = parse_graph(graph_to_yaml(g), "attention.yaml", ".", {});
  Analysis a = analyze_graph(back, "paper");
  const shape::StreamType& d = a.types.nodes.at("dispatch").outputs.at("out");
  ASSERT_EQ(d.dims.size(), 2u) << d.str();
  EXPECT_EQ(shape::to_string(shape::evaluate(d.dims[1].size, a.syms)), "16") << d.str();
  int64_t reads = 0;  // the KV tiles per region are runtime decisions: symbolic
  EXPECT_FALSE(shape::to_int(shape::evaluate(a.metrics.read_bytes, a.syms), reads));
  for (NodeSpec& n : back.nodes)
    if (n.name == "dispatch") n.types["out"] = "[1, 17] of selector";
  try {
    analyze_graph(back, "paper");
    ADD_FAILURE() << "a wrong declared type must be an error";
  } catch (const std::exception& e) {
    // The first reader of the declared type already disagrees with it.
    EXPECT_NE(std::string(e.what()).find("'dispatch.out' [1, 17] of selector"), std::string::npos) << e.what();
  }
}

TEST(LayerMetrics, QwenMoeSymbolicEqualsMeasured) {
  for (const char* tn : {"32", "0"})
    check_symbolic_equals_measured(layers::build_layer("moe", {{"model", "qwen"}, {"tile_n", tn}}), "step-artifact");
}

TEST(LayerErrors, BadParametersAreClearErrors) {
  auto msg = [](const std::string& layer, const std::map<std::string, std::string>& p) {
    try {
      layers::build_layer(layer, p);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg("nope", {}).find("unknown layer 'nope'"), std::string::npos);
  EXPECT_NE(msg("swiglu", {{"tile_x", "3"}}).find("tile_x"), std::string::npos);
  EXPECT_NE(msg("swiglu", {{"tile_f", "48"}}).find("does not divide"), std::string::npos);
  EXPECT_NE(msg("moe", {{"model", "gpt"}}).find("mixtral or qwen"), std::string::npos);
  EXPECT_NE(msg("moe", {{"trace", "/nonexistent.csv"}}).find("cannot open trace file"), std::string::npos);
  EXPECT_NE(msg("moe", {{"batch", "2000"}}).find("has 1024 tokens, batch is 2000"), std::string::npos);
}

}  // namespace
}  // namespace stepsim
