// Bounded, timestamped FIFO channel with DAM semantics (architecture.md §4).
//
// Model time is carried in the beats, not in SystemC time: every operator keeps its own local
// clock (Context::now) and only blocks when an input is empty or an output is full, so a
// module wakes only when data or space arrives. Semantics:
//   - a beat sent at sender time t is visible to the receiver at t + send_latency;
//   - capacity counts beats sent but not yet dequeued; a slot freed by a dequeue at time t is
//     reusable by the sender from t + response_latency;
//   - receive advances the receiver's clock to the beat's visible time.
// Blocking reads and writes make results independent of SystemC process order (Kahn);
// decisions on "what has arrived" go through Context::select_earliest.
//
// Speed (docs/performance.md): send/peek/pop are the innermost loop of every simulation, so
// their non-blocking paths are inline here and the ring is indexed by wrapping positions (no
// division per beat); only blocking goes out of line into Context.
#pragma once

#include <cstdint>
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
};

struct ChannelStats {
  uint64_t beats = 0;           // transfers
  uint64_t elements = 0;        // beats carrying an element
  uint64_t bytes = 0;           // element bytes carried
  uint32_t peak_occupancy = 0;  // max beats held at once
  uint64_t producer_stall_cycles = 0;  // sender waited for a free slot
  uint64_t consumer_starve_cycles = 0; // receiver waited for data
  uint64_t last_send_time = 0;
};

// One logged transfer (co-simulation transaction logs, docs/cosim.md): the sender's model time.
struct LoggedBeat {
  uint64_t cycle = 0;
  Beat beat;
};

class Channel {
 public:
  Channel(std::string name, ChannelParams params, Context* producer, Context* consumer);

  const std::string& name() const { return name_; }
  const ChannelParams& params() const { return params_; }
  const ChannelStats& stats() const { return stats_; }
  Context* producer() const { return producer_; }
  Context* consumer() const { return consumer_; }

  // Producer side. Blocks (in SystemC) while full; advances the producer's clock past the
  // slot's release time. `extra_delay` adds cycles to this beat's visibility without
  // advancing the producer (an output stage latency). Returns the beat's visible time.
  uint64_t send(const Beat& beat, uint64_t extra_delay = 0) { return send(Beat(beat), extra_delay); }
  uint64_t send(Beat&& beat, uint64_t extra_delay = 0) {
    Context* p = producer_;
    while (full()) p->block_send(this);
    Slot& s = ring_[tail_pos_];
    if (s.freed > p->now()) {
      stats_.producer_stall_cycles += s.freed - p->now();
      p->advance_to(s.freed);
    }
    s.ready = p->now() + params_.send_latency + extra_delay;
    if (beat.done) done_sent_ = true;
    ++stats_.beats;
    if (beat.has_elem) {
      ++stats_.elements;
      const Tile* t = std::get_if<Tile>(&beat.elem.v);
      stats_.bytes += t ? t->bytes() : beat.elem.bytes();
    }
    stats_.last_send_time = p->now();
    if (log_) log_->push_back(LoggedBeat{p->now(), beat});
    move_beat(s.beat, beat);
    if (++tail_pos_ == params_.depth) tail_pos_ = 0;
    s.sent = p->now();
    ++size_;
    p->scheduler()->note_progress();
    const Context::State cs = consumer_->state();
    if ((cs == Context::State::kBlockedRecv && consumer_->blocked_on() == this) ||
        cs == Context::State::kArbWait)
      consumer_->wake();
    return s.ready;
  }
  // Consumer side. peek blocks until a beat is present and advances the consumer's clock to its
  // visible time; pop dequeues the head at the consumer's current time.
  const Beat& peek() {
    Context* c = consumer_;
    while (empty()) c->block_recv(this);
    Slot& s = ring_[head_pos_];
    if (s.ready > c->now()) {
      stats_.consumer_starve_cycles += s.ready - c->now();
      c->advance_to(s.ready);
    }
    return s.beat;
  }
  Beat pop() {
    peek();
    Slot& s = ring_[head_pos_];
    Beat b = take_beat(s.beat);
    s.freed = consumer_->now() + params_.response_latency;
    note_occupancy(s.sent);
    if (++head_pos_ == params_.depth) head_pos_ = 0;
    --size_;
    consumer_->scheduler()->note_progress();
    if (producer_->state() == Context::State::kBlockedSend && producer_->blocked_on() == this)
      producer_->wake();
    return b;
  }
  Beat recv() { return pop(); }  // pop() peeks (blocks and advances the clock) first

