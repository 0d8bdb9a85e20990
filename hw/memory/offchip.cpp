#include "hw/memory/offchip.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "hw/stream/bf16.h"
#include "hw/stream/simd.h"

namespace stepsim {

namespace {

// Compiled per instruction set (hw/stream/simd.h): the narrowing and widening vectorize best
// with AVX-512. The bytes are the scalar loops'.
STEPSIM_SIMD_CLONES void pack_bf16(const float* f, uint64_t n, uint8_t* bytes) {
  for (uint64_t k = 0; k < n; ++k) {
    const uint16_t b = bf16_bits_from_f32(f[k]);
    std::memcpy(bytes + 2 * k, &b, 2);
  }
}

STEPSIM_SIMD_CLONES void unpack_bf16(const uint8_t* bytes, uint64_t n, float* f) {
  for (uint64_t k = 0; k < n; ++k) {
    uint16_t b;
    std::memcpy(&b, bytes + 2 * k, 2);
    f[k] = f32_from_bf16_bits(b);
  }
}

}  // namespace

// One loop per element type (the type tested once, not per element).
void pack_elements(const void* values, uint64_t n, DType dtype, uint8_t* bytes) {
  if (dtype == DType::BF16)
    pack_bf16(static_cast<const float*>(values), n, bytes);
  else
    std::memcpy(bytes, values, 4 * n);  // fp32: the floats' own bits, little-endian as f32_bits
}

void pack_elements(const TileData& values, uint64_t first, uint64_t n, DType dtype, uint8_t* bytes) {
  const void* v = dtype == DType::INT32 ? static_cast<const void*>(values.i.data() + first)
                                        : static_cast<const void*>(values.f.data() + first);
  pack_elements(v, n, dtype, bytes);
}

void pack_elements(const TileData& values, uint64_t n, DType dtype, uint8_t* bytes) {
  pack_elements(values, 0, n, dtype, bytes);
}

void unpack_elements(const uint8_t* bytes, uint64_t n, DType dtype, TileData& values) {
  if (dtype == DType::INT32) {
    values.i.resize(n);
    std::memcpy(values.i.data(), bytes, 4 * n);
    return;
  }
  if (dtype == DType::FP32) {
    values.f.resize(n);
    std::memcpy(values.f.data(), bytes, 4 * n);
    return;
  }
  // A chunk at a time through the cache (4 KiB on the operator's fiber stack), appended: resize
  // would first zero the vector, a pass over fresh memory (a 1 MiB weight tile's) as long as the
  // conversion.
  constexpr uint64_t kChunk = 1024;
  float chunk[kChunk];
  values.f.clear();
  values.f.reserve(n);
  for (uint64_t first = 0; first < n; first += kChunk) {
    const uint64_t m = std::min(kChunk, n - first);
    unpack_bf16(bytes + 2 * first, m, chunk);
    values.f.insert(values.f.end(), chunk, chunk + m);
  }
}

void reorder_blocked(TileData& values, uint64_t rows, uint64_t cols, uint64_t br, uint64_t bc, bool to_memory) {
  auto reorder = [&](auto& v) {
    auto out = v;
    for (uint64_t r = 0; r < rows; ++r)
      for (uint64_t c = 0; c < cols; ++c) {
        const uint64_t m = (r / br) * br * cols + (c / bc) * br * bc + (r % br) * bc + c % bc;
        if (to_memory)
          out[m] = v[r * cols + c];
        else
          out[r * cols + c] = v[m];
      }
    v = std::move(out);
  };
  if (!values.f.empty()) reorder(values.f);
  if (!values.i.empty()) reorder(values.i);
}

OffChipMemory::OffChipMemory(sc_core::sc_module_name name, const HardwareParams& hw,
                             const std::vector<OffChipTensorDecl>& tensors)
    : sc_core::sc_module(name),
      socket("socket"),
      target_("hbm", hw.hbm),
      port_(hw.hbm.request_bytes),
      mode_(parse_hbm_access_mode(hw.hbm_mode)) {
  hw.hbm.validate();
  socket.bind(target_.socket);
  uint64_t next = 0;
  for (const OffChipTensorDecl& d : tensors) {
    OffChipTensor t = offchip_tensor(d);
    if (t.blocked() && (!t.block_cols || t.rows % t.block_rows || t.cols % t.block_cols))
      throw std::invalid_argument("tensor '" + t.name + "': block [" + std::to_string(t.block_rows) + ", " +
                                  std::to_string(t.block_cols) + "] does not divide its shape [" +
                                  std::to_string(t.rows) + ", " + std::to_string(t.cols) + "]");
    t.base = next;
    next += (t.bytes() + kAlignment - 1) / kAlignment * kAlignment;
    tensors_.push_back(t);
  }
}

OffChipTensor& OffChipMemory::tensor(const std::string& name) {
  for (OffChipTensor& t : tensors_)
    if (t.name == name) return t;
  std::string names;
  for (const OffChipTensor& t : tensors_) names += (names.empty() ? "" : ", ") + t.name;
  throw std::invalid_argument("no tensor named '" + name +
                              "' in the graph's tensors: section (declared: " + (names.empty() ? "none" : names) + ")");
}

void OffChipMemory::count_traffic(const Context& client, bool write, uint64_t requests) {
  ClientTraffic& t = traffic_[&client];
  (write ? t.write_bytes : t.read_bytes) += requests * target_.params().request_bytes;
  t.requests += requests;
}

OffChipMemory::ClientTraffic OffChipMemory::traffic_of(const Context& client) const {
  auto it = traffic_.find(&client);
  return it == traffic_.end() ? ClientTraffic{} : it->second;
}

uint64_t OffChipMemory::transfer(Context& ctx, Burst b, uint8_t* data) {
  const uint32_t rb = target_.params().request_bytes;
  if (b.par_dispatch == 0) b.par_dispatch = 1;
  b.issue_cycle = ctx.now();
  tile_bytes_ += uint64_t(b.rows) * b.row_bytes;
  count_traffic(ctx, b.write, b.requests(rb));
  // Requests reaching the memory in the same cycle are served in turn order (cycle, then
  // client index), so the memory sees the order the turns grant.
  b.initiator = uint32_t(ctx.tie_rank());
  if (uncontended()) {
    if (data) ctx.wait_for_turn(clients_);
    const BurstResult r = port_.serve(*socket.operator->(), b, data);
    ctx.advance_to(r.last_issue_cycle);
    return r.completion_cycle;
  }
  if (mode_ == HbmAccessMode::Fast) {
    // Deferred exact tile path: register the tile at its turn, then take its result once no
    // client can issue before its last request any more (the turn at that cycle).
    ctx.wait_for_turn(clients_);
    BurstResult info;
    const uint64_t handle = port_.issue(*socket.operator->(), b, data, &info);
    ctx.advance_to(info.last_issue_cycle);
    ctx.wait_for_turn(clients_);
    BurstResult r;
    if (!port_.result(*socket.operator->(), handle, ctx.now(), &r))
      throw std::logic_error("HBM result not ready at the tile's last issue cycle");
    return r.completion_cycle;
  }
  // Request mode: the data moves once (no timing), then the requests are issued bundle by
  // bundle, each bundle in its own turn.
  if (data) {
    tlm::tlm_generic_payload gp;
    HbmBurstExtension ext;
    ext.kind = HbmBurstExtension::Kind::Burst;
    ext.rows = b.rows;
    ext.row_bytes = b.row_bytes;
    ext.row_pitch = b.row_pitch;
    gp.set_command(b.write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
    gp.set_address(b.base);
    gp.set_data_ptr(data);
    gp.set_data_length(unsigned(uint64_t(b.rows) * b.row_bytes));
    gp.set_streaming_width(unsigned(uint64_t(b.rows) * b.row_bytes));
    gp.set_extension(&ext);
    socket->transport_dbg(gp);
    gp.clear_extension(&ext);
  }
  const uint64_t per_row = b.requests_per_row(rb);
  const uint64_t n = b.requests(rb);
  uint64_t completion = b.issue_cycle;
  for (uint64_t j = 0; j < n; ++j) {
    if (j % b.dispatch() == 0) {
      ctx.advance_to(b.request_issue_cycle(j));
      ctx.wait_for_turn(clients_);
    }
    const uint64_t addr = b.request_addr(j / per_row, j % per_row, rb);
    completion =
        std::max(completion, hbm_request(*socket.operator->(), addr, b.write, ctx.now(), nullptr, 0, b.initiator));
  }
  return completion;
}

void OffChipMemory::end_of_elaboration() {
  if (mode_ == HbmAccessMode::Fast) target_.model().set_arrival_bound(window_requests_);
}

uint64_t OffChipMemory::request(Context& ctx, uint64_t addr, bool write, uint8_t* data, uint32_t len) {
  tile_bytes_ += len;
  count_traffic(ctx, write, 1);
  ctx.wait_for_turn(clients_);
  return hbm_request(*socket.operator->(), addr, write, ctx.now(), data, data ? len : 0, uint32_t(ctx.tie_rank()));
}

void OffChipMemory::write_values(const OffChipTensor& t, const TileData& values) {
  const uint64_t n = t.rows * t.cols;
  TileData blocked;
  if (t.blocked()) {
    blocked = values;
    reorder_blocked(blocked, t.rows, t.cols, t.block_rows, t.block_cols, true);
  }
  const TileData& stored = t.blocked() ? blocked : values;
  // Packed and written a chunk at a time: a buffer of the whole tensor's bytes would be as large
  // as the tensor (gigabytes for an MoE's experts), all of it fresh memory the kernel zeroes.
  constexpr uint64_t kChunkElements = uint64_t(1) << 18;
  const uint64_t esize = dtype_bytes(t.dtype);
  std::vector<uint8_t> chunk(std::min(n, kChunkElements) * esize);
  for (uint64_t first = 0; first < n; first += kChunkElements) {
    const uint64_t m = std::min(kChunkElements, n - first);
    pack_elements(stored, first, m, t.dtype, chunk.data());
    target_.memory().write(t.base + first * esize, chunk.data(), m * esize);
  }
}

namespace {

// The storage-order elements [first, first + n) of `t` as runs of consecutive row-major
// elements: visit(row_major_first, count) for each run, in storage order.
template <class Visit>
void storage_runs(const OffChipTensor& t, uint64_t first, uint64_t n, Visit visit) {
  if (!t.blocked()) return visit(first, n);
  const uint64_t block = t.block_rows * t.block_cols, blocks_per_row = t.cols / t.block_cols;
  for (uint64_t m = first, end = first + n; m < end;) {
    const uint64_t b = m / block, in = m % block;
    const uint64_t r = (b / blocks_per_row) * t.block_rows + in / t.block_cols;
    const uint64_t c = (b % blocks_per_row) * t.block_cols + in % t.block_cols;
    const uint64_t run = std::min(end - m, t.block_cols - c % t.block_cols);
    visit(r * t.cols + c, run);
    m += run;
  }
}

}  // namespace

void OffChipMemory::set_initial_values(const OffChipTensor& t, ElementSource values) {
  const uint64_t esize = dtype_bytes(t.dtype);
  auto fill = [t, esize, values = std::move(values)](uint64_t offset, uint8_t* dst, uint64_t n) {
    // A chunk of whole elements at a time, on the stack (4 KiB: operators run on 64 KiB fiber
    // stacks): the values (storage for floats or int32_t, 4 bytes each), then their bytes.
    constexpr uint64_t kChunk = 512;
    alignas(64) unsigned char chunk_values[kChunk * 4];
    alignas(64) uint8_t chunk_bytes[kChunk * 4];
    const uint64_t first = offset / esize, end = (offset + n + esize - 1) / esize;
    for (uint64_t m = first; m < end; m += kChunk) {
      const uint64_t count = std::min(kChunk, end - m);
      uint64_t at = 0;
      storage_runs(t, m, count, [&](uint64_t row_major, uint64_t run) {
        values(row_major, run, chunk_values + 4 * at);
        at += run;
      });
      // The bytes of this chunk that [offset, offset + n) covers: all of them but at the ends.
      const uint64_t lo = std::max(offset, m * esize), hi = std::min(offset + n, (m + count) * esize);
      if (hi - lo == count * esize) {
        pack_elements(chunk_values, count, t.dtype, dst + (lo - offset));
      } else {
        pack_elements(chunk_values, count, t.dtype, chunk_bytes);
        std::memcpy(dst + (lo - offset), chunk_bytes + (lo - m * esize), hi - lo);
      }
    }
  };
  target_.memory().set_fill(t.base, t.bytes(), std::move(fill));
}

TileData OffChipMemory::read_values(const OffChipTensor& t) {
  std::vector<uint8_t> bytes(t.bytes());
  target_.memory().read(t.base, bytes.data(), bytes.size());
  TileData d;
  unpack_elements(bytes.data(), t.rows * t.cols, t.dtype, d);
  if (t.blocked()) reorder_blocked(d, t.rows, t.cols, t.block_rows, t.block_cols, false);
  return d;
}

}  // namespace stepsim
