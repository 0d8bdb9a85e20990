// Shared helpers for the tile-function tests.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "hw/stream/bf16.h"
#include "hw/stream/tile.h"

namespace stepsim::testing_util {

// Random tile with values uniform in [lo, hi) (rounded to bf16 if dtype is bf16).
inline Tile random_tile(uint32_t rows, uint32_t cols, DType dtype, std::mt19937& rng, float lo = -1.0f,
                        float hi = 1.0f) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(size_t(rows) * cols);
  for (float& x : v) x = u(rng);
  return make_tile(rows, cols, dtype, std::move(v));
}

inline Tile transpose(const Tile& t) {
  std::vector<float> v(t.elems());
  for (uint32_t i = 0; i < t.rows; ++i)
    for (uint32_t j = 0; j < t.cols; ++j) v[size_t(j) * t.rows + i] = t.f(i, j);
  return make_tile(t.cols, t.rows, t.dtype, std::move(v));
}

inline void expect_bits_equal(const Tile& a, const Tile& b) {
  ASSERT_EQ(a.rows, b.rows);
  ASSERT_EQ(a.cols, b.cols);
  ASSERT_EQ(a.dtype, b.dtype);
  ASSERT_TRUE(a.has_data() && b.has_data());
  for (uint32_t i = 0; i < a.rows; ++i)
    for (uint32_t j = 0; j < a.cols; ++j)
      ASSERT_EQ(f32_bits(a.f(i, j)), f32_bits(b.f(i, j))) << "at (" << i << "," << j << ")";
}

// Runs fn, expects std::invalid_argument whose message contains every needle.
template <class Fn>
void expect_invalid(Fn fn, const std::vector<std::string>& needles) {
  try {
    fn();
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    for (const auto& n : needles)
      EXPECT_NE(msg.find(n), std::string::npos) << "message '" << msg << "' lacks '" << n << "'";
  }
}

}  // namespace stepsim::testing_util
