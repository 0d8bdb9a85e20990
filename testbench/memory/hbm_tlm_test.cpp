// HbmTarget through real TLM-2.0 sockets.
//
// SystemC allows elaboration only before the first sc_start, so all modules of this binary
// are built once, in a lazily created environment: a plain initiator (its socket is used
// from test code; the target never waits, so b_transport works outside processes) and an
// SC_THREAD initiator that does one transfer and waits for the annotated delay.
#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include "hw/memory/hbm_fixed.h"
#include "hw/memory/hbm_initiator.h"
#include "hw/memory/hbm_target.h"
#include "testbench/memory/hbm_workload.h"

namespace stepsim {
namespace {

struct PlainInitiator : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<PlainInitiator> socket;
  explicit PlainInitiator(sc_core::sc_module_name n) : sc_module(n), socket("socket") {}
};

struct ThreadInitiator : sc_core::sc_module {
  SC_HAS_PROCESS(ThreadInitiator);
  tlm_utils::simple_initiator_socket<ThreadInitiator> socket;
  BurstResult result;
  sc_core::sc_time annotated, finished;
  explicit ThreadInitiator(sc_core::sc_module_name n) : sc_module(n), socket("socket") { SC_THREAD(run); }
  void run() {
    HbmInitiator init(socket, HbmAccessMode::Fast, 64, sc_core::sc_time(1, sc_core::SC_NS));
    Burst b;
    b.rows = 1;
    b.row_bytes = 1 << 20;
    b.par_dispatch = 16;
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    result = init.transfer(b, nullptr, &delay);
    annotated = delay;
    wait(delay);  // LT style: synchronise at the end of the transfer
    finished = sc_core::sc_time_stamp();
  }
};

struct Env {
  HbmTarget target{"hbm"};
  PlainInitiator ini{"ini"};
  HbmTarget target2{"hbm2"};
  ThreadInitiator thr{"thr"};
  Env() {
    ini.socket.bind(target.socket);
    thr.socket.bind(target2.socket);
    sc_core::sc_start();  // elaborates, runs the thread to completion
  }
  tlm::tlm_fw_transport_if<>& fw() { return *ini.socket.operator->(); }
};

Env& env() {
  static Env* e = new Env();  // never destroyed: SystemC objects outlive the tests
  return *e;
}

class HbmTlm : public ::testing::Test {
 protected:
  void SetUp() override { env().target.reconfigure(HbmParams()); }
  HbmTarget& tgt() { return env().target; }
  tlm::tlm_fw_transport_if<>& fw() { return env().fw(); }
};

TEST_F(HbmTlm, ThreadInitiatorWaitsForAnnotatedDelay) {
  const ThreadInitiator& t = env().thr;
  EXPECT_EQ(t.result.completion_cycle, 1041u);  // see OneMiBLinearReadTakes1024CyclesPlusStartup
  EXPECT_EQ(t.annotated, sc_core::sc_time(1041, sc_core::SC_NS));
  EXPECT_EQ(t.finished, sc_core::sc_time(1041, sc_core::SC_NS));
}

// (b) through TLM: delay annotation = 18 cycles x 1 ns.
TEST_F(HbmTlm, IdleLatencyAndDelayAnnotation) {
  tlm::tlm_generic_payload gp;
  HbmBurstExtension ext;
  ext.kind = HbmBurstExtension::Kind::Request;
  ext.issue_cycle = 50;
  gp.set_extension(&ext);
  gp.set_command(tlm::TLM_READ_COMMAND);
  gp.set_address(0x40);
  gp.set_data_ptr(nullptr);  // timing only
  gp.set_data_length(0);
  sc_core::sc_time delay(5, sc_core::SC_NS);
  fw().b_transport(gp, delay);
  gp.clear_extension(&ext);
  EXPECT_TRUE(gp.is_response_ok());
  EXPECT_EQ(ext.completion_cycle, 50u + 18u);
  EXPECT_EQ(ext.requests, 1u);
  EXPECT_EQ(delay, sc_core::sc_time(5 + 18, sc_core::SC_NS));  // target adds to the delay
  EXPECT_EQ(tgt().memory().pages(), 0u);                       // no data moved
}

// (f) through TLM in both modes.
TEST_F(HbmTlm, OneMiBLinearReadBothModes) {
  for (HbmAccessMode mode : {HbmAccessMode::Fast, HbmAccessMode::Request}) {
    tgt().reconfigure(HbmParams());
    Burst b;
    b.rows = 1;
    b.row_bytes = 1 << 20;
    b.par_dispatch = 16;
    const BurstResult r = hbm_transfer(fw(), b, mode, 64);
    EXPECT_EQ(r.completion_cycle, 1041u) << hbm_access_mode_name(mode);
    EXPECT_EQ(r.requests, 16384u);
    EXPECT_EQ(r.bytes, 1u << 20);
    EXPECT_EQ(r.last_issue_cycle, 1023u);
  }
}

// The target makes its model by name (HbmParams::model, preset key hbm.model): an unknown name
// is refused with the known names and leaves the model in place.
TEST_F(HbmTlm, ModelIsMadeByName) {
  HbmParams p;
  p.channels = 8;
  tgt().reconfigure(p);
  EXPECT_NE(dynamic_cast<const HbmFixed*>(&tgt().model()), nullptr);
  HbmParams bad = p;
  bad.model = "hbm3";
  bad.channels = 4;
  try {
    tgt().reconfigure(bad);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "unknown HBM model 'hbm3' (hbm.model); known models: fixed, dram");
  }
  EXPECT_EQ(tgt().params().channels, 8u);
  tgt().reconfigure(HbmParams());
}

