// Shape operators: they change only stop tokens (and Repeat/Expand replicate elements).
// Timing: `shape_op_latency` cycles per beat (0 in the reference), except Repeat, which emits
// one copy per cycle as the reference does.
#include <memory>

#include "hw/ops/op.h"

namespace stepsim {

namespace {

// Flatten<min,max>: merges dimensions min..max (0 = innermost) into one. A step function
// (StepOp): it keeps nothing between beats but a beat waiting for space.
class Flatten : public StepOp {
 public:
  explicit Flatten(const OpConfig& c) : StepOp(c, this) {
    const int64_t lo = c.params.get(param::kMin), hi = c.params.get(param::kMax);
    if (lo < 0 || hi < lo || hi > kMaxStopLevel) fail("needs 0 <= min <= max <= " + std::to_string(kMaxStopLevel));
    for (int s = 0; s <= kMaxStopLevel; ++s) {
      int64_t m = s;
      if (s > lo && s <= hi)
        m = lo;  // the merged dimension goes on; only the dimensions below it end
      else if (s > hi)
        m = s - (hi - lo);
      stop_map_[s] = uint8_t(m);
    }
  }

  bool step() {
    if (!input_) {  // the first step: the channels are bound by now
      input_ = &in(0);
      output_ = has_out(0) ? &out(0) : nullptr;
      latency_ = hw().shape_op_latency;
    }
    // In locals: the compiler would reload the members after every store through the
    // channels (one beat per iteration, the token-hop benchmark's whole loop).
    const uint64_t latency = latency_;
    Channel& input = *input_;
    Channel* const output = output_;
    for (;;) {
      if (held_) {  // the beat that found the output full
        if (output->full()) return park_send(*output);
        const bool done = beat_.done;
        output->set_pending(nullptr);
        held_ = false;
        output->send(std::move(beat_));
        if (done) return true;
      }
      if (input.empty()) {
        ctx().park_recv(&input);
        return false;
      }
      Beat& b = input.take();  // in its slot: sent, held or destroyed below
      charge(latency);
      b.stop = stop_map_[b.stop & kMaxStopLevel];
      const bool done = b.done;
      // An empty inner dimension that vanished into the merged one leaves nothing to send.
      if (output && (b.has_elem || b.stop || b.done)) {
        if (output->full()) {
          relocate_beat(&beat_, b);  // beat_ is empty: sent (relocated away) when last held
          held_ = true;
          output->set_pending(&beat_);
          return park_send(*output);
        }
        output->send(std::move(b));
      } else {
        b.~Beat();
      }
      if (done) return true;
    }
  }

 private:
  bool park_send(Channel& c) {
    ctx().park_send(&c);
    return false;
  }
  // What every step reads, side by side (an activation finds them cold, docs/performance.md):
  // the channels and the latency, cached at the first step instead of read through the
  // operator's port vectors and the preset.
  alignas(64) Channel* input_ = nullptr;
  Channel* output_ = nullptr;
  uint64_t latency_ = 0;
  uint8_t stop_map_[kMaxStopLevel + 1];  // the stop level each level becomes
  bool held_ = false;
  Beat beat_;
};

// Reshape: splits dimension `rank` into chunks of `chunk`; the innermost dimension is padded.
class Reshape : public Op {
 public:
  explicit Reshape(const OpConfig& c) : Op(c) {
    // Padding emits up to chunk - 1 elements for one input beat.
    chunk_ = c.params.get(param::kChunk);
    if (chunk_ < 1 || uint64_t(chunk_) > kMaxStreamBeats)
      fail("chunk is " + std::to_string(chunk_) + ", outside the allowed range 1.." + std::to_string(kMaxStreamBeats));
    rank_ = int_param(param::kRank, 0, kMaxStopLevel - 1);
    std::string pad = c.params.get(param::kPad);
    if (pad != "zero") {
      pad_ = parse_element(pad);
      have_pad_ = true;
    }
  }

