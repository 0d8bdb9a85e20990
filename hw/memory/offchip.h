// Off-chip memory as seen by the operators: the tensors placed in HBM, the TLM-2.0 path from
// the address generators (off-chip load/store operators) to the HBM target, and the model-time
// ordering of their requests.
//
// Ordering: the HBM timing model needs its calls in non-decreasing issue-cycle order, but each
// operator runs on its own local clock. Before an operator issues at its time t it waits for
// its turn (Context::wait_for_turn): no other off-chip client can still issue before
// (t, index). That keeps results independent of SystemC process order.
//
// Modes (HardwareParams::hbm_mode):
//   fast, uncontended - when the clients' request rates cannot make a request wait for its
//             channel (add_client's bounds, HbmModel::set_arrival_bound), one TLM transaction
//             per tile (HbmModel::serve_burst: the exact completion in closed form) and no turn: the
//             result cannot depend on the other clients. Functional runs still take the
//             turn, so that data moves in model-time order (a load after a store).
//   fast    - otherwise two TLM transactions per tile: BurstIssue at the client's turn (data moves, the
//             target registers the tile with HbmModel::issue_burst), then, once the client
//             has advanced to the tile's last issue cycle and holds the turn there,
//             BurstResult (HbmModel::try_result): the exact request-level completion, timed
//             in O(channels) when the tile is alone on the memory.
//   request - one TLM transaction per 64-byte request, issued bundle by bundle in model time
//             (par_dispatch requests per cycle, a turn per bundle), so requests of concurrent
//             clients interleave at the channels as in the reference. The tile's data moves
//             once through the debug transport; the requests carry timing only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include "hw/channel/context.h"
#include "hw/memory/hbm_initiator.h"
#include "hw/memory/hbm_target.h"
#include "hw/presets/hardware.h"
#include "hw/stream/tile.h"

namespace stepsim {

// A tensor stored off-chip: rows x cols elements of dtype from byte address base, row-major
// or blocked. Blocked (block_rows x block_cols != 0): the tensor is cut into [block_rows x
// block_cols] blocks, each stored contiguously (row-major inside), the blocks in row-major
// order; a tile made of whole blocks then reads block rows of contiguous bytes, as the
// large memory requests of the authors' HDL fabric assume (docs/timing-model.md).
struct OffChipTensor {
  std::string name;
  uint64_t base = 0;
  uint64_t rows = 0, cols = 0;
  DType dtype = DType::BF16;
  uint64_t block_rows = 0, block_cols = 0;  // 0 x 0: row-major
  bool written = false;                     // a store wrote into it during the run

  bool blocked() const { return block_rows != 0; }
  uint64_t row_bytes() const { return cols * dtype_bytes(dtype); }
  uint64_t bytes() const { return rows * row_bytes(); }
  // Position of element (r, c) in storage order, in elements from base.
  uint64_t element_offset(uint64_t r, uint64_t c) const {
    if (!blocked()) return r * cols + c;
    const uint64_t block = (r / block_rows) * (cols / block_cols) + c / block_cols;
    return block * block_rows * block_cols + (r % block_rows) * block_cols + c % block_cols;
  }
  // A [tile_rows x tile_cols] tile of a blocked tensor is either whole blocks (moved block row by
  // block row, see reorder_blocked) or lies inside one block (moved row by row at the block's pitch).
  bool spans_blocks(uint64_t tile_rows, uint64_t tile_cols) const {
    return blocked() && tile_rows % block_rows == 0 && tile_cols % block_cols == 0;
  }
  // The request block of tile `l` (row-major over the tiles) of [tile_rows x tile_cols] tiles.
  Burst tile_burst(uint64_t l, uint32_t tile_rows, uint32_t tile_cols) const {
    const uint64_t eb = dtype_bytes(dtype), tiles_c = cols / tile_cols;
    Burst b;
    b.base = base + element_offset((l / tiles_c) * tile_rows, (l % tiles_c) * tile_cols) * eb;
    if (spans_blocks(tile_rows, tile_cols)) {
      b.rows = uint32_t(tile_rows / block_rows);
      b.row_bytes = block_rows * tile_cols * eb;
      b.row_pitch = block_rows * row_bytes();
    } else {
      b.rows = tile_rows;
      b.row_bytes = tile_cols * eb;
      b.row_pitch = blocked() ? block_cols * eb : row_bytes();
    }
    return b;
  }
};

struct OffChipTensorDecl {
  std::string name;
  uint64_t rows = 0, cols = 0;
  DType dtype = DType::BF16;
  uint64_t block_rows = 0, block_cols = 0;
};
// The tensor a declaration describes, at base 0 (OffChipMemory places it; the static check of a
// graph reads only its geometry, hw/ops/tiled_view.h).
inline OffChipTensor offchip_tensor(const OffChipTensorDecl& d) {
  OffChipTensor t;
  t.name = d.name;
  t.rows = d.rows;
  t.cols = d.cols;
  t.dtype = d.dtype;
  t.block_rows = d.block_rows;
  t.block_cols = d.block_cols;
  return t;
}

class OffChipMemory : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<OffChipMemory> socket;

