// Dynamic routing and merging operators, plus Broadcast and Parallelize.
// Timing (reference-simulator-notes.md §3, v1 §4.2): the selector is taken first; each element
// Partition routes then costs the memory-unit read (if it sits in one) plus
// `routing_switch_cycles` plus the memory-unit write (if the consumer is a Bufferize); Reassemble
// releases each element at max(now, arrival + switch + read) + write. Arrival-order decisions are
// made in model time (Context::select_earliest), ties to the lowest input.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "hw/ops/op.h"

namespace stepsim {

namespace {

uint64_t tile_bytes_in_mu(const Beat& b) {
  return b.has_elem && b.elem.is_tile() && b.elem.tile().in_memory_unit ? b.elem.tile().bytes() : 0;
}

class Broadcast : public Op {
 public:
  using Op::Op;

 protected:
  void run() override {
    for (;;) {
      Beat b = in(0).recv();
      charge(0);
      bool done = b.done;
      emit_all(b);
      if (done) break;
    }
  }
};

// Partition<rank b>: each selector element routes one chunk (data up to the first S_b; one
// element for b = 0) to every output whose bit is set. Outer dimensions are flattened.
class Partition : public Op {
 public:
  explicit Partition(const OpConfig& c) : Op(c) { rank_ = int_param(param::kRank, 0, kMaxStopLevel); }

 protected:
  void run() override {
    for (;;) {
      Beat sel = in(1).recv();
      if (sel.has_elem) {
        if (!sel.elem.is_selector())
          fail(element_number("sel", selectors_) + " is " + sel.elem.brief() + ", not a selector");
        if (data_done_) data_ended(sel.elem);
        route_chunk(sel.elem);
        ++selectors_;
      }
      if (sel.done) break;
    }
    // The selector ended: only the data's outer structure and its done may remain.
    while (!data_done_) {
      Beat b = in(0).recv();
      if (b.has_elem)
        fail("the data stream 'in' has more chunks than the selector stream 'sel': 'sel' ended (D) after " +
             std::to_string(selectors_) + " selectors, but 'in' goes on: " + element_number("in", elements_) + " is " +
             b.elem.brief());
      if (b.done) break;
    }
    for (size_t o = 0; o < num_out(); ++o) emit(o, Beat::done_beat());
  }

 private:
  [[noreturn]] void data_ended(const Element& sel) const {
    fail("the selector stream 'sel' has more elements than the data stream 'in': 'in' ended (D) after " +
         std::to_string(elements_) + " elements in " + std::to_string(selectors_) +
         " chunks, but 'sel' goes on: " + element_number("sel", selectors_) + " is " + sel.brief());
  }

  void route_chunk(const Element& sel) {
    const Selector& s = sel.selector();
    for (int i : s.indices())
      if (size_t(i) >= num_out())
        fail("selector " + sel.brief() + " names output " + std::to_string(i) + " but only " +
             std::to_string(num_out()) + " outputs exist");
    for (;;) {
      Beat b = in(0).peek();
      if (b.done && !b.has_elem && !b.stop) data_ended(sel);
      // Rank 0 routes single elements: a bare stop is outer structure, not a chunk. For rank >= 1
      // every stop >= rank closes one chunk, also a bare one (an empty chunk or empty inner dims).
      if (rank_ == 0 && !b.has_elem && b.stop > 0) {
        in(0).pop();
        data_done_ = b.done;
        if (b.done) data_ended(sel);
        continue;
      }
      bool wb = false;
      for (int i : s.indices()) wb = wb || cfg_.write_back_mu[size_t(i)];
      uint64_t cost = mem_read_cycles(tile_bytes_in_mu(b)) + hw().routing_switch_cycles;
      if (wb && b.has_elem) cost += mem_write_cycles(b.elem.bytes());
      charge(cost);
      Beat o = b;
      o.done = false;
      if (o.stop > rank_) o.stop = uint8_t(rank_);
      if (rank_ == 0) o.stop = 0;
      for (int i : s.indices()) emit(size_t(i), o);
      in(0).pop();
      elements_ += b.has_elem;
      data_done_ = b.done;
      bool chunk_end = rank_ == 0 ? b.has_elem : b.stop >= rank_;
      if (chunk_end) return;
      if (b.done)
        fail("the data stream 'in' ended (D) inside a chunk: no S" + std::to_string(rank_) + " closed chunk " +
             std::to_string(selectors_) + " (counting from 0)");
    }
  }

