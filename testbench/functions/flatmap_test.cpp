// FlatMap functions (retile streamify, padding filters) and address generation.
#include <gtest/gtest.h>

#include <algorithm>

#include "hw/functions/functions.h"
#include "testbench/functions/test_util.h"

namespace stepsim {
namespace {

using testing_util::expect_invalid;

TEST(FlatMapRegistry, NamesAndUnknown) {
  const auto names = flatmap_function_names();
  for (const char* n :
       {"retile_streamify_row", "retile_streamify_col", "retile_streamify_row_filter", "filter_padding"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  expect_invalid([] { flatmap_function("streamify"); },
                 {"unknown flatmap function 'streamify'", "known:", "retile_streamify_row"});
}

TEST(RetileStreamify, RowSplit) {
  const auto& f = flatmap_function("retile_streamify_row");
  Tile x = make_tile(3, 2, DType::BF16, {1, 2, 3, 4, 5, 6});
  auto rows = f.apply({x});
  ASSERT_EQ(rows.size(), 3u);
  for (uint32_t r = 0; r < 3; ++r) {
    EXPECT_EQ(rows[r].to_string(), "T[1x2]");
    EXPECT_EQ(rows[r].f(0, 0), float(2 * r + 1));
    EXPECT_EQ(rows[r].f(0, 1), float(2 * r + 2));
  }
  // timing mode: [16x4096] -> 16 x [1x4096], 0 FLOPs
  auto shapes = f.out_shapes({shape_tile(16, 4096)});
  ASSERT_EQ(shapes.size(), 16u);
  EXPECT_EQ(shapes[15].to_string(), "T[1x4096]");
  EXPECT_FALSE(shapes[0].has_data());
  EXPECT_EQ(f.flops({shape_tile(16, 4096)}), 0u);
  expect_invalid([&] { f.apply({x, x}); }, {"'retile_streamify_row'", "takes 1 input(s), got 2"});
}

TEST(RetileStreamify, ColSplitAndInt32) {
  const auto& f = flatmap_function("retile_streamify_col");
  Tile x = make_tile(2, 3, DType::FP32, {1, 2, 3, 4, 5, 6});
  auto cols = f.apply({x});
  ASSERT_EQ(cols.size(), 3u);
  EXPECT_EQ(cols[2].to_string(), "T[2x1:fp32]");
  EXPECT_EQ(cols[2].f(0, 0), 3.0f);
  EXPECT_EQ(cols[2].f(1, 0), 6.0f);
  auto icols = f.apply({make_int_tile(1, 2, {7, 8})});
  ASSERT_EQ(icols.size(), 2u);
  EXPECT_EQ(icols[1].i(0, 0), 8);
  EXPECT_EQ(f.flops({x}), 0u);
}

TEST(RetileStreamify, RoundTripWithRetileRow) {
  // Accum(retile_row) then FlatMap(retile_streamify_row) returns the original rows.
  std::vector<Tile> rows;
  for (int r = 0; r < 5; ++r) rows.push_back(make_tile(1, 4, DType::BF16, {float(r), 1, 2, 3}));
  const auto& acc = accum_function("retile_row");
  Tile a = acc.init();
  for (const Tile& t : rows) a = acc.update(std::move(a), {t});
  auto back = flatmap_function("retile_streamify_row").apply({acc.finalize(a)});
  ASSERT_EQ(back.size(), 5u);
  for (int r = 0; r < 5; ++r) EXPECT_EQ(back[r].data->f, rows[r].data->f);
}

TEST(RetileStreamifyFilter, DropsPaddedRows) {
  const auto& f = flatmap_function("retile_streamify_row_filter");
  Tile x = make_tile(4, 2, DType::BF16, {1, 1, 2, 2, 3, 3, 4, 4});
  Tile mask = make_int_tile(4, 1, {0, 0, 1, 0});  // row 2 is padding
  auto out = f.apply({x, mask});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].f(0, 0), 1.0f);
  EXPECT_EQ(out[1].f(0, 0), 2.0f);
  EXPECT_EQ(out[2].f(0, 0), 4.0f);
  // [1xR] mask accepted; timing mode keeps the mask payload
  auto shapes = f.out_shapes({shape_tile(4, 2), make_int_tile(1, 4, {0, 1, 1, 1})});
  ASSERT_EQ(shapes.size(), 1u);
  EXPECT_EQ(shapes[0].to_string(), "T[1x2]");
  expect_invalid(
      [&] {
        f.out_shapes({shape_tile(4, 2), shape_tile(4, 1, DType::INT32)});
      },
      {"'retile_streamify_row_filter'", "payload"});
  expect_invalid(
      [&] {
        f.apply({x, make_int_tile(3, 1, {0, 0, 0})});
      },
      {"'retile_streamify_row_filter'", "T[3x1:int32]", "T[4x2]"});
  expect_invalid(
      [&] {
        f.apply({x, make_tile(4, 1, DType::BF16, {0, 0, 0, 0})});
      },
      {"'retile_streamify_row_filter'", "int32"});
}

TEST(FilterPadding, FlatMapAndHelper) {
  const auto& f = flatmap_function("filter_padding");
  Tile x = make_tile(1, 4, DType::BF16, {1, 2, 3, 4});
  EXPECT_EQ(f.apply({x, make_int_tile(1, 1, {0})}).size(), 1u);
  EXPECT_EQ(f.apply({x, make_int_tile(1, 1, {1})}).size(), 0u);
  EXPECT_EQ(f.out_shapes({shape_tile(1, 4), make_int_tile(1, 1, {0})}).size(), 1u);
  EXPECT_EQ(f.flops({x, make_int_tile(1, 1, {0})}), 0u);

  std::vector<Tile> tiles;
  for (int k = 0; k < 4; ++k) tiles.push_back(make_tile(1, 1, DType::BF16, {float(k)}));
  auto kept = filter_padding(tiles, {false, true, false, true});
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].f(0, 0), 0.0f);
  EXPECT_EQ(kept[1].f(0, 0), 2.0f);
  expect_invalid([&] { filter_padding(tiles, {false}); }, {"filter_padding", "4 tiles", "1 flags"});
}

