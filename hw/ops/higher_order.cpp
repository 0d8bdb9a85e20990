// Higher-order operators: Map, Accum, Scan, FlatMap. They apply a tile function
// (hw/functions) and are the only operators charged compute.
// Timing per element (reference-simulator-notes.md §3, roofline):
//   max(load, FLOPs / compute_bw, store)
// load = ceil(bytes / onchip_bw) for each input tile that sits in a memory unit (summed over
// inputs when `loads_sum_inputs`, else the max); store = ceil(out bytes / onchip_bw) when the
// output goes to a Bufferize (a memory unit). FIFO-to-FIFO I/O costs nothing.
#include <algorithm>
#include <memory>

#include "hw/functions/functions.h"
#include "hw/ops/op.h"

namespace stepsim {

namespace {

// Appends the tiles an element carries to `out`: itself, or the members of a Zip tuple.
// An error names it by its input and its index on that input.
void append_tiles(const Element& e, size_t input, uint64_t index, std::vector<Tile>& out) {
  if (e.is_tile()) {
    out.push_back(e.tile());
    return;
  }
  const std::string what = element_number("in" + std::to_string(input), index);
  if (!e.is_tuple()) throw OpError(what + " is " + e.brief() + ", not a tile");
  for (size_t k = 0; k < e.tuple()->size(); ++k) {
    const Element& m = (*e.tuple())[k];
    if (!m.is_tile())
      throw OpError(what + " is the tuple " + e.brief() + ", whose member " + std::to_string(k) + " (" + m.brief() +
                    ") is not a tile");
    out.push_back(m.tile());
  }
}

class HigherOrder : public Op {
 public:
  explicit HigherOrder(const OpConfig& c)
      : Op(c), matmul_(c.params.has(param::kFn) && applies_matmul(*c.info, c.params.get(param::kFn))) {}

 protected:
  // On-chip accounting: the operand tiles a function was applied to, and what the node holds
  // while it computes (an inner-product matmul keeps both operand tiles, since it re-reads them;
  // other Maps stream, so only matmuls note them; Accum/Scan add their accumulator).
  uint64_t note_args(const std::vector<Tile>& a) {
    note_operands(a);
    uint64_t held = 0;
    if (matmul_)
      for (const Tile& t : a) held += t.bytes();
    return held;
  }
  const bool matmul_;

  // Reads one beat from every input; checks they have the same structure. The beats (and
  // args()) live in members reused from element to element: no allocation per element.
  const std::vector<Beat>& peek_all() {
    std::vector<Beat>& bs = beats_;
    bs.clear();
    for (size_t i = 0; i < num_in(); ++i) bs.push_back(in(i).peek());
    // The done token may ride on the last beat of one input and come as a bare beat on another.
    bool any_done = false;
    for (size_t i = 0; i < bs.size(); ++i) {
      if (bs[i].has_elem != bs[0].has_elem || bs[i].stop != bs[0].stop)
        fail("inputs differ in structure after " + std::to_string(elements_) + " elements: in0 has " +
             beat_text(bs[0]) + ", in" + std::to_string(i) + " has " + beat_text(bs[i]));
      any_done = any_done || bs[i].done;
    }
    any_done_ = any_done;
    done0_ = bs[0].done;
    if (any_done) bs[0].done = true;
    return bs;
  }
  void pop_all() {
    for (size_t i = 0; i < num_in(); ++i) {
      in(i).discard();  // peek_all() copied the beat
      // An input whose done token did not ride on this beat sends it as a bare beat next.
      if (any_done_ && !(i == 0 ? done0_ : beats_[i].done)) {
        Beat d = in(i).recv();
        if (d.has_elem || d.stop || !d.done)
          fail("in" + std::to_string(i) + " is longer than the other inputs: they ended (D) after " +
               std::to_string(elements_) + " elements, in" + std::to_string(i) + " still has " + beat_text(d));
      }
    }
  }
  // With input_register (the fabric's units: an operand enters the unit's input buffer when it
  // arrives), the firing takes its input beats as it starts, so their channel slots free then;
  // otherwise (the reference) as it ends. Call both, at the start and at the end of a firing:
  // one of them dequeues (the beats stay readable: peek_all() copied them).
  void take_inputs_at_start() {
    if (hw().input_register) pop_all();
  }
  void take_inputs_at_end() {
    if (!hw().input_register) pop_all();
  }
  bool any_done_ = false;  // some input's beat peeked by peek_all() carried the done token
  bool done0_ = false;     // in0's beat did (peek_all() raises it on the beat it returns)
  // The operand tiles of the beats peek_all() returned.
  const std::vector<Tile>& args(const std::vector<Beat>& bs) { return args(bs.data(), bs.size()); }
  // Counts the element (elements_).
  const std::vector<Tile>& args(const Beat* bs, size_t n) {
    args_.clear();
    for (size_t i = 0; i < n; ++i) append_tiles(bs[i].elem, i, elements_, args_);
    ++elements_;
    return args_;
  }
  uint64_t elements_ = 0;  // elements taken from each input so far
  // Runs a tile function; its error (a shape mismatch, a bad dtype) also names what every input
  // carried and the channel it came on (producer end -> consumer end).
  template <class F>
  auto with_inputs(const std::vector<Beat>& bs, F&& f) -> decltype(f()) {
    return with_inputs(bs.data(), bs.size(), std::forward<F>(f));
  }
  template <class F>
  auto with_inputs(const Beat* bs, size_t n, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const std::exception& e) {
      std::string s = std::string(e.what()) + "; inputs:";
      for (size_t i = 0; i < n; ++i)
        s += std::string(i ? "," : "") + " in" + std::to_string(i) + " " +
             (bs[i].has_elem ? bs[i].elem.brief() : beat_text(bs[i])) + " on channel '" + in(i).name() + "'";
      fail(s);
    }
  }
  uint64_t load_cycles(const std::vector<Tile>& a) {
    uint64_t sum = 0, mx = 0;
    for (const Tile& t : a)
      if (t.in_memory_unit) {
        uint64_t c = mem_read_cycles(t.bytes());
        sum += c;
        mx = std::max(mx, c);
      }
    return hw().loads_sum_inputs ? sum : mx;
  }
  uint64_t store_cycles(const Tile& out) { return cfg_.write_back_mu[0] ? mem_write_cycles(out.bytes()) : 0; }
  Tile placed(Tile t) const {
    t.in_memory_unit = cfg_.write_back_mu[0];
    return t;
  }

