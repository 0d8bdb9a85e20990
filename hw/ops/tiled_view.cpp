#include "hw/ops/tiled_view.h"

#include <stdexcept>

namespace stepsim {

TiledView make_tiled_view(OffChipTensor& tensor, const Params& params, bool affine, const std::string& node) {
  TiledView view;
  view.tensor = &tensor;
  const OffChipTensor& t = *view.tensor;
  std::vector<int64_t> tile = params.get_ints("tile");
  if (tile.size() != 2 || tile[0] < 1 || tile[1] < 1 || tile[0] > kMaxTileDim || tile[1] > kMaxTileDim)
    throw std::invalid_argument(node + "tile must be [rows, cols] with both in 1.." + std::to_string(kMaxTileDim));
  if (t.rows % uint64_t(tile[0]) || t.cols % uint64_t(tile[1]))
    throw std::invalid_argument(node + "tile [" + std::to_string(tile[0]) + ", " + std::to_string(tile[1]) +
                                "] does not divide tensor '" + t.name + "' of shape [" + std::to_string(t.rows) + ", " +
                                std::to_string(t.cols) + "]");
  view.tile_rows = uint32_t(tile[0]);
  view.tile_cols = uint32_t(tile[1]);
  if (t.blocked() && !(tile[0] % int64_t(t.block_rows) == 0 && tile[1] % int64_t(t.block_cols) == 0) &&
      !(int64_t(t.block_rows) % tile[0] == 0 && int64_t(t.block_cols) % tile[1] == 0))
    throw std::invalid_argument(node + "tile [" + std::to_string(tile[0]) + ", " + std::to_string(tile[1]) +
                                "] neither covers whole blocks nor fits in one block of tensor '" + t.name +
                                "' (stored in [" + std::to_string(t.block_rows) + ", " + std::to_string(t.block_cols) +
                                "] blocks)");
  view.tiles_r = t.rows / uint64_t(tile[0]);
  view.tiles_c = t.cols / uint64_t(tile[1]);
  if (affine) {
    view.out_shape = params.get_ints("out_shape");
    view.stride = params.get_ints("stride");
    const int64_t off = params.get_int("offset");
    if (off < 0) throw std::invalid_argument(node + "offset must be >= 0");
    view.offset = uint64_t(off);
  }
  if (view.out_shape.empty()) {
    if (!view.stride.empty()) throw std::invalid_argument(node + "stride needs out_shape");
    view.out_shape = {int64_t(view.tiles_r), int64_t(view.tiles_c)};
  }
  if (view.out_shape.size() > 8) throw std::invalid_argument(node + "out_shape has more than 8 dimensions");
  // Tiles per pass, in 64 bits with overflow checks, before anything is computed from them.
  view.count = 1;
  bool overflow = false;
  for (int64_t n : view.out_shape) {
    if (n < 1) throw std::invalid_argument(node + "out_shape entries must be >= 1");
    overflow = overflow || __builtin_mul_overflow(view.count, uint64_t(n), &view.count);
  }
  if (overflow || view.count > kMaxViewTiles)
    throw std::invalid_argument(node + "the view out_shape " + view.shape_text() + " has more than " +
                                std::to_string(kMaxViewTiles) + " tiles per pass, the limit");
  if (view.stride.empty()) {  // row-major over out_shape (partial products of the count)
    view.stride.assign(view.out_shape.size(), 1);
    for (int d = int(view.out_shape.size()) - 2; d >= 0; --d)
      view.stride[size_t(d)] = view.stride[size_t(d) + 1] * view.out_shape[size_t(d) + 1];
  }
  if (view.stride.size() != view.out_shape.size())
    throw std::invalid_argument(node + "stride has " + std::to_string(view.stride.size()) +
                                " entries but out_shape has " + std::to_string(view.out_shape.size()));
  // The last tile the view reaches; a sum that overflows reaches past any tensor.
  uint64_t last = view.offset;
  for (size_t d = 0; d < view.out_shape.size(); ++d) {
    if (view.stride[d] < 0) throw std::invalid_argument(node + "stride entries must be >= 0");
    uint64_t reach = 0;
    if (__builtin_mul_overflow(uint64_t(view.out_shape[d] - 1), uint64_t(view.stride[d]), &reach) ||
        __builtin_add_overflow(last, reach, &last))
      last = UINT64_MAX;
  }
  if (last >= view.stored_tiles())
    throw std::invalid_argument(node + "the view reaches tile " + std::to_string(last) + " but tensor '" + t.name +
                                "' holds " + std::to_string(view.stored_tiles()) + " tiles of " +
                                std::to_string(tile[0]) + "x" + std::to_string(tile[1]));
  return view;
}

}  // namespace stepsim
