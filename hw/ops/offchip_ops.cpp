// Off-chip memory operators (paper §2.1): tiled reads and writes of tensors stored in HBM.
// They are the address generators of the fabric: every tile becomes a strided block of
// 64-byte requests sent through the TLM-2.0 socket of OffChipMemory (hw/memory/offchip.h).
#include <algorithm>
#include <deque>
#include <memory>

#include "hw/memory/offchip.h"
#include "hw/ops/op.h"
#include "hw/ops/tiled_view.h"

namespace stepsim {

namespace {

// Shared by the four operators: the tensor and tile geometry, the TLM path and the timing of
// one tile transfer.
class OffChipOp : public Op {
 public:
  explicit OffChipOp(const OpConfig& cfg, bool affine) : Op(cfg) {
    if (!cfg.env->memory) throw std::logic_error("off-chip operator without an OffChipMemory");
    memory_ = cfg.env->memory;
    const std::string node = "node '" + cfg.name + "' (" + cfg.info->name + "): ";
    view_ = make_tiled_view(memory_->tensor(cfg.params.get(param::kTensor)), cfg.params, affine, node);
    const int64_t pd = cfg.params.get(param::kParDispatch);
    if (pd < 0 || uint64_t(pd) > kMaxParDispatch)
      throw std::invalid_argument(node + "par_dispatch must be in 0.." + std::to_string(kMaxParDispatch));
    par_dispatch_ = pd ? uint32_t(pd) : hw().par_dispatch;
    // With one tile in flight the next tile issues after the last response, so in any II
    // cycles the op issues at most par_dispatch requests per cycle (the memory's uncontended
    // regime, OffChipMemory::add_client); otherwise tiles and chunks may share a cycle.
    const HbmParams& hbm = hw().hbm;
    memory_->add_client(&ctx(), hw().offchip_one_tile_in_flight && hbm.idle_latency() >= 1
                                    ? uint64_t(std::max<uint32_t>(1, par_dispatch_)) * hbm.init_interval
                                    : OffChipMemory::kUnbounded);
    // Every tile of a view has the same burst geometry.
    requests_per_tile_ = std::max<uint64_t>(1, view_.burst(view_.offset, false, 1).requests(hw().hbm.request_bytes));
    if (!hw().offchip_one_tile_in_flight) max_outstanding_ = hw().ag_max_outstanding;
  }

  // A load's tiles in flight (a random store's acknowledgements) wait in its address generator,
  // up to the requests it keeps outstanding (ag_max_outstanding), instead of holding slots of its
  // output channel.
  uint32_t output_inflight(size_t) const override {
    if (!max_outstanding_ || !(loads_ || acks_)) return 0;
    return uint32_t(std::min<uint64_t>(max_outstanding_ / requests_per_tile_, 1u << 16));
  }

  // A load's tiles wait for its consumer in the load's memory unit: load_buffer_tiles of them,
  // as many as fit.
  uint32_t output_depth(size_t, uint32_t fifo_depth) const override {
    return loads_ ? hw().load_output_depth(shape().bytes(), fifo_depth) : fifo_depth;
  }

 protected:
  Tile shape() const { return shape_tile(view_.tile_rows, view_.tile_cols, view_.tensor->dtype); }

  // Reads stored tile l and emits it with stop/done. Timing (reference): the requests go out
  // par_dispatch per cycle from now; the tile is emitted when the last response is back.
  void load_and_emit(uint64_t l, uint8_t stop, bool done) {
    const Burst b = view_.burst(l, false, par_dispatch_);
    Tile t = shape();
    t.in_memory_unit = true;  // staged in the load's memory unit
    uint8_t* bytes = functional() ? staging(uint64_t(b.rows) * b.row_bytes) : nullptr;
    note_onchip(t.bytes());  // the tile is staged in the load's memory unit until it is sent
    count_sram_write(t.bytes());
    const uint64_t completion = transfer(b, bytes);
    if (bytes) {
      auto d = std::make_shared<TileData>();
      unpack_elements(bytes, t.elems(), t.dtype, *d);
      if (view_.spans_blocks())
        reorder_blocked(*d, t.rows, t.cols, view_.tensor->block_rows, view_.tensor->block_cols, false);
      t.data = std::move(d);
    }
    Beat out = Beat::data(Element(std::move(t)), stop);
    out.done = done;
    emit(0, std::move(out), (completion > ctx().now() ? completion - ctx().now() : 0) + hw().ag_load_pipeline_cycles);
  }

