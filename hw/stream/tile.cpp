#include "hw/stream/tile.h"

#include <stdexcept>

#include "hw/stream/bf16.h"
#include "hw/stream/simd.h"

namespace stepsim {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::BF16:
      return "bf16";
    case DType::FP32:
      return "fp32";
    case DType::INT32:
      return "int32";
  }
  return "?";
}

DType parse_dtype(const std::string& s) {
  if (s == "bf16") return DType::BF16;
  if (s == "fp32") return DType::FP32;
  if (s == "int32") return DType::INT32;
  throw std::invalid_argument("unknown dtype '" + s + "' (expected bf16, fp32 or int32)");
}

std::string Tile::to_string() const {
  std::string s = "T[" + std::to_string(rows) + "x" + std::to_string(cols);
  if (dtype != DType::BF16) s += std::string(":") + dtype_name(dtype);
  return s + "]";
}

namespace {

// Compiled per instruction set (hw/stream/simd.h): every tile a function makes passes here.
STEPSIM_SIMD_CLONES void round_all_to_bf16(float* v, size_t n) {
  for (size_t k = 0; k < n; ++k) v[k] = round_to_bf16(v[k]);
}

}  // namespace

Tile make_tile(uint32_t rows, uint32_t cols, DType dtype, std::vector<float> values) {
  if (dtype == DType::INT32) throw std::invalid_argument("make_tile: int32 tiles are built with make_int_tile");
  if (values.size() != uint64_t(rows) * cols)
    throw std::invalid_argument("make_tile: " + std::to_string(values.size()) + " values for a " +
                                std::to_string(rows) + "x" + std::to_string(cols) + " tile");
  if (dtype == DType::BF16) round_all_to_bf16(values.data(), values.size());
  auto d = std::make_shared<TileData>();
  d->f = std::move(values);
  Tile t = shape_tile(rows, cols, dtype);
  t.data = std::move(d);
  return t;
}

Tile make_int_tile(uint32_t rows, uint32_t cols, std::vector<int32_t> values) {
  if (values.size() != uint64_t(rows) * cols)
    throw std::invalid_argument("make_int_tile: " + std::to_string(values.size()) + " values for a " +
                                std::to_string(rows) + "x" + std::to_string(cols) + " tile");
  auto d = std::make_shared<TileData>();
  d->i = std::move(values);
  Tile t = shape_tile(rows, cols, DType::INT32);
  t.data = std::move(d);
  return t;
}

}  // namespace stepsim
