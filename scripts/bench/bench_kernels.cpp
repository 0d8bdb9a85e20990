// The functional tile kernels against the machine's own fp32 multiply-add peak (issue 23).
//
// BM_PeakFma measures the peak: independent fused multiply-add chains in the widest vectors the
// CPU has (AVX-512, else AVX2 + FMA, else scalar; chosen at run time with the compiler's target
// attributes, so the binary runs on any x86-64), enough of them to cover the FMA latency. Each
// kernel benchmark runs one tile function of the registry (hw/functions) the way a functional
// run calls it, on random bf16 tiles, and reports its GFLOP/s (the function's own FLOP rule) and
// that rate as a percentage of the measured peak.
//
// Counters (wall-clock rates of the benchmark's loop):
//   GFLOPs       floating-point operations per second / 1e9 (FMA = 2 FLOPs)
//   pct_of_peak  GFLOPs / the peak (measured once, 0.2 s, as BM_PeakFma) x 100 (kernels only)
#include <benchmark/benchmark.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "hw/functions/functions.h"

namespace {

using namespace stepsim;

constexpr int kChains = 12;               // independent accumulators: FMA latency 4 x 2 ports, and some
constexpr int64_t kIterations = 1 << 16;  // per measurement call

#if defined(__x86_64__)
__attribute__((target("avx512f"))) double peak_avx512(int64_t iterations) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(float(c));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  __m512 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  benchmark::DoNotOptimize(sum);
  return 2.0 * 16 * kChains * double(iterations);
}

__attribute__((target("avx2,fma"))) double peak_avx2(int64_t iterations) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(float(c));
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  __m256 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm256_add_ps(sum, acc[c]);
  benchmark::DoNotOptimize(sum);
  return 2.0 * 8 * kChains * double(iterations);
}
#endif

double peak_scalar(int64_t iterations) {
  float acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = float(c);
  for (int64_t i = 0; i < iterations; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = __builtin_fmaf(acc[c], 0.999f, 1e-7f);
  for (int c = 0; c < kChains; ++c) benchmark::DoNotOptimize(acc[c]);
  return 2.0 * kChains * double(iterations);
}

// The widest FMA the CPU runs, with its name; returns the FLOPs of one call.
double peak_call(const char** isa) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) {
    *isa = "avx512";
    return peak_avx512(kIterations);
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    *isa = "avx2+fma";
    return peak_avx2(kIterations);
  }
#endif
  *isa = "scalar";
  return peak_scalar(kIterations);
}

// The peak in GFLOP/s, measured once (0.2 s) for the kernels' percentages.
double measured_peak_gflops() {
  static const double peak = [] {
    const char* isa = "";
    double flops = 0;
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(200)) flops += peak_call(&isa);
    return flops / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 1e9;
  }();
  return peak;
}

void BM_PeakFma(benchmark::State& state) {
  const char* isa = "";
  double flops = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) flops += peak_call(&isa);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  state.counters["GFLOPs"] = flops / seconds / 1e9;
  state.SetLabel(isa);
}
BENCHMARK(BM_PeakFma)->Unit(benchmark::kMillisecond);

Tile random_tile(uint32_t rows, uint32_t cols, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(size_t(rows) * cols);
  for (float& x : v) x = normal(gen);
  return make_tile(rows, cols, DType::BF16, std::move(v));  // rounded to bf16
}

// Runs `call` in the benchmark's loop and reports its GFLOP/s and their share of the peak.
template <class Call>
void report_rate(benchmark::State& state, double flops_per_call, Call call) {
  const double peak = measured_peak_gflops();  // before the clock starts
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) benchmark::DoNotOptimize(call());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double gflops = flops_per_call * double(state.iterations()) / seconds / 1e9;
  state.counters["GFLOPs"] = gflops;
  state.counters["pct_of_peak"] = 100 * gflops / peak;
}

// One map function on tiles of these shapes; FLOPs from the function's own rule.
void run_map(benchmark::State& state, const std::string& fn, std::vector<Tile> in) {
  const MapFunction& f = map_function(fn);
  report_rate(state, double(f.flops(in)), [&] { return f.apply(in); });
}

// matmul A[M x K] x B[K x N]; matmul_t with B stored [N x K].
void BM_Matmul(benchmark::State& state) {
  const auto M = uint32_t(state.range(0)), K = uint32_t(state.range(1)), N = uint32_t(state.range(2));
  run_map(state, "matmul", {random_tile(M, K, 1), random_tile(K, N, 2)});
}
void BM_MatmulT(benchmark::State& state) {
  const auto M = uint32_t(state.range(0)), K = uint32_t(state.range(1)), N = uint32_t(state.range(2));
  run_map(state, "matmul_t", {random_tile(M, K, 1), random_tile(N, K, 2)});
}
#define MATMUL_SHAPES \
  Args({16, 64, 64})->Args({16, 4096, 64})->Args({16, 64, 4096})->Args({64, 64, 64})->Args({64, 4096, 64})
BENCHMARK(BM_Matmul)->MATMUL_SHAPES->ArgNames({"M", "K", "N"});
BENCHMARK(BM_MatmulT)->MATMUL_SHAPES->ArgNames({"M", "K", "N"});

// Element-wise functions on a [64 x 64] tile (their FLOP rule: one per element, exp-like ones more).
void BM_Elementwise(benchmark::State& state, const char* fn, int arity) {
  std::vector<Tile> in;
  for (int i = 0; i < arity; ++i) in.push_back(random_tile(64, 64, uint32_t(3 + i)));
  run_map(state, fn, in);
}
BENCHMARK_CAPTURE(BM_Elementwise, add, "add", 2);
BENCHMARK_CAPTURE(BM_Elementwise, mul, "mul", 2);
BENCHMARK_CAPTURE(BM_Elementwise, exp, "exp", 1);
BENCHMARK_CAPTURE(BM_Elementwise, silu, "silu", 1);
BENCHMARK_CAPTURE(BM_Elementwise, sigmoid, "sigmoid", 1);
BENCHMARK_CAPTURE(BM_Elementwise, row_sum, "row_sum", 1);
BENCHMARK_CAPTURE(BM_Elementwise, row_max, "row_max", 1);
BENCHMARK_CAPTURE(BM_Elementwise, tanh, "tanh", 1);
BENCHMARK_CAPTURE(BM_Elementwise, erf, "erf", 1);
BENCHMARK_CAPTURE(BM_Elementwise, gelu, "gelu", 1);
BENCHMARK_CAPTURE(BM_Elementwise, row_mean, "row_mean", 1);
BENCHMARK_CAPTURE(BM_Elementwise, row_var, "row_var", 1);

// One update of an accum function onto an accumulator of its own making (FLOPs from its rule).
void run_accum(benchmark::State& state, const std::string& fn, const std::vector<Tile>& in) {
  const AccumFunction& f = accum_function(fn);
  const Tile acc = f.update(f.init(), in);
  report_rate(state, double(f.flops(acc, in)), [&] { return f.update(acc, in); });
}

// flash_attn_update: scores S [M x T] and values V [T x D] onto [o | m | l].
void BM_FlashAttentionUpdate(benchmark::State& state) {
  const auto M = uint32_t(state.range(0)), T = uint32_t(state.range(1)), D = uint32_t(state.range(2));
  run_accum(state, "flash_attn_update", {random_tile(M, T, 7), random_tile(T, D, 8)});
}
BENCHMARK(BM_FlashAttentionUpdate)->Args({16, 64, 64})->Args({64, 64, 128})->ArgNames({"M", "T", "D"});

}  // namespace

BENCHMARK_MAIN();
