// bf16 rounding (hw/stream/bf16.h) and the Tile helpers (hw/stream/tile.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "hw/stream/bf16.h"
#include "hw/stream/tile.h"

namespace stepsim {
namespace {

uint16_t rb(uint32_t f32) { return bf16_bits_from_f32(f32_from_bits(f32)); }

TEST(Bf16, ExactValuesPassThrough) {
  EXPECT_EQ(rb(0x3f800000u), 0x3f80u);  // 1.0
  EXPECT_EQ(rb(0xc0490000u), 0xc049u);  // -3.140625
  EXPECT_EQ(rb(0x00000000u), 0x0000u);  // +0
  EXPECT_EQ(rb(0x80000000u), 0x8000u);  // -0 keeps its sign
}

TEST(Bf16, RoundToNearestTiesToEven) {
  // 1 + 2^-8 is exactly halfway between bf16 1.0 (0x3f80, even) and 0x3f81: ties to even.
  EXPECT_EQ(rb(0x3f808000u), 0x3f80u);
  // halfway between 0x3f81 (odd) and 0x3f82 (even) -> 0x3f82.
  EXPECT_EQ(rb(0x3f818000u), 0x3f82u);
  // just above / below halfway.
  EXPECT_EQ(rb(0x3f808001u), 0x3f81u);
  EXPECT_EQ(rb(0x3f807fffu), 0x3f80u);
  // negative values round by magnitude.
  EXPECT_EQ(rb(0xbf808000u), 0xbf80u);
  EXPECT_EQ(rb(0xbf818000u), 0xbf82u);
  // carry into the exponent: 0x3fffffff rounds up to 2.0.
  EXPECT_EQ(rb(0x3fffffffu), 0x4000u);
  // 257 is halfway between bf16 256 and 258 -> 256 (even); 259 -> 260.
  EXPECT_EQ(round_to_bf16(257.0f), 256.0f);
  EXPECT_EQ(round_to_bf16(259.0f), 260.0f);
}

TEST(Bf16, InfinityAndOverflow) {
  EXPECT_EQ(rb(0x7f800000u), 0x7f80u);  // +Inf
  EXPECT_EQ(rb(0xff800000u), 0xff80u);  // -Inf
  EXPECT_EQ(rb(0x7f7f7fffu), 0x7f7fu);  // below the half-way point: largest bf16
  EXPECT_EQ(rb(0x7f7f8000u), 0x7f80u);  // halfway above max bf16 (odd) -> rounds to +Inf
  EXPECT_EQ(rb(0x7f7fffffu), 0x7f80u);  // FLT_MAX -> +Inf
}

TEST(Bf16, NaNStaysQuietNaN) {
  EXPECT_EQ(rb(0x7fc00000u), 0x7fc0u);  // canonical quiet NaN
  EXPECT_EQ(rb(0x7f800001u), 0x7fc0u);  // signalling NaN whose payload is below bf16: quieted
  EXPECT_EQ(rb(0xffc12345u), 0xffc1u);  // sign and upper payload kept
  EXPECT_EQ(rb(0x7fffffffu), 0x7fffu);  // must not carry into +Inf
  EXPECT_TRUE(std::isnan(round_to_bf16(f32_from_bits(0x7f800001u))));
}

TEST(Bf16, Subnormals) {
  EXPECT_EQ(rb(0x00000001u), 0x0000u);  // smallest fp32 subnormal -> +0
  EXPECT_EQ(rb(0x00008000u), 0x0000u);  // halfway between 0 and 0x0001 -> even (0)
  EXPECT_EQ(rb(0x00018000u), 0x0002u);  // halfway between 0x0001 and 0x0002 -> 0x0002
  EXPECT_EQ(rb(0x00008001u), 0x0001u);  // above halfway -> smallest bf16 subnormal
  EXPECT_EQ(rb(0x80008001u), 0x8001u);
  EXPECT_EQ(rb(0x007fffffu), 0x0080u);  // largest fp32 subnormal rounds up to FLT_MIN
  EXPECT_EQ(rb(0x00400000u), 0x0040u);  // exact bf16 subnormal
}

TEST(Bf16, RoundTripOfEveryBf16IsIdentity) {
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const float x = f32_from_bf16_bits(uint16_t(b));
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(round_to_bf16(x)));
      continue;
    }
    ASSERT_EQ(bf16_bits_from_f32(x), b);
  }
}

TEST(Tile, DtypeNamesAndParsing) {
  EXPECT_STREQ(dtype_name(DType::BF16), "bf16");
  EXPECT_STREQ(dtype_name(DType::FP32), "fp32");
  EXPECT_STREQ(dtype_name(DType::INT32), "int32");
  EXPECT_EQ(parse_dtype("bf16"), DType::BF16);
  EXPECT_EQ(parse_dtype("fp32"), DType::FP32);
  EXPECT_EQ(parse_dtype("int32"), DType::INT32);
  try {
    parse_dtype("fp16");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'fp16'"), std::string::npos) << e.what();
  }
}

TEST(Tile, ToString) {
  EXPECT_EQ(shape_tile(16, 64).to_string(), "T[16x64]");
  EXPECT_EQ(shape_tile(16, 64, DType::FP32).to_string(), "T[16x64:fp32]");
  EXPECT_EQ(make_int_tile(1, 1, {7}).to_string(), "T[1x1:int32]");
}

TEST(Tile, MakeTileRoundsBf16Only) {
  const float v = f32_from_bits(0x3f808001u);  // rounds up to 0x3f81 in bf16
  Tile b = make_tile(1, 2, DType::BF16, {v, 257.0f});
  ASSERT_TRUE(b.has_data());
  EXPECT_EQ(f32_bits(b.f(0, 0)), 0x3f810000u);
  EXPECT_EQ(b.f(0, 1), 256.0f);
  EXPECT_EQ(b.bytes(), 4u);
  Tile f = make_tile(1, 2, DType::FP32, {v, 257.0f});
  EXPECT_EQ(f32_bits(f.f(0, 0)), 0x3f808001u);
  EXPECT_EQ(f.f(0, 1), 257.0f);
  EXPECT_EQ(f.bytes(), 8u);
  Tile i = make_int_tile(2, 1, {3, -4});
  EXPECT_EQ(i.dtype, DType::INT32);
  EXPECT_EQ(i.i(1, 0), -4);
}

TEST(Tile, MakeTileChecksSize) {
  EXPECT_THROW(make_tile(2, 2, DType::BF16, {1.0f}), std::invalid_argument);
  EXPECT_THROW(make_int_tile(1, 2, {1}), std::invalid_argument);
  EXPECT_THROW(make_tile(1, 1, DType::INT32, {1.0f}), std::invalid_argument);
}

}  // namespace
}  // namespace stepsim