  // Writes `t` as stored tile l; returns when the op may take its next input.
  void store(const Tile& t, uint64_t l, const Channel& from) {
    if (t.rows != view_.tile_rows || t.cols != view_.tile_cols || t.dtype != view_.tensor->dtype)
      fail("tile shape mismatch on channel '" + from.name() + "': it carries " + t.to_string() +
           " but the store writes tiles of " + shape().to_string() + " into tensor '" + view_.tensor->name + "'");
    std::vector<uint8_t> bytes;
    if (functional()) {
      if (!t.has_data())
        fail("functional mode: tile " + t.to_string() + " on channel '" + from.name() +
             "' carries no values (literal T[RxC] tiles are shapes only)");
      bytes.resize(t.bytes());
      if (view_.spans_blocks()) {
        TileData stored = *t.data;
        reorder_blocked(stored, t.rows, t.cols, view_.tensor->block_rows, view_.tensor->block_cols, true);
        pack_elements(stored, t.elems(), t.dtype, bytes.data());
      } else {
        pack_elements(*t.data, t.elems(), t.dtype, bytes.data());
      }
    }
    note_onchip(t.bytes());  // staged until its writes are acknowledged
    view_.tensor->written = true;
    transfer(view_.burst(l, true, par_dispatch_), bytes.empty() ? nullptr : bytes.data());
  }

  // One tile through the memory. With one tile in flight (reference) the op is busy until
  // the last response and its clock ends there; otherwise the address generator is free the
  // cycle after its last request and the data's arrival is carried as a delay. With
  // ag_max_outstanding L, the address generator keeps at most L requests unanswered: the tile's
  // rows go out in chunks of about L / 2 requests, and a chunk waits until the oldest chunks
  // have answered (a window; the unit counts request by request, the model chunk by chunk).
  uint64_t transfer(const Burst& b, uint8_t* data) {
    const uint64_t t0 = ctx().now();
    uint64_t completion = 0;
    if (!max_outstanding_) {
      completion = memory_->transfer(ctx(), b, data);
    } else {
      const uint32_t rb = hw().hbm.request_bytes;
      const uint64_t per_row = std::max<uint64_t>(1, b.requests_per_row(rb));
      const uint64_t half = std::max<uint64_t>(1, max_outstanding_ / 2);
      // A chunk is whole rows, or, when one row alone has more than half the window's requests
      // (a contiguous tile, e.g. [64 x 256] of a blocked tensor), a piece of one row: without
      // the split such a tile would go out unthrottled, ahead of the other loads' windows.
      const uint32_t chunk_rows = uint32_t(std::max<uint64_t>(1, half / per_row));
      const uint64_t piece = per_row > half ? half * rb : b.row_bytes;
      for (uint32_t r0 = 0; r0 < b.rows; r0 += chunk_rows) {
        for (uint64_t off = 0; off < b.row_bytes; off += piece) {
          Burst c = b;
          c.base = b.base + r0 * b.pitch() + off;
          c.rows = std::min(chunk_rows, b.rows - r0);
          c.row_bytes = std::min(piece, b.row_bytes - off);
          c.row_pitch = b.pitch();
          const uint64_t n = c.rows * c.requests_per_row(rb);
          wait_for_window(n);
          const uint64_t done = memory_->transfer(ctx(), c, data ? data + uint64_t(r0) * b.row_bytes + off : nullptr);
          window_.push_back({done, n});
          outstanding_ += n;
          completion = std::max(completion, done);
          if (r0 + chunk_rows < b.rows || off + piece < b.row_bytes)
            ctx().advance_to(ctx().now() + 1);  // the next chunk's first request
        }
      }
    }
    last_completion_ = std::max(last_completion_, completion);
    if (hw().offchip_one_tile_in_flight)
      charge_span(t0, completion);
    else
      charge_span(t0, ctx().now() + 1);
    return std::max(completion, ctx().now());
  }

  // Before n more requests: drop the chunks that have answered, and wait for the oldest ones
  // while more than ag_max_outstanding would be unanswered (all of them if n alone exceeds it).
  void wait_for_window(uint64_t n) {
    while (!window_.empty() && (window_.front().first <= ctx().now() || outstanding_ + n > max_outstanding_)) {
      if (window_.front().first > ctx().now()) ctx().advance_to(window_.front().first);
      outstanding_ -= window_.front().second;
      window_.pop_front();
    }
  }

