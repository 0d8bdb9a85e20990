// The matmul kernel (detail::matmul_accumulate, vectorized across output columns, compiled for the
// CPU's widest vectors) against its definition written as plainly as possible: each output's
// products summed in increasing k, one multiply and one add each. Bit for bit, over random values
// and tiles full of special values (NaN, +-Inf, subnormals, +-0; a NaN result is any NaN), in every form: B [KxN] and
// [NxK], a first product or an accumulation onto an existing sum, widths across the column block.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "hw/functions/detail.h"
#include "hw/stream/bf16.h"

namespace stepsim {
namespace {

Tile tile_of(uint32_t rows, uint32_t cols, std::vector<float> v) {
  return make_tile(rows, cols, DType::FP32, std::move(v));  // fp32: the values as given
}

// The definition: out[i][j] = p_0 + p_1 + ... (first) or out[i][j] + p_0 + p_1 + ...
std::vector<float> reference(const Tile& a, const Tile& b, bool bt, std::vector<float> out, bool first) {
  const uint32_t M = a.rows, K = a.cols, N = bt ? b.rows : b.cols;
  for (uint32_t i = 0; i < M; ++i)
    for (uint32_t j = 0; j < N; ++j) {
      volatile float s = first ? 0.0f : out[size_t(i) * N + j];  // volatile: one rounding per step
      for (uint32_t k = 0; k < K; ++k) {
        volatile float p = a.f(i, k) * (bt ? b.f(j, k) : b.f(k, j));
        s = (first && k == 0) ? float(p) : s + p;
      }
      out[size_t(i) * N + j] = s;
    }
  return out;
}

// "" when the two are the same bits, else the first element that differs, in hex. A NaN matches
// any NaN: which NaN an operation returns (the first NaN operand, or the default -NaN) is not part
// of the contract, since compilers may swap the operands of + and * (they are commutative in IEEE
// 754, including for the old scalar loop).
std::string first_difference(const std::vector<float>& got, const std::vector<float>& want) {
  for (size_t n = 0; n < got.size(); ++n) {
    uint32_t g, w;
    std::memcpy(&g, &got[n], 4);
    std::memcpy(&w, &want[n], 4);
    if (g != w && !(std::isnan(got[n]) && std::isnan(want[n]))) {
      char text[96];
      std::snprintf(text, sizeof text, "element %zu: %08x (%g), definition %08x (%g)", n, g, got[n], w, want[n]);
      return text;
    }
  }
  return "";
}

std::vector<float> values(size_t n, std::mt19937& rng, bool special) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> specials = {0.0f,  -0.0f, inf, -inf, std::nanf(""), 1e-40f, -1e-40f, 1e38f, -1e38f,
                                       1.0f,  -1.0f, 3.0e-39f, std::numeric_limits<float>::denorm_min()};
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  std::uniform_int_distribution<size_t> pick(0, specials.size() - 1);
  std::vector<float> v(n);
  for (float& x : v) x = special && rng() % 3 == 0 ? specials[pick(rng)] : u(rng);
  return v;
}

TEST(MatmulKernel, EqualsTheDefinitionBitForBit) {
  std::mt19937 rng(23);
  for (bool special : {false, true})
    for (bool bt : {false, true})
      for (bool first : {true, false})
        for (uint32_t M : {1u, 3u, 4u, 5u, 9u})
          for (uint32_t K : {1u, 2u, 17u, 64u})
            for (uint32_t N : {1u, 5u, 63u, 64u, 65u, 130u}) {
              SCOPED_TRACE(::testing::Message() << "special " << special << " bt " << bt << " first " << first
                                                << " M " << M << " K " << K << " N " << N);
              const Tile a = tile_of(M, K, values(size_t(M) * K, rng, special));
              const Tile b = bt ? tile_of(N, K, values(size_t(N) * K, rng, special))
                                : tile_of(K, N, values(size_t(K) * N, rng, special));
              const std::vector<float> start = values(size_t(M) * N, rng, special);
              std::vector<float> got = start;
              detail::matmul_accumulate(a, b, bt, got.data(), first);
              EXPECT_EQ(first_difference(got, reference(a, b, bt, start, first)), "");
            }
}

// matmul_t with a few rows of A against a tall B: the product taken transposed in 16 x 16
// squares stored back transposed. Rows of A (out's rows, 16 to a vector) 1 .. 33: whole vectors,
// one padded vector and both; rows of B (out's columns) whole squares and an edge of 1 .. 15; K up
// to 300: one run of k or several (kDepth 128; with first false a sum is stored and reloaded
// through the transposed squares between runs). Most of these shapes take the transposed
// product (B^T moves more values: N K > M K + M N); the rest check the other route as well.
TEST(MatmulKernel, TransposedProductEqualsTheDefinitionBitForBit) {
  std::mt19937 rng(29);
  for (bool special : {false, true})
    for (bool first : {true, false})
      for (uint32_t M : {1u, 15u, 16u, 17u, 33u})
        for (uint32_t K : {2u, 40u, 129u, 300u})
          for (uint32_t N : {47u, 64u, 257u}) {
            SCOPED_TRACE(::testing::Message() << "special " << special << " first " << first << " M " << M << " K "
                                              << K << " N " << N);
            const Tile a = tile_of(M, K, values(size_t(M) * K, rng, special));
            const Tile b = tile_of(N, K, values(size_t(N) * K, rng, special));
            const std::vector<float> start = values(size_t(M) * N, rng, special);
            std::vector<float> got = start;
            detail::matmul_accumulate(a, b, true, got.data(), first);
            EXPECT_EQ(first_difference(got, reference(a, b, true, start, first)), "");
          }
}

TEST(MatmulKernel, AFirstNegativeZeroProductStaysNegativeZero) {
  // -0 * 1 = -0: the sum starts from the product, not from +0 (which would give +0).
  const Tile a = tile_of(1, 1, {-0.0f}), b = tile_of(1, 70, std::vector<float>(70, 1.0f));
  std::vector<float> out(70, 5.0f);
  detail::matmul_accumulate(a, b, false, out.data(), true);
  for (float x : out) EXPECT_TRUE(std::signbit(x) && x == 0.0f);
  // The same through the transposed product (A [1 x 2], B [70 x 2]: -0 + -0 = -0).
  const Tile a2 = tile_of(1, 2, {-0.0f, -0.0f}), bt = tile_of(70, 2, std::vector<float>(140, 1.0f));
  std::vector<float> out_t(70, 5.0f);
  detail::matmul_accumulate(a2, bt, true, out_t.data(), true);
  for (float x : out_t) EXPECT_TRUE(std::signbit(x) && x == 0.0f);
}

}  // namespace
}  // namespace stepsim
