// Channel mechanics outside a simulation: beats relocated into and out of the ring slots
// (hw/channel/channel.h) keep every element's shared payload owned exactly once.
#include <gtest/gtest.h>

#include <memory>

#include "hw/channel/channel.h"
#include "sim/engine/sc_kernel.h"

namespace stepsim {
namespace {

// A fresh SystemC kernel with a Scheduler and two contexts (never started: every call below
// finds the channel neither full nor empty, so nothing blocks).
struct Fixture {
  Fixture() {
    kernel = std::make_unique<ScKernel>();
    scheduler = std::make_unique<Scheduler>("scheduler");
    producer = std::make_unique<Context>("producer", scheduler.get());
    consumer = std::make_unique<Context>("consumer", scheduler.get());
  }
  ~Fixture() {
    consumer.reset();
    producer.reset();
    scheduler.reset();
    kernel.reset();
  }
  std::unique_ptr<Channel> channel(uint32_t depth) {
    ChannelParams p;
    p.depth = depth;
    return std::make_unique<Channel>("c", p, producer.get(), consumer.get());
  }
  std::unique_ptr<ScKernel> kernel;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<Context> producer, consumer;
};

// One element of every kind that owns a shared payload, and the payload's owner count
// outside the element (`outside`: what use_count() is when no beat holds it).
struct Shared {
  std::shared_ptr<const TileData> data = std::make_shared<const TileData>(TileData{{1.f, 2.f, 3.f, 4.f}, {}});
  BufferRef buffer = std::make_shared<const Buffer>();
  Tuple tuple = std::make_shared<const std::vector<Element>>(std::vector<Element>{Element(Scalar{7})});
  std::vector<Element> elements() const {
    Tile t = shape_tile(2, 2);
    t.data = data;
    return {Element(t), Element(buffer), Element(tuple)};
  }
  long held() const { return data.use_count() + buffer.use_count() + tuple.use_count() - 3; }
};

TEST(Channel, RelocatedBeatsOwnTheirPayloadOnce) {
  Fixture f;
  Shared s;
  {
    std::unique_ptr<Channel> c = f.channel(8);
    for (Element& e : s.elements()) {
      Beat b = Beat::data(std::move(e), 1);
      c->send(std::move(b));
      // The moved-from beat is empty and owns nothing.
      EXPECT_FALSE(b.has_elem);
      EXPECT_EQ(b.stop, 0);
    }
    EXPECT_EQ(s.held(), 3);  // one owner each: the slots
    for (int k = 0; k < 3; ++k) {
      Beat b = c->pop();
      EXPECT_TRUE(b.has_elem);
      EXPECT_EQ(b.stop, 1);
      EXPECT_EQ(s.held(), 3 - k);  // moved out, not copied: b and the slots still held
    }
    EXPECT_EQ(s.held(), 0);  // the popped beats are gone, the slots hold only relocated bytes
    // A copy sent (send(const Beat&)) leaves the sender's beat its own owner.
    std::vector<Element> es = s.elements();
    for (size_t k = 0; k < es.size(); ++k) {
      const Beat b = Beat::data(es[k]);
      c->send(b);
      EXPECT_EQ(s.held(), 3 + long(k) + 2);  // es, the k + 1 beats sent, and b
    }
    es.clear();
    EXPECT_EQ(s.held(), 3);
    c->discard();  // destroyed in its slot
    EXPECT_EQ(s.held(), 2);
  }
  // The channel's destructor destroys the beats it still holds.
  EXPECT_EQ(s.held(), 0);
}

TEST(Channel, ATileKeepsItsShapeAndPayloadThroughTheRing) {
  Fixture f;
  Shared s;
  std::unique_ptr<Channel> c = f.channel(2);
  // Around the ring several times: every slot is reused with relocated bytes in it.
  for (uint32_t k = 0; k < 7; ++k) {
    Tile t = shape_tile(2, 2 + k % 2, k % 3 ? DType::BF16 : DType::FP32);
    t.data = s.data;
    c->send(Beat::data(Element(std::move(t)), uint8_t(k % 4)));
    const Beat b = c->pop();
    ASSERT_TRUE(b.elem.is_tile());
    EXPECT_EQ(b.elem.tile().cols, 2 + k % 2);
    EXPECT_EQ(b.elem.tile().dtype, k % 3 ? DType::BF16 : DType::FP32);
    EXPECT_EQ(b.elem.tile().data, s.data);
    EXPECT_EQ(b.stop, k % 4);
    EXPECT_EQ(s.data.use_count(), 2);  // this beat and s
  }
  EXPECT_EQ(s.data.use_count(), 1);
  EXPECT_EQ(c->stats().beats, 7u);
  EXPECT_EQ(c->stats().elements, 7u);
}

// The element statistics count runs of like elements (Channel::send's fast path) and add them
// up on demand: the totals equal element-by-element sums for any mix of kinds and shapes.
TEST(Channel, ElementStatisticsAddUpRunsOfEveryKind) {
  Fixture f;
  std::unique_ptr<Channel> c = f.channel(4);
  Selector sel;
  sel.set(3);
  const Tuple pair =
      std::make_shared<const std::vector<Element>>(std::vector<Element>{Element(Scalar{1}), Element(shape_tile(4, 8))});
  const Tuple wider = std::make_shared<const std::vector<Element>>(
      std::vector<Element>{Element(Scalar{1}), Element(shape_tile(16, 16))});
  const std::vector<Element> sent = {Element(Scalar{1}),
                                     Element(Scalar{2}),
                                     Element(sel),
                                     Element(sel),
                                     Element(shape_tile(2, 2)),
                                     Element(shape_tile(2, 2)),
                                     Element(shape_tile(2, 2, DType::FP32)),
                                     Element(shape_tile(16, 64)),
                                     Element(pair),
                                     Element(wider),
                                     Element(Scalar{3}),
                                     Element(BufferRef(std::make_shared<const Buffer>())),
                                     Element(Scalar{4}),
                                     Element(shape_tile(2, 2))};
  TileStat want;
  uint64_t bytes = 0;
  for (const Element& e : sent) {
    c->send(Beat::data(e));
    c->discard();
    want.add_other(e);
    bytes += e.bytes();
  }
  c->send(Beat::bare_stop(1));  // no element
  c->discard();
  const ChannelStats& st = c->stats();
  EXPECT_EQ(st.beats, sent.size() + 1);
  EXPECT_EQ(st.elements, sent.size());
  EXPECT_EQ(st.bytes, bytes);
  const TileStat got = c->output_stat();
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(got.max_elem_bytes, want.max_elem_bytes);
  EXPECT_EQ(got.max_tile_bytes, want.max_tile_bytes);
  EXPECT_EQ(got.max_cols, want.max_cols);
  EXPECT_EQ(got.max_row_bytes, want.max_row_bytes);
}

}  // namespace
}  // namespace stepsim