 private:
  std::vector<Beat> beats_;
  std::vector<Tile> args_;
};

class Map : public HigherOrder {
 public:
  explicit Map(const OpConfig& c) : HigherOrder(c), fn_(map_function(c.params.get(param::kFn))) {}

 protected:
  void run() override {
    if (num_in() == 1 && !hw().input_register) return run_one();
    for (;;) {
      const std::vector<Beat>& bs = peek_all();
      take_inputs_at_start();
      Beat o = bs[0];
      if (o.has_elem) {
        const std::vector<Tile>& a = args(bs);
        note_onchip(note_args(a));
        Tile out = with_inputs(bs, [&] { return functional() ? fn_.apply(a) : fn_.out_shape(a); });
        const Arithmetic f = fn_.arithmetic(a);
        count_arithmetic(f);
        charge(std::max({load_cycles(a), compute_cycles(f.flops()), store_cycles(out)}));
        o.elem = Element(placed(std::move(out)));
      }
      emit(0, std::move(o));
      take_inputs_at_end();
      if (bs[0].done) break;
    }
  }

  // One input (the common case, docs/changelog.md, the fifth performance pass): the same steps as run()
  // (peek, charge, emit, then dequeue: the same times), but the input beat is read where it
  // sits in the channel instead of being copied by peek_all(), and the output beat is built
  // from its flags instead of from a copy of it. The slot cannot change before discard():
  // the producer only writes free slots.
  void run_one() {
    Channel& c = in(0);
    for (;;) {
      const Beat& b = c.peek();
      const bool done = b.done;
      if (b.has_elem) {
        const std::vector<Tile>& a = args(&b, 1);
        note_onchip(note_args(a));
        Tile out = with_inputs(&b, 1, [&] { return functional() ? fn_.apply(a) : fn_.out_shape(a); });
        const Arithmetic f = fn_.arithmetic(a);
        count_arithmetic(f);
        charge(std::max({load_cycles(a), compute_cycles(f.flops()), store_cycles(out)}));
        emit(0, Beat{Element(placed(std::move(out))), true, b.stop, b.done});
      } else {
        emit(0, b);
      }
      c.discard();
      if (done) break;
    }
  }

