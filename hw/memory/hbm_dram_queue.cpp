// The `dram` HBM model's pending requests of one pseudo-channel (hw/memory/hbm_dram_queue.h).
#include "hw/memory/hbm_dram_queue.h"

#include <algorithm>

namespace stepsim {

void DramQueue::push(const DramRequest& r) {
  ++size_;
  writes_ += r.write;
  if (!window_.empty() && r.before(slab_[window_.back().slab])) {
    insert_in_window(r);
    return;
  }
  const Item item{r.arrival, r.index, r.bank, r.row};
  if (last_ != kNoStream && streams_[last_].shared.owner == r.owner) {
    streams_[last_].items.push_back(item);
    return;
  }
  if (free_.empty()) {
    last_ = uint32_t(streams_.size());
    streams_.emplace_back();
  } else {
    last_ = free_.back();
    free_.pop_back();
  }
  Stream& s = streams_[last_];
  s.shared = r;
  s.head = 0;
  s.items.push_back(item);
  heap_.push_back(last_);
  place(uint32_t(heap_.size() - 1), last_);
  sift_up(uint32_t(heap_.size() - 1));
}

DramRequest DramQueue::Stream::request(size_t i) const {
  DramRequest r = shared;
  r.arrival = items[i].arrival;
  r.index = items[i].index;
  r.bank = items[i].bank;
  r.row = items[i].row;
  return r;
}

bool DramQueue::older(uint32_t a, uint32_t b) const {
  const Stream& x = streams_[a];
  const Stream& y = streams_[b];
  const Item& i = x.items[x.head];
  const Item& j = y.items[y.head];
  if (i.arrival != j.arrival) return i.arrival < j.arrival;
  if (x.shared.initiator != y.shared.initiator) return x.shared.initiator < y.shared.initiator;
  if (x.shared.owner != y.shared.owner) return x.shared.owner < y.shared.owner;
  return i.index < j.index;
}

DramQueue::Entry DramQueue::entry_of(const DramRequest& r) {
  uint32_t at;
  if (slab_free_.empty()) {
    at = uint32_t(slab_.size());
    slab_.push_back(r);
  } else {
    at = slab_free_.back();
    slab_free_.pop_back();
    slab_[at] = r;
  }
  return {r.arrival, row_key(r.bank, r.row), at, r.write};
}

void DramQueue::insert_in_window(const DramRequest& r) {
  const auto at = std::upper_bound(window_.begin(), window_.end(), r,
                                   [this](const DramRequest& a, const Entry& b) { return a.before(slab_[b.slab]); });
  const size_t pos = size_t(at - window_.begin());
  window_.insert(at, entry_of(r));
  not_hits_ = std::min(not_hits_, pos);  // the new one is not known
}

const DramRequest& DramQueue::oldest() {
  refill(1);
  return slab_[window_.front().slab];
}

void DramQueue::refill(uint32_t depth) {
  while (window_.size() < depth && !heap_.empty()) {
    const uint32_t id = heap_[0];
    Stream& s = streams_[id];
    window_.push_back(entry_of(s.request(s.head++)));
    if (s.head < s.items.size()) {
      sift_down(0);  // its head got younger
      continue;
    }
    remove_from_heap(0);
    s.items.clear();  // keeps the capacity for the stream that reuses the id
    free_.push_back(id);
    if (last_ == id) last_ = kNoStream;
  }
}

DramRequest DramQueue::take(size_t pos) {
  const uint32_t at = window_[pos].slab;
  --size_;
  writes_ -= slab_[at].write;
  window_.erase(window_.begin() + std::ptrdiff_t(pos));
  slab_free_.push_back(at);
  if (pos < not_hits_) --not_hits_;  // a known one left; the others moved up by one
  return slab_[at];
}

void DramQueue::row_opened(uint32_t bank, uint32_t row) {
  const uint64_t key = row_key(bank, row);
  for (size_t i = 0; i < not_hits_; ++i)
    if (window_[i].key == key) {
      not_hits_ = i;
      return;
    }
}

void DramQueue::place(uint32_t pos, uint32_t stream) {
  heap_[pos] = stream;
  streams_[stream].heap_pos = pos;
}

void DramQueue::sift_up(uint32_t pos) {
  const uint32_t s = heap_[pos];
  while (pos > 0) {
    const uint32_t parent = (pos - 1) / 2;
    if (!older(s, heap_[parent])) break;
    place(pos, heap_[parent]);
    pos = parent;
  }
  place(pos, s);
}

void DramQueue::sift_down(uint32_t pos) {
  const uint32_t s = heap_[pos];
  const uint32_t n = uint32_t(heap_.size());
  for (;;) {
    uint32_t child = 2 * pos + 1;
    if (child >= n) break;
    if (child + 1 < n && older(heap_[child + 1], heap_[child])) ++child;
    if (!older(heap_[child], s)) break;
    place(pos, heap_[child]);
    pos = child;
  }
  place(pos, s);
}

void DramQueue::remove_from_heap(uint32_t pos) {
  const uint32_t last = heap_.back();
  heap_.pop_back();
  if (pos == heap_.size()) return;
  place(pos, last);
  sift_down(pos);
  sift_up(streams_[last].heap_pos);
}

}  // namespace stepsim
