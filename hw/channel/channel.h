// Bounded, timestamped FIFO channel with DAM semantics (architecture.md §4).
//
// Model time is carried in the beats, not in SystemC time: every operator keeps its own local
// clock (Context::now) and only blocks when an input is empty or an output is full, so a
// module wakes only when data or space arrives. Semantics:
//   - a beat sent at sender time t is visible to the receiver at t + send_latency;
//   - capacity counts beats sent but not yet dequeued; a slot freed by a dequeue at time t is
//     reusable by the sender from t + response_latency;
//   - receive advances the receiver's clock to the beat's visible time.
// Blocking reads and writes make results independent of the order in which operators run
// (Kahn); decisions on "what has arrived" go through Context::select_earliest.
//
// Speed (docs/performance.md): send/peek/pop are the innermost loop of every simulation, so
// their common path is inline here and everything rare (blocking, stalls, logging, an element
// unlike the previous one, a new occupancy peak) is out of line.
// The ring is indexed by wrapping positions (no division per beat). A slot holds its beat in
// raw storage, and a beat is relocated in and out (relocate_beat, hw/stream/token.h) instead
// of moved through std::variant's per-alternative dispatch. The element statistics (channel
// elements and bytes, and the producer's per-output TileStat) are run-length counts: a tile of
// the same shape as the previous one, or a scalar, selector or buffer reference after one of
// its kind, only increments a counter; stats() and output_stat() derive the totals.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "hw/channel/context.h"
#include "hw/stream/token.h"

namespace stepsim {

struct ChannelParams {
  uint32_t depth = 2;             // capacity in beats (>= 1)
  uint32_t send_latency = 1;      // cycles from send to visibility
  uint32_t response_latency = 1;  // cycles from dequeue to slot reuse
  // Beats the producer may send ahead of the FIFO (an address generator's tiles in flight,
  // Op::output_inflight): a beat sent with an extra delay waits for its data in the producer,
  // not in a FIFO slot, so the FIFO's `depth` slots bound only the beats that have arrived.
  // Beat k becomes visible at max(send + send_latency + extra_delay, the release of beat
  // k - depth's slot + send_latency): what a FIFO of `depth` fed by a staging buffer of
  // `inflight` entries gives. The producer blocks when depth + inflight beats are held.
  uint32_t inflight = 0;
};

struct ChannelStats {
  uint64_t beats = 0;                   // transfers
  uint64_t elements = 0;                // beats carrying an element
  uint64_t bytes = 0;                   // element bytes carried
  uint32_t peak_occupancy = 0;          // max beats held at once
  uint64_t producer_stall_cycles = 0;   // sender waited for a free slot
  uint64_t consumer_starve_cycles = 0;  // receiver waited for data
  uint64_t last_send_time = 0;
};

// Largest elements seen on a stream (the on-chip accounting of hw/ops/op.h: every output port of
// an operator has one, kept by its channel).
struct TileStat {
  uint64_t max_elem_bytes = 0;  // largest element (a tuple counts all members; a buffer ref 8 B)
  uint64_t max_tile_bytes = 0;  // largest tile (a tuple's largest member tile)
  uint32_t max_cols = 0;        // largest innermost dimension of a tile
  uint64_t max_row_bytes = 0;   // largest cols x dtype bytes of a tile (one row)
  uint64_t count = 0;           // elements seen
  void add(const Element& e) {
    if (const Tile* t = std::get_if<Tile>(&e.v))
      add_element(*t);
    else
      add_other(e);
  }
  // One element that is the tile t: add(const Element&) without building an Element (the
  // operand statistics of Op::note_operands, once per tile function call).
  void add_element(const Tile& t) {
    ++count;
    // Streams mostly carry tiles of one shape: the maxima cannot change for a repeat.
    if (t.rows == last_rows_ && t.cols == last_cols_ && t.dtype == last_dtype_) return;
    last_rows_ = t.rows;
    last_cols_ = t.cols;
    last_dtype_ = t.dtype;
    const uint64_t b = t.bytes();
    max_elem_bytes = std::max(max_elem_bytes, b);
    max_tile_bytes = std::max(max_tile_bytes, b);
    max_cols = std::max(max_cols, t.cols);
    max_row_bytes = std::max(max_row_bytes, uint64_t(t.cols) * dtype_bytes(t.dtype));
  }
  void add(const Tile& t) {
    max_tile_bytes = std::max(max_tile_bytes, t.bytes());
    max_cols = std::max(max_cols, t.cols);
    max_row_bytes = std::max(max_row_bytes, uint64_t(t.cols) * dtype_bytes(t.dtype));
  }
  void add_other(const Element& e);  // any element (the out-of-line path of add)
  void merge(const TileStat& o);
  // n more elements of a shape add() has already recorded (the maxima cannot change).
  void add_repeats(uint64_t n) { count += n; }