 private:
  const MapFunction& fn_;
};

// Accum<rank b> reduces the inner b dimensions.
class Accum : public HigherOrder {
 public:
  explicit Accum(const OpConfig& c) : HigherOrder(c), fn_(accum_function(c.params.get(param::kFn))) {
    rank_ = int_param(param::kRank, 1, kMaxStopLevel);
    bank_rank_ = int_param(param::kBankRank, 0, kMaxStopLevel - 2);
    if (bank_rank_ && rank_ != 2)
      fail("bank_rank needs rank 2 (the inner K dimension and the outer chunk dimension are reduced), got rank " +
           std::to_string(rank_));
  }

 protected:
  void run() override {
    if (bank_rank_) return run_bank();
    Tile acc = fn_.init();
    for (;;) {
      const std::vector<Beat>& bs = peek_all();
      take_inputs_at_start();
      const Beat& b = bs[0];
      uint64_t cost = 0;
      if (b.has_elem) {
        const std::vector<Tile>& a = args(bs);
        const uint64_t held = note_args(a);
        const Arithmetic f = with_inputs(bs, [&] { return fn_.arithmetic(acc, a); });
        count_arithmetic(f);
        acc = with_inputs(bs, [&] { return functional() ? fn_.update(std::move(acc), a) : fn_.acc_shape(acc, a); });
        note_onchip(held + acc.bytes());
        cost = std::max(load_cycles(a), compute_cycles(f.flops()));
      }
      const bool closes = b.stop >= rank_;
      if (closes) {
        const uint64_t ff = fn_.finalize_flops(acc);
        count_arithmetic(Arithmetic{0, 0, ff});
        Tile out = functional() ? fn_.finalize(acc) : fn_.out_shape(acc);
        cost = std::max({cost, compute_cycles(ff), store_cycles(out)});
        charge(cost);
        Beat o = Beat::data(Element(placed(std::move(out))), uint8_t(b.stop - rank_));
        o.done = b.done;
        emit(0, std::move(o));
        acc = fn_.init();
      } else {
        charge(cost);
        if (b.done) {
          if (!is_empty_acc(acc) || b.has_elem)
            fail("stream ended inside a reduction group (no closing S" + std::to_string(rank_) + ")");
          emit(0, Beat::done_beat());
        }
      }
      take_inputs_at_end();
      if (b.done) break;
    }
  }

 private:
  // bank_rank q: the input is [.., C, B1..Bq, K]; K and C are reduced, B1..Bq index a bank of
  // accumulators (a compute unit's partial tiles kept in its memory unit). Each K run folds into
  // its entry, continuing in every chunk c from where chunk c - 1 left it, so entry b equals a
  // rank-2 Accum over the reordered stream [.., B1..Bq, C, K], bit for bit. The last chunk's
  // close emits every entry in bank order (stops of the bank dimensions; the last entry takes the
  // closing stop - 2 and the done). The bank's size and stops come from the first chunk; later
  // chunks must repeat them.
  void run_bank() {
    const int q = bank_rank_;
    std::vector<Tile> bank;      // the entries of this outer group
    std::vector<uint8_t> stops;  // the output stop of each entry (from the first chunk)
    bool first_chunk = true;
    size_t m = 0;       // current entry
    uint64_t held = 0;  // bytes of the bank
    Tile acc = fn_.init();
    auto structure = [&](const Beat& b) {
      fail("bank_rank " + std::to_string(q) + ": S" + std::to_string(b.stop) + " closes entry " + std::to_string(m) +
           " of a bank of " + std::to_string(bank.size()) +
           " entries; every chunk must have the first chunk's bank structure");
    };
    for (;;) {
      const std::vector<Beat>& bs = peek_all();
      take_inputs_at_start();
      const Beat& b = bs[0];
      if (!b.has_elem) {
        if (b.stop)
          fail("bank_rank: bare S" + std::to_string(b.stop) + " (an empty K run or bank dimension) is not supported");
        if (!bank.empty() || !is_empty_acc(acc))
          fail("stream ended inside a banked reduction (no closing S" + std::to_string(q + 2) + ")");
        charge(0);
        emit(0, Beat::done_beat());
        take_inputs_at_end();
        break;
      }
      const std::vector<Tile>& a = args(bs);
      const uint64_t in_bytes = note_args(a);
      const Arithmetic f = with_inputs(bs, [&] { return fn_.arithmetic(acc, a); });
      count_arithmetic(f);
      acc = with_inputs(bs, [&] { return functional() ? fn_.update(std::move(acc), a) : fn_.acc_shape(acc, a); });
      note_onchip(in_bytes + held + acc.bytes());
      charge(std::max(load_cycles(a), compute_cycles(f.flops())));
      const int s = b.stop;
      const bool done = b.done;
      if (s > 0) {
        // Entry m's K run ends: into the bank (first chunk: a new entry).
        if (first_chunk) {
          held += acc.bytes();
          bank.push_back(std::move(acc));
          stops.push_back(uint8_t(std::min(s, q + 1) - 1));
        } else {
          if (s <= q ? m + 1 >= bank.size() : m + 1 != bank.size()) structure(b);
          bank[m] = std::move(acc);
        }
        if (s > q) {  // the chunk ends
          first_chunk = false;
          m = 0;
        } else {
          ++m;
        }
        if (s < q + 2) acc = first_chunk ? fn_.init() : std::move(bank[m]);  // the next entry's state
      }
      if (s >= q + 2) {  // the last chunk ends: the bank leaves
        for (size_t e = 0; e < bank.size(); ++e) {
          const bool last = e + 1 == bank.size();
          const uint64_t ff = fn_.finalize_flops(bank[e]);
          count_arithmetic(Arithmetic{0, 0, ff});
          Tile out = functional() ? fn_.finalize(bank[e]) : fn_.out_shape(bank[e]);
          charge(std::max(compute_cycles(ff), store_cycles(out)));
          Beat o = Beat::data(Element(placed(std::move(out))), last ? uint8_t(s - 2) : stops[e]);
          o.done = last && done;
          emit(0, std::move(o));
        }
        bank.clear();
        stops.clear();
        held = 0;
        first_chunk = true;
        m = 0;
        acc = fn_.init();
      } else if (done) {
        fail("stream ended inside a banked reduction (no closing S" + std::to_string(q + 2) + ")");
      }
      take_inputs_at_end();
      if (done) break;
    }
  }

