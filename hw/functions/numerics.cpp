#include "hw/functions/numerics.h"

#include <cmath>

#include "hw/stream/bf16.h"

namespace stepsim {

const uint32_t kExp2Table[64] = {
    0x3f800000u, 0x3f8164d2u, 0x3f82cd87u, 0x3f843a29u, 0x3f85aac3u, 0x3f871f62u, 0x3f88980fu, 0x3f8a14d5u,
    0x3f8b95c2u, 0x3f8d1adfu, 0x3f8ea43au, 0x3f9031dcu, 0x3f91c3d3u, 0x3f935a2bu, 0x3f94f4f0u, 0x3f96942du,
    0x3f9837f0u, 0x3f99e046u, 0x3f9b8d3au, 0x3f9d3edau, 0x3f9ef532u, 0x3fa0b051u, 0x3fa27043u, 0x3fa43516u,
    0x3fa5fed7u, 0x3fa7cd94u, 0x3fa9a15bu, 0x3fab7a3au, 0x3fad583fu, 0x3faf3b79u, 0x3fb123f6u, 0x3fb311c4u,
    0x3fb504f3u, 0x3fb6fd92u, 0x3fb8fbafu, 0x3fbaff5bu, 0x3fbd08a4u, 0x3fbf179au, 0x3fc12c4du, 0x3fc346cdu,
    0x3fc5672au, 0x3fc78d75u, 0x3fc9b9beu, 0x3fcbec15u, 0x3fce248cu, 0x3fd06334u, 0x3fd2a81eu, 0x3fd4f35bu,
    0x3fd744fdu, 0x3fd99d16u, 0x3fdbfbb8u, 0x3fde60f5u, 0x3fe0ccdfu, 0x3fe33f89u, 0x3fe5b907u, 0x3fe8396au,
    0x3feac0c7u, 0x3fed4f30u, 0x3fefe4bau, 0x3ff28177u, 0x3ff5257du, 0x3ff7d0dfu, 0x3ffa83b3u, 0x3ffd3e0cu,
};

namespace {

constexpr uint32_t kInvLn2x64Bits = 0x42b8aa3bu;  // 64/ln2 = 92.33248...
constexpr uint32_t kLn2HiBits = 0x3c314000u;      // high part of ln2/64 (10 significant bits)
constexpr uint32_t kLn2LoBits = 0x37485fdfu;      // ln2/64 - L_HI, rounded to fp32
constexpr uint32_t kC3Bits = 0x3e2aaaabu;         // 1/6
constexpr float kRoundMagic = 12582912.0f;        // 0x1.8p23: adding it rounds to integer (RNE)

bool is_nan(float x) { return x != x; }
float quiet(float x) { return f32_from_bits(f32_bits(x) | 0x00400000u); }
// 2^e as an fp32 value, for -126 <= e <= 127 (normal range only).
float pow2(int e) { return f32_from_bits(uint32_t(e + 127) << 23); }

}  // namespace

float exp_f32(float x) {
  if (is_nan(x)) return quiet(x);
  if (x > 89.0f) return f32_from_bits(0x7f800000u);
  if (x < -104.0f) return 0.0f;
  const float z = x * f32_from_bits(kInvLn2x64Bits);
  const float n = (z + kRoundMagic) - kRoundMagic;
  const int32_t N = int32_t(n);
  const float r = (x - n * f32_from_bits(kLn2HiBits)) - n * f32_from_bits(kLn2LoBits);
  const int32_t j = N & 63;
  const int32_t k = N >> 6;  // arithmetic shift (floor division by 64)
  float t = r * f32_from_bits(kC3Bits);
  t = 0.5f + t;
  t = (r * r) * t;
  const float q = r + t;
  const float T = f32_from_bits(kExp2Table[j]);
  const float m = T + T * q;
  if (k > 127) return (m * pow2(127)) * pow2(k - 127);
  if (k < -126) return (m * pow2(k + 64)) * pow2(-64);
  return m * pow2(k);
}

float sigmoid_f32(float x) {
  if (is_nan(x)) return quiet(x);
  if (x >= 0.0f) {
    const float e = exp_f32(-x);
    const float d = 1.0f + e;
    return 1.0f / d;
  }
  const float e = exp_f32(x);
  const float d = 1.0f + e;
  return e / d;
}

float silu_f32(float x) { return x * sigmoid_f32(x); }

float rsqrt_f32(float x) {
  const float s = std::sqrt(x);  // IEEE: correctly rounded
  return 1.0f / s;
}

float tanh_f32(float u) {
  if (is_nan(u)) return quiet(u);
  const float a = u < 0.0f ? -u : u;
  const float e = exp_f32(-(a * 2.0f));
  const float t = (1.0f - e) / (1.0f + e);
  return u < 0.0f ? -t : t;
}

float gelu_tanh_f32(float x) {
  const float k0 = 0.7978845608f, k1 = 0.044715f;
  const float c = (x * x) * x;
  const float i = x + k1 * c;
  const float u = k0 * i;
  const float t = tanh_f32(u);
  return (0.5f * x) * (1.0f + t);
}

float max_f32(float a, float b) {
  if (is_nan(a)) return quiet(a);
  if (is_nan(b)) return quiet(b);
  if (a == b) return (f32_bits(a) & 0x80000000u) ? b : a;  // prefers +0 over -0
  return a > b ? a : b;
}

}  // namespace stepsim
