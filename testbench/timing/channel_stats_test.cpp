// Channel statistics in model time: peak occupancy, producer stall and consumer starve cycles,
// with the expected values worked out from the DAM channel rules (architecture.md §4).
#include "graph_builder.h"

namespace stepsim {
namespace {
using namespace test;

const ChannelResult& channel(const SimResult& r, const std::string& name) {
  for (const ChannelResult& c : r.channels)
    if (c.name == name) return c;
  ADD_FAILURE() << "no channel " << name;
  return r.channels.front();
}

// A source emitting one [64x64] tile per cycle into a SiLU Map that needs
// ceil(64*64*8 / 4096) = 8 cycles per tile (FIFO to FIFO: no memory terms).
SimResult slow_consumer(uint32_t depth, uint64_t seed = 0) {
  GraphBuilder b;
  b.source("src", "T[64x64] T[64x64] T[64x64] T[64x64] T[64x64] T[64x64] D", 1, depth);
  b.node("act", "Map", {{"fn", "silu"}}, {{"in0", "src.out0"}});
  b.sink("sink", "act");
  return b.run(artifact(), seed);
}

TEST(ChannelStats, PeakOccupancyFillsTheFifoBehindASlowConsumer) {
  for (uint32_t depth : {1u, 2u, 4u, 8u}) {
    SimResult r = slow_consumer(depth);
    ASSERT_TRUE(r.ok) << r.error;
    // The Map holds each tile 8 cycles, the source offers one per cycle: the FIFO fills up to
    // its depth, but never beyond the 6 tiles there are.
    EXPECT_EQ(channel(r, "src.out0->act.in0").stats.peak_occupancy, std::min(depth, 6u)) << "depth " << depth;
    for (uint64_t seed : {1, 2})
      EXPECT_EQ(slow_consumer(depth, seed).channels.front().stats.peak_occupancy,
                r.channels.front().stats.peak_occupancy);
  }
}

TEST(ChannelStats, StallAndStarveCycles) {
  SimResult r = slow_consumer(2);
  ASSERT_TRUE(r.ok) << r.error;
  const ChannelStats& in = channel(r, "src.out0->act.in0").stats;
  // Map timing: tile k is taken when visible and the Map is free; it is released (dequeued) at
  // 1 + 8(k+1) (8 cycles of compute after the first tile is visible at 1). With depth 2 the
  // source's tile k (k >= 2) waits for the slot freed by tile k-2's dequeue + 1 response cycle.
  uint64_t stall = 0, send = 0;
  std::vector<uint64_t> dequeued;
  for (uint64_t k = 0; k < 6; ++k) dequeued.push_back(1 + 8 * (k + 1));
  for (uint64_t k = 0; k < 6; ++k) {
    const uint64_t want = k == 0 ? 0 : send + 1;  // interval 1
    const uint64_t slot = k < 2 ? 0 : dequeued[k - 2] + kResponse;
    send = std::max(want, slot);
    stall += send - want;
  }
  EXPECT_EQ(in.producer_stall_cycles, stall);
  EXPECT_EQ(in.consumer_starve_cycles, 1u);  // only the first tile is waited for (visible at 1)
  EXPECT_EQ(in.beats, 6u);
  EXPECT_EQ(in.bytes, 6u * 64 * 64 * 2);
}

}  // namespace
}  // namespace stepsim