  // Places the tensors one after another, each aligned to kAlignment bytes.
  OffChipMemory(sc_core::sc_module_name name, const HardwareParams& hw, const std::vector<OffChipTensorDecl>& tensors);

  static constexpr uint64_t kAlignment = 4096;

  // The tensor called `name`; throws std::invalid_argument listing the known tensors.
  OffChipTensor& tensor(const std::string& name);
  const std::vector<OffChipTensor>& tensors() const { return tensors_; }

  // An operator that issues off-chip requests; call during elaboration. `window_requests`:
  // the most requests it can issue in any hbm.init_interval consecutive cycles, or
  // kUnbounded. When the clients' sum cannot exceed the channels, the memory never queues a
  // request (HbmModel::set_arrival_bound) and transfers need no turns.
  static constexpr uint64_t kUnbounded = UINT64_MAX;
  void add_client(Context* c, uint64_t window_requests = kUnbounded) {
    clients_.push_back(c);
    window_requests_ =
        window_requests > kUnbounded - window_requests_ ? kUnbounded : window_requests_ + window_requests;
  }
  // Whether the memory runs uncontended (decided from the clients' bounds at the end of
  // elaboration; false before).
  bool uncontended() const { return target_.model().uncontended(); }

  // Moves one tile (a strided 2-D block, see Burst) between HBM and `data` (packed rows; may
  // be null: timing only). Issues at ctx.now() and blocks in model time for the turn; on
  // return ctx's clock is at the last issue cycle (the address generator is busy until
  // then). Returns the completion cycle: the last response visible at the client.
  uint64_t transfer(Context& ctx, Burst burst, uint8_t* data);

  // One request of the request mode, for an address generator unit that issues its own
  // requests (hw/bridge/ag_bridge.h): `len` (<= request_bytes) bytes at addr move between HBM
  // and `data` (may be null: timing only), issued at ctx.now() in its turn. Returns the
  // completion cycle (the response visible at the client).
  uint64_t request(Context& ctx, uint64_t addr, bool write, uint8_t* data, uint32_t len);

  // Functional data of a whole tensor, row-major (TileData::f for bf16/fp32, ::i for int32).
  void write_values(const OffChipTensor& t, const TileData& values);
  TileData read_values(const OffChipTensor& t);

  // A tensor's initial values as a function, asked for when a tile reads bytes no store has
  // written: values(first, n, out) writes the row-major elements first .. first + n - 1 to
  // `out`, a float* for bf16/fp32 tensors and an int32_t* for int32 ones. The same bytes as
  // write_values of those values, without a pass over the whole tensor or its pages in memory.
  using ElementSource = std::function<void(uint64_t first, uint64_t n, void* out)>;
  void set_initial_values(const OffChipTensor& t, ElementSource values);

  // The bytes behind the tensors (functional data), read and written without timing.
  SparseMemory& backing() { return target_.memory(); }

  // Traffic counted by the HBM target: requests x request_bytes.
  uint64_t bytes_read() const { return target_.model().stats().bytes_read; }
  uint64_t bytes_written() const { return target_.model().stats().bytes_written; }
  const HbmStats& hbm_stats() const { return target_.model().stats(); }
  // Bytes of the tiles moved (the paper's traffic formula: elements x dtype size).
  uint64_t tile_bytes() const { return tile_bytes_; }
  // One client's share of the traffic (its requests x request_bytes), the per-node figures of the
  // report; the clients' shares sum to bytes_read() and bytes_written().
  struct ClientTraffic {
    uint64_t read_bytes = 0, write_bytes = 0, requests = 0;
  };
  ClientTraffic traffic_of(const Context& client) const;

 private:
  HbmTarget target_;
  HbmTilePort port_;  // fast mode: the tile transactions, one payload reused
  HbmAccessMode mode_;
  std::vector<OffChipTensor> tensors_;
  std::vector<Context*> clients_;
  uint64_t window_requests_ = 0;       // the clients' bounds summed (add_client)
  void end_of_elaboration() override;  // every client is known: set the HBM regime
  uint64_t tile_bytes_ = 0;
  std::map<const Context*, ClientTraffic> traffic_;
  void count_traffic(const Context& client, bool write, uint64_t requests);
};

// Element values <-> the bytes they occupy in memory (little-endian; bf16 as its 16 bits).
// Packs values[first .. first + n) (the first form: from 0).
void pack_elements(const TileData& values, uint64_t n, DType dtype, uint8_t* bytes);
void pack_elements(const TileData& values, uint64_t first, uint64_t n, DType dtype, uint8_t* bytes);
// `values`: n floats (bf16, fp32) or int32_t (int32).
void pack_elements(const void* values, uint64_t n, DType dtype, uint8_t* bytes);
void unpack_elements(const uint8_t* bytes, uint64_t n, DType dtype, TileData& values);

// A [rows x cols] tile made of whole [br x bc] blocks moves through memory block row by block
// row, each block row's blocks one after another, row-major inside a block. Reorders `values`
// from row-major to that order (to_memory) or back.
void reorder_blocked(TileData& values, uint64_t rows, uint64_t cols, uint64_t br, uint64_t bc, bool to_memory);

}  // namespace stepsim