  int rank_;
  bool data_done_ = false;
  uint64_t selectors_ = 0;  // selector elements taken (= chunks routed)
  uint64_t elements_ = 0;   // data elements routed
};

// Reassemble<rank a>: for each selector element, takes one chunk from every selected input in
// arrival order (no interleaving) and closes the group with S_{a+1} (plus the selector's stops).
class Reassemble : public Op {
 public:
  explicit Reassemble(const OpConfig& c) : Op(c) { rank_ = int_param(param::kRank, 0, kMaxStopLevel - 1); }

 protected:
  void run() override {
    const size_t n = num_in() - 1;  // last input is the selector
    Channel& selc = in(n);
    chunks_.assign(n, 0);
    for (uint64_t selectors = 0;; ++selectors) {
      Beat sel = selc.recv();
      const uint8_t group_close = stop_level(rank_ + 1 + sel.stop, true);
      if (!sel.has_elem) {
        if (sel.stop) {
          Beat o = Beat::bare_stop(group_close);
          o.done = sel.done;
          emit(0, o);
        } else if (sel.done) {
          emit(0, Beat::done_beat());
        }
        if (sel.done) break;
        continue;
      }
      if (!sel.elem.is_selector())
        fail(element_number("sel", selectors) + " is " + sel.elem.brief() + ", not a selector");
      std::vector<int> pending = sel.elem.selector().indices();
      for (int i : pending)
        if (size_t(i) >= n)
          fail("selector " + sel.elem.brief() + " names input " + std::to_string(i) + " but only " + std::to_string(n) +
               " inputs exist");
      if (pending.empty()) {
        Beat o = Beat::bare_stop(group_close);
        o.done = sel.done;
        emit(0, o);
      }
      while (!pending.empty()) {
        std::vector<Channel*> cands;
        for (int i : pending) cands.push_back(&in(size_t(i)));
        int k = ctx().select_earliest(cands);
        if (k < 0) input_ended(size_t(pending[0]), sel.elem, selectors);
        const int src = pending[size_t(k)];
        pending.erase(pending.begin() + k);
        const bool last_chunk = pending.empty();
        Channel& c = in(size_t(src));
        for (;;) {
          Beat b = c.peek();
          if (b.done && !b.has_elem && !b.stop) input_ended(size_t(src), sel.elem, selectors);
          // Reference rule: released at max(now, arrival + switch_cycles + ld) + st, so the switch
          // overlaps a wait for data but never precedes the arrival.
          const uint64_t ready =
              c.head_ready_time() + hw().routing_switch_cycles + mem_read_cycles(tile_bytes_in_mu(b));
          const uint64_t st = cfg_.write_back_mu[0] && b.has_elem ? mem_write_cycles(b.elem.bytes()) : 0;
          // input_register: the element enters the router's input buffer on arrival (peek has
          // moved the clock there), so its channel slot frees while it is routed.
          const bool taken = hw().input_register;
          if (taken) c.discard();
          charge(std::max(ready, ctx().now()) - ctx().now() + st);
          bool chunk_end = rank_ == 0 ? b.has_elem : b.stop >= rank_;
          Beat o = b;
          o.done = false;
          if (chunk_end) {
            o.stop = uint8_t(last_chunk ? group_close : rank_);
            if (!last_chunk && rank_ == 0) o.stop = 0;
            o.done = last_chunk && sel.done;
          }
          emit(0, std::move(o));
          if (!taken) c.discard();
          if (chunk_end) break;
          if (b.done)
            fail("input 'in" + std::to_string(src) + "' ended (D) inside a chunk: no S" + std::to_string(rank_) +
                 " closed its chunk " + std::to_string(chunks_[size_t(src)]) + " (counting from 0)");
        }
        ++chunks_[size_t(src)];
      }
      if (sel.done) break;
    }
    // Every input must end now.
    for (size_t i = 0; i < n; ++i) {
      for (;;) {
        if (in(i).done_sent() && in(i).empty()) break;
        Beat b = in(i).recv();
        // A bare stop of the chunk rank left over is an empty chunk nobody selected.
        if (b.has_elem || (rank_ > 0 && b.stop >= rank_))
          fail("input 'in" + std::to_string(i) +
               "' has more chunks than the selector stream 'sel' selects: 'sel' "
               "ended (D) after selecting " +
               std::to_string(chunks_[i]) + " chunks of it, 'in" + std::to_string(i) + "' still has " +
               (b.has_elem ? b.elem.brief() : "an empty chunk (" + beat_text(b) + ")"));
        if (b.done) break;
      }
    }
  }