  // Stores wait for their last acknowledgement (and the address generator's registers after it)
  // before they finish.
  void wait_last_completion() {
    const uint64_t end = last_completion_ + hw().ag_store_pipeline_cycles;
    if (end > ctx().now()) charge_span(ctx().now(), end);
  }

  // The next beat of input i for a firing. With input_register the address generator's input
  // buffer takes it as the firing starts (its channel slot frees at once); otherwise the slot
  // frees as the firing ends (release_input).
  Beat take_input(size_t i) {
    Beat b = in(i).peek();
    if (hw().input_register) in(i).pop();
    return b;
  }
  void release_input(size_t i) {
    if (!hw().input_register) in(i).pop();
  }

  uint64_t address_of(const Element& e, const Channel& from) const {
    const std::optional<int64_t> v = index_value(e);
    if (!v)
      fail("address stream '" + from.name() + "' carries " + e.brief() +
           "; expected a scalar or a 1x1 int32 tile holding a tile index");
    const int64_t a = *v;
    if (a < 0 || uint64_t(a) >= view_.stored_tiles())
      fail("tile index " + std::to_string(a) + " from '" + from.name() + "' is outside tensor '" + view_.tensor->name +
           "' (" + std::to_string(view_.stored_tiles()) + " tiles of " + shape().to_string() + ")");
    return uint64_t(a);
  }

  // A buffer of n bytes for a loaded tile's bytes, the same one for every tile (it stays in the
  // cache) and not zeroed: the transfer writes every byte (or throws).
  uint8_t* staging(uint64_t n) {
    if (n > staging_bytes_) {
      staging_.reset(new uint8_t[n]);
      staging_bytes_ = n;
    }
    return staging_.get();
  }

  OffChipMemory* memory_ = nullptr;
  std::unique_ptr<uint8_t[]> staging_;
  uint64_t staging_bytes_ = 0;
  TiledView view_;
  uint32_t par_dispatch_ = 1;
  uint64_t last_completion_ = 0;
  bool loads_ = false;              // set by the loads: output 0 carries tiles in flight
  bool acks_ = false;               // set by RandomOffChipStore: output 0 carries acknowledgements in flight
  uint64_t requests_per_tile_ = 1;  // of the view's burst geometry
  uint64_t max_outstanding_ = 0;    // ag_max_outstanding, 0 when unlimited or one tile in flight
  std::deque<std::pair<uint64_t, uint64_t>> window_;  // (completion, requests) of the chunks in flight
  uint64_t outstanding_ = 0;                          // their requests
};

class LinearOffChipLoad : public OffChipOp {
 public:
  explicit LinearOffChipLoad(const OpConfig& c) : OffChipOp(c, true) { loads_ = true; }

 protected:
  void run() override {
    if (!has_in(0)) {  // static variant: one pass over the view
      read_view(0, true);
      return;
    }
    // With a reference stream: one pass per ref element; ref stops are raised above the
    // view's dimensions, bare stops (empty ref dimensions) pass through raised.
    const uint8_t view_rank = uint8_t(view_.rank());
    for (;;) {
      const Beat& r = in(0).peek();
      const bool done = r.done;
      const uint8_t close = stop_level(view_rank + r.stop);
      if (r.has_elem) {
        read_view(r.stop, done);
      } else if (r.stop || done) {
        Beat o = r.stop ? Beat::bare_stop(close) : Beat::done_beat();
        o.done = done;
        emit(0, o);
      }
      in(0).pop();
      if (done) break;
    }
  }

 private:
  void read_view(uint8_t outer_stop, bool done) {
    for (uint64_t k = 0; k < view_.count; ++k) {
      const bool last = k + 1 == view_.count;
      uint8_t stop = view_.stop_after(k);
      if (last && outer_stop) stop = stop_level(view_.rank() + outer_stop);
      load_and_emit(view_.lin(k), stop, last && done);
    }
  }
};

class LinearOffChipStore : public OffChipOp {
 public:
  explicit LinearOffChipStore(const OpConfig& c) : OffChipOp(c, true) {}

