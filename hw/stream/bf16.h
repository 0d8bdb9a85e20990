// bf16 <-> fp32 conversion with IEEE round-to-nearest-even. The single definition used by
// the approximate model, the HLS units and the RTL checks.
#pragma once

#include <cstdint>
#include <cstring>

namespace stepsim {

inline uint32_t f32_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
inline float f32_from_bits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// Rounds an fp32 value to the nearest bf16 (ties to even). NaN stays NaN (quiet), Inf stays Inf.
inline uint16_t bf16_bits_from_f32(float x) {
  uint32_t u = f32_bits(x);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0)  // NaN: keep sign, force quiet
    return uint16_t((u >> 16) | 0x0040u);
  uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return uint16_t(u >> 16);
}
inline float f32_from_bf16_bits(uint16_t b) { return f32_from_bits(uint32_t(b) << 16); }
inline float round_to_bf16(float x) { return f32_from_bf16_bits(bf16_bits_from_f32(x)); }

}  // namespace stepsim