 protected:
  void run() override {
    int64_t count = 0;  // elements (rank 0) or closed units (rank > 0) in the current chunk
    Element last;       // template for zero padding
    bool seen = false;
    for (;;) {
      Beat b = in(0).recv();
      charge(hw().shape_op_latency);
      std::vector<std::pair<Beat, bool>> out;  // beat, is padding
      const int s = b.stop;
      if (rank_ == 0) {
        if (b.has_elem) {
          last = b.elem;
          seen = true;
          ++count;
          uint8_t st = 0;
          if (count == chunk_) {
            count = 0;
            st = 1;
          }
          if (s > 0 && st) st = stop_level(s + 1);
          out.push_back({Beat::data(b.elem, st), false});
          if (s > 0 && !st) pad_out(out, count, last, seen, stop_level(s + 1));
        } else if (s > 0) {
          if (count)
            pad_out(out, count, last, seen, stop_level(s + 1));
          else
            out.push_back({Beat::bare_stop(stop_level(s + 1)), false});
        }
        if (b.done && count) pad_out(out, count, last, seen, 1);  // a rank-0 stream ends its last chunk
      } else {
        if (s < rank_) {
          out.push_back({b, false});
        } else {
          ++count;
          uint8_t st;
          if (s == rank_) {
            st = uint8_t(count % chunk_ == 0 ? rank_ + 1 : rank_);
          } else {
            if (count % chunk_ != 0) not_a_multiple(count);
            st = stop_level(s + 1);
            count = 0;
          }
          Beat o = b;
          o.stop = st;
          o.done = false;
          out.push_back({o, false});
        }
        // The outermost dimension ends at the done token, not at a stop.
        if (b.done && count % chunk_ != 0) not_a_multiple(count);
      }
      if (out.empty()) {
        if (b.done) out.push_back({Beat::done_beat(), false});
      } else {
        out.back().first.done = b.done;
      }
      for (auto& [beat, is_pad] : out) {
        if (has_out(1)) {
          Beat flag = beat.has_elem ? Beat::data(Element(Scalar{is_pad ? 1 : 0}), beat.stop) : beat;
          flag.done = beat.done;
          emit(1, std::move(flag));
        }
        emit(0, std::move(beat));
      }
      if (b.done) break;
    }
  }

 private:
  // Above the innermost dimension nothing is padded (the static check says the same,
  // sim/shape/rules.cpp).
  [[noreturn]] void not_a_multiple(int64_t count) const {
    fail("dimension " + std::to_string(rank_) + " has " + std::to_string(count) + " entries, not a multiple of chunk " +
         std::to_string(chunk_) + " (only the innermost dimension can be padded)");
  }
  // Pads the open chunk to `chunk_` elements; the last pad carries stop `level`.
  void pad_out(std::vector<std::pair<Beat, bool>>& out, int64_t& count, const Element& last, bool seen, uint8_t level) {
    while (count < chunk_) {
      ++count;
      Element e = pad_element(last, seen);
      out.push_back({Beat::data(std::move(e), count == chunk_ ? level : 0), true});
    }
    count = 0;
  }
  Element pad_element(const Element& last, bool seen) const {
    if (have_pad_) return pad_;
    if (seen && last.is_tile()) {
      const Tile& t = last.tile();
      if (t.has_data()) {
        if (t.dtype == DType::INT32) return Element(make_int_tile(t.rows, t.cols, std::vector<int32_t>(t.elems(), 0)));
        return Element(make_tile(t.rows, t.cols, t.dtype, std::vector<float>(t.elems(), 0.0f)));
      }
      return Element(shape_tile(t.rows, t.cols, t.dtype));
    }
    return Element(Scalar{0});
  }

  int64_t chunk_;
  int rank_;
  Element pad_;
  bool have_pad_ = false;
};

// Promote: adds a dimension of size 1 (size 0 for an empty stream). Default: a new outermost
// dimension around the whole stream; `rank` r >= 0 inserts it above the r innermost dimensions.
class Promote : public Op {
 public:
  explicit Promote(const OpConfig& c) : Op(c) { rank_ = int_param(param::kRank, -1, kMaxStopLevel - 1); }