 protected:
  void run() override {
    uint64_t k = 0;
    for (;;) {
      const Beat& b = in(0).peek();
      if (b.has_elem) {
        if (!b.elem.is_tile()) fail(element_number("in", k) + " is " + b.elem.brief() + ", not a tile");
        if (k >= view_.count)
          fail("received more tiles than the " + std::to_string(view_.count) + " its view of tensor '" +
               view_.tensor->name + "' (out_shape " + view_.shape_text() + ") expects: " + element_number("in", k) +
               " is one too many");
        store(b.elem.tile(), view_.lin(k++), in(0));
      }
      const bool done = in(0).pop().done;
      if (done) break;
    }
    // Fewer tiles would leave part of the view unwritten, silently.
    if (k != view_.count)
      fail("received " + std::to_string(k) + " tiles but its view of tensor '" + view_.tensor->name + "' (out_shape " +
           view_.shape_text() + ") expects " + std::to_string(view_.count));
    wait_last_completion();
  }
};

class RandomOffChipLoad : public OffChipOp {
 public:
  explicit RandomOffChipLoad(const OpConfig& c) : OffChipOp(c, false) { loads_ = true; }

 protected:
  void run() override {
    for (;;) {
      const Beat a = take_input(0);
      const bool done = a.done;
      if (a.has_elem) {
        load_and_emit(address_of(a.elem, in(0)), a.stop, done);
      } else {
        Beat o = Beat::bare_stop(a.stop);
        o.done = done;
        emit(0, o);
      }
      release_input(0);
      if (done) break;
    }
  }
};

class RandomOffChipStore : public OffChipOp {
 public:
  explicit RandomOffChipStore(const OpConfig& c) : OffChipOp(c, false) { acks_ = true; }

 protected:
  void run() override {
    for (;;) {
      const Beat a = take_input(0);
      const bool done = a.done;
      if (a.has_elem) {
        const uint64_t l = address_of(a.elem, in(0));
        next_data(a.elem);
        const Beat d = take_input(1);
        if (!d.elem.is_tile()) fail(element_number("wdata", tiles_) + " is " + d.elem.brief() + ", not a tile");
        store(d.elem.tile(), l, in(1));
        ++tiles_;
        data_done_ = d.done;
        release_input(1);
        Beat ack = Beat::data(Element(Scalar{1}), a.stop);
        ack.done = done;
        emit(0, std::move(ack),
             (last_completion_ > ctx().now() ? last_completion_ - ctx().now() : 0) + hw().ag_store_pipeline_cycles);
      } else {
        Beat o = Beat::bare_stop(a.stop);
        o.done = done;
        emit(0, o);
      }
      release_input(0);
      if (done) break;
    }
    // waddr ended: only wdata's trailing stops and its done may be left.
    while (!data_done_) {
      const Beat d = in(1).pop();
      if (d.has_elem)
        fail("wdata has more tiles than waddr has addresses: waddr ended (D) after " + std::to_string(tiles_) +
             " addresses, but wdata goes on: " + element_number("wdata", tiles_) + " is " + d.elem.brief());
      data_done_ = d.done;
    }
    wait_last_completion();
  }

