// Address generation for expert weights and the KV cache (see functions.h).
#include <limits>
#include <stdexcept>

#include "hw/functions/functions.h"

namespace stepsim {

namespace {

void require(bool ok, const std::string& fn, const std::string& what) {
  if (!ok) throw std::invalid_argument(fn + ": " + what);
}

void check_layout(const std::string& fn, int64_t base, int64_t stride) {
  require(base >= 0, fn, "base must be >= 0, got " + std::to_string(base));
  require(stride > 0, fn, "stride must be > 0, got " + std::to_string(stride));
}

// base + (outer * per + t) * stride: tile t of slot `outer` (an expert, a request) of `per`
// tiles, or an error naming the function when the address leaves 64 bits.
int64_t slot_tile_address(const std::string& fn, int64_t base, int64_t outer, int64_t per, int64_t t, int64_t stride) {
  int64_t index = 0, offset = 0, address = 0;
  const bool overflow = __builtin_mul_overflow(outer, per, &index) || __builtin_add_overflow(index, t, &index) ||
                        __builtin_mul_overflow(index, stride, &offset) ||
                        __builtin_add_overflow(base, offset, &address);
  require(!overflow, fn,
          "the address of tile " + std::to_string(t) + " of slot " + std::to_string(outer) + " (" +
              std::to_string(per) + " tiles per slot, base " + std::to_string(base) + ", stride " +
              std::to_string(stride) + ") does not fit in 64 bits");
  return address;
}

}  // namespace

std::vector<int64_t> expert_tile_addresses(int64_t expert_id, int64_t tiles_per_expert, int64_t base, int64_t stride) {
  const std::string fn = "expert_tile_addresses";
  require(expert_id >= 0, fn, "expert_id must be >= 0, got " + std::to_string(expert_id));
  require(tiles_per_expert > 0, fn, "tiles_per_expert must be > 0, got " + std::to_string(tiles_per_expert));
  check_layout(fn, base, stride);
  std::vector<int64_t> out(static_cast<size_t>(tiles_per_expert));
  for (int64_t t = 0; t < tiles_per_expert; ++t)
    out[size_t(t)] = slot_tile_address(fn, base, expert_id, tiles_per_expert, t, stride);
  return out;
}

std::vector<int64_t> kv_cache_tile_addresses(int64_t request_id, int64_t kv_len, int64_t tile_rows,
                                             int64_t max_tiles_per_request, int64_t base, int64_t stride) {
  const std::string fn = "kv_cache_tile_addresses";
  require(request_id >= 0, fn, "request_id must be >= 0, got " + std::to_string(request_id));
  require(kv_len >= 0, fn, "kv_len must be >= 0, got " + std::to_string(kv_len));
  require(tile_rows > 0, fn, "tile_rows must be > 0, got " + std::to_string(tile_rows));
  check_layout(fn, base, stride);
  const int64_t n = kv_len / tile_rows + (kv_len % tile_rows != 0);  // ceil, without overflow
  require(n <= max_tiles_per_request, fn,
          "kv_len " + std::to_string(kv_len) + " needs " + std::to_string(n) + " tiles of " +
              std::to_string(tile_rows) + " rows, more than max_tiles_per_request " +
              std::to_string(max_tiles_per_request));
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t)
    out[size_t(t)] = slot_tile_address(fn, base, request_id, max_tiles_per_request, t, stride);
  return out;
}

KvWriteAddress kv_cache_write_address(int64_t request_id, int64_t position, int64_t tile_rows,
                                      int64_t max_tiles_per_request, int64_t base, int64_t stride) {
  const std::string fn = "kv_cache_write_address";
  require(request_id >= 0, fn, "request_id must be >= 0, got " + std::to_string(request_id));
  require(position >= 0, fn, "position must be >= 0, got " + std::to_string(position));
  require(tile_rows > 0, fn, "tile_rows must be > 0, got " + std::to_string(tile_rows));
  check_layout(fn, base, stride);
  const int64_t t = position / tile_rows;
  require(t < max_tiles_per_request, fn,
          "position " + std::to_string(position) + " is in tile " + std::to_string(t) +
              ", beyond max_tiles_per_request " + std::to_string(max_tiles_per_request));
  return {slot_tile_address(fn, base, request_id, max_tiles_per_request, t, stride), uint32_t(position % tile_rows)};
}

std::vector<Tile> address_tiles(const std::vector<int64_t>& addresses) {
  std::vector<Tile> out;
  out.reserve(addresses.size());
  for (int64_t a : addresses) {
    if (a < std::numeric_limits<int32_t>::min() || a > std::numeric_limits<int32_t>::max())
      throw std::invalid_argument("address_tiles: address " + std::to_string(a) + " does not fit in int32");
    out.push_back(make_int_tile(1, 1, {int32_t(a)}));
  }
  return out;
}

}  // namespace stepsim