  const AccumFunction& fn_;
  int rank_;
  int bank_rank_ = 0;
};

// Scan<rank b>: the running state of an Accum, emitted on every element (reset where a stop >= b
// closes the group). Forms (the reference simulator's, gina7484/step-perf src/operator/scan.rs):
//   * inclusive (default): `out` emits the state after the element;
//   * exclusive: `out` emits the state before it, the function's identity first in each group;
//   * out_fn: `out` emits out_fn(the element's operands.., that state) instead of the state: a
//     separate output function beside the update function;
//   * `prior` (an optional second output): the state before the element, beside `out`.
class Scan : public HigherOrder {
 public:
  explicit Scan(const OpConfig& c) : HigherOrder(c), fn_(accum_function(c.params.get(param::kFn))) {
    rank_ = int_param(param::kRank, 1, kMaxStopLevel);
    exclusive_ = c.params.get(param::kExclusive);
    const std::string out_fn = c.params.get(param::kOutFn);
    if (!out_fn.empty()) out_fn_ = &map_function(out_fn);
  }

 protected:
  void run() override {
    const bool prior_wanted = exclusive_ || has_out(1);
    if (prior_wanted && !fn_.identity) fail(identity_missing(fn_.name));
    Tile acc = fn_.init();
    for (;;) {
      const std::vector<Beat>& bs = peek_all();
      take_inputs_at_start();
      const Beat& b = bs[0];
      Beat o = b, p;
      if (has_out(1)) p = b;
      uint64_t cost = 0;
      if (b.has_elem) {
        const std::vector<Tile>& a = args(bs);
        const uint64_t held = note_args(a);
        Tile prior;
        if (prior_wanted) prior = with_inputs(bs, [&] { return state_of(acc, a); });
        Arithmetic f = with_inputs(bs, [&] { return fn_.arithmetic(acc, a); });
        acc = with_inputs(bs, [&] { return functional() ? fn_.update(std::move(acc), a) : fn_.acc_shape(acc, a); });
        note_onchip(held + acc.bytes());
        Tile shown = exclusive_ ? prior : (functional() ? fn_.finalize(acc) : fn_.out_shape(acc));
        if (out_fn_) f += with_inputs(bs, [&] { return apply_out_fn(a, shown); });
        count_arithmetic(f);
        cost = std::max({load_cycles(a), compute_cycles(f.flops()), store_cycles(shown), prior_store_cycles(prior)});
        o.elem = Element(placed(std::move(shown)));
        if (has_out(1)) p.elem = Element(placed_at(1, std::move(prior)));
      }
      charge(cost);
      emit(1, std::move(p));  // the prior tap first, as the reference enqueues it
      emit(0, std::move(o));
      if (b.stop >= rank_) acc = fn_.init();
      take_inputs_at_end();
      if (b.done) break;
    }
  }

