// Micro-benchmark patterns of the `dram` HBM model (hw/memory/hbm_dram.h) against theory, in
// the style of Ramulator 2's validation: each pattern drives the model through its public
// interface only, and gives the model's figure beside the figure the timing rules predict from
// the parameters (each formula once, in dram_patterns.cpp). docs/hbm-dram-validation.md lists
// the formulas and a measured table.
//
// Shared by the benchmark (scripts/bench/bench_dram_micro.cpp: ~1e6 requests per case, wall
// time, requests/s) and the test (testbench/dram/hbm_dram_micro_test.cpp: small sizes).
//
// Units: cycles are accelerator cycles (= tCK with the default clock ratio 1), bandwidths bytes
// per cycle, rates requests per cycle.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "hw/memory/hbm_dram.h"
#include "hw/presets/hbm_params.h"

namespace stepsim::dram_micro {

// How a figure is held against its theory.
enum class Check {
  kExact,   // the rules give an exact number: measured == theory
  kWithin,  // |measured - theory| <= tolerance x theory (tolerance says why, per figure)
  kAtMost,  // theory is an upper bound: measured <= theory
};

struct Figure {
  std::string name;  // pattern and quantity
  std::string unit;
  double measured = 0;
  double theory = 0;
  Check check = Check::kExact;
  double tolerance = 0;  // relative, for kWithin
  std::string formula;   // the theory in the parameters' names
  // (measured - theory) / theory; 0 if theory is 0.
  double difference() const;
  bool ok() const;
};

// One run of a pattern on a fresh model.
struct CaseResult {
  std::vector<Figure> figures;
  uint64_t requests = 0;         // requests the model served
  uint64_t last_completion = 0;  // cycle of the last response (stats().last_completion_cycle)
  DramStats dram;                // the model's bank counters at the end
};

// The memory of the authors' HDL validation: HBM2_2Gb / HBM2_2Gbps defaults, 8 channels of 2
// pseudo-channels of 8 banks, RoBaRaCoCh, open page, refresh every tREFI.
HbmParams hbm2_8ch();
// The same parameters without refresh (tREFI = 0), for patterns that isolate one timing rule.
HbmParams without_refresh(HbmParams p);
// The byte address of a DRAM location under p.mapping_order (the inverse of HbmDram::decode).
// The order is read once: the patterns encode every request.
class AddressEncoder {
 public:
  explicit AddressEncoder(const HbmParams& p);
  uint64_t operator()(const DramAddress& a) const;

 private:
  enum Field : uint8_t { kRow, kBank, kRank, kColumn, kChannel };
  std::array<Field, 5> order_{};   // most significant first
  std::array<uint64_t, 5> size_{};  // by Field
  uint64_t request_bytes_ = 0;
};

// 1. Streaming: 1-KiB bursts (one row's worth) of reads or writes issued one per cycle, four
//    times the peak request rate of 8 x 2 pseudo-channels. RoBaRaCoCh: one sequential stream
//    (addresses 0, 1 KiB, ...: channels, then columns, pseudo-channels, banks). ChRaBaRoCo: one
//    sequential stream per pseudo-channel, dealt round-robin (a single one would stay in one
//    pseudo-channel); each walks the rows of its bank 0. Other mapping orders: invalid_argument.
//    `requests` is rounded down to whole stripes of one row per pseudo-channel.
CaseResult stream(const HbmParams& p, bool write, uint64_t requests);

// 2. Read/write mixing on one pseudo-channel: blocks of `block` reads then `block` writes, all
//    row hits in one open row (`other_group`: the writes in a bank of another bank group),
//    one request per call, issued two per cycle. Figures: the cost of a read-to-write and of a
//    write-to-read switch (cycles beyond tBURST between the column commands) and the bandwidth.
CaseResult rw_mix(const HbmParams& p, uint64_t block, bool other_group, uint64_t requests);

// 3. Latency of one request on an idle memory: row miss (bank closed), row hit, row conflict,
//    reads or writes, 100 cycles apart (every constraint of the previous request has expired).
//    Each request is classed by the model's own counters; a class's mean latency is the figure.
CaseResult idle_latency(const HbmParams& p, bool write, uint64_t requests);

// 4a. Random reads one at a time (the next issued when the previous completes) over the first
//     `rows` rows of every bank: mean latency against the miss/hit/conflict mix expected from
//     the bank count and the footprint.
CaseResult random_one_at_a_time(const HbmParams& p, uint32_t rows, uint64_t requests);

// 4b/5. Saturating reads on pseudo-channel 0 of channel 0, two issued per cycle, each to a random
//     row other than its bank's open one (every read needs its own activate): banks in turn
//     (`interleave_banks`) or uniformly random. The rate against the activation bound min(1/tBURST, 4/tFAW, banks/row cycle, ...).
CaseResult saturating_random(const HbmParams& p, bool interleave_banks, uint64_t requests);

// 5. tFAW: rounds of one read to each bank of pseudo-channel 0, all issued at once to idle
//    closed banks (closed page), 200 cycles apart: the activates' spacing, four per tFAW.
CaseResult activate_window(const HbmParams& p, uint64_t requests);

// A named case of the benchmark: a pattern with its parameters; run(requests) at any size.
struct Case {
  std::string name;
  CaseResult (*run)(uint64_t requests);
};
// Every case, in the order of docs/hbm-dram-validation.md.
const std::vector<Case>& cases();

}  // namespace stepsim::dram_micro