 private:
  // Shape of the last tile add_element recorded (none yet: no tile has UINT32_MAX rows).
  uint32_t last_rows_ = UINT32_MAX, last_cols_ = 0;
  DType last_dtype_ = DType::BF16;
};

// One logged transfer (co-simulation transaction logs, docs/cosim.md): the sender's model time.
struct LoggedBeat {
  uint64_t cycle = 0;
  Beat beat;
};

class alignas(64) Channel {
 public:
  Channel(std::string name, ChannelParams params, Context* producer, Context* consumer);
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  const std::string& name() const { return name_; }
  const ChannelParams& params() const { return params_; }
  // The statistics so far (derived from the run-length counters on every call).
  const ChannelStats& stats() const;
  // The elements sent so far, as the producer's on-chip output accounting (TileStat). A beat
  // whose send is still blocked (a run that ended in a deadlock) counts, as it did when the
  // operator recorded it before sending.
  TileStat output_stat() const;
  Context* producer() const { return producer_; }
  Context* consumer() const { return consumer_; }

  // Producer side. Blocks while full; advances the producer's clock past the slot's release
  // time. `extra_delay` adds cycles to this beat's visibility without advancing the producer
  // (an output stage latency). Returns the beat's visible time (a staged channel, see
  // ChannelParams::inflight, may raise it when an earlier beat leaves).
  uint64_t send(const Beat& beat, uint64_t extra_delay = 0) { return send(Beat(beat), extra_delay); }
  __attribute__((always_inline)) uint64_t send(Beat&& beat, uint64_t extra_delay = 0) {
    Context* p = producer_;
    if (size_ >= depth_) wait_for_space(beat);
    Slot& s = ring_[tail_pos_];
    uint64_t now = p->now();
    if (s.freed > now) now = stall(s.freed);
    s.sent = now;
    uint64_t ready = now + send_latency_ + extra_delay;
    if (staged_) ready = staged_ready(ready);
    s.ready = ready;
    if (beat.has_elem) {
      const Element& e = beat.elem;
      const Tile* t = std::get_if<Tile>(&e.v);
      if (t ? t->rows == run_rows_ && t->cols == run_cols_ && t->dtype == run_dtype_ : e.v.index() == run_kind_)
        ++run_;
      else
        note_element(e);
    }
    if (beat.done) done_sent_ = true;
    if (log_) log_beat(now, beat);
    relocate_beat(s.raw, beat);
    if (++tail_pos_ == depth_) tail_pos_ = 0;
    ++size_;
    ++beats_;
    p->scheduler()->note_progress();
    if (consumer_waits_) {
      consumer_waits_ = false;
      consumer_->wake();
    }
    return ready;
  }
  // Consumer side. peek blocks until a beat is present and advances the consumer's clock to its
  // visible time; pop dequeues the head at the consumer's current time.
  const Beat& peek() {
    if (size_ == 0) wait_for_data();
    Slot& s = ring_[head_pos_];
    Context* c = consumer_;
    if (s.ready > c->now()) starve(s.ready);
    return *s.beat();
  }
  Beat pop() {
    Beat* b = dequeue();
    Beat r;  // an empty beat owns nothing: its bytes may be overwritten
    std::memcpy(static_cast<void*>(&r), static_cast<const void*>(b), sizeof(Beat));  // the slot is raw storage again
    return r;
  }
  Beat recv() { return pop(); }  // pop() waits (and advances the clock) like peek() first
  // pop() for a step function (StepOp) that passes the beat on: the head beat, dequeued but
  // left in its slot, saving the copy out. Nothing else runs until the caller parks or returns
  // (a step function never blocks), so the slot cannot be reused before then: move the beat
  // out (send it, or move it into a member) first.
  Beat& take() { return *dequeue(); }
  // pop() for a consumer that does not need the beat (it read it with peek()): the same
  // dequeue, and the beat is destroyed in its slot instead of being moved out first.
  void discard() { dequeue()->~Beat(); }

