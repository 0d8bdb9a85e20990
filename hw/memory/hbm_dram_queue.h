// The pending requests of one pseudo-channel of the `dram` HBM model, in arrival order, and the
// FR-FCFS search over the oldest of them (hw/memory/hbm_dram.h states the rules).
//
// Why this shape: a pseudo-channel holds the requests of many calls at once (a MoE layer keeps
// hundreds of tile bursts in flight), and a call's requests reach the memory interleaved with
// those of calls issued later (a long burst still issues while newer ones start). FR-FCFS looks
// at the oldest `depth` requests only, so the queue has two parts:
//  * the window: the oldest pending requests, in order, at least `depth` of them when that many
//    are pending (the controller's queue); FR-FCFS scans it;
//  * the streams: every younger request, one stream per call (already in order), the streams in
//    a binary heap by their oldest request; the window refills from the heap's top.
// Every window request is older than every stream request; a new request older than the
// window's youngest goes straight into the window, in order.
// The scan remembers how many of the window's first requests it found not to be row hits: they
// stay so until their bank opens their row (row_opened), so most decisions look at a few
// requests, not `depth`. The window keeps what the scan reads (arrival, bank and row) packed.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace stepsim {

// One request waiting for its pseudo-channel.
struct DramRequest {
  uint64_t arrival = 0;  // cycle it reaches the controller
  uint32_t initiator = 0;
  uint64_t owner = 0;  // the call's handle (call order)
  uint64_t index = 0;  // request index within the call
  uint32_t slot = 0;   // the pseudo-channel's index in its owner's list
  uint32_t bank = 0, row = 0;
  bool write = false;
  // Arrival order; same cycle: initiator, then call, then request index.
  bool before(const DramRequest& o) const {
    if (arrival != o.arrival) return arrival < o.arrival;
    if (initiator != o.initiator) return initiator < o.initiator;
    if (owner != o.owner) return owner < o.owner;
    return index < o.index;
  }
};

class DramQueue {
 public:
  // Appends a request; a call's requests come together and in order (enqueue adds one call at
  // a time), so a new owner starts a new stream.
  void push(const DramRequest& r);
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }  // requests pending
  size_t writes() const { return writes_; }  // of which writes
  // The requests that may be picked changed (a write drain began or ended): forget which of the
  // window's first requests were found not to be candidates.
  void candidates_changed() { not_hits_ = 0; }
  // The oldest pending request. Not empty().
  const DramRequest& oldest();

  // The bank and row of a request as one number (what row hits compare).
  static uint64_t row_key(uint32_t bank, uint32_t row) { return uint64_t(bank) << 32 | row; }

  // FR-FCFS: the candidates are the first `depth` requests in arrival order that arrived by
  // `decision`. Returns the position of the oldest row hit (is_hit(bank, row, write)); without one,
  // the candidate whose column command can issue first (ready(request): its cycle), the
  // oldest of those; no candidate can be ready before `floor`. Not empty().
  template <class IsHit, class Ready>
  size_t pick(uint64_t decision, uint32_t depth, IsHit is_hit, Ready ready, uint64_t floor);
  // The caller opened `row` of `bank`: its requests are row hits from now on. (Closing rows
  // needs no call: it only turns hits into misses.)
  void row_opened(uint32_t bank, uint32_t row);

  // Removes the request at pick's position (it was served) and returns it.
  DramRequest take(size_t pos);

 private:
  // A stream request: what differs between the requests of one call on one pseudo-channel.
  struct Item {
    uint64_t arrival;
    uint64_t index;
    uint32_t bank, row;
  };
  struct Stream {
    std::vector<Item> items;
    size_t head = 0;     // the first request not in the window
    DramRequest shared;  // the call's fields (initiator, owner, slot, write)
    uint32_t heap_pos = 0;
    DramRequest request(size_t i) const;
  };
  static constexpr uint32_t kNoStream = UINT32_MAX;
  // A window request: what the scan reads, and where the request is kept.
  struct Entry {
    uint64_t arrival;
    uint64_t key;  // row_key
    uint32_t slab;
    bool write;
  };

  // Moves requests from the streams into the window until it holds `depth` (or all).
  void refill(uint32_t depth);
  void insert_in_window(const DramRequest& r);
  Entry entry_of(const DramRequest& r);  // stores r in the slab
  // Whether stream a's head request is older than stream b's.
  bool older(uint32_t a, uint32_t b) const;
  void sift_up(uint32_t pos);
  void sift_down(uint32_t pos);
  void place(uint32_t pos, uint32_t stream);
  void remove_from_heap(uint32_t pos);

  std::vector<Entry> window_;      // the oldest pending requests, in order
  size_t not_hits_ = 0;            // window_[0, not_hits_) are known not to be row hits
  std::vector<DramRequest> slab_;  // the window's requests, at Entry::slab
  std::vector<uint32_t> slab_free_;
  std::vector<Stream> streams_;      // by id; exhausted ones are reused
  std::vector<uint32_t> free_;       // ids of exhausted streams
  std::vector<uint32_t> heap_;       // stream ids, min-heap by head request
  uint32_t last_ = kNoStream;        // the stream push appends to
  size_t size_ = 0, writes_ = 0;
};

template <class IsHit, class Ready>
size_t DramQueue::pick(uint64_t decision, uint32_t depth, IsHit is_hit, Ready ready, uint64_t floor) {
  refill(depth);
  const size_t end = std::min<size_t>(depth, window_.size());
  size_t i = not_hits_;
  for (; i < end; ++i) {
    const Entry& e = window_[i];
    if (e.arrival > decision) break;  // the rest arrive later still
    if (is_hit(uint32_t(e.key >> 32), uint32_t(e.key), e.write)) break;
  }
  not_hits_ = i;
  if (i < end && window_[i].arrival <= decision) return i;
  // No row hit: first ready, among the candidates (window_[0, i)).
  size_t best = 0;
  uint64_t best_cycle = ready(slab_[window_[0].slab]);
  for (size_t k = 1; k < i && best_cycle > floor; ++k) {
    const uint64_t cycle = ready(slab_[window_[k].slab]);
    if (cycle < best_cycle) best = k, best_cycle = cycle;
  }
  return best;
}

}  // namespace stepsim
