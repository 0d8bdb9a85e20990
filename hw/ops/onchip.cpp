// On-chip memory operators: Bufferize stores a stream's inner dimensions in a memory unit and
// emits references; Streamify replays referenced buffers (static repeat, or once per element of
// a reference stream), linearly or through an affine view.
// Timing (reference): both move one element per cycle.
#include <memory>

#include "hw/ops/op.h"

namespace stepsim {

namespace {

class Bufferize : public Op {
 public:
  explicit Bufferize(const OpConfig& c) : Op(c) { rank_ = int_param(param::kRank, 1, kMaxStopLevel); }

 protected:
  void run() override {
    auto buf = std::make_shared<Buffer>();
    // Sizes of the buffered dimensions as seen so far (-1 once they differ: ragged).
    std::vector<int64_t> cur(size_t(rank_) + 1, 0), size(size_t(rank_), -2);
    uint64_t elems = 0, first_write = 0;  // elements in the buffer being filled; time of the first
    for (;;) {
      Beat b = in(0).recv();
      if (b.has_elem) {
        if (elems++ == 0) first_write = ctx().now();
        if (elems > kMaxStreamBeats)
          fail("a buffer would hold more than " + std::to_string(kMaxStreamBeats) +
               " elements, the limit of one stream held in host memory (no S" + std::to_string(rank_) + " closed it)");
        charge(1);
        buf->bytes += b.elem.bytes();
        count_sram_write(b.elem.bytes());
        ++cur[0];
      }
      const int s = b.stop;
      for (int j = 0; j < std::min(s, rank_); ++j) {
        int64_t& sz = size[size_t(j)];
        sz = sz == -2 ? cur[size_t(j)] : (sz == cur[size_t(j)] ? sz : -1);
        cur[size_t(j)] = 0;
        ++cur[size_t(j) + 1];
      }
      if (b.has_elem || (s && s < rank_)) {
        Beat stored = b;
        stored.done = false;
        if (stored.stop > rank_) stored.stop = uint8_t(rank_);
        buf->beats.push_back(std::move(stored));
      } else if (s >= rank_ && !buf->beats.empty() && buf->beats.back().stop < rank_ && !b.has_elem) {
        // A bare closing stop: the buffer's last beat closes the buffered tensor.
        Beat stored = b;
        stored.done = false;
        stored.stop = uint8_t(rank_);
        buf->beats.push_back(std::move(stored));
      }
      if (s >= rank_) {
        buf->rank = uint32_t(rank_);
        buf->shape.clear();
        for (int j = rank_ - 1; j >= 0; --j) buf->shape.push_back(size[size_t(j)] == -2 ? 0 : size[size_t(j)]);
        check_capacity(*buf, elems);
        note_buffer(elems, buf->bytes);
        Beat o =
            Beat::data(Element(lease_buffer(std::move(*buf), elems ? first_write : ctx().now())), uint8_t(s - rank_));
        o.done = b.done;
        emit(0, std::move(o));
        elems = 0;
        buf = std::make_shared<Buffer>();
        std::fill(cur.begin(), cur.end(), 0);
        std::fill(size.begin(), size.end(), -2);
      } else if (b.done) {
        if (!buf->beats.empty()) fail("stream ended inside a buffer (no closing S" + std::to_string(rank_) + ")");
        emit(0, Beat::done_beat());
      }
      if (b.done) break;
    }
  }

