// HbmModel (hw/memory/hbm_model.h): the registry by name, and the `fixed` model driven through
// the interface alone giving the cycles the model gave before the interface existed.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "hw/memory/hbm_fixed.h"
#include "hw/memory/hbm_model.h"
#include "testbench/memory/hbm_workload.h"

namespace stepsim {
namespace {

TEST(HbmModelRegistry, BuildsTheFixedModelByName) {
  ASSERT_EQ(hbm_model_registry().size(), 2u);
  EXPECT_STREQ(hbm_model_registry()[0].name, "fixed");
  EXPECT_STREQ(hbm_model_registry()[1].name, "dram");  // testbench/dram
  EXPECT_EQ(hbm_model_names(), "fixed, dram");
  HbmParams p;
  p.channels = 8;
  p.mapping = HbmMapping::AddressInterleave;
  const std::unique_ptr<HbmModel> m = make_hbm_model("fixed", p);
  ASSERT_NE(m, nullptr);
  EXPECT_NE(dynamic_cast<HbmFixed*>(m.get()), nullptr);
  EXPECT_EQ(m->params().channels, 8u);
  EXPECT_EQ(m->params().mapping, HbmMapping::AddressInterleave);
  EXPECT_FALSE(m->uncontended());
  // One isolated request: the idle round trip, 18 cycles with the default timing.
  EXPECT_EQ(m->serve_request(0, false, 100, 0).completion_cycle, 118u);
  EXPECT_EQ(m->stats().read_requests, 1u);
}

TEST(HbmModelRegistry, UnknownNameErrsWithTheKnownNames) {
  try {
    make_hbm_model("hbm3", HbmParams());
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "unknown HBM model 'hbm3' (hbm.model); known models: fixed, dram");
  }
  HbmParams bad;
  bad.channels = 0;
  EXPECT_THROW(make_hbm_model("fixed", bad), std::invalid_argument);
}

// The mixed six-initiator workload (testbench/memory/hbm_workload.h, seed 3) through the
// interface: immediate tiles (serve_burst), deferred tiles (issue_burst / try_result) and
// single requests (serve_request). The figures are those of the model before it was split
// behind the interface (HbmTiming at b33d6fa); deferred and request level agree exactly.
struct Expected {
  HbmMapping mapping;
  bool quirk;
  test::SameCycle order;
  uint64_t fast_makespan, fast_latency;    // serve_burst
  uint64_t exact_makespan, exact_latency;  // issue_burst / try_result = serve_request
  uint64_t request_startups;               // requests that paid startup, request level
};

TEST(HbmModelFixed, InterfaceGivesTheCyclesOfBefore) {
  using test::SameCycle;
  const HbmMapping rr = HbmMapping::RoundRobin, ai = HbmMapping::AddressInterleave;
  const Expected cases[] = {
      {rr, true, SameCycle::CallOrder, 23309, 68284, 22852, 68019, 153600},
      {rr, true, SameCycle::Initiator, 23310, 68363, 22823, 67984, 153600},
      {rr, false, SameCycle::CallOrder, 20710, 64463, 21415, 65621, 36228},
      {rr, false, SameCycle::Initiator, 20755, 64611, 21474, 65759, 36324},
      {ai, true, SameCycle::CallOrder, 35255, 114377, 34554, 111731, 153600},
      {ai, true, SameCycle::Initiator, 35357, 114317, 34710, 112949, 153600},
      {ai, false, SameCycle::CallOrder, 33418, 108416, 32768, 109459, 40611},
      {ai, false, SameCycle::Initiator, 33568, 109178, 32898, 109983, 40810},
  };
  const auto w = test::mixed_workload(6, 3);
  for (const Expected& x : cases) {
    HbmParams p;
    p.mapping = x.mapping;
    p.startup_every_request = x.quirk;
    const std::string what = std::string(hbm_mapping_name(x.mapping)) + (x.quirk ? " quirk" : " cold") +
                             (x.order == SameCycle::Initiator ? " initiator order" : " call order");
    std::unique_ptr<HbmModel> fast = make_hbm_model("fixed", p), deferred = make_hbm_model("fixed", p),
                              request = make_hbm_model("fixed", p);
    const auto f = test::run_fast(
        w, [&](const Burst& b) { return fast->serve_burst(b); }, x.order);
    const auto d = test::run_deferred(w, *deferred, x.order);
    const auto r = test::run_requests(
        w, p.request_bytes,
        [&](uint64_t a, bool wr, uint64_t t) { return request->serve_request(a, wr, t, 0).completion_cycle; }, x.order);
    EXPECT_EQ(f.makespan, x.fast_makespan) << what;
    EXPECT_EQ(f.total_tile_latency, x.fast_latency) << what;
    EXPECT_EQ(d.makespan, x.exact_makespan) << what;
    EXPECT_EQ(d.total_tile_latency, x.exact_latency) << what;
    EXPECT_EQ(r.makespan, x.exact_makespan) << what;
    EXPECT_EQ(r.total_tile_latency, x.exact_latency) << what;
    for (const HbmModel* m : {fast.get(), deferred.get(), request.get()}) {
      EXPECT_EQ(m->stats().bytes(), 9830400u) << what;
      EXPECT_EQ(m->stats().requests(), 153600u) << what;
    }
    EXPECT_EQ(request->stats().startup_paid, x.request_startups) << what;
  }
}

}  // namespace
}  // namespace stepsim
