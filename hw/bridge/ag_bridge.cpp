#include <stdexcept>

#include "hw/bridge/unit_bridges.h"

namespace stepsim::bridge {

AgSetup ag_setup(const OpConfig& cfg, OpMode mode) {
  AgSetup s;
  const std::string& op = cfg.info->name;
  s.write = mode == OpMode::kStore || mode == OpMode::kRandomStore;
  s.random = mode == OpMode::kRandomLoad || mode == OpMode::kRandomStore;
  const std::string node = "node '" + cfg.name + "' (" + op + "): ";
  if (!cfg.env || !cfg.env->memory) {
    s.error = "no off-chip memory";
    return s;
  }
  try {
    s.tensor = &cfg.env->memory->tensor(cfg.params.get(param::kTensor));
  } catch (const std::exception& e) {
    s.error = e.what();
    return s;
  }
  const OffChipTensor& t = *s.tensor;
  const std::vector<int64_t> tile = cfg.params.get(param::kTile);
  // Two instances: tiles [r x 4] with one request lane, [r x 16] with kAgP16 lanes (r = 1..T:
  // the tile header carries r).
  const std::string want = "the address generator moves [r x " + std::to_string(kT) +
                           "] bf16 tiles (one request lane) or [r x " + std::to_string(kT16) + "] (" +
                           std::to_string(kAgP16) + " lanes), r = 1..the columns";
  const bool fits = tile.size() == 2 && (tile[1] == kT || tile[1] == kT16) && tile[0] >= 1 && tile[0] <= tile[1];
  if (!fits || t.dtype != DType::BF16) {
    s.error = want + "; the node has tile [" +
              (tile.size() == 2 ? std::to_string(tile[0]) + ", " + std::to_string(tile[1]) : "?") + "] of a " +
              dtype_name(t.dtype) + " tensor";
    return s;
  }
  const int kt = int(tile[1]), kr = int(tile[0]);
  s.t = kt;
  s.r = kr;
  s.p = 1;
  if (kt == kT16) {
    const int64_t pd = cfg.params.get(param::kParDispatch);
    const int64_t p = pd > 0 ? pd : int64_t(cfg.env->hw.par_dispatch);
    if (p != kAgP16) {
      s.error = "the [r x " + std::to_string(kT16) + "] address generator issues " + std::to_string(kAgP16) +
                " requests per cycle; the node has par_dispatch " + std::to_string(p) +
                (pd > 0 ? "" : " (the preset's)");
      return s;
    }
    s.p = kAgP16;
  }  // [r x 4]: one request per cycle whatever par_dispatch says, as before
  if (t.rows % uint64_t(kr) || t.cols % uint64_t(kt)) {
    s.error = "the tile does not divide tensor '" + t.name + "'";
    return s;
  }
  const uint64_t tiles_r = t.rows / uint64_t(kr);
  s.tiles_c = t.cols / uint64_t(kt);
  // Random access walks no view: the unit takes a pass of one tile per index.
  s.shape = s.random ? std::vector<int64_t>{1} : cfg.params.get(param::kOutShape);
  s.stride = s.random ? std::vector<int64_t>{1} : cfg.params.get(param::kStride);
  const int64_t off = s.random ? 0 : cfg.params.get(param::kOffset);
  if (off < 0) {
    s.error = "offset must be >= 0";
    return s;
  }
  s.offset = uint64_t(off);
  if (s.shape.empty()) s.shape = {int64_t(tiles_r), int64_t(s.tiles_c)};
  if (s.stride.empty()) {
    s.stride.assign(s.shape.size(), 1);
    for (int d = int(s.shape.size()) - 2; d >= 0; --d)
      s.stride[size_t(d)] = s.stride[size_t(d) + 1] * s.shape[size_t(d) + 1];
  }
  if (s.stride.size() != s.shape.size()) {
    s.error = "stride and out_shape differ in length";
    return s;
  }
  if (s.shape.size() > size_t(kAgMR)) {
    s.error = "the view has " + std::to_string(s.shape.size()) + " dimensions; the address generator walks up to " +
              std::to_string(kAgMR);
    return s;
  }
  const uint64_t lim = uint64_t(1) << kAgIW;
  s.tiles = tiles_r * s.tiles_c;
  if (s.tiles_c >= lim || s.offset / s.tiles_c >= lim || (s.random && s.tiles >= lim)) {
    s.error = "tensor '" + t.name + "' is too large for the address generator's " + std::to_string(kAgIW) +
              "-bit tile indices";
    return s;
  }
  for (size_t d = 0; d < s.shape.size(); ++d)
    if (s.shape[d] < 1 || uint64_t(s.shape[d]) >= lim || s.stride[d] < 0 || uint64_t(s.stride[d]) / s.tiles_c >= lim) {
      s.error = "out_shape / stride entry " + std::to_string(d) + " outside the address generator's " +
                std::to_string(kAgIW) + "-bit range";
      return s;
    }
  // The unit addresses tile l at base + (l / tiles_c) A + (l % tiles_c) B and packs the bytes in
  // the order they arrive: a blocked tensor fits when the tile is whole blocks (linear in l) whose
  // block rows are whole tile rows (arrival order = row-major).
  if (t.blocked() && !(t.spans_blocks(kr, kt) && t.block_cols == uint64_t(kt))) {
    s.error = "tensor '" + t.name + "' is stored in [" + std::to_string(t.block_rows) + " x " +
              std::to_string(t.block_cols) + "] blocks; the address generator takes row-major tensors or blocks " +
              std::to_string(kt) + " wide that tile its [" + std::to_string(kr) + " x " + std::to_string(kt) +
              "] tiles";
    return s;
  }
  const Burst first = t.tile_burst(0, kr, kt);
  s.base = first.base;
  s.a = t.tile_burst(s.tiles_c, kr, kt).base - first.base;
  s.b = t.tile_burst(1, kr, kt).base - first.base;
  s.rows = first.rows;
  s.row_bytes = first.row_bytes;
  s.pitch = first.row_pitch;
  if (t.base + t.bytes() > (uint64_t(1) << kAgAW)) {
    s.error = "tensor '" + t.name + "' ends beyond the address generator's " + std::to_string(kAgAW) + "-bit addresses";
    return s;
  }
  return s;
}

std::string kinds::Ag::unsupported(const OpConfig& cfg, OpMode mode) { return ag_setup(cfg, mode).error; }

std::string ag_index(const AgSetup& s, const Element& e, uint64_t& l) {
  // As OffChipOp::address_of (hw/ops/offchip_ops.cpp), so both runs fail alike.
  const std::optional<int64_t> v = index_value(e);
  if (!v)
    return "the address stream carries " + e.to_string() +
           "; expected a scalar or a 1x1 int32 tile holding a tile index";
  if (*v < 0 || uint64_t(*v) >= s.tiles)
    return "tile index " + std::to_string(*v) + " is outside tensor '" + s.tensor->name + "' (" +
           std::to_string(s.tiles) + " tiles of [" + std::to_string(s.r) + " x " + std::to_string(s.t) + "])";
  l = uint64_t(*v);
  return "";
}

}  // namespace stepsim::bridge