 private:
  // Run-time capacity check. A buffer's size is only known once it is filled (dynamic shapes), so
  // the static allocation (hw/fabric/allocation.h) gives every Bufferize one memory unit and
  // leaves the memory units no node holds statically as a shared pool; one buffer may grow over
  // its own unit plus that pool (SimEnv::buffer_pmu_limit units), and a buffer larger than that
  // can never be placed: a clear error here rather than a silently impossible run.
  void check_capacity(const Buffer& buf, uint64_t elems) {
    const uint64_t units = cfg_.env->buffer_pmu_limit;
    if (!units) return;
    const uint64_t cap = hw().pmu_capacity;
    if (buf.bytes <= units * cap) return;
    std::string shape;
    for (int64_t d : buf.shape)
      shape += (shape.empty() ? "" : ",") + (d < 0 ? std::string("ragged") : std::to_string(d));
    fail("buffer of shape [" + shape + "] (" + std::to_string(elems) + " elements, " + std::to_string(buf.bytes) +
         " B) does not fit on chip: it needs " + std::to_string((buf.bytes + cap - 1) / cap) + " memory units (PMU, " +
         std::to_string(cap) + " B each) but at most " + std::to_string(units) + " are available to one buffer (" +
         std::to_string(units * cap) + " B)");
  }

  int rank_;
};

class Streamify : public Op {
 public:
  explicit Streamify(const OpConfig& c) : Op(c) {
    repeat_ = c.params.get(param::kRepeat);
    stride_ = c.params.get(param::kStride);
    out_shape_ = c.params.get(param::kOutShape);
    rank_ = int_param(param::kRank, 0, kMaxStopLevel);
    if (stride_.size() != out_shape_.size()) fail("stride and out_shape must have the same length");
    if (out_shape_.size() > size_t(kMaxStopLevel))
      fail("out_shape has " + std::to_string(out_shape_.size()) + " dimensions; a stream has at most " +
           std::to_string(kMaxStopLevel));
    repeats_ = checked_product("repeat", repeat_, 0);
    checked_product("out_shape", out_shape_, 0);  // a 0 entry: an empty view
    for (int64_t s : stride_)
      if (s < 0) fail("stride entries must be >= 0");
  }

 protected:
  void run() override {
    const bool with_ref = has_in(1);
    if (with_ref && !repeat_.empty()) fail("give either a ref input or a static repeat, not both");
    for (;;) {
      Beat d = in(0).recv();
      if (!d.has_elem) {
        if (with_ref && d.stop) {  // empty outer dimension, mirrored in the ref
          Beat rb = next_ref(d);
          if (rb.has_elem) fail("ref has data where the buffer stream has an empty dimension");
          emit(0, rb);
        } else {
          emit(0, d);
        }
        if (d.done) {
          if (with_ref) drain_ref();
          break;
        }
        continue;
      }
      if (!d.elem.is_buffer()) fail("input carries " + d.elem.brief() + ", not a buffer reference");
      const Buffer& buf = *d.elem.buffer();
      uint64_t elems = 0;
      for (const Beat& x : buf.beats) elems += x.has_elem;
      note_buffer(elems, buf.bytes);
      if (with_ref) {
        Beat rb;
        for (;;) {
          rb = next_ref(d);
          const uint8_t close = stop_level(view_rank(buf) + rb.stop, true);
          if (rb.has_elem)
            replay(buf, close, false);
          else
            emit(0, Beat::bare_stop(close));
          if (rb.stop >= rank_ || rb.done) break;
        }
        note_buffer_read(d.elem.buffer());
        const int expect = d.stop + rank_;
        if (rb.done && rb.stop < rank_)
          fail("the ref stream 'ref' ended (D) inside the ref group of " + element_number("in", buffers_) + " (no S" +
               std::to_string(rank_) + " closed it)");
        if (rb.stop != expect)
          fail("buffer element " + beat_text(d) + " pairs with a ref group closing at S" + std::to_string(rb.stop) +
               ", expected S" + std::to_string(expect));
        ++buffers_;
        if (d.done) {
          drain_ref();
          emit(0, Beat::done_beat());
          break;
        }
      } else {
        // Static repeat: nested replay dimensions, outermost first.
        const uint64_t total = repeats_;
        const int nrep = int(repeat_.size());
        if (total == 0) {
          Beat o = Beat::bare_stop(stop_level(view_rank(buf) + nrep + d.stop, true));
          o.done = d.done;
          emit(0, o);
        }
        for (uint64_t j = 0; j < total; ++j) {
          int ended = 0;
          uint64_t rem = j;
          for (int k = nrep - 1; k >= 0; --k) {
            uint64_t f = uint64_t(repeat_[size_t(k)]);
            if (rem % f != f - 1) break;
            ++ended;
            rem /= f;
          }
          const uint8_t close = stop_level(view_rank(buf) + ended + (ended == nrep ? d.stop : 0), true);
          replay(buf, close, d.done && j + 1 == total);
        }
        note_buffer_read(d.elem.buffer());
        if (d.done) break;
      }
    }
  }