// ---- address generation ----

TEST(AddressGen, ExpertTiles) {
  // Mixtral W1: 14336/64 = 224 tiles per expert; expert 3 owns tiles 672..895.
  auto a = expert_tile_addresses(3, 224);
  ASSERT_EQ(a.size(), 224u);
  EXPECT_EQ(a.front(), 3 * 224);
  EXPECT_EQ(a.back(), 3 * 224 + 223);
  // byte addresses: [4096x64] bf16 tiles = 524288 bytes, base 0x1000
  auto b = expert_tile_addresses(1, 2, 0x1000, 4096 * 64 * 2);
  EXPECT_EQ(b, (std::vector<int64_t>{0x1000 + 2 * 524288, 0x1000 + 3 * 524288}));
  expect_invalid([] { expert_tile_addresses(-1, 4); }, {"expert_tile_addresses", "expert_id"});
  expect_invalid([] { expert_tile_addresses(0, 0); }, {"expert_tile_addresses", "tiles_per_expert"});
}

TEST(AddressGen, KvCacheTiles) {
  // max length 6464 / tile 32 = 202 slots per request; a request with 70 cached tokens
  // decoding one more needs ceil(71/32) = 3 tiles.
  auto a = kv_cache_tile_addresses(5, 71, 32, 202);
  EXPECT_EQ(a, (std::vector<int64_t>{5 * 202, 5 * 202 + 1, 5 * 202 + 2}));
  EXPECT_EQ(kv_cache_tile_addresses(0, 64, 32, 202).size(), 2u);
  EXPECT_TRUE(kv_cache_tile_addresses(0, 0, 32, 202).empty());
  auto bytes = kv_cache_tile_addresses(1, 1, 32, 4, 100, 32 * 64 * 2);
  EXPECT_EQ(bytes, (std::vector<int64_t>{100 + 4 * 4096}));
  expect_invalid([] { kv_cache_tile_addresses(0, 6465, 32, 202); }, {"kv_cache_tile_addresses", "6465", "203", "202"});
  // write address of token 70 of request 5: tile 2, row 6
  auto w = kv_cache_write_address(5, 70, 32, 202);
  EXPECT_EQ(w.tile_address, 5 * 202 + 2);
  EXPECT_EQ(w.row, 6u);
  expect_invalid([] { kv_cache_write_address(0, 6464, 32, 202); }, {"kv_cache_write_address", "6464"});
}

TEST(AddressGen, AsInt32Tiles) {
  auto t = address_tiles({0, 7, 2147483647});
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[1].to_string(), "T[1x1:int32]");
  EXPECT_EQ(t[2].i(0, 0), 2147483647);
  expect_invalid([] { address_tiles({int64_t(1) << 31}); }, {"address_tiles", "2147483648"});
}

}  // namespace
}  // namespace stepsim
