// The tiled, affine view of a stored tensor that an off-chip load or store walks, and its checks.
// One definition for the operators (hw/ops/offchip_ops.cpp) and for the static check of a graph
// (`stepsim analyze` and every run, sim/shape/rules.cpp), so both reject a view with the same words.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw/memory/offchip.h"
#include "hw/ops/params.h"
#include "hw/stream/token.h"

namespace stepsim {

// Tiles one pass of a view may have: far above any tensor (2^40 elements) read once.
constexpr uint64_t kMaxViewTiles = uint64_t(1) << 40;

// The tiled, affine view of a stored tensor that a load or store walks (paper: tiled_in_shape,
// stride and tiled_out_shape, all in tiles). Tile k of a pass is stored tile
// lin(k) = offset + sum_d idx_d(k) * stride_d, where idx(k) counts row-major over out_shape
// (offset: the view's first tile, e.g. one region's block of rows).
struct TiledView {
  OffChipTensor* tensor = nullptr;
  uint32_t tile_rows = 0, tile_cols = 0;
  uint64_t tiles_r = 0, tiles_c = 0;  // tiled_in_shape
  std::vector<int64_t> stride, out_shape;
  uint64_t offset = 0;  // first tile of the view (row-major tile index)
  uint64_t count = 1;   // tiles per pass

  uint64_t stored_tiles() const { return tiles_r * tiles_c; }
  int rank() const { return int(out_shape.size()); }
  std::string shape_text() const {
    std::string s;
    for (int64_t d : out_shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
    return "[" + s + "]";
  }

  uint64_t lin(uint64_t k) const {
    uint64_t l = offset;
    for (int d = rank() - 1; d >= 0; --d) {
      const uint64_t n = uint64_t(out_shape[size_t(d)]);
      l += (k % n) * uint64_t(stride[size_t(d)]);
      k /= n;
    }
    return l;
  }
  // Stop level after tile k of a pass: how many view dimensions end there.
  uint8_t stop_after(uint64_t k) const {
    uint8_t ended = 0;
    for (int d = rank() - 1; d >= 0; --d) {
      const uint64_t n = uint64_t(out_shape[size_t(d)]);
      if (k % n != n - 1) break;
      ++ended;
      k /= n;
    }
    return ended;
  }
  bool spans_blocks() const { return tensor->spans_blocks(tile_rows, tile_cols); }
  // The request block of stored tile `l` (row-major over tiles).
  Burst burst(uint64_t l, bool write, uint32_t par_dispatch) const {
    Burst b = tensor->tile_burst(l, tile_rows, tile_cols);
    b.write = write;
    b.par_dispatch = par_dispatch;
    return b;
  }
};

// The view of `tensor` that a node's parameters describe (tile; with `affine`, out_shape, stride
// and offset too), checked: throws std::invalid_argument starting with `node` ("node 'l'
// (LinearOffChipLoad): ") for a tile that does not divide the tensor or fit its blocks, a view
// beyond the tensor, or sizes past the limits.
TiledView make_tiled_view(OffChipTensor& tensor, const Params& params, bool affine, const std::string& node);

}  // namespace stepsim