 private:
  // The next beat of the ref stream for the buffer-stream beat d; fails once the ref has ended.
  Beat next_ref(const Beat& d) {
    if (ref_done_)
      fail(
          "the buffer stream 'in' is longer than the ref stream 'ref': 'ref' ended (D) after " + std::to_string(refs_) +
          " elements, but 'in' goes on: " +
          (d.has_elem ? element_number("in", buffers_) + " is " + d.elem.brief() : "its next beat is " + beat_text(d)));
    Beat rb = in(1).recv();
    refs_ += rb.has_elem;
    ref_done_ = rb.done;
    return rb;
  }
  // The buffer stream ended: only the ref's outer stops and its done may be left.
  void drain_ref() {
    while (!ref_done_) {
      Beat rb = in(1).recv();
      if (rb.has_elem)
        fail("the ref stream 'ref' is longer than the buffer stream 'in': 'in' ended (D) after " +
             std::to_string(buffers_) + " buffers, but 'ref' goes on: " + element_number("ref", refs_) + " is " +
             rb.elem.brief());
      ref_done_ = rb.done;
    }
  }
  bool ref_done_ = false;            // the ref's done was taken
  uint64_t refs_ = 0, buffers_ = 0;  // elements taken from each input
  bool affine(const Buffer& buf) const {
    if (out_shape_.empty()) return false;
    for (int64_t s : buf.shape)
      if (s < 0) return false;  // dynamically sized (ragged) buffers are read linearly
    return true;
  }
  int view_rank(const Buffer& buf) const { return affine(buf) ? int(out_shape_.size()) : int(buf.rank); }

  // The product of a list parameter's entries (each >= min), checked against kMaxReads.
  uint64_t checked_product(const std::string& name, const std::vector<int64_t>& v, int64_t min) const {
    uint64_t p = 1;
    for (int64_t x : v) {
      if (x < min) fail(name + " entries must be >= " + std::to_string(min));
      if (__builtin_mul_overflow(p, uint64_t(x), &p) || p > kMaxReads)
        fail(name + " multiplies to more than " + std::to_string(kMaxReads) + ", the limit");
    }
    return p;
  }

