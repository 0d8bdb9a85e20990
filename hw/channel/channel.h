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
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw/stream/token.h"

namespace stepsim {

class Context;

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
  uint64_t send(Beat beat, uint64_t extra_delay = 0);
  // Consumer side. peek blocks until a beat is present and advances the consumer's clock to its
  // visible time; pop dequeues the head at the consumer's current time.
  const Beat& peek();
  Beat pop();
  Beat recv() {
    peek();
    return pop();
  }

  // Non-blocking views used by arbitration and lower-bound computation.
  bool empty() const { return head_ == tail_; }
  bool full() const { return tail_ - head_ >= params_.depth; }
  uint64_t head_ready_time() const { return ring_[head_ % params_.depth].ready; }
  const Beat& head() const { return ring_[head_ % params_.depth].beat; }
  // Release time of the slot the next send will use (valid when !full()).
  uint64_t next_slot_free_time() const { return ring_[tail_ % params_.depth].freed; }
  // True once the done beat was sent: nothing follows it.
  bool done_sent() const { return done_sent_; }
  uint32_t occupancy() const { return uint32_t(tail_ - head_); }

 private:
  struct Slot {
    Beat beat;
    uint64_t ready = 0;  // visible time of the beat held
    uint64_t freed = 0;  // time the slot becomes reusable by the sender
  };
  std::string name_;
  ChannelParams params_;
  Context* producer_;
  Context* consumer_;
  std::vector<Slot> ring_;
  uint64_t head_ = 0;  // index of the next beat to dequeue
  uint64_t tail_ = 0;  // index of the next beat to enqueue
  bool done_sent_ = false;
  ChannelStats stats_;
};

}  // namespace stepsim