 private:
  [[noreturn]] void input_ended(size_t i, const Element& sel, uint64_t selectors) const {
    fail("the selector stream 'sel' selects more chunks of input 'in" + std::to_string(i) + "' than it has: 'in" +
         std::to_string(i) + "' ended (D) after " + std::to_string(chunks_[i]) +
         " chunks, but 'sel' goes on: " + element_number("sel", selectors) + " is " + sel.brief());
  }

  int rank_;
  std::vector<uint64_t> chunks_;  // chunks taken from each input
};

// EagerMerge<rank a>: forwards whole chunks from whichever input has one first, and emits the
// source index as a one-hot selector on `sel`.
class EagerMerge : public Op {
 public:
  explicit EagerMerge(const OpConfig& c) : Op(c) { rank_ = int_param(param::kRank, 0, kMaxStopLevel); }

 protected:
  void run() override {
    const size_t n = num_in();
    if (n > size_t(Selector::kMaxBits))
      fail(std::to_string(n) + " inputs, but a selector names at most " + std::to_string(Selector::kMaxBits));
    std::vector<bool> live(n, true);
    size_t remaining = n;
    while (remaining) {
      std::vector<Channel*> cands;
      std::vector<size_t> idx;
      for (size_t i = 0; i < n; ++i)
        if (live[i]) {
          cands.push_back(&in(i));
          idx.push_back(i);
        }
      int k = ctx().select_earliest(cands);
      if (k < 0) break;
      const size_t src = idx[size_t(k)];
      Channel& c = in(src);
      bool sent_sel = false;  // a chunk of this input is open on the output
      for (;;) {
        Beat b = c.peek();
        // Outer structure or the end; a bare stop above the rank inside an open chunk closes it.
        if (!b.has_elem && (b.stop == 0 || (b.stop > rank_ && !sent_sel))) {
          c.pop();
          if (b.done) {
            live[src] = false;
            --remaining;
          }
          if (!sent_sel) break;
          if (b.done) chunk_unclosed(src);
          continue;
        }
        if (!sent_sel) {
          emit(1, Beat::data(Element(Selector::one_hot(int(src)))));
          sent_sel = true;
        }
        Beat o = b;
        o.done = false;
        bool chunk_end = rank_ == 0 ? b.has_elem : b.stop >= rank_;
        if (o.stop > rank_) o.stop = uint8_t(rank_);
        if (rank_ == 0) o.stop = 0;
        emit(0, std::move(o));
        c.pop();
        // One element per cycle, no memory-unit terms: the reference's EagerMerge has no
        // read/write-back flags (reference-simulator-notes.md §3).
        charge(1);
        if (b.done) {
          live[src] = false;
          --remaining;
          if (!chunk_end) chunk_unclosed(src);
        }
        if (chunk_end || b.done) break;
      }
    }
    emit(0, Beat::done_beat());
    emit(1, Beat::done_beat());
  }

 private:
  [[noreturn]] void chunk_unclosed(size_t i) const {
    fail("input 'in" + std::to_string(i) + "' ended (D) inside a chunk: no S" + std::to_string(rank_) +
         " closed it (the input's rank is below the merge rank " + std::to_string(rank_) + ")");
  }

  int rank_;
};

// Parallelize<rank r>: static round-robin distribution of chunks over the outputs.
class Parallelize : public Op {
 public:
  explicit Parallelize(const OpConfig& c) : Op(c) { rank_ = int_param(param::kRank, 0, kMaxStopLevel); }