  // Emits one pass over the buffer, beat by beat (nothing is staged, however long the pass);
  // its last beat closes with `close`.
  void replay(const Buffer& buf, uint8_t close, bool done) {
    if (!affine(buf)) {
      if (buf.beats.empty()) {
        Beat o = Beat::bare_stop(close);
        o.done = done;
        emit(0, o);
      }
      for (size_t k = 0; k < buf.beats.size(); ++k) {
        Beat b = buf.beats[k];
        if (k + 1 == buf.beats.size()) {
          b.stop = close;
          b.done = done;
        }
        emit_read(std::move(b));
      }
      return;
    }
    std::vector<const Beat*> elems;
    for (const Beat& b : buf.beats)
      if (b.has_elem) elems.push_back(&b);
    const size_t n = out_shape_.size();
    uint64_t total = 1;
    for (int64_t s : out_shape_) total *= uint64_t(s);  // checked in the constructor
    if (total == 0) {                                   // an empty view: the pass is its closing stop
      Beat o = Beat::bare_stop(close);
      o.done = done;
      emit(0, o);
    }
    std::vector<int64_t> idx(n, 0);
    for (uint64_t j = 0; j < total; ++j) {
      int64_t lin = 0;
      bool overflow = false;
      for (size_t k = 0; k < n; ++k) {
        int64_t step = 0;
        overflow =
            overflow || __builtin_mul_overflow(idx[k], stride_[k], &step) || __builtin_add_overflow(lin, step, &lin);
      }
      if (overflow || lin < 0 || uint64_t(lin) >= elems.size())
        fail("affine read index " + (overflow ? std::string("beyond 2^63") : std::to_string(lin)) +
             " outside the buffer of " + std::to_string(elems.size()) + " elements");
      int ended = 0;
      for (int k = int(n) - 1; k >= 0; --k) {
        if (idx[size_t(k)] + 1 < out_shape_[size_t(k)]) break;
        ++ended;
      }
      const bool last = j + 1 == total;
      Beat b = Beat::data(elems[size_t(lin)]->elem, last ? close : uint8_t(ended));
      b.done = last && done;
      emit_read(std::move(b));
      for (int k = int(n) - 1; k >= 0; --k) {
        if (++idx[size_t(k)] < out_shape_[size_t(k)]) break;
        idx[size_t(k)] = 0;
      }
    }
  }
  // A beat read from the buffer: its tile sits in a memory unit; one cycle per element.
  void emit_read(Beat b) {
    if (b.has_elem && b.elem.is_tile()) {
      Tile t = b.elem.tile();
      t.in_memory_unit = true;
      b.elem = Element(std::move(t));
    }
    if (b.has_elem) charge(1);
    emit(0, std::move(b));
  }

  // Replays of one buffer (static repeat) and reads of one affine pass: far above any real use,
  // and the products stay inside 64 bits.
  static constexpr uint64_t kMaxReads = uint64_t(1) << 40;
  uint64_t repeats_ = 1;
  std::vector<int64_t> repeat_, stride_, out_shape_;
  int rank_;
};

}  // namespace

void register_onchip_ops(OpRegistry& r) {
  r.add(OpInfo{
      OpKind::kBufferize,
      "Bufferize",
      OpCategory::kOnChipMemory,
      "Stores the inner `rank` dimensions of the stream in a memory unit and emits one buffer reference per "
      "stored tensor.",
      "1 cycle per stored element; the reference is emitted when a stop >= rank arrives.",
      {{"in", "rank-a stream of tiles"}},
      {{"out", "rank a-rank stream of buffer references"}},
      {param_spec(param::kRank, "", "bufferize rank b: number of inner dimensions stored", true, {1, kMaxStopLevel})},
      false,
      [](const OpConfig& c) { return std::make_unique<Bufferize>(c); }}
            .with_onchip(OnChipFormula().input(1).buffer_x_input(2), OnChipFormula().input(1).buffer_x_input(2))
            .with_memory_unit());
  r.add(OpInfo{
      OpKind::kStreamify,
      "Streamify",
      OpCategory::kOnChipMemory,
      "Replays each referenced buffer: `repeat` times (static) or once per element of the ref stream's inner "
      "`rank` dimensions; affine (stride/out_shape) for static buffers, linear for dynamically sized ones.",
      "1 cycle per emitted element; emitted tiles sit in a memory unit.",
      {{"in", "buffer references"}, {"ref", "reference stream (repeat count per buffer)", true}},
      {{"out", "replayed stream"}},
      {param_spec(param::kRepeat, "[]", "static repeat factors, outermost first (no ref input)"),
       param_spec(param::kRank, "1", "repeat rank c of the ref stream", false, kRankRange),
       param_spec(param::kStride, "[]", "affine view strides in elements"),
       param_spec(param::kOutShape, "[]", "affine view shape (empty = linear)", false, kCountRange)},
      false,
      [](const OpConfig& c) {
        return std::make_unique<Streamify>(c);
      }}.with_onchip(OnChipFormula(), OnChipFormula().buffer_x_output(1).output(1)));
}

}  // namespace stepsim
