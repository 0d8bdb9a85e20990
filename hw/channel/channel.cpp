#include "hw/channel/channel.h"

#include <stdexcept>

#include "hw/channel/context.h"

namespace stepsim {

Channel::Channel(std::string name, ChannelParams params, Context* producer, Context* consumer)
    : name_(std::move(name)), params_(params), producer_(producer), consumer_(consumer) {
  if (params_.depth < 1) throw std::invalid_argument("channel '" + name_ + "': depth must be >= 1");
  ring_.resize(params_.depth);
}

uint64_t Channel::send(Beat beat, uint64_t extra_delay) {
  Context* p = producer_;
  while (full()) p->block_send(this);
  Slot& s = ring_[tail_ % params_.depth];
  if (s.freed > p->now()) {
    stats_.producer_stall_cycles += s.freed - p->now();
    p->advance_to(s.freed);
  }
  s.ready = p->now() + params_.send_latency + extra_delay;
  if (beat.done) done_sent_ = true;
  ++stats_.beats;
  if (beat.has_elem) {
    ++stats_.elements;
    stats_.bytes += beat.elem.bytes();
  }
  stats_.last_send_time = p->now();
  s.beat = std::move(beat);
  ++tail_;
  if (occupancy() > stats_.peak_occupancy) stats_.peak_occupancy = occupancy();
  p->scheduler()->note_progress();
  Context::State cs = consumer_->state();
  if ((cs == Context::State::kBlockedRecv && consumer_->blocked_on() == this) ||
      cs == Context::State::kArbWait)
    consumer_->wake();
  return s.ready;
}

const Beat& Channel::peek() {
  Context* c = consumer_;
  while (empty()) c->block_recv(this);
  Slot& s = ring_[head_ % params_.depth];
  if (s.ready > c->now()) {
    stats_.consumer_starve_cycles += s.ready - c->now();
    c->advance_to(s.ready);
  }
  return s.beat;
}

Beat Channel::pop() {
  peek();
  Slot& s = ring_[head_ % params_.depth];
  Beat b = std::move(s.beat);
  s.freed = consumer_->now() + params_.response_latency;
  ++head_;
  consumer_->scheduler()->note_progress();
  if (producer_->state() == Context::State::kBlockedSend && producer_->blocked_on() == this)
    producer_->wake();
  return b;
}

}  // namespace stepsim