  // Non-blocking views used by arbitration and lower-bound computation.
  bool empty() const { return size_ == 0; }
  bool full() const { return size_ >= depth_; }
  uint64_t head_ready_time() const { return ring_[head_pos_].ready; }
  const Beat& head() const { return *ring_[head_pos_].beat(); }
  // Release time of the slot the next send will use (valid when !full()).
  uint64_t next_slot_free_time() const { return ring_[tail_pos_].freed; }
  // True once the done beat was sent: nothing follows it.
  bool done_sent() const { return done_sent_; }
  uint32_t occupancy() const { return size_; }
  // A stepped producer (StepOp) holding `b` until this channel has space: counted in
  // output_stat() like a blocked send's beat, if the run ends first. Null once it is sent.
  void set_pending(const Beat* b) { pending_ = b; }
  // Co-simulation (SimOptions::log_nodes): records every beat sent, with the sender's time.
  void enable_log() {
    logged_ = true;
    log_ = &log_beats_;
  }
  bool logged() const { return logged_; }
  // A bridge that takes over the channel's sends (a memory unit's write path) stops the recording
  // and later stands in its own record.
  void stop_log() { log_ = nullptr; }
  void replace_log(std::vector<LoggedBeat> beats) { log_beats_ = std::move(beats); }
  // The record, moved out (the run's results take it: sim/engine/collect.cpp).
  std::vector<LoggedBeat> take_log() { return std::move(log_beats_); }
  // The consumer (producer) waits for this channel's next send (dequeue): that wakes it
  // (Context::wake). Set by the context as it blocks, cleared by the wake or, after an
  // arbitration wait on several channels, by the context itself. A flag in the channel rather
  // than a look at the other context's state: send and dequeue touch only their own context.
  void set_consumer_waits(bool w) { consumer_waits_ = w; }
  void set_producer_waits(bool w) { producer_waits_ = w; }

 private:
  struct Slot {
    alignas(Beat) unsigned char raw[sizeof(Beat)];  // the beat held (constructed by send)
    uint64_t ready = 0;                             // visible time of the beat held
    uint64_t freed = 0;                             // time the slot becomes reusable by the sender
    uint64_t sent = 0;                              // send time of the beat held
    Beat* beat() { return std::launder(reinterpret_cast<Beat*>(raw)); }
    const Beat* beat() const { return std::launder(reinterpret_cast<const Beat*>(raw)); }
  };

  // The dequeue of pop() and discard(): waits for the head beat, advances the consumer's clock
  // to its visible time, frees the slot at that time; returns the beat, still in its slot.
  __attribute__((always_inline)) Beat* dequeue() {
    if (size_ == 0) wait_for_data();
    Slot& s = ring_[head_pos_];
    Context* c = consumer_;
    uint64_t now = c->now();
    if (s.ready > now) now = starve(s.ready);
    s.freed = now + response_latency_;
    if (staged_ && size_ > fifo_depth_) release_staged(s.freed);
    if (peak_ < depth_) note_occupancy(s.sent);
    if (++head_pos_ == depth_) head_pos_ = 0;
    --size_;
    c->scheduler()->note_progress();
    if (producer_waits_) {
      producer_waits_ = false;
      producer_->wake();
    }
    return s.beat();
  }

  // The rare paths (channel.cpp).
  void wait_for_space(const Beat& beat);
  void wait_for_data();
  uint64_t stall(uint64_t freed);    // the producer waits for its slot: returns its new clock
  uint64_t starve(uint64_t ready) {  // the consumer waits for the beat: returns its new clock
    Context* c = consumer_;
    starve_cycles_ += ready - c->now();
    c->advance_to(ready);
    return ready;
  }
  void note_element(const Element& e);
  void log_beat(uint64_t now, const Beat& beat);
  // Staged channels (ChannelParams::inflight): beat k waits for the slot beat k - fifo_depth_
  // releases. At send, when that beat is already gone (fewer than fifo_depth_ held), its slot
  // still holds its release time (the ring has more slots than fifo_depth_); otherwise its
  // dequeue raises beat k's visible time (release_staged).
  uint64_t staged_ready(uint64_t ready) const {
    if (size_ >= fifo_depth_) return ready;
    const uint32_t pos = tail_pos_ >= fifo_depth_ ? tail_pos_ - fifo_depth_ : tail_pos_ + depth_ - fifo_depth_;
    return std::max(ready, ring_[pos].freed + send_latency_);
  }
  void release_staged(uint64_t freed) {  // the head (beat j) leaves at `freed`: beat j + fifo_depth_ may enter
    const uint32_t pos = head_pos_ + fifo_depth_ < depth_ ? head_pos_ + fifo_depth_ : head_pos_ + fifo_depth_ - depth_;
    ring_[pos].ready = std::max(ring_[pos].ready, freed + send_latency_);
  }
  void flush_run() const;

