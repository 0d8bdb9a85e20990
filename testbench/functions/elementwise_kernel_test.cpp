// The element-wise tile functions (vectorized loops compiled per instruction set, with the
// numerics inlined and written with selects) against their definitions written as plainly as
// possible: numerics.h's branching form, one element at a time. Bit for bit, over random values
// and values full of specials (NaN, +-Inf, subnormals, +-0, the exp clamps and the scaling
// edges), at widths that leave loop remainders, with every broadcast form; in fp32 (the values as
// computed) and bf16 (rounded once). Unary functions and max/min return the first NaN operand
// quieted by definition, so their NaNs must match too; for + - * / a NaN result may be any NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "hw/functions/functions.h"
#include "hw/functions/numerics.h"
#include "hw/stream/bf16.h"

namespace stepsim {
namespace {

// ---- the definitions (numerics.h), branching, one element at a time ----
float quiet(float x) { return f32_from_bits(f32_bits(x) | 0x00400000u); }
float pow2(int e) { return f32_from_bits(uint32_t(e + 127) << 23); }

float exp_def(float x) {
  if (x != x) return quiet(x);
  if (x > 89.0f) return INFINITY;
  if (x < -104.0f) return 0.0f;
  volatile float z = x * f32_from_bits(0x42b8aa3bu);  // volatile: one rounding per step
  volatile float n = (z + 12582912.0f) - 12582912.0f;
  const int32_t N = int32_t(n);
  volatile float r = (x - n * f32_from_bits(0x3c314000u)) - n * f32_from_bits(0x37485fdfu);
  const int32_t j = N & 63, k = N >> 6;
  volatile float t = r * f32_from_bits(0x3e2aaaabu);
  t = 0.5f + t;
  t = (r * r) * t;
  volatile float q = r + t;
  const float T = f32_from_bits(kExp2Table[j]);
  volatile float m = T + T * q;
  if (k > 127) return (m * pow2(127)) * pow2(k - 127);
  if (k < -126) return (m * pow2(k + 64)) * pow2(-64);
  return m * pow2(k);
}
float sigmoid_def(float x) {
  if (x != x) return quiet(x);
  if (x >= 0.0f) return 1.0f / (1.0f + exp_def(-x));
  const float e = exp_def(x);
  return e / (1.0f + e);
}
float silu_def(float x) { return x * sigmoid_def(x); }
float tanh_def(float u) {
  if (u != u) return quiet(u);
  const float a = u < 0.0f ? -u : u;
  const float e = exp_def(-(a * 2.0f));
  const float t = (1.0f - e) / (1.0f + e);
  return u < 0.0f ? -t : t;
}
float gelu_def(float x) {
  volatile float c = (x * x) * x;
  volatile float i = x + 0.044715f * c;
  volatile float u = 0.7978845608f * i;
  return (0.5f * x) * (1.0f + tanh_def(u));
}
float rsqrt_def(float x) { return 1.0f / std::sqrt(x); }
// tanh_f32, erf_f32, gelu_f32 (numerics.h) as their definitions read: one path per input.
template <size_t N>
float horner_def(const uint32_t (&c)[N], float z) {  // c: highest degree first
  volatile float p = f32_from_bits(c[0]);
  for (size_t k = 1; k < N; ++k) p = p * z + f32_from_bits(c[k]);
  return p;
}
float tanh_f32_def(float u) {
  if (u != u) return quiet(u);
  const float a = std::fabs(u);
  float t;
  if (a < 0.75f) {
    volatile float z = a * a;
    volatile float q = z * horner_def(kTanhP, z);
    t = a + a * q;
  } else {
    volatile float e = exp_def(-(a * 2.0f));
    volatile float d = (e * 2.0f) / (1.0f + e);
    t = 1.0f - d;
  }
  return std::signbit(u) ? -t : t;
}
float erf_def(float x) {
  if (x != x) return quiet(x);
  const float a = std::fabs(x);
  float r = 1.0f;
  if (a < 1.0f) {
    volatile float z = a * a;
    volatile float p = horner_def(kErfA, z);
    r = a + a * p;
  } else if (a < 4.0f) {
    volatile float t = a - 1.75f;
    volatile float q = horner_def(kErfB, t);
    r = 1.0f - exp_def(q);
  }
  return std::signbit(x) ? -r : r;
}
float gelu_erf_def(float x) {
  if (x != x) return quiet(x);
  volatile float v = x * 0.70710677f;
  volatile float e = erf_def(v);
  return (0.5f * x) * (1.0f + e);
}
float max_def(float a, float b) {
  if (a != a) return quiet(a);
  if (b != b) return quiet(b);
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
float min_def(float a, float b) {
  if (a != a || b != b) return max_def(a, b);
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

// ---- values ----
std::vector<float> values(size_t n, std::mt19937& rng, bool special) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> specials = {0.0f,
                                       -0.0f,
                                       inf,
                                       -inf,
                                       std::nanf(""),
                                       -std::nanf(""),
                                       f32_from_bits(0x7f800001u) /* signalling */,
                                       1e-40f,
                                       -1e-40f,
                                       std::numeric_limits<float>::denorm_min(),
                                       3e38f,
                                       -3e38f,
                                       1.0f,
                                       -1.0f,
                                       89.0f,
                                       89.00001f,
                                       88.72f,
                                       88.5f,
                                       -104.0f,
                                       -104.00001f,
                                       -87.5f,
                                       -95.0f,
                                       -103.9f,
                                       20.0f,
                                       -20.0f,
                                       0.75f,  // tanh_f32's and erf_f32's path edges
                                       -0.74999994f,
                                       0.99999994f,
                                       -4.0f,
                                       3.9999998f};
  std::uniform_real_distribution<float> u(-12.0f, 12.0f);
  std::uniform_int_distribution<size_t> pick(0, specials.size() - 1);
  std::vector<float> v(n);
  for (float& x : v) x = special && rng() % 2 == 0 ? specials[pick(rng)] : u(rng);
  return v;
}

Tile tile_of(uint32_t rows, uint32_t cols, std::vector<float> v) {
  return make_tile(rows, cols, DType::FP32, std::move(v));
}

// "" when equal bit for bit (NaNs: any NaN when any_nan), else the first difference.
std::string first_difference(const std::vector<float>& got, const std::vector<float>& want, bool any_nan) {
  if (got.size() != want.size()) return "sizes differ";
  for (size_t n = 0; n < got.size(); ++n)
    if (f32_bits(got[n]) != f32_bits(want[n]) && !(any_nan && std::isnan(got[n]) && std::isnan(want[n]))) {
      char text[96];
      std::snprintf(text, sizeof text, "element %zu: %08x (%g), definition %08x (%g)", n, f32_bits(got[n]), got[n],
                    f32_bits(want[n]), want[n]);
      return text;
    }
  return "";
}

std::vector<float> rounded(std::vector<float> v, DType dtype) {
  if (dtype == DType::BF16)
    for (float& x : v) x = round_to_bf16(x);
  return v;
}

const std::vector<uint32_t> kWidths = {1, 7, 16, 33, 64, 100};

TEST(ElementwiseKernel, UnaryFunctionsEqualTheirDefinitions) {
  const std::vector<std::pair<std::string, std::function<float(float)>>> fns = {
      {"exp", exp_def},     {"sigmoid", sigmoid_def}, {"silu", silu_def},
      {"rsqrt", rsqrt_def}, {"gelu_tanh", gelu_def},  {"tanh", tanh_f32_def},
      {"erf", erf_def},     {"gelu", gelu_erf_def},   {"sqrt", [](float x) { return std::sqrt(x); }}};
  std::mt19937 rng(1);
  for (const auto& [name, def] : fns)
    for (bool special : {false, true})
      for (DType dtype : {DType::FP32, DType::BF16})
        for (uint32_t cols : kWidths) {
          SCOPED_TRACE(name + " special " + std::to_string(special) + " " + dtype_name(dtype) + " cols " +
                       std::to_string(cols));
          const Tile x = make_tile(3, cols, dtype, values(3 * size_t(cols), rng, special));
          std::vector<float> want;
          for (float v : x.data->f) want.push_back(def(v));
          EXPECT_EQ(first_difference(map_function(name).apply({x}).data->f, rounded(want, dtype), false), "");
        }
}

TEST(ElementwiseKernel, ExpCoversEveryScalingPathExactly) {
  // A dense sweep over the inputs whose results are subnormal (k < -126), normal, and overflow
  // (k > 127), across both clamps.
  std::vector<float> x;
  for (float v = -105.0f; v <= 90.0f; v += 0.0037f) x.push_back(v);
  std::vector<float> want;
  for (float v : x) want.push_back(exp_def(v));
  const uint32_t n = uint32_t(x.size());
  EXPECT_EQ(first_difference(map_function("exp").apply({tile_of(1, n, x)}).data->f, want, false), "");
}

TEST(ElementwiseKernel, BinaryFunctionsEqualTheirDefinitionsInEveryBroadcastForm) {
  const std::vector<std::tuple<std::string, std::function<float(float, float)>, bool>> fns = {
      {"add", [](float a, float b) { return a + b; }, true},
      {"sub", [](float a, float b) { return a - b; }, true},
      {"mul", [](float a, float b) { return a * b; }, true},
      {"div", [](float a, float b) { return a / b; }, true},
      {"max", max_def, false},
      {"min", min_def, false}};
  std::mt19937 rng(2);
  const uint32_t R = 5;
  for (const auto& [name, def, any_nan] : fns)
    for (bool special : {false, true})
      for (uint32_t C : kWidths)
        // b's shape: whole, a row [1 x C], a column [R x 1], a scalar [1 x 1]; and a broadcast a.
        for (auto [ar, ac, br, bc] : std::vector<std::array<uint32_t, 4>>{
                 {R, C, R, C}, {R, C, 1, C}, {R, C, R, 1}, {R, C, 1, 1}, {1, C, R, C}, {R, 1, R, C}, {1, 1, R, C}}) {
          SCOPED_TRACE(name + " special " + std::to_string(special) + " a " + std::to_string(ar) + "x" +
                       std::to_string(ac) + " b " + std::to_string(br) + "x" + std::to_string(bc));
          const Tile a = tile_of(ar, ac, values(size_t(ar) * ac, rng, special));
          const Tile b = tile_of(br, bc, values(size_t(br) * bc, rng, special));
          std::vector<float> want;
          for (uint32_t i = 0; i < R; ++i)
            for (uint32_t j = 0; j < C; ++j)
              want.push_back(def(a.f(ar == 1 ? 0 : i, ac == 1 ? 0 : j), b.f(br == 1 ? 0 : i, bc == 1 ? 0 : j)));
          EXPECT_EQ(first_difference(map_function(name).apply({a, b}).data->f, want, any_nan), "");
        }
}

TEST(ElementwiseKernel, RowReductionsFoldEachRowLeftToRight) {
  std::mt19937 rng(3);
  for (bool is_max : {false, true})
    for (bool special : {false, true})
      for (uint32_t rows : {1u, 5u, 17u})
        for (uint32_t cols : kWidths) {
          SCOPED_TRACE(std::string(is_max ? "row_max" : "row_sum") + " special " + std::to_string(special) + " " +
                       std::to_string(rows) + "x" + std::to_string(cols));
          const Tile x = tile_of(rows, cols, values(size_t(rows) * cols, rng, special));
          std::vector<float> want;
          for (uint32_t i = 0; i < rows; ++i) {
            volatile float s = x.f(i, 0);
            for (uint32_t j = 1; j < cols; ++j) s = is_max ? max_def(s, x.f(i, j)) : s + x.f(i, j);
            want.push_back(float(s));
          }
          const Tile got = map_function(is_max ? "row_max" : "row_sum").apply({x});
          EXPECT_EQ(first_difference(got.data->f, want, !is_max), "");
        }
}

}  // namespace
}  // namespace stepsim