 protected:
  void run() override {
    if (rank_ >= 0) {
      for (;;) {
        Beat b = in(0).recv();
        charge(hw().shape_op_latency);
        if (b.stop >= rank_ && (b.stop > 0 || (rank_ == 0 && b.has_elem))) b.stop = stop_level(b.stop + 1);
        bool done = b.done;
        emit(0, std::move(b));
        if (done) break;
      }
      return;
    }
    // Outermost: the stream's last beat carries S_a (or no stop for rank 0); it becomes S_{a+1}.
    // That beat is recognised only when the done token arrives, so one beat is held back.
    bool holding = false;
    Beat held;
    for (;;) {
      Beat b = in(0).recv();
      charge(hw().shape_op_latency);
      if (!b.done) {
        if (holding) emit(0, std::move(held));
        held = std::move(b);
        holding = true;
        continue;
      }
      if (b.has_elem || b.stop) {
        if (holding) emit(0, std::move(held));
        b.stop = stop_level(b.stop + 1);
        emit(0, std::move(b));
      } else if (holding) {
        held.stop = stop_level(held.stop + 1);
        held.done = true;
        emit(0, std::move(held));
      } else {
        emit(0, Beat::done_beat());  // empty stream: the new dimension has size 0
      }
      break;
    }
  }

 private:
  int rank_;
};

// Expand: repeats each data element to follow the reference stream's inner `rank` dimensions.
class Expand : public Op {
 public:
  explicit Expand(const OpConfig& c) : Op(c) { rank_ = int_param(param::kRank, 0, kMaxStopLevel); }

 protected:
  void run() override {
    bool data_done = false, ref_done = false;
    while (!(data_done && ref_done)) {
      if (data_done) {  // data ended: the reference must end too
        Beat rb = in(1).recv();
        if (rb.has_elem || rb.stop || !rb.done) ref_longer(rb);
        ref_done = true;
        emit(0, Beat::done_beat());
        break;
      }
      if (ref_done) {  // the reference ended (its done went out): the data must end too
        Beat dd = in(0).recv();
        if (dd.has_elem || dd.stop || !dd.done) data_longer(dd);
        break;
      }
      Beat d = in(0).peek();
      if (!d.has_elem) {
        in(0).pop();
        if (d.stop) {  // an empty outer dimension: the reference has the same bare stop
          Beat rb = in(1).recv();
          refs_ += rb.has_elem;
          if (rb.has_elem || rb.stop != d.stop)
            fail("data has an empty dimension (" + beat_text(d) + ") where ref has " + beat_text(rb));
          Beat o = Beat::bare_stop(d.stop);
          o.done = rb.done;
          ref_done = rb.done;
          emit(0, o);
        }
        data_done = d.done;
        continue;
      }
      // Replay d over one reference group (the element is held meanwhile: on-chip accounting).
      note_onchip(d.elem.bytes());
      Beat rb;
      for (;;) {
        rb = in(1).recv();
        refs_ += rb.has_elem;
        charge(hw().shape_op_latency);
        Beat o = rb.has_elem ? Beat::data(d.elem, rb.stop) : Beat::bare_stop(rb.stop);
        o.done = rb.done;
        emit(0, std::move(o));
        bool closes = rank_ == 0 ? rb.has_elem : rb.stop >= rank_;
        if (closes || rb.done) break;
      }
      if (rank_ > 0 && rb.stop != d.stop)
        fail("data element " + beat_text(d) + " closes at S" + std::to_string(d.stop) +
             " but its ref group closes at S" + std::to_string(rb.stop));
      in(0).pop();
      ++elems_;
      data_done = d.done;
      ref_done = rb.done;
      if (data_done && !ref_done) {
        Beat r2 = in(1).recv();
        if (r2.has_elem || r2.stop || !r2.done) ref_longer(r2);
        ref_done = true;
        emit(0, Beat::done_beat());
      }
    }
  }