  // Peak occupancy in model time, not in execution order (which depends on the run order):
  // when beat k (sent at s_k) is dequeued at d_k, the beats held at s_k were k and the
  // earlier beats dequeued after s_k. Only the previous depth-1 beats can be among them (beat
  // k's slot was freed by beat k-depth's dequeue), and dequeue times are non-decreasing, so
  // they are the beats k-1 .. k-m for some m (a prefix). Beat k-n was dequeued from the slot n
  // places before beat k's, which still holds its release time d_{k-n} + response_latency
  // (only beat k-n+depth's dequeue, later than k's, rewrites it; a slot no beat has used yet
  // holds 0, which never counts). Only a new peak matters, so the test starts at n = peak:
  // held = 1 + m exceeds it iff beat k-peak counts (one comparison; none once the peak is the
  // depth: pop() only calls this while the peak is below the depth). Called by pop() for beat
  // k, after its slot's release time was set.
  void note_occupancy(uint64_t sent) {
    const uint64_t limit = sent + response_latency_;  // d_{k-n} <= s_k  <=>  freed <= limit
    const uint32_t n = peak_;
    // The common case, no new peak: one comparison (the loop below, out of line, otherwise).
    if (n && ring_[head_pos_ >= n ? head_pos_ - n : head_pos_ + depth_ - n].freed <= limit) return;
    raise_peak(limit);
  }
  void raise_peak(uint64_t limit) {
    const uint32_t depth = depth_;
    uint32_t n = peak_ ? peak_ : 1;
    while (n < depth && ring_[head_pos_ >= n ? head_pos_ - n : head_pos_ + depth - n].freed > limit) ++n;
    peak_ = n;  // held = n (beats k-n+1 .. k) if that is a new peak, else n = peak
  }

  // Hot state: what send and dequeue read and write, in the first two cache lines (the class is
  // line-aligned; docs/performance.md).
  Slot* ring_ = nullptr;
  Context* producer_;
  Context* consumer_;
  uint32_t head_pos_ = 0;  // slot of the next beat to dequeue
  uint32_t tail_pos_ = 0;  // slot of the next beat to enqueue
  uint32_t size_ = 0;      // beats held
  uint32_t depth_;         // slots of the ring: the FIFO's depth plus the staged beats
  uint32_t send_latency_, response_latency_;
  uint32_t fifo_depth_;  // ChannelParams::depth (= depth_ unless staged)
  uint32_t peak_ = 0;    // ChannelStats::peak_occupancy
  bool staged_;          // ChannelParams::inflight > 0
  bool done_sent_ = false;
  bool consumer_waits_ = false;  // set_consumer_waits
  bool producer_waits_ = false;  // set_producer_waits
  DType run_dtype_ = DType::BF16;
  // Run-length element statistics: run_ elements of run_bytes_ each, not yet added to the
  // totals below: tiles of shape (run_rows_, run_cols_, run_dtype_) (no tile has UINT32_MAX
  // rows), or elements of the fixed-size alternative run_kind_ (a scalar, selector or buffer
  // reference: its variant index; kNoRun otherwise).
  static constexpr uint8_t kNoRun = 0xff;
  uint8_t run_kind_ = kNoRun;
  uint32_t run_rows_ = UINT32_MAX, run_cols_ = 0;
  mutable uint64_t run_ = 0;
  uint64_t run_bytes_ = 0;
  uint64_t beats_ = 0;
  uint64_t starve_cycles_ = 0;  // ChannelStats::consumer_starve_cycles
  std::vector<LoggedBeat>* log_ = nullptr;  // &log_beats_ while recording (one test per send)
  // Cold state.
  // elements, bytes (and ostat_.count) lag by run_; beats, peak_occupancy,
  // consumer_starve_cycles and last_send_time are filled in by stats().
  mutable ChannelStats stats_;
  mutable TileStat ostat_;
  const Beat* pending_ = nullptr;  // the beat of a send blocked on a full channel
  std::vector<LoggedBeat> log_beats_;  // enable_log()
  bool logged_ = false;
  std::vector<Slot> slots_;
  std::string name_;
  ChannelParams params_;
};

inline void Context::park_recv(Channel* c) {
  park(State::kBlockedRecv, c);
  c->set_consumer_waits(true);
}
inline void Context::park_send(Channel* c) {
  park(State::kBlockedSend, c);
  c->set_producer_waits(true);
}

}  // namespace stepsim