 private:
  static std::string identity_missing(const std::string& fn) {
    return "an exclusive Scan or its prior output needs a function with an identity element (the state before "
           "the first element); accum function '" +
           fn + "' has none";
  }
  // The emitted form of `acc`; for a state that has seen nothing, the identity shaped as after
  // an update with `a`.
  Tile state_of(const Tile& acc, const std::vector<Tile>& a) const {
    if (is_empty_acc(acc)) return identity_output(fn_, a);
    return functional() ? fn_.finalize(acc) : fn_.out_shape(acc);
  }
  // `shown` becomes out_fn(a.., shown); returns the FLOPs it took.
  Arithmetic apply_out_fn(const std::vector<Tile>& a, Tile& shown) const {
    std::vector<Tile> operands = a;
    operands.push_back(shown);
    shown = functional() ? out_fn_->apply(operands) : out_fn_->out_shape(operands);
    return out_fn_->arithmetic(operands);
  }
  uint64_t prior_store_cycles(const Tile& prior) {
    return has_out(1) && cfg_.write_back_mu[1] ? mem_write_cycles(prior.bytes()) : 0;
  }
  Tile placed_at(size_t o, Tile t) const {
    t.in_memory_unit = cfg_.write_back_mu[o];
    return t;
  }

  const AccumFunction& fn_;
  const MapFunction* out_fn_ = nullptr;
  bool exclusive_ = false;
  int rank_;
};

// FlatMap<rank b>: each element expands into a rank-b stream; filter_padding drops elements
// whose padding flag (second input, from Reshape) is set.
class FlatMap : public HigherOrder {
 public:
  explicit FlatMap(const OpConfig& c) : HigherOrder(c) {
    name_ = c.params.get(param::kFn);
    rank_ = int_param(param::kRank, 0, kMaxStopLevel);
    fn_ = &flatmap_function(name_);
    // A filter of whole elements reads Reshape's scalar padding flags itself (the library
    // function takes an int32 [1x1] flag tile).
    filter_ = fn_->expansion == FlatMapFunction::Expansion::kFiltered;
  }

 protected:
  void run() override {
    for (;;) {
      const std::vector<Beat>& bs = peek_all();
      take_inputs_at_start();
      const Beat& b = bs[0];
      std::vector<Tile> outs;
      bool expanded = false;
      if (b.has_elem) {
        expanded = true;
        if (!filter_) {
          const std::vector<Tile>& a = args(bs);
          // Every function splits a tile by rows or by columns: at most that many tiles.
          if (!a.empty() && std::max(a[0].rows, a[0].cols) > kMaxStreamBeats)
            fail(element_number("in0", elements_ - 1) + " is " + a[0].to_string() + ", which " + name_ +
                 " could expand into more than " + std::to_string(kMaxStreamBeats) +
                 " tiles, the limit of what one element may become");
          note_operands(a);
          outs = functional() || fn_->arity > 1 ? fn_->apply(a) : fn_->out_shapes(a);
        } else {
          if (bs.size() < 2 || !bs[1].has_elem || !bs[1].elem.is_scalar())
            fail(name_ + " needs the padding flags (Reshape's pad output) on input 'pad'");
          if (bs[1].elem.scalar() == 0) outs.push_back(b.elem.tile());
        }
      }
      charge(0);
      // Output stops: the expansion closes with S_rank; the element's own stop s becomes s+rank.
      const uint8_t close = stop_level(b.stop ? b.stop + rank_ : (expanded ? rank_ : 0));
      if (outs.empty()) {
        if (close || b.done) {
          Beat o = close ? Beat::bare_stop(close) : Beat::done_beat();
          o.done = b.done;
          emit(0, o);
        }
      } else {
        for (size_t k = 0; k < outs.size(); ++k) {
          bool last = k + 1 == outs.size();
          Beat o = Beat::data(Element(placed(outs[k])), last ? close : 0);
          o.done = last && b.done;
          emit(0, std::move(o));
        }
      }
      take_inputs_at_end();
      if (b.done) break;
    }
  }

 private:
  std::string name_;
  const FlatMapFunction* fn_ = nullptr;
  bool filter_ = false;
  int rank_;
};

}  // namespace

