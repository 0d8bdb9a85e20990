// The `dram` HBM model (hw/memory/hbm_dram.h): exact cycles derived by hand from the timing
// rules, with the default HBM2 2 Gb/s timings (tCK = 1 accelerator cycle): tRCD 7, tCL 7,
// tCWL 2, tBURST 4, tRP 7, tRAS 17, tRC 19, tRTP 3, tWR 8, tCCD_S/L 1/2, tRRD_S/L 2/3,
// tWTR_S/L 3/4, tFAW 15, tRFC 160, tREFI 3900; link latency 1 cycle each way. docs/hbm-dram.md.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>

#include "hw/memory/hbm_dram.h"
#include "hw/presets/hardware.h"
#include "testbench/memory/hbm_workload.h"

namespace stepsim {
namespace {

// The HDL-validation memory: 8 channels of 2 pseudo-channels. Under RoBaRaCoCh a request
// index x = addr / 64 splits into Ch = x % 8, Co = x / 8 % 16, Ra = x / 128 % 2,
// Ba = x / 256 % 8, Ro = x / 2048.
HbmParams hdl() {
  HbmParams p;
  p.channels = 8;
  p.model = "dram";
  return p;
}
constexpr uint64_t kNextColumn = 8 * 64;   // same channel, pseudo-channel, bank and row
constexpr uint64_t kNextBank = 256 * 64;   // bank + 1 (the next bank group too)
constexpr uint64_t kNextRow = 2048 * 64;   // same bank, row + 1

Burst read_burst(uint64_t base, uint32_t rows, uint64_t row_bytes, uint64_t pitch, uint64_t issue, uint32_t dispatch) {
  Burst b;
  b.base = base;
  b.rows = rows;
  b.row_bytes = row_bytes;
  b.row_pitch = pitch;
  b.issue_cycle = issue;
  b.par_dispatch = dispatch;
  return b;
}

TEST(HbmDram, IsRegisteredAsDramAndHasNoUncontendedRegime) {
  const std::unique_ptr<HbmModel> m = make_hbm_model("dram", hdl());
  ASSERT_NE(dynamic_cast<HbmDram*>(m.get()), nullptr);
  EXPECT_FALSE(m->set_arrival_bound(1));
  EXPECT_FALSE(m->uncontended());
  m->serve_request(0, false, 0, 0);
  EXPECT_THROW(m->set_arrival_bound(1), std::logic_error);
}

TEST(HbmDram, AnIdleReadCostsRcdPlusClPlusBurstPlusTheLinks) {
  HbmDram m(hdl());
  const Completion c = m.serve_request(0, false, 100, 0);
  EXPECT_EQ(c.start_cycle, 101u);                     // ACT as the request arrives
  EXPECT_EQ(c.completion_cycle, 100u + 1 + 7 + 7 + 4 + 1);  // link + tRCD + tCL + tBURST + link
  EXPECT_EQ(c.channel, 0u);
  EXPECT_EQ(m.dram_stats().row_misses, 1u);
  EXPECT_EQ(m.stats().read_requests, 1u);
  EXPECT_EQ(m.stats().busy_cycles_per_channel[0], 4u);
}

TEST(HbmDram, ARowHitSkipsTheActivateAndARowConflictPaysThePrecharge) {
  HbmDram m(hdl());
  m.serve_request(0, false, 100, 0);  // ACT 101, RD 108
  // Row hit: RD as it arrives (201 > RD 108 + tBURST): link + tCL + tBURST + link.
  EXPECT_EQ(m.serve_request(kNextColumn, false, 200, 0).completion_cycle, 200u + 1 + 7 + 4 + 1);
  // Row conflict: PRE at 301 (tRAS and tRTP long over), ACT at 301 + tRP, RD tRCD later.
  EXPECT_EQ(m.serve_request(kNextRow, false, 300, 0).completion_cycle, 300u + 1 + 7 + 7 + 7 + 4 + 1);
  EXPECT_EQ(m.dram_stats().row_hits, 1u);
  EXPECT_EQ(m.dram_stats().row_conflicts, 1u);
  EXPECT_EQ(m.dram_stats().activates, 2u);
}

TEST(HbmDram, ClosedPagePrechargesAfterEachAccess) {
  HbmParams p = hdl();
  p.page_policy = "closed";
  HbmDram m(p);
  m.serve_request(0, false, 100, 0);  // ACT 101, RD 108, auto-PRE at ACT + tRAS = 118
  // The same row again is a miss: ACT at 201 (>= PRE + tRP = 125), the idle latency.
  EXPECT_EQ(m.serve_request(kNextColumn, false, 200, 0).completion_cycle, 220u);
  EXPECT_EQ(m.dram_stats().row_hits, 0u);
  EXPECT_EQ(m.dram_stats().row_misses, 2u);
}

TEST(HbmDram, StreamingReadsOnOneChannelTakeOneBurstEach) {
  HbmParams p = hdl();
  p.channels = 1;
  p.dram_pseudo_channels = 1;
  p.dram_tREFI = 0;  // no refresh
  HbmDram m(p);
  const uint64_t n = 4096;  // 32 rows: every 16th request opens a bank, every 128th a new row
  const BurstResult r = m.serve_burst(read_burst(0, 1, n * 64, 0, 0, 1));
  // ACT 1, first RD 8, then one RD per tBURST (the next bank is activated while the data
  // bus is busy): last RD 8 + 4 (n - 1), data + tCL + tBURST, response + link.
  EXPECT_EQ(r.completion_cycle, 8 + 4 * (n - 1) + 7 + 4 + 1);
  EXPECT_EQ(r.requests, n);
  EXPECT_EQ(m.dram_stats().row_hits, n - n / 16);
  EXPECT_EQ(m.dram_stats().row_conflicts, n / 16 - 8);  // the first row of each of 8 banks is a miss
}

TEST(HbmDram, StreamingReadsLoseTheRefreshTimeToRefresh) {
  HbmParams p = hdl();
  p.channels = 1;
  p.dram_pseudo_channels = 1;
  HbmDram m(p);
  const uint64_t n = 20000;
  const BurstResult r = m.serve_burst(read_burst(0, 1, n * 64, 0, 0, 1));
  const uint64_t ideal = 8 + 4 * (n - 1) + 7 + 4 + 1;  // the run without refresh (above)
  const uint64_t refreshes = m.dram_stats().refreshes;
  // One refresh every tREFI = 3900 cycles of the run.
  EXPECT_EQ(refreshes, r.completion_cycle / 3900);
  // Each costs tRFC = 160 cycles plus the precharge before it and the activate after it
  // (< 40 cycles): the stream reaches tBURST x (1 + tRFC / tREFI) per request, about.
  EXPECT_GE(r.completion_cycle, ideal + refreshes * 160);
  EXPECT_LE(r.completion_cycle, ideal + refreshes * 200);
  EXPECT_NEAR(double(r.completion_cycle) / double(n), 4.0 * (1 + 160.0 / 3900), 0.05);
}

TEST(HbmDram, PerBankRefreshBlocksOnlyItsBank) {
  // tREFI 800 over 8 banks: one bank every 100 tCK in turn, bank 0 first at 100. Two reads
  // issued at 100 (arrival 101): A to bank 0, B to bank 1 (another bank group).
  HbmParams p = hdl();
  p.refresh = "per_bank";
  p.dram_tREFI = 800;
  HbmDram m(p);
  Burst a = read_burst(0, 1, 64, 64, 100, 1), b = read_burst(kNextBank, 1, 64, 64, 100, 1);
  const uint64_t ha = m.issue_burst(a, nullptr), hb = m.issue_burst(b, nullptr);
  BurstResult ra, rb;
  ASSERT_TRUE(m.try_result(ha, 100, &ra));
  ASSERT_TRUE(m.try_result(hb, 100, &rb));
  // Decision at 101: bank 0's refresh starts at 100, ends at 100 + tRFCsb 160 = 260; other
  // banks' activates wait tRREFD 8, to 108. No row hit: first ready is B (RD 108 + 7 = 115
  // against A's 260 + 7): data end 115 + 7 + 4 = 126, seen at 127. A: ACT 260, RD 267, data
  // end 278, seen at 279.
  EXPECT_EQ(rb.completion_cycle, 127u);
  EXPECT_EQ(ra.completion_cycle, 279u);
  EXPECT_EQ(m.stats().dram->refreshes, 1u);
  // A's activate waited 260 - 110 (tRRD_S after B's at 108), B's 108 - 101.
  EXPECT_EQ(m.stats().dram->refresh_stall_cycles, 150u + 7u);
  p.refresh = "all_banks";
  EXPECT_THROW(HbmDram{p}, std::invalid_argument);
}

TEST(HbmDram, PerBankRefreshesDueWhileIdleAreCountedNotReplayed) {
  // A read to bank 0 issued at 100000 (arrival 100001) after an idle stretch: refreshes were due
  // at 100, 200, ..., 100000: 1000 of them, the last (bank 7) at 100000, so the activate waits
  // tRREFD to 100008; RD 100015, data end 100026, seen at 100027.
  HbmParams p = hdl();
  p.refresh = "per_bank";
  p.dram_tREFI = 800;
  HbmDram m(p);
  EXPECT_EQ(m.serve_request(0, false, 100000, 0).completion_cycle, 100027u);
  EXPECT_EQ(m.stats().dram->refreshes, 1000u);
}

TEST(HbmDram, ReadsGoFirstAndWritesDrainAfterThem) {
  // Four writes, then four reads, to the columns of row 0 of bank 0 (channel 0, pseudo-channel
  // 0), all issued at cycle 0 (arrival 1); no refresh.
  auto run = [](const std::string& policy) {
    HbmParams p = hdl();
    p.dram_tREFI = 0;
    p.write_policy = policy;
    HbmDram m(p);
    Burst w = read_burst(0, 4, 64, kNextColumn, 0, 4), r = read_burst(4 * kNextColumn, 4, 64, kNextColumn, 0, 4);
    w.write = true;
    const uint64_t hw = m.issue_burst(w, nullptr), hr = m.issue_burst(r, nullptr);
    BurstResult rw, rr;
    EXPECT_TRUE(m.try_result(hw, 0, &rw));
    EXPECT_TRUE(m.try_result(hr, 0, &rr));
    return std::make_pair(rw.completion_cycle, rr.completion_cycle);
  };
  // drain: 4 writes are below the high watermark (0.8 x 32) and reads wait: reads first. ACT 1,
  // RD 8, 12, 16, 20 (tBURST), the last data at 20 + 7 + 4 = 31, seen at 32. No read left: the
  // writes drain from the read-to-write turnaround, 20 + (7 + 4 + 2 - 2) = 31: WR 31, 35, 39,
  // 43, the last data at 43 + 2 + 4 = 49, seen at 50.
  EXPECT_EQ(run("drain"), std::make_pair(uint64_t(50), uint64_t(32)));
  // fcfs: arrival order. WR 8, 12, 16, 20 (data end 26, seen 27); the reads wait tWTR_L after
  // the last write data: RD 30, 34, 38, 42, the last data at 53, seen at 54.
  EXPECT_EQ(run("fcfs"), std::make_pair(uint64_t(27), uint64_t(54)));
  // Watermarks 0.25 and 0.1 of 32: 12 writes (above 8) start a drain before 4 reads; it stops
  // below 3.2 writes, after 9: WR 8, 12, ..., 40 (data end 46); the reads after tWTR_L: RD 50, 54,
  // 58, 62, seen at 74; the last 3 writes after read-to-write, WR 73, 77, 81, seen at 88.
  {
    HbmParams p = hdl();
    p.dram_tREFI = 0;
    p.write_high_watermark = 0.25;
    p.write_low_watermark = 0.1;
    HbmDram m(p);
    Burst w = read_burst(0, 12, 64, kNextColumn, 0, 16), r = read_burst(12 * kNextColumn, 4, 64, kNextColumn, 0, 4);
    w.write = true;
    const uint64_t hw = m.issue_burst(w, nullptr), hr = m.issue_burst(r, nullptr);
    BurstResult rw, rr;
    ASSERT_TRUE(m.try_result(hw, 0, &rw));
    ASSERT_TRUE(m.try_result(hr, 0, &rr));
    EXPECT_EQ(rr.completion_cycle, 74u);
    EXPECT_EQ(rw.completion_cycle, 88u);
  }
  HbmParams bad = hdl();
  bad.write_low_watermark = 0.9;  // above the high one
  EXPECT_THROW(HbmDram{bad}, std::invalid_argument);
}

TEST(HbmDram, FourActivatesPerFawWindow) {
  auto fifth_read = [](uint32_t faw) {
    HbmParams p = hdl();
    p.dram_tBURST = 1;  // the data bus out of the way
    p.dram_tFAW = faw;
    HbmDram m(p);
    // Five reads to banks 0..4 of one pseudo-channel (bank b in group b % 4), all arriving at 1:
    // ACTs at 1, 3, 5, 7 (tRRD_S 2); the fifth (group 0 again) at max(9, 1 + tRRD_L, 1 + tFAW).
    return m.serve_burst(read_burst(0, 5, 64, kNextBank, 0, 5)).completion_cycle;
  };
  EXPECT_EQ(fifth_read(15), 16u + 7 + 7 + 1 + 1);  // ACT 16, RD 23, data until 31, response 32
  EXPECT_EQ(fifth_read(0), 9u + 7 + 7 + 1 + 1);    // no window: ACT 9
}

TEST(HbmDram, AReadAfterAWritePaysTheWriteToReadTurnaround) {
  // WR: ACT 101, WR 108, write data until 108 + tCWL + tBURST = 114.
  {
    HbmDram m(hdl());
    EXPECT_EQ(m.serve_request(0, true, 100, 0).completion_cycle, 115u);
    // Same bank group: RD at 114 + tWTR_L = 118.
    EXPECT_EQ(m.serve_request(0, false, 101, 0).completion_cycle, 118u + 7 + 4 + 1);
  }
  {
    HbmDram m(hdl());
    m.serve_request(0, true, 100, 0);
    // Another bank group (bank 1): ACT 103 (tRRD_S), RD at 114 + tWTR_S = 117.
    EXPECT_EQ(m.serve_request(kNextBank, false, 101, 0).completion_cycle, 117u + 7 + 4 + 1);
  }
  {
    HbmDram m(hdl());
    m.serve_request(0, false, 100, 0);  // RD 108
    // Read to write: WR >= RD + tCL + tBURST + 2 - tCWL = 119; data until 125.
    EXPECT_EQ(m.serve_request(0, true, 101, 0).completion_cycle, 126u);
  }
}

TEST(HbmDram, FrFcfsServesAYoungerRowHitBeforeAnOlderConflict) {
  HbmDram m(hdl());
  m.serve_request(0, false, 100, 0);  // opens bank 0, row 0
  BurstResult info;
  const uint64_t conflict = m.issue_burst(read_burst(kNextRow, 1, 64, 0, 200, 1), &info);  // initiator 0
  Burst hit = read_burst(kNextColumn, 1, 64, 0, 200, 1);
  hit.initiator = 1;  // the same cycle, ordered after the conflict
  const uint64_t hit_handle = m.issue_burst(hit, &info);
  BurstResult a, b;
  ASSERT_TRUE(m.try_result(conflict, 200, &a));
  ASSERT_TRUE(m.try_result(hit_handle, 200, &b));
  EXPECT_EQ(b.completion_cycle, 200u + 1 + 7 + 4 + 1);  // the hit: RD at 201
  // The conflict after it: PRE at 204 (RD 201 + tRTP), ACT 211, RD 218, data until 229.
  EXPECT_EQ(a.completion_cycle, 230u);
  EXPECT_FALSE(m.try_result(conflict, 300, &a));  // taken
}

TEST(HbmDram, FirstReadyServesAnIdleBankBeforeABusyOne) {
  // Three reads queued together (deferred, issued at 0, arrival 1), refresh off: X to bank 0
  // row 0, Y to bank 0 row 1, Z to bank 1 row 0. Decision at 1: no row hit; X, Y and Z could
  // all read at 8 (ACT 1 + tRCD): the oldest, X (ACT 1, RD 8, seen at 20). Decision at 12 (the
  // bus frees): Y conflicts (PRE at ACT + tRAS = 18, ACT 25, RD 32), Z's bank is idle (ACT 3,
  // RD 12): Z first, seen at 12 + 7 + 4 + 1 = 24; then Y, seen at 32 + 11 + 1 = 44. Served in
  // arrival order (a queue of one) Z would wait for Y's activate: ACT 27, RD 36, seen at 48.
  for (const uint32_t depth : {32u, 1u}) {
    HbmParams p = hdl();
    p.dram_tREFI = 0;
    p.dram_queue_depth = depth;
    HbmDram m(p);
    const uint64_t x = m.issue_burst(read_burst(0, 1, 64, 64, 0, 1), nullptr);
    const uint64_t y = m.issue_burst(read_burst(kNextRow, 1, 64, 64, 0, 1), nullptr);
    const uint64_t z = m.issue_burst(read_burst(kNextBank, 1, 64, 64, 0, 1), nullptr);
    BurstResult rx, ry, rz;
    ASSERT_TRUE(m.try_result(x, 0, &rx));
    ASSERT_TRUE(m.try_result(y, 0, &ry));
    ASSERT_TRUE(m.try_result(z, 0, &rz));
    EXPECT_EQ(rx.completion_cycle, 20u) << depth;
    EXPECT_EQ(ry.completion_cycle, 44u) << depth;
    EXPECT_EQ(rz.completion_cycle, depth == 1 ? 48u : 24u) << depth;
  }
}

TEST(HbmDram, ATileResultWaitsForItsLastIssueCycle) {
  HbmDram m(hdl());
  BurstResult info;
  const uint64_t h = m.issue_burst(read_burst(0, 4, 64, 64, 10, 1), &info);
  EXPECT_EQ(info.last_issue_cycle, 13u);
  EXPECT_EQ(info.requests, 4u);
  BurstResult r;
  EXPECT_FALSE(m.try_result(h, 12, &r));
  ASSERT_TRUE(m.try_result(h, 13, &r));
  // Four requests on four channels, each an idle read; the last issued at 13.
  EXPECT_EQ(r.completion_cycle, 13u + 20);
  EXPECT_EQ(m.last_issue_cycle(), 13u);
}

TEST(HbmDram, RoBaRaCoChPutsConsecutiveRequestsOnConsecutiveChannels) {
  HbmDram m(hdl());
  for (uint64_t j = 0; j < 64; ++j) {
    const DramAddress a = m.decode(j * 64);
    EXPECT_EQ(a.channel, j % 8) << j;
    EXPECT_EQ(a.column, j / 8 % 16) << j;
    EXPECT_EQ(a.pseudo_channel, 0u) << j;
  }
  EXPECT_EQ(m.decode(kNextRow).row, 1u);
  EXPECT_EQ(m.decode(kNextBank).bank, 1u);
}

TEST(HbmDram, FieldSizesThatAreNotPowersOfTwoDecodeByDivision) {
  // 6 channels, 3 bank groups of 2 banks: the decoder cannot use shifts here.
  HbmParams p = hdl();
  p.channels = 6;
  p.dram_bank_groups = 3;
  HbmDram m(p);
  for (uint64_t j = 0; j < 6 * 16 * 2 * 6 * 3; j += 7) {
    const DramAddress a = m.decode(j * 64);
    EXPECT_EQ(a.channel, j % 6) << j;
    EXPECT_EQ(a.column, j / 6 % 16) << j;
    EXPECT_EQ(a.pseudo_channel, j / 96 % 2) << j;
    EXPECT_EQ(a.bank, j / 192 % 6) << j;
    EXPECT_EQ(a.row, j / 1152) << j;
  }
}

TEST(HbmDram, ChRaBaRoCoKeepsARowOfRequestsInOneChannel) {
  HbmParams p = hdl();
  p.mapping_order = "ChRaBaRoCo";
  HbmDram m(p);
  for (uint64_t j = 0; j < 16; ++j) {
    EXPECT_EQ(m.decode(j * 64).channel, 0u);
    EXPECT_EQ(m.decode(j * 64).column, j);
  }
  EXPECT_EQ(m.decode(16 * 64).row, 1u);
  // One channel holds 16 columns x 16384 rows x 8 banks x 2 pseudo-channels x 64 B = 256 MiB.
  EXPECT_EQ(m.decode(uint64_t(256) << 20).channel, 1u);
}

TEST(HbmDram, TheDramKeepsItsOwnClock) {
  // A 1.5 GHz accelerator on the 1 GHz HBM2 clock: R = 1.5 cycles per tCK. An idle read issued
  // at cycle 0 reaches the controller at cycle 1 = tCK ceil(1 / 1.5) = 1; ACT 1, RD 8, data
  // end 8 + 7 + 4 = 19 tCK = cycle ceil(28.5) = 29; seen at 30.
  HbmParams p = hdl();
  p.dram_clock_ratio = 1.5;
  HbmDram m(p);
  EXPECT_EQ(m.timing().rcd, 7u);  // in tCK
  EXPECT_EQ(m.to_tck(1), 1u);
  EXPECT_EQ(m.to_cycle(19), 29u);
  const Completion c = m.serve_request(0, false, 0, 0);
  EXPECT_EQ(c.issue_cycle, 0u);
  EXPECT_EQ(c.start_cycle, 2u);  // ACT at tCK 1 = cycle 1.5, seen from cycle 2
  EXPECT_EQ(c.completion_cycle, 30u);
}

TEST(HbmDram, AFasterDramClockKeepsItsExactBurstRate) {
  // tCK 0.625 ns (a 1.6 GHz DRAM clock) under a 1 GHz accelerator: a burst of 4 tCK is 2.5
  // cycles, so one pseudo-channel streams 64 B per 2.5 cycles, not per ceil(2.5) = 3.
  HbmParams p = hdl();
  p.dram_clock_ratio = 0.625;
  p.dram_tREFI = 0;  // no refresh
  p.dram_pseudo_channels = 1;
  HbmDram m(p);
  // Reads to one pseudo-channel: the requests of channel 0 (every 8th) within a row, then the
  // next bank; 4096 of them, all issued at cycle 0.
  Burst b;
  b.row_bytes = 64;
  b.row_pitch = 64 * 8;
  b.rows = 4096;
  b.par_dispatch = 4096;
  const BurstResult r = m.serve_burst(b);
  // The first read: arrival cycle 1 = tCK 2, ACT 2, RD 9; then one RD per 4 tCK: the last RD
  // at 9 + 4 x 4095 = 16389, its data at 16389 + 7 + 4 = 16400 tCK = cycle 10250, seen at 10251.
  EXPECT_EQ(r.completion_cycle, 10251u);
  EXPECT_EQ(m.stats().busy_cycles_per_channel[0], 10240u);  // 4096 x 2.5
}

TEST(HbmDram, PresetKeysSetTheModelsParameters) {
  HardwareParams h;
  h.set("hbm.model", "dram");
  h.set("hbm.channels", "8");
  h.set("hbm.dram.tRCD", "9");
  h.set("hbm.page_policy", "closed");
  const std::unique_ptr<HbmModel> m = make_hbm_model(h.hbm.model, h.hbm);
  EXPECT_EQ(m->serve_request(0, false, 0, 0).completion_cycle, 1u + 9 + 7 + 4 + 1);
  try {
    h.set("hbm.mapping_order", "RoRoRaCoCh");
    FAIL() << "accepted a bad mapping order";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "hardware parameter 'hbm.mapping_order': expected the fields Ro, Ba, Ra, Co and Ch once each, most "
              "significant first (e.g. RoBaRaCoCh), got 'RoRoRaCoCh'");
  }
  EXPECT_THROW(h.set("hbm.page_policy", "adaptive"), std::invalid_argument);
}

TEST(HbmDram, BadParametersAreErrors) {
  HbmParams p = hdl();
  p.dram_row_bytes = 100;  // not a multiple of 64-B requests
  EXPECT_THROW(make_hbm_model("dram", p), std::invalid_argument);
  p = hdl();
  p.mapping_order = "RoBaRaCo";
  EXPECT_THROW(make_hbm_model("dram", p), std::invalid_argument);
}

TEST(HbmDram, RunsAreDeterministicAndEveryPathAgreesOnTraffic) {
  const std::vector<test::InitiatorWork> w = test::mixed_workload(6, 3);
  auto deferred = [&] {
    HbmDram m(hdl());
    return test::run_deferred(w, m, test::SameCycle::Initiator);
  };
  const test::WorkloadResult a = deferred(), b = deferred();
  EXPECT_EQ(a.tile_done, b.tile_done);
  EXPECT_GT(a.makespan, 0u);
  HbmDram m(hdl());
  const test::WorkloadResult f = test::run_fast(w, [&](const Burst& x) { return m.serve_burst(x); });
  EXPECT_EQ(f.requests, a.requests);
  EXPECT_EQ(m.stats().requests(), a.requests);
  EXPECT_EQ(m.dram_stats().row_hits + m.dram_stats().row_misses + m.dram_stats().row_conflicts, a.requests);
}

}  // namespace
}  // namespace stepsim