 protected:
  void run() override {
    size_t next = 0;
    bool open = false;  // a chunk is open on output `next`
    for (;;) {
      Beat b = in(0).recv();
      charge(0);
      // Outer structure or the end; a bare stop above the rank inside an open chunk closes it.
      if (!b.has_elem && (b.stop == 0 || (b.stop > rank_ && !open))) {
        if (b.done && open) chunk_unclosed();
        if (b.done) break;
        continue;
      }
      Beat o = b;
      o.done = false;
      bool chunk_end = rank_ == 0 ? b.has_elem : b.stop >= rank_;
      if (o.stop > rank_) o.stop = uint8_t(rank_);
      if (rank_ == 0) o.stop = 0;
      emit(next, std::move(o), hw().routing_switch_cycles);
      open = !chunk_end;
      if (chunk_end) next = (next + 1) % num_out();
      if (b.done && open) chunk_unclosed();
      if (b.done) break;
    }
    for (size_t o = 0; o < num_out(); ++o) emit(o, Beat::done_beat());
  }

 private:
  [[noreturn]] void chunk_unclosed() const {
    fail("the input ended (D) inside a chunk: no S" + std::to_string(rank_) +
         " closed it (the input's rank is below the parallelize rank " + std::to_string(rank_) + ")");
  }

  int rank_;
};

// TopK<k>: a router computed from the data. For each [1 x E] tile of scores, the selector of its
// k largest columns (ties: the lower column first; NaN above every number, as torch.topk) and, on
// the optional `mask` output, a [1 x E] tile of the input's dtype with 1 at those columns and 0
// elsewhere (a MoE's gate weights are the scores times the mask). Stops pass through. The
// routing depends on values: tiles without a payload (timing mode) are an error.
class TopK : public Op {
 public:
  explicit TopK(const OpConfig& c) : Op(c) { k_ = int_param(param::kK, 1, Selector::kMaxBits); }

 protected:
  void run() override {
    for (;;) {
      Beat b = in(0).recv();
      if (b.has_elem) {
        charge(1);
        const std::vector<int> top = chosen(b.elem);
        Beat sel = b;
        Selector s;
        for (int i : top) s.set(i);
        sel.elem = Element(s);
        if (has_out(1)) emit(1, mask_beat(b, top));
        emit(0, std::move(sel));
      } else {
        charge(0);
        emit_all(b);
      }
      if (b.done) break;
    }
  }

 private:
  // The columns of the k largest scores, in column order.
  std::vector<int> chosen(const Element& e) const {
    if (!e.is_tile() || e.tile().rows != 1)
      fail("input carries " + e.brief() + "; TopK takes [1 x E] tiles of scores");
    const Tile& t = e.tile();
    if (!t.has_data())
      fail("the tile " + e.brief() + " carries no values: TopK routes by value, so it runs in functional mode "
           "(a timing run takes its routing from a trace, as the MoE layers do)");
    if (t.dtype == DType::INT32 || t.cols > uint32_t(Selector::kMaxBits) || uint32_t(k_) > t.cols)
      fail("k = " + std::to_string(k_) + " of " + e.brief() + ": TopK takes float tiles of k..." +
           std::to_string(Selector::kMaxBits) + " columns");
    std::vector<int> idx(t.cols);
    for (uint32_t j = 0; j < t.cols; ++j) idx[j] = int(j);
    auto before = [&t](int a, int b) {
      const float x = t.f(0, uint32_t(a)), y = t.f(0, uint32_t(b));
      if (std::isnan(x) != std::isnan(y)) return std::isnan(x);
      if (x != y && !std::isnan(x)) return x > y;
      return a < b;
    };
    std::stable_sort(idx.begin(), idx.end(), before);
    idx.resize(size_t(k_));
    std::sort(idx.begin(), idx.end());
    return idx;
  }

  Beat mask_beat(const Beat& b, const std::vector<int>& top) const {
    const Tile& t = b.elem.tile();
    std::vector<float> v(t.cols, 0.0f);
    for (int i : top) v[size_t(i)] = 1.0f;
    Beat m = b;
    m.elem = Element(make_tile(1, t.cols, t.dtype, std::move(v)));
    return m;
  }