void register_higher_order_ops(OpRegistry& r) {
  const std::string roofline =
      "Per element max(memory-unit loads, FLOPs / compute_bw, memory-unit store); loads only for tiles sitting in a "
      "memory unit, the store only when the consumer is a Bufferize.";
  auto fn_list = [](const std::vector<std::string>& names) {
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
  };
  r.add(OpInfo{OpKind::kMap,
               "Map",
               OpCategory::kHigherOrder,
               "Applies a tile function to every element (several inputs are zipped).",
               roofline,
               {{"in*", "streams of equal shape (tiles or tuples)"}},
               {{"out", "same shape"}},
               {param_spec(param::kFn, "", "map function: " + fn_list(map_function_names()), true)},
               true,
               [](const OpConfig& c) { return std::make_unique<Map>(c); }}
            .with_functions(FunctionFamily::kMap)
            .with_onchip(OnChipFormula().matmul(1), OnChipFormula()));
  r.add(OpInfo{
      OpKind::kAccum,
      "Accum",
      OpCategory::kHigherOrder,
      "Reduces the inner `rank` dimensions with an update function; the accumulator may be sized by its first "
      "input (dynamic tiling).",
      roofline + " The store term applies on the emitting element.",
      {{"in*", "streams of equal shape"}},
      {{"out", "rank a-b stream"}},
      {param_spec(param::kFn, "", "accum function: " + fn_list(accum_function_names()), true),
       param_spec(param::kRank, "1", "reduction rank b", false, {1, kMaxStopLevel}),
       param_spec(param::kBankRank, "0",
                  "q > 0 (needs rank 2): the input is [.., C, B1..Bq, K]; K and C are reduced into a bank of "
                  "accumulators indexed by B1..Bq, emitted in bank order after the last C (output [.., B1..Bq]); "
                  "bit-identical to rank 2 over [.., B1..Bq, C, K]",
                  false, {0, kMaxStopLevel - 2})},
      true,
      [](const OpConfig& c) { return std::make_unique<Accum>(c); }}
            .with_functions(FunctionFamily::kAccum)
            .with_onchip(OnChipFormula().matmul(1).output(1), OnChipFormula().output(1)));
  r.add(OpInfo{
      OpKind::kScan,
      "Scan",
      OpCategory::kHigherOrder,
      "Like Accum, but emits the accumulator state on every element: after it (inclusive), or before "
      "it (exclusive: the function's identity first in each group); with out_fn, what that function "
      "makes of the element's operands and the state; the optional `prior` output carries the state "
      "before each element.",
      roofline + " out_fn's FLOPs are added to the update's.",
      {{"in*", "streams of equal shape"}},
      {{"out", "same shape: the state (or out_fn of it)"},
       {"prior", "same shape: the state before each element (identity first in each group)", true}},
      {param_spec(param::kFn, "", "accum function (the update): " + fn_list(accum_function_names()), true),
       param_spec(param::kRank, "1", "rank at which the state resets", false, {1, kMaxStopLevel}),
       param_spec(param::kExclusive, "false",
                  "emit the state before each element instead of after it (needs a function with an identity: "
                  "the matmul_acc forms, add, add_f32, max)"),
       param_spec(param::kOutFn, "",
                  "map function applied to (the element's operands.., the state) to give `out`; empty: the state "
                  "itself. Map functions: " +
                      fn_list(map_function_names()))},
      true,
      [](const OpConfig& c) { return std::make_unique<Scan>(c); }}
            .with_functions(FunctionFamily::kAccum)
            .with_onchip(OnChipFormula().output(1), OnChipFormula().output(1)));
  r.add(OpInfo{
      OpKind::kFlatMap,
      "FlatMap",
      OpCategory::kHigherOrder,
      "Expands every element into a rank-`rank` stream (e.g. RetileStreamify) and concatenates them; "
      "filter_padding drops padded elements.",
      "0 cycles (the reference charges nothing for retiling). Every FlatMap function is pure data "
      "movement (0 FLOPs), so the node gets no compute units (like the artifact's RetileStreamify).",
      {{"in*", "data (plus the padding flags for filter_padding)"}},
      {{"out", "rank a+rank stream"}},
      {param_spec(param::kFn, "", "flatmap function: " + fn_list(flatmap_function_names()), true),
       param_spec(param::kRank, "1", "rank of each expansion (0 for filter_padding)", false, kRankRange)},
      false,
      [](const OpConfig& c) {
        return std::make_unique<FlatMap>(c);
      }}.with_functions(FunctionFamily::kFlatMap));
}

}  // namespace stepsim
