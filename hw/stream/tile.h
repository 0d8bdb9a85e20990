// Tiles: the two-dimensional data elements of STeP streams.
//
// A tile has a runtime shape (rows x cols) and a dtype. Its payload exists only in
// functional mode and is shared and immutable, so fan-out (Broadcast, multi-hot Partition)
// copies a pointer, never the data. In timing mode `data` is null and only the shape travels.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace stepsim {

enum class DType : uint8_t { BF16, FP32, INT32 };

inline uint32_t dtype_bytes(DType t) { return t == DType::BF16 ? 2u : 4u; }
const char* dtype_name(DType t);
// Parses "bf16", "fp32", "int32"; throws std::invalid_argument naming the bad value.
DType parse_dtype(const std::string& s);

// Row-major payload. bf16 and fp32 tiles use `f` (bf16 values are stored as the fp32 value
// they represent exactly); int32 tiles use `i`.
struct TileData {
  std::vector<float> f;
  std::vector<int32_t> i;
};

struct Tile {
  // (Members ordered so that a Tile is 32 bytes: every channel slot holds one.)
  uint32_t rows = 0;
  uint32_t cols = 0;
  std::shared_ptr<const TileData> data;  // null in timing mode
  DType dtype = DType::BF16;
  // The tile sits in an on-chip memory unit (it came from an off-chip load or a Streamify),
  // so a consumer pays the memory-unit read term of the roofline.
  bool in_memory_unit = false;

  uint64_t elems() const { return uint64_t(rows) * cols; }
  uint64_t bytes() const { return elems() * dtype_bytes(dtype); }
  bool has_data() const { return data != nullptr; }
  float f(uint32_t r, uint32_t c) const { return data->f[size_t(r) * cols + c]; }
  int32_t i(uint32_t r, uint32_t c) const { return data->i[size_t(r) * cols + c]; }
  // "T[16x64]" (plus ":fp32" when not bf16).
  std::string to_string() const;
};

// Builds a tile with a payload from row-major values (rounded to bf16 when dtype is BF16).
Tile make_tile(uint32_t rows, uint32_t cols, DType dtype, std::vector<float> values);
Tile make_int_tile(uint32_t rows, uint32_t cols, std::vector<int32_t> values);
// A shape-only tile (timing mode).
inline Tile shape_tile(uint32_t rows, uint32_t cols, DType dtype = DType::BF16) {
  Tile t;
  t.rows = rows;
  t.cols = cols;
  t.dtype = dtype;
  return t;
}

}  // namespace stepsim