  int k_;
};

}  // namespace

void register_routing_ops(OpRegistry& r) {
  r.add(OpInfo{OpKind::kTopK,
               "TopK",
               OpCategory::kRouting,
               "Routes by value: for each [1 x E] tile of scores, a selector of its k largest columns (ties to the "
               "lower column, NaN first) and optionally a [1 x E] mask with 1 at those columns; needs values "
               "(functional mode).",
               "1 cycle per element; stops pass through at once.",
               {{"in", "[1 x E] tiles of scores (E <= 256)"}},
               {{"sel", "a multi-hot selector of k bits per tile"},
                {"mask", "[1 x E] tiles: 1 at the chosen columns, 0 elsewhere (the input's dtype)", true}},
               {param_spec(param::kK, "", "experts chosen per tile", true, {1, Selector::kMaxBits})},
               false,
               [](const OpConfig& c) { return std::make_unique<TopK>(c); }});
  r.add(OpInfo{OpKind::kBroadcast,
               "Broadcast",
               OpCategory::kRouting,
               "Copies a stream to every output (streams are consumed once).",
               "0 cycles; sends to each output in turn, so a full output stalls all.",
               {{"in", "stream"}},
               {{"out*", "identical copies"}},
               {},
               false,
               [](const OpConfig& c) { return std::make_unique<Broadcast>(c); }});
  r.add(OpInfo{OpKind::kPartition,
               "Partition",
               OpCategory::kRouting,
               "Routes each chunk (data up to the first S_rank) to every output whose selector bit is set; outer "
               "dimensions flatten into one dynamic dimension per output.",
               "Per element: memory-unit read (if in one) + routing_switch_cycles + memory-unit write (if the "
               "consumer is a Bufferize).",
               {{"in", "data, rank a"}, {"sel", "multi-hot selectors over the outer a-rank dimensions"}},
               {{"out*", "rank `rank` stream per output"}},
               {param_spec(param::kRank, "0", "partition rank: inner dimensions routed per selector element", false,
                           kRankRange)},
               false,
               [](const OpConfig& c) { return std::make_unique<Partition>(c); }});
  r.add(OpInfo{
      OpKind::kReassemble,
      "Reassemble",
      OpCategory::kRouting,
      "For each selector element, concatenates one chunk from every selected input in arrival order "
      "(no interleaving) and adds a dimension.",
      "Each element is released at max(now, arrival + routing_switch_cycles + memory-unit read) + "
      "memory-unit write (read if it sits in one, write if the consumer is a Bufferize).",
      {{"in*", "rank-a inputs"}, {"sel", "multi-hot selectors"}},
      {{"out", "rank a+b+1 stream"}},
      {param_spec(param::kRank, "0", "reassemble rank a: each chunk is a level-a unit", false, {0, kMaxStopLevel - 1})},
      false,
      [](const OpConfig& c) { return std::make_unique<Reassemble>(c); }});
  r.add(OpInfo{OpKind::kEagerMerge,
               "EagerMerge",
               OpCategory::kRouting,
               "Forwards whole chunks in arrival order from any input and emits the source index as a selector.",
               "0-cycle latency, one element per cycle; ties go to the lowest input.",
               {{"in*", "rank-a inputs"}},
               {{"out", "merged data"}, {"sel", "one-hot selector per chunk (rank 0)"}},
               {param_spec(param::kRank, "0", "chunk rank a", false, kRankRange)},
               false,
               [](const OpConfig& c) { return std::make_unique<EagerMerge>(c); }});
  r.add(OpInfo{OpKind::kParallelize,
               "Parallelize",
               OpCategory::kRouting,
               "Distributes chunks (units of the `rank` inner dimensions) round-robin over the outputs (static "
               "parallelization): output i of p gets chunks i, i+p, ..., ceil((n-i)/p) of n; the dimensions above "
               "the chunks flatten into one (docs/semantics.md).",
               "0 cycles; each element becomes visible routing_switch_cycles later.",
               {{"in", "stream"}},
               {{"out*", "one stream per region"}},
               {param_spec(param::kRank, "0", "chunk rank", false, kRankRange)},
               false,
               [](const OpConfig& c) { return std::make_unique<Parallelize>(c); }});
}

}  // namespace stepsim