// (e) Functional round trip: strided tile write, read back in both modes; gaps untouched.
TEST_F(HbmTlm, FunctionalDataRoundTrip) {
  tgt().memory().clear();
  Burst b;
  b.base = 12345;  // unaligned; rows cross a 4 KiB page boundary (16384)
  b.rows = 7;
  b.row_bytes = 100;
  b.row_pitch = 1000;
  b.par_dispatch = 4;
  std::vector<uint8_t> tile(b.rows * b.row_bytes);
  std::iota(tile.begin(), tile.end(), 3);
  b.write = true;
  b.issue_cycle = 0;
  const BurstResult w = hbm_transfer(fw(), b, HbmAccessMode::Fast, 64, tile.data());
  EXPECT_EQ(w.requests, 7u * 2);
  EXPECT_EQ(tgt().model().stats().bytes_written, 7u * 2 * 64);

  b.write = false;
  uint64_t t = w.completion_cycle;
  for (HbmAccessMode mode : {HbmAccessMode::Fast, HbmAccessMode::Request}) {
    std::vector<uint8_t> back(tile.size(), 0xEE);
    b.issue_cycle = t;
    t = hbm_transfer(fw(), b, mode, 64, back.data()).completion_cycle;
    EXPECT_EQ(back, tile) << hbm_access_mode_name(mode);
  }
  // The raw region (debug transport, contiguous): rows at the pitch, zeros in between.
  std::vector<uint8_t> raw(6 * 1000 + 100);
  tlm::tlm_generic_payload gp;
  gp.set_command(tlm::TLM_READ_COMMAND);
  gp.set_address(12345);
  gp.set_data_ptr(raw.data());
  gp.set_data_length(unsigned(raw.size()));
  EXPECT_EQ(fw().transport_dbg(gp), raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    const size_t r = i / 1000, c = i % 1000;
    ASSERT_EQ(raw[i], c < 100 ? tile[r * 100 + c] : 0) << "offset " << i;
  }
  // Request-mode write, fast-mode read back (another tile, 3 x 130 B: 3 requests per row,
  // the last carrying 2 data bytes).
  Burst b2;
  b2.base = 1 << 20;
  b2.rows = 3;
  b2.row_bytes = 130;
  b2.row_pitch = 4096;
  b2.write = true;
  b2.issue_cycle = t;
  std::vector<uint8_t> tile2(3 * 130);
  std::iota(tile2.begin(), tile2.end(), 77);
  HbmInitiator req(env().ini.socket, HbmAccessMode::Request);
  const BurstResult w2 = req.transfer(b2, tile2.data());
  EXPECT_EQ(w2.requests, 9u);
  b2.write = false;
  b2.issue_cycle = w2.completion_cycle;
  std::vector<uint8_t> back2(tile2.size());
  HbmInitiator fast(env().ini.socket, HbmAccessMode::Fast);
  fast.transfer(b2, back2.data());
  EXPECT_EQ(back2, tile2);
  // Timing-only transfers move no data.
  const size_t pages = tgt().memory().pages();
  b2.write = true;
  b2.issue_cycle += 100;
  fast.transfer(b2, nullptr);
  EXPECT_EQ(tgt().memory().pages(), pages);
  std::vector<uint8_t> again(tile2.size());
  b2.write = false;
  b2.issue_cycle += 100;
  fast.transfer(b2, again.data());
  EXPECT_EQ(again, tile2);
}