 private:
  // Waits for the next wdata beat carrying a tile; bare stops are skipped (the ack stream
  // follows waddr's structure). Fails when wdata ends first.
  void next_data(const Element& addr) {
    for (;;) {
      if (!data_done_) {
        const Beat& d = in(1).peek();
        if (d.has_elem) return;
        data_done_ = d.done;
        if (!d.done) {
          in(1).pop();
          continue;
        }
      }
      fail("waddr has more addresses than wdata has tiles: wdata ended (D) after " + std::to_string(tiles_) +
           " tiles, but waddr goes on: " + element_number("waddr", tiles_) + " is " + addr.brief());
    }
  }
  bool data_done_ = false;  // wdata's done was seen (it rides on its last tile)
  uint64_t tiles_ = 0;      // tiles written
};

}  // namespace

void register_offchip_ops(OpRegistry& r) {
  const ParamSpec tensor = param_spec(param::kTensor, "", "stored tensor (graph tensors: section)", true);
  const ParamSpec tile =
      param_spec(param::kTile, "", "tile shape [rows, cols] in elements; must divide the tensor", true, kPositiveRange);
  const ParamSpec out_shape =
      param_spec(param::kOutShape, "[]", "tiled view shape, outermost first, in tiles (empty = the whole tiled tensor)",
                 false, kPositiveRange);
  const ParamSpec stride =
      param_spec(param::kStride, "[]", "tiled view strides in tiles (empty = row-major over out_shape; 0 re-reads)");
  const ParamSpec offset =
      param_spec(param::kOffset, "0", "first tile of the view (row-major tile index of the tiled tensor)");
  const ParamSpec par =
      param_spec(param::kParDispatch, "0", "requests issued per cycle (0 = the preset's par_dispatch)", false,
                 {0, kMaxParDispatch});
  const std::string tile_timing =
      "Per tile: rows x ceil(cols*bytes/request_bytes) requests with the tensor's row pitch (a blocked tensor: "
      "per block row of the tile, or per row inside one block), par_dispatch per cycle from the op's time, through "
      "the HBM model; ";
  r.add(OpInfo{OpKind::kLinearOffChipLoad,
               "LinearOffChipLoad",
               OpCategory::kOffChipMemory,
               "Reads a stored tensor as a stream of tiles through an affine tiled view; with a ref stream, one whole "
               "pass per ref element (ref stops raised above the view's dimensions; ref contents ignored).",
               tile_timing +
                   "the tile is emitted when its last response is back (one tile in flight with "
                   "offchip_one_tile_in_flight; otherwise up to ag_max_outstanding requests' tiles in flight, "
                   "docs/timing-model.md).",
               {{"ref", "reference stream: one pass of the view per element (optional)", true}},
               {{"out", "tiles [ref dims.., out_shape..] (static variant: [out_shape..])"}},
               {tensor, tile, out_shape, stride, offset, par},
               false,
               [](const OpConfig& c) { return std::make_unique<LinearOffChipLoad>(c); }}
            .with_traffic(OffChipTraffic::Direction::kRead, "out")
            .with_onchip(OnChipFormula().staging(2), OnChipFormula().staging(1))
            .with_memory_unit());
  r.add(OpInfo{OpKind::kLinearOffChipStore,
               "LinearOffChipStore",
               OpCategory::kOffChipMemory,
               "Writes the incoming tiles, in order, to the positions of an affine tiled view of a stored tensor "
               "(stop tokens are not stored).",
               tile_timing + "the input is dequeued when every write is acknowledged (with "
                             "offchip_one_tile_in_flight; otherwise when its requests are issued, at most "
                             "ag_max_outstanding unacknowledged).",
               {{"in", "tiles of exactly the tile shape and the tensor's dtype"}},
               {},
               {tensor, tile, out_shape, stride, offset, par},
               false,
               [](const OpConfig& c) { return std::make_unique<LinearOffChipStore>(c); }}
            .with_traffic(OffChipTraffic::Direction::kWrite, "in")
            .with_onchip(OnChipFormula().staging(2), OnChipFormula().staging(1))
            .with_memory_unit());
  r.add(OpInfo{OpKind::kRandomOffChipLoad,
               "RandomOffChipLoad",
               OpCategory::kOffChipMemory,
               "Reads one tile per address element; an address is a tile index (row-major over the tiled tensor), "
               "given as a scalar or a 1x1 int32 tile. The output has the address stream's shape.",
               tile_timing + "as LinearOffChipLoad's tiles (with input_register the index is taken as the firing "
                             "starts).",
               {{"raddr", "tile indices"}},
               {{"out", "one tile per address"}},
               {tensor, tile, par},
               false,
               [](const OpConfig& c) { return std::make_unique<RandomOffChipLoad>(c); }}
            .with_traffic(OffChipTraffic::Direction::kRead, "out")
            .with_onchip(OnChipFormula().staging(2), OnChipFormula().staging(1))
            .with_memory_unit());
  r.add(OpInfo{OpKind::kRandomOffChipStore,
               "RandomOffChipStore",
               OpCategory::kOffChipMemory,
               "Writes each wdata tile to the tile index given by the matching waddr element and emits a true flag "
               "per completed write, with waddr's shape.",
               tile_timing + "the flag is emitted when the write is acknowledged (with ag_max_outstanding the flags "
                             "wait in the address generator, not in the output channel; with input_register the index "
                             "and tile are taken as the firing starts).",
               {{"waddr", "tile indices"}, {"wdata", "tiles, one per address (their stops are ignored)"}},
               {{"out", "write-completion flags (scalar 1)"}},
               {tensor, tile, par},
               false,
               [](const OpConfig& c) { return std::make_unique<RandomOffChipStore>(c); }}
            .with_traffic(OffChipTraffic::Direction::kWrite, "wdata")
            .with_onchip(OnChipFormula().staging(2), OnChipFormula().staging(1))
            .with_memory_unit());
}

}  // namespace stepsim