 private:
  [[noreturn]] void data_longer(const Beat& d) const {
    fail("the data stream 'in' is longer than the ref stream 'ref': 'ref' ended (D) after " + std::to_string(refs_) +
         " elements, but 'in' goes on: " +
         (d.has_elem ? element_number("in", elems_) + " is " + d.elem.brief() : "its next beat is " + beat_text(d)));
  }
  [[noreturn]] void ref_longer(const Beat& r) const {
    fail("the ref stream 'ref' is longer than the data stream 'in': 'in' ended (D) after " + std::to_string(elems_) +
         " elements, but 'ref' goes on: " +
         (r.has_elem ? element_number("ref", refs_) + " is " + r.elem.brief() : "its next beat is " + beat_text(r)));
  }

  int rank_;
  uint64_t elems_ = 0, refs_ = 0;  // elements taken from each input
};

// Repeat<count>: a new innermost dimension of `count` copies of each element.
class Repeat : public Op {
 public:
  explicit Repeat(const OpConfig& c) : Op(c) {
    count_ = c.params.get(param::kCount);
    if (count_ < 0 || uint64_t(count_) > kMaxStreamBeats)
      fail("count is " + std::to_string(count_) + ", outside the allowed range 0.." + std::to_string(kMaxStreamBeats));
  }

 protected:
  void run() override {
    for (;;) {
      Beat b = in(0).recv();
      const uint8_t close = stop_level(b.stop + 1);
      if (b.has_elem) {
        note_onchip(b.elem.bytes());  // held while it is copied (on-chip accounting)
        if (count_ == 0) {
          Beat o = Beat::bare_stop(close);
          o.done = b.done;
          emit(0, o);
        }
        for (int64_t i = 0; i < count_; ++i) {
          Beat o = Beat::data(b.elem, i + 1 == count_ ? close : 0);
          o.done = i + 1 == count_ && b.done;
          emit(0, std::move(o));
          charge(1);
        }
      } else {
        Beat o = b;
        if (o.stop) o.stop = close;
        emit(0, o);
      }
      if (b.done) break;
    }
  }

 private:
  int64_t count_;
};

// Zip: tuples of the elements of n streams with the same structure.
class Zip : public Op {
 public:
  using Op::Op;