  // Non-blocking views used by arbitration and lower-bound computation.
  bool empty() const { return size_ == 0; }
  bool full() const { return size_ >= params_.depth; }
  uint64_t head_ready_time() const { return ring_[head_pos_].ready; }
  const Beat& head() const { return ring_[head_pos_].beat; }
  // Release time of the slot the next send will use (valid when !full()).
  uint64_t next_slot_free_time() const { return ring_[tail_pos_].freed; }
  // True once the done beat was sent: nothing follows it.
  bool done_sent() const { return done_sent_; }
  uint32_t occupancy() const { return size_; }
  // Records every beat sent (with the sender's time) into `log` (null: off).
  void set_log(std::vector<LoggedBeat>* log) { log_ = log; }

 private:
  // Moves of a beat holding a tile (the common case) without std::variant's generic dispatch;
  // the result is the same as the plain moves they replace.
  static void move_beat(Beat& to, Beat& from) {
    Tile* dst = std::get_if<Tile>(&to.elem.v);
    Tile* src = std::get_if<Tile>(&from.elem.v);
    if (dst && src) {
      *dst = std::move(*src);
      to.has_elem = from.has_elem;
      to.stop = from.stop;
      to.done = from.done;
    } else {
      to = std::move(from);
    }
  }
  static Beat take_beat(Beat& from) {
    if (Tile* t = std::get_if<Tile>(&from.elem.v)) return Beat{Element(std::move(*t)), from.has_elem, from.stop, from.done};
    return std::move(from);
  }

  struct Slot {
    Beat beat;
    uint64_t ready = 0;  // visible time of the beat held
    uint64_t freed = 0;  // time the slot becomes reusable by the sender
    uint64_t sent = 0;   // send time of the beat held
  };
  // Peak occupancy in model time, not in SystemC execution order (which depends on process
  // order): when beat k (sent at s_k) is dequeued at d_k, the beats held at s_k were k and the
  // earlier beats dequeued after s_k. Only the previous depth-1 beats can be among them (beat
  // k's slot was freed by beat k-depth's dequeue), and dequeue times are non-decreasing, so
  // they are the beats k-1 .. k-m for some m (a prefix). Beat k-n was dequeued from the slot n
  // places before beat k's, which still holds its release time d_{k-n} + response_latency
  // (only beat k-n+depth's dequeue, later than k's, rewrites it; a slot no beat has used yet
  // holds 0, which never counts). Only a new peak matters, so the test starts at n = peak:
  // held = 1 + m exceeds it iff beat k-peak counts (one comparison; none once the peak is the
  // depth). Called by pop() for beat k, after its slot's release time was set.
  void note_occupancy(uint64_t sent) {
    const uint64_t limit = sent + params_.response_latency;  // d_{k-n} <= s_k  <=>  freed <= limit
    const uint32_t depth = params_.depth;
    uint32_t n = stats_.peak_occupancy ? stats_.peak_occupancy : 1;
    while (n < depth && ring_[head_pos_ >= n ? head_pos_ - n : head_pos_ + depth - n].freed > limit) ++n;
    stats_.peak_occupancy = n;  // held = n (beats k-n+1 .. k) if that is a new peak, else n = peak
  }
  std::string name_;
  ChannelParams params_;
  Context* producer_;
  Context* consumer_;
  std::vector<Slot> ring_;
  uint32_t head_pos_ = 0;  // slot of the next beat to dequeue
  uint32_t tail_pos_ = 0;  // slot of the next beat to enqueue
  uint32_t size_ = 0;      // beats held
  bool done_sent_ = false;
  ChannelStats stats_;
  std::vector<LoggedBeat>* log_ = nullptr;
};

}  // namespace stepsim
