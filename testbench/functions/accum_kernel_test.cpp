// The accumulating loops (flash_attn_update, add / max accumulation), compiled per instruction
// set, against their definitions written plainly: one element at a time, each sum in its order.
// Bit for bit over random values and specials (NaN, +-Inf, subnormals, +-0, rows that are all
// -Inf), for first and later updates, at widths that leave loop remainders.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "hw/functions/functions.h"
#include "hw/functions/numerics.h"
#include "hw/stream/bf16.h"

namespace stepsim {
namespace {

Tile tile_of(uint32_t rows, uint32_t cols, std::vector<float> v) {
  return make_tile(rows, cols, DType::FP32, std::move(v));
}

std::vector<float> values(size_t n, std::mt19937& rng, bool special) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> specials = {0.0f, -0.0f, inf, -inf, std::nanf(""), 1e-40f, -1e-40f, 80.0f, -95.0f, 1e30f};
  std::uniform_real_distribution<float> u(-6.0f, 6.0f);
  std::uniform_int_distribution<size_t> pick(0, specials.size() - 1);
  std::vector<float> v(n);
  for (float& x : v) x = special && rng() % 3 == 0 ? specials[pick(rng)] : u(rng);
  return v;
}

// Bits equal; a NaN matches any NaN (the order of + and * operands is not part of the contract).
void expect_same(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t n = 0; n < got.size(); ++n) {
    uint32_t g, w;
    std::memcpy(&g, &got[n], 4);
    std::memcpy(&w, &want[n], 4);
    if (g != w && !(std::isnan(got[n]) && std::isnan(want[n])))
      FAIL() << "element " << n << ": " << got[n] << " (" << std::hex << g << "), definition " << want[n] << " (" << w
             << ")";
  }
}

// flash_attn_update's definition: acc [M x (D + 2)] = [o | m | l].
std::vector<float> flash_reference(const Tile& S, const Tile& V, std::vector<float> A, bool first) {
  const uint32_t M = S.rows, T = S.cols, D = V.cols, W = D + 2;
  for (uint32_t i = 0; i < M; ++i) {
    float* o = A.data() + size_t(i) * W;
    float mt = -INFINITY;
    for (uint32_t t = 0; t < T; ++t) mt = t == 0 ? S.f(i, 0) : max_f32(mt, S.f(i, t));
    const float m_old = o[D], l_old = o[D + 1];
    const float m_new = first ? mt : max_f32(m_old, mt);
    const bool none = m_new == -INFINITY;
    std::vector<float> p(T), pv(D, 0.0f);
    volatile float ls = 0.0f;  // volatile: one rounding per step
    for (uint32_t t = 0; t < T; ++t) {
      p[t] = none ? 0.0f : exp_f32(S.f(i, t) - m_new);
      ls = t == 0 ? p[t] : ls + p[t];
    }
    for (uint32_t j = 0; j < D; ++j)
      for (uint32_t t = 0; t < T; ++t) {
        volatile float prod = p[t] * V.f(t, j);
        pv[j] = t == 0 ? float(prod) : pv[j] + prod;
      }
    if (first) {
      for (uint32_t j = 0; j < D; ++j) o[j] = pv[j];
      o[D + 1] = ls;
    } else {
      const float a = none ? 1.0f : exp_f32(m_old - m_new);
      for (uint32_t j = 0; j < D; ++j) {
        volatile float ao = a * o[j];
        o[j] = ao + pv[j];
      }
      volatile float al = a * l_old;
      o[D + 1] = al + ls;
    }
    o[D] = m_new;
  }
  return A;
}

TEST(AccumKernel, FlashAttentionUpdateEqualsItsDefinition) {
  const AccumFunction& f = accum_function("flash_attn_update");
  std::mt19937 rng(5);
  for (bool special : {false, true})
    for (uint32_t T : {1u, 7u, 16u, 33u})
      for (uint32_t D : {1u, 16u, 40u}) {
        SCOPED_TRACE(::testing::Message() << "special " << special << " T " << T << " D " << D);
        const uint32_t M = 5;
        std::vector<float> s0 = values(size_t(M) * T, rng, special), s1 = values(size_t(M) * T, rng, special);
        for (uint32_t t = 0; t < T; ++t) s1[t] = -INFINITY;  // row 0 of the second update: all -Inf
        const Tile S0 = tile_of(M, T, s0), S1 = tile_of(M, T, s1);
        const Tile V0 = tile_of(T, D, values(size_t(T) * D, rng, special));
        const Tile V1 = tile_of(T, D, values(size_t(T) * D, rng, special));
        const Tile a1 = f.update(f.init(), {S0, V0});
        const std::vector<float> want1 = flash_reference(S0, V0, std::vector<float>(size_t(M) * (D + 2), 0.0f), true);
        expect_same(a1.data->f, want1);
        const Tile a2 = f.update(a1, {S1, V1});
        expect_same(a2.data->f, flash_reference(S1, V1, want1, false));
      }
}

TEST(AccumKernel, AddAndMaxAccumulationEqualTheirDefinitions) {
  std::mt19937 rng(6);
  for (const char* name : {"add", "max"})
    for (bool special : {false, true})
      for (uint32_t cols : {1u, 15u, 64u, 100u}) {
        SCOPED_TRACE(std::string(name) + " special " + std::to_string(special) + " cols " + std::to_string(cols));
        const AccumFunction& f = accum_function(name);
        const Tile x0 = tile_of(3, cols, values(3 * size_t(cols), rng, special));
        const Tile x1 = tile_of(3, cols, values(3 * size_t(cols), rng, special));
        std::vector<float> want = x0.data->f;
        for (size_t k = 0; k < want.size(); ++k)
          want[k] = std::string(name) == "max" ? max_f32(want[k], x1.data->f[k]) : want[k] + x1.data->f[k];
        expect_same(f.update(f.update(f.init(), {x0}), {x1}).data->f, want);
      }
}

}  // namespace
}  // namespace stepsim