TEST_F(HbmTlm, ErrorResponses) {
  Burst b;
  b.rows = 2;
  b.row_bytes = 64;
  std::vector<uint8_t> buf(128);
  // Wrong data length for the burst geometry.
  tlm::tlm_generic_payload gp;
  HbmBurstExtension ext;
  ext.rows = 2;
  ext.row_bytes = 64;
  gp.set_extension(&ext);
  gp.set_command(tlm::TLM_WRITE_COMMAND);
  gp.set_data_ptr(buf.data());
  gp.set_data_length(100);
  gp.set_streaming_width(100);
  sc_core::sc_time d = sc_core::SC_ZERO_TIME;
  fw().b_transport(gp, d);
  EXPECT_EQ(gp.get_response_status(), tlm::TLM_BURST_ERROR_RESPONSE);
  // Byte enables are not supported.
  uint8_t be[1] = {0xff};
  gp.set_data_length(128);
  gp.set_streaming_width(128);
  gp.set_byte_enable_ptr(be);
  gp.set_byte_enable_length(1);
  fw().b_transport(gp, d);
  EXPECT_EQ(gp.get_response_status(), tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
  gp.clear_extension(&ext);
  // A request transaction carrying more than one request's bytes throws in the helper.
  EXPECT_THROW(hbm_request(fw(), 0, true, 0, buf.data(), 128), std::runtime_error);
}

// (c) through TLM: the TLM path adds nothing to the timing (identical to HbmFixed), and
// the immediate fast mode stays close to the request level on the mixed workload (see
// HbmFixed.FastAndRequestModesAgreeOnMixedWorkload for the deferred path and the bounds).
TEST_F(HbmTlm, FastAndRequestModesAgreeThroughTlm) {
  const auto w = test::mixed_workload(6, 3);
  tgt().reconfigure(HbmParams());
  const auto f = test::run_fast(w, [&](const Burst& b) { return hbm_transfer(fw(), b, HbmAccessMode::Fast, 64); });
  tgt().reconfigure(HbmParams());
  const auto r =
      test::run_requests(w, 64, [&](uint64_t a, bool wr, uint64_t t) { return hbm_request(fw(), a, wr, t); });
  HbmFixed direct;
  const auto fd = test::run_fast(w, [&](const Burst& b) { return direct.serve_burst(b); });
  EXPECT_EQ(f.makespan, fd.makespan);
  EXPECT_EQ(f.total_tile_latency, fd.total_tile_latency);
  EXPECT_EQ(f.bytes, r.bytes);
  const double dm = double(f.makespan) / double(r.makespan) - 1.0;
  const double dl = double(f.total_tile_latency) / double(r.total_tile_latency) - 1.0;
  std::printf(
      "[calib] TLM mixed workload: makespan fast %llu request %llu (%+.3f%%), "
      "summed tile latency %+.3f%%\n",
      (unsigned long long)f.makespan, (unsigned long long)r.makespan, 100 * dm, 100 * dl);
  EXPECT_LT(std::abs(dm), 0.06);
  EXPECT_LT(std::abs(dl), 0.03);
  HbmFixed direct_r;
  const auto rd = test::run_requests(
      w, 64, [&](uint64_t a, bool wr, uint64_t t) { return direct_r.serve_request(a, wr, t).completion_cycle; });
  EXPECT_EQ(r.makespan, rd.makespan);
  EXPECT_EQ(r.total_tile_latency, rd.total_tile_latency);
}

// Deferred fast mode through TLM (BurstIssue / BurstResult transactions): every tile's
// completion equals the request level's, for both mappings and both same-cycle orders
// (initiator order = the order a turn-ordered simulator issues its requests in).
TEST_F(HbmTlm, DeferredFastModeThroughTlmEqualsRequestLevel) {
  for (HbmMapping map : {HbmMapping::RoundRobin, HbmMapping::AddressInterleave})
    for (auto order : {test::SameCycle::CallOrder, test::SameCycle::Initiator}) {
      HbmParams p;
      p.mapping = map;
      const auto w = test::mixed_workload(6, 3);
      tgt().reconfigure(p);
      const auto d = test::run_deferred(
          w, p.request_bytes, 2ull * p.link_latency + p.latency,
          [&](const Burst& b) { return hbm_issue(fw(), b, p.request_bytes); },
          [&](uint64_t h, uint64_t wm, BurstResult* out) { return hbm_result(fw(), h, wm, p.request_bytes, out); },
          order);
      EXPECT_EQ(dynamic_cast<const HbmFixed&>(tgt().model()).pending_bursts(), 0u);
      tgt().reconfigure(p);
      const auto r = test::run_requests(
          w, p.request_bytes, [&](uint64_t a, bool wr, uint64_t t) { return hbm_request(fw(), a, wr, t); }, order);
      EXPECT_EQ(d.bytes, r.bytes);
      EXPECT_EQ(d.makespan, r.makespan);
      EXPECT_EQ(d.tile_done, r.tile_done) << hbm_mapping_name(map);
      std::printf("[calib] TLM deferred (%s, %s order): makespan %llu = request level %llu\n", hbm_mapping_name(map),
                  order == test::SameCycle::Initiator ? "initiator" : "call", (unsigned long long)d.makespan,
                  (unsigned long long)r.makespan);
    }
  // A result asked for too early is not ready; data moves at issue.
  tgt().reconfigure(HbmParams());
  tgt().memory().clear();
  std::vector<uint8_t> tile(256), back(256, 0);
  std::iota(tile.begin(), tile.end(), 1);
  Burst b = test::tile_walk(0x4000, 4, 128, 2, 128, true, 2)[0];  // 2 x 128 B, 4 requests
  b.issue_cycle = 10;
  HbmInitiator ini(env().ini.socket, HbmAccessMode::Fast);
  BurstResult info, res;
  const uint64_t h = ini.issue(b, tile.data(), &info);
  EXPECT_EQ(info.requests, 4u);
  EXPECT_EQ(info.last_issue_cycle, 11u);
  EXPECT_FALSE(ini.result(h, 10, &res));
  EXPECT_TRUE(ini.result(h, 11, &res));
  EXPECT_EQ(res.completion_cycle, 11u + 18u);
  EXPECT_EQ(res.bytes, 256u);
  EXPECT_FALSE(ini.result(h, 12, &res));  // taken once
  b.write = false;
  b.issue_cycle = 40;
  hbm_transfer(fw(), b, HbmAccessMode::Fast, 64, back.data());
  EXPECT_EQ(back, tile);
}

}  // namespace
}  // namespace stepsim