 protected:
  void run() override {
    const size_t n = num_in();
    for (uint64_t elements = 0;;) {
      std::vector<Beat> bs(n);
      for (size_t i = 0; i < n; ++i) bs[i] = in(i).peek();
      charge(hw().shape_op_latency);
      elements += bs[0].has_elem;
      for (size_t i = 1; i < n; ++i) {
        if (bs[i].has_elem != bs[0].has_elem || bs[i].stop != bs[0].stop)
          fail("inputs differ in structure at " + element_number("in0", elements - bs[0].has_elem) + ": in0 has " +
               beat_text(bs[0]) + ", in" + std::to_string(i) + " has " + beat_text(bs[i]));
        if (bs[i].done != bs[0].done) {
          const size_t ended = bs[0].done ? 0 : i, longer = bs[0].done ? i : 0;
          fail("inputs differ in length: in" + std::to_string(ended) + " ended (D) after " + std::to_string(elements) +
               " elements, but in" + std::to_string(longer) + " goes on");
        }
      }
      Beat o = bs[0];
      if (o.has_elem) {
        auto t = std::make_shared<std::vector<Element>>();
        for (auto& b : bs) t->push_back(b.elem);
        o.elem = Element(Tuple(t));
      }
      emit(0, std::move(o));
      for (size_t i = 0; i < n; ++i) in(i).pop();
      if (bs[0].done) break;
    }
  }
};

}  // namespace

void register_shape_ops(OpRegistry& r) {
  const char* lat = "shape_op_latency cycles per beat (0 in step-artifact).";
  r.add(OpInfo{OpKind::kFlatten,
               "Flatten",
               OpCategory::kShape,
               "Merges dimensions min..max (0 = innermost) into one; ragged sizes absorb.",
               lat,
               {{"in", "rank-a stream"}},
               {{"out", "rank a-(max-min) stream"}},
               {param_spec(param::kMin, "0", "lowest merged dimension", false, kRankRange),
                param_spec(param::kMax, "1", "highest merged dimension", false, kRankRange)},
               false,
               [](const OpConfig& c) { return std::make_unique<Flatten>(c); }});
  r.add(OpInfo{OpKind::kReshape,
               "Reshape",
               OpCategory::kShape,
               "Splits dimension `rank` into chunks of `chunk`: [.., D, ..] -> [.., ceil(D/chunk), chunk, ..]. "
               "Only the innermost dimension (rank 0) is padded, with `pad`, flagged on the padding output; a "
               "dimension above it must be static and a multiple of `chunk`.",
               lat,
               {{"in", "rank-a stream"}},
               {{"out", "rank a+1 stream"}, {"pad", "1 where the element is padding, else 0", true}},
               {param_spec(param::kChunk, "", "chunk size S", true, {1, int64_t(kMaxStreamBeats)}),
                param_spec(param::kRank, "0", "dimension to split (0 = innermost)", false, {0, kMaxStopLevel - 1}),
                param_spec(param::kPad, "zero", "padding element (text notation) or 'zero' for a zero tile/scalar")},
               false,
               [](const OpConfig& c) { return std::make_unique<Reshape>(c); }});
  r.add(OpInfo{OpKind::kPromote,
               "Promote",
               OpCategory::kShape,
               "Adds a dimension of size 1 (0 for an empty stream): outermost by default, or above the `rank` "
               "innermost dimensions.",
               std::string(lat) + " The outermost form holds one beat until the done token.",
               {{"in", "rank-a stream"}},
               {{"out", "rank a+1 stream"}},
               {param_spec(param::kRank, "-1", "-1 = new outermost dimension; r >= 0 = insert above r inner dimensions",
                           false, {-1, kMaxStopLevel - 1})},
               false,
               [](const OpConfig& c) { return std::make_unique<Promote>(c); }});
  r.add(OpInfo{
      OpKind::kExpand,
      "Expand",
      OpCategory::kShape,
      "Repeats each data element across the reference stream's inner `rank` dimensions (dynamic broadcast).",
      lat,
      {{"in", "data whose inner `rank` dimensions have size 1"}, {"ref", "stream giving the shape"}},
      {{"out", "the ref's shape, data's elements"}},
      {param_spec(param::kRank, "1", "expand rank: the smallest stop level of the data stream", false, kRankRange)},
      false,
      [](const OpConfig& c) {
        return std::make_unique<Expand>(c);
      }}.with_onchip(OnChipFormula().output(1), OnChipFormula().output(1)));
  r.add(OpInfo{
      OpKind::kRepeat,
      "Repeat",
      OpCategory::kShape,
      "Adds a new innermost dimension holding `count` copies of every element.",
      "One copy per cycle: copies of an element arriving at t are sent at t..t+count-1.",
      {{"in", "rank-a stream"}},
      {{"out", "rank a+1 stream"}},
      {param_spec(param::kCount, "", "copies per element", true, {0, int64_t(kMaxStreamBeats)})},
      false,
      [](const OpConfig& c) {
        return std::make_unique<Repeat>(c);
      }}.with_onchip(OnChipFormula(), OnChipFormula().output(1)));
  r.add(OpInfo{OpKind::kZip,
               "Zip",
               OpCategory::kShape,
               "Pairs the elements of streams with identical structure into tuples.",
               lat,
               {{"in*", "streams of equal shape"}},
               {{"out", "stream of tuples"}},
               {},
               false,
               [](const OpConfig& c) { return std::make_unique<Zip>(c); }});
}

}  // namespace stepsim
