#include "hw/channel/channel.h"

#include <algorithm>
#include <stdexcept>

namespace stepsim {

Channel::Channel(std::string name, ChannelParams params, Context* producer, Context* consumer)
    : producer_(producer),
      consumer_(consumer),
      depth_(params.depth + params.inflight),
      send_latency_(params.send_latency),
      response_latency_(params.response_latency),
      fifo_depth_(params.depth),
      staged_(params.inflight > 0),
      name_(std::move(name)),
      params_(params) {
  if (params_.depth < 1) throw std::invalid_argument("channel '" + name_ + "': depth must be >= 1");
  slots_.resize(depth_);
  ring_ = slots_.data();
}

Channel::~Channel() {
  // Beats still held (a run that did not finish) are destroyed; a slot whose beat was taken
  // holds only its relocated bytes (raw storage).
  for (uint32_t k = 0, pos = head_pos_; k < size_; ++k, pos = pos + 1 == depth_ ? 0 : pos + 1)
    ring_[pos].beat()->~Beat();
}

void Channel::wait_for_space(const Beat& beat) {
  Context* p = producer_;
  pending_ = &beat;
  while (size_ >= depth_) p->block_send(this);
  pending_ = nullptr;
}

void Channel::wait_for_data() {
  Context* c = consumer_;
  while (size_ == 0) c->block_recv(this);
}

uint64_t Channel::stall(uint64_t freed) {
  Context* p = producer_;
  stats_.producer_stall_cycles += freed - p->now();
  p->advance_to(freed);
  return freed;
}

void Channel::flush_run() const {
  stats_.elements += run_;
  stats_.bytes += run_ * run_bytes_;
  ostat_.add_repeats(run_);
  run_ = 0;
}

void Channel::note_element(const Element& e) {
  flush_run();
  ++stats_.elements;
  ostat_.add(e);
  // Later elements of the same shape only count (send's fast path).
  if (const Tile* t = std::get_if<Tile>(&e.v)) {
    run_rows_ = t->rows;
    run_cols_ = t->cols;
    run_dtype_ = t->dtype;
    run_kind_ = kNoRun;
    run_bytes_ = t->bytes();
  } else {
    run_rows_ = UINT32_MAX;
    run_kind_ = e.is_tuple() ? kNoRun : uint8_t(e.v.index());  // a tuple's size varies
    run_bytes_ = e.bytes();
  }
  stats_.bytes += run_bytes_;
}

void Channel::log_beat(uint64_t now, const Beat& beat) { log_->push_back(LoggedBeat{now, beat}); }

const ChannelStats& Channel::stats() const {
  flush_run();
  stats_.beats = beats_;
  stats_.peak_occupancy = peak_;
  stats_.consumer_starve_cycles = starve_cycles_;
  // The last beat sent went into the slot before the next send position.
  stats_.last_send_time = beats_ ? ring_[tail_pos_ ? tail_pos_ - 1 : depth_ - 1].sent : 0;
  return stats_;
}

TileStat Channel::output_stat() const {
  flush_run();
  TileStat s = ostat_;
  if (pending_ && pending_->has_elem) s.add(pending_->elem);
  return s;
}

// ---- TileStat ----

void TileStat::add_other(const Element& e) {
  ++count;
  max_elem_bytes = std::max(max_elem_bytes, e.bytes());
  if (e.is_tile()) {
    add(e.tile());
  } else if (e.is_tuple()) {
    for (const Element& m : *e.tuple())
      if (m.is_tile()) add(m.tile());
  }
}

void TileStat::merge(const TileStat& o) {
  max_elem_bytes = std::max(max_elem_bytes, o.max_elem_bytes);
  max_tile_bytes = std::max(max_tile_bytes, o.max_tile_bytes);
  max_cols = std::max(max_cols, o.max_cols);
  max_row_bytes = std::max(max_row_bytes, o.max_row_bytes);
  count += o.count;
}

}  // namespace stepsim
