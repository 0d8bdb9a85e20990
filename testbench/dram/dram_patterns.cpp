// Micro-benchmark patterns of the `dram` HBM model against theory (dram_patterns.h). The
// theory functions at the top hold each formula once; docs/hbm-dram-validation.md derives them.
#include "testbench/dram/dram_patterns.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <stdexcept>

namespace stepsim::dram_micro {

namespace {

// ---- Theory: what the timing rules predict from the parameters (t: DramTiming::from(p)).

// Every pseudo-channel moves request_bytes per tBURST on its own data bus.
double peak_bytes_per_cycle(const HbmParams& p, const DramTiming& t) {
  return double(p.request_bytes) / double(t.burst) * p.dram_pseudo_channels * p.channels;
}

// Cycles from a column command until its bank may precharge: tRTP after a read; after a write
// its data (tCWL + tBURST) and the write recovery tWR.
uint64_t recovery(const DramTiming& t, bool write) { return write ? t.cwl + t.burst + t.wr : t.rtp; }

uint64_t minus_or_zero(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

// Data-bus cycles one all-bank refresh takes from a stream: the last column command's recovery
// beyond its own tBURST, the precharge of the open banks (tRP), the refresh (tRFC) and the
// activate that reopens the stream's row (tRCD).
uint64_t refresh_loss(const DramTiming& t, bool write) {
  return minus_or_zero(recovery(t, write), t.burst) + t.rp + t.rfc + t.rcd;
}

// The share of time a stream keeps its data bus: one refresh_loss per tREFI (1 without refresh).
double refresh_factor(const DramTiming& t, bool write) {
  return t.refi ? 1.0 - double(refresh_loss(t, write)) / double(t.refi) : 1.0;
}

// One row of `columns` accesses in a single bank, then the next row of the same bank: ACT,
// the columns tBURST apart, recovery, PRE, tRP; at least tRC and the data bus time.
uint64_t row_cycle(const DramTiming& t, uint64_t columns, bool write) {
  const uint64_t act_to_pre = std::max(t.ras, t.rcd + (columns - 1) * t.burst + recovery(t, write));
  return std::max({t.rc, act_to_pre + t.rp, columns * t.burst});
}

// Cycles a direction switch adds to the tBURST between two column commands: read to write waits
// tCL + tBURST + 2 - tCWL (DramTiming::rtw); write to read waits for the write data
// (tCWL + tBURST) and tWTR (tWTR_L within the bank group, tWTR_S across).
uint64_t read_to_write_cost(const DramTiming& t) { return minus_or_zero(t.rtw, t.burst); }
uint64_t write_to_read_cost(const DramTiming& t, bool same_group) {
  return minus_or_zero(t.cwl + t.burst + (same_group ? t.wtr_l : t.wtr_s), t.burst);
}

enum class RowState { kMiss, kHit, kConflict };

// Round trip of one request on an idle memory:
// link + [tRP if a conflict] + [tRCD unless a hit] + tCL (tCWL for a write) + tBURST + link.
uint64_t latency(const HbmParams& p, const DramTiming& t, RowState s, bool write) {
  return 2ull * p.link_latency + (s == RowState::kConflict ? t.rp : 0) + (s == RowState::kHit ? 0 : t.rcd) +
         (write ? t.cwl : t.cl) + t.burst;
}

// The shares of misses, hits and conflicts of n uniformly random requests over `banks` banks
// of `rows` rows each, open page: a bank's first request is a miss (the expected number of
// banks touched: banks (1 - (1 - 1/banks)^n)); later ones find the bank's last row open, a hit
// with probability 1/rows.
struct Mix {
  double miss = 0, hit = 0, conflict = 0;
};
Mix expected_random_mix(uint64_t banks, uint32_t rows, uint64_t n) {
  Mix m;
  m.miss = double(banks) * (1.0 - std::pow(1.0 - 1.0 / double(banks), double(n))) / double(n);
  m.hit = (1.0 - m.miss) / rows;
  m.conflict = 1.0 - m.miss - m.hit;
  return m;
}

// The bounds on the rate of reads to random rows of one pseudo-channel, banks taken in turn
// (every read needs its own activate), in requests per cycle; the rate is their minimum.
struct Bound {
  std::string name;
  double rate;
};
std::vector<Bound> activation_bounds(const HbmParams& p, const DramTiming& t) {
  const double banks = double(p.dram_bank_groups) * p.dram_banks_per_group, groups = p.dram_bank_groups;
  auto per = [](double n, uint64_t cycles) { return cycles ? n / double(cycles) : INFINITY; };
  return {{"1/tBURST", per(1, std::max(t.burst, t.ccd_s))},
          {"groups/tCCD_L", per(groups, std::max(t.ccd_l, t.burst))},
          {"4/tFAW", per(4, t.faw)},
          {"1/tRRD_S", per(1, t.rrd_s)},
          {"groups/tRRD_L", per(groups, t.rrd_l)},
          {"banks/row cycle", per(banks, row_cycle(t, 1, false))}};
}

// ---- Helpers of the patterns.

Figure figure(std::string name, std::string unit, double measured, double theory, Check check, double tolerance,
              std::string formula) {
  Figure f;
  f.name = std::move(name);
  f.unit = std::move(unit);
  f.measured = measured;
  f.theory = theory;
  f.check = check;
  f.tolerance = tolerance;
  f.formula = std::move(formula);
  return f;
}

CaseResult finish(const HbmDram& m, std::vector<Figure> figures) {
  CaseResult r;
  r.figures = std::move(figures);
  r.requests = m.stats().requests();
  r.last_completion = m.stats().last_completion_cycle;
  r.dram = m.dram_stats();
  return r;
}

std::string with_digits(double v, int digits) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

uint64_t banks_per_pc(const HbmParams& p) { return uint64_t(p.dram_bank_groups) * p.dram_banks_per_group; }
uint64_t columns(const HbmParams& p) { return p.dram_row_bytes / p.request_bytes; }

// Pseudo-channel q of the memory (channel-major), bank, row, column.
DramAddress location(const HbmParams& p, uint64_t q, uint64_t bank, uint64_t row, uint64_t column) {
  DramAddress a;
  a.channel = uint32_t(q / p.dram_pseudo_channels);
  a.pseudo_channel = uint32_t(q % p.dram_pseudo_channels);
  a.bank = uint32_t(bank);
  a.row = uint32_t(row % p.dram_rows);
  a.column = uint32_t(column);
  return a;
}

// Requests per cycle from the middle of the run (past the start) to its end, over whole groups
// of four requests (the period of the tFAW window).
double steady_rate(std::vector<uint64_t> completion) {
  // In time order: the controller may serve requests out of their issue order.
  std::sort(completion.begin(), completion.end());
  const size_t i0 = completion.size() / 2, span = (completion.size() - 1 - i0) / 4 * 4;
  if (span == 0) throw std::invalid_argument("steady_rate: too few requests (need >= 9)");
  return double(span) / double(completion[i0 + span] - completion[i0]);
}

// The random patterns' draws: mt19937_64 is specified by the standard, the same on every host.
std::mt19937_64 seeded_rng() { return std::mt19937_64(38); }

}  // namespace

double Figure::difference() const { return theory != 0 ? (measured - theory) / theory : 0.0; }

bool Figure::ok() const {
  switch (check) {
    case Check::kExact:
      return measured == theory;
    case Check::kWithin:
      return std::fabs(measured - theory) <= tolerance * std::fabs(theory);
    case Check::kAtMost:
      return measured <= theory;
  }
  return false;
}

HbmParams hbm2_8ch() {
  HbmParams p;
  p.model = "dram";
  p.channels = 8;
  return p;
}

HbmParams without_refresh(HbmParams p) {
  p.dram_tREFI = 0;
  return p;
}

AddressEncoder::AddressEncoder(const HbmParams& p) : request_bytes_(p.request_bytes) {
  static const char* const kNames[] = {"Ro", "Ba", "Ra", "Co", "Ch"};  // by Field
  check_hbm_mapping_order(p.mapping_order);
  for (size_t i = 0; i < order_.size(); ++i)
    for (uint8_t f = 0; f < 5; ++f)
      if (p.mapping_order.compare(2 * i, 2, kNames[f]) == 0) order_[i] = Field(f);
  size_ = {p.dram_rows, banks_per_pc(p), p.dram_pseudo_channels, columns(p), p.channels};
}

uint64_t AddressEncoder::operator()(const DramAddress& a) const {
  const uint64_t value[] = {a.row, a.bank, a.pseudo_channel, a.column, a.channel};  // by Field
  uint64_t x = 0;
  for (Field f : order_) x = x * size_[f] + value[f];
  return x * request_bytes_;
}

CaseResult stream(const HbmParams& p, bool write, uint64_t requests) {
  const bool one_stream = p.mapping_order == "RoBaRaCoCh", per_pc = p.mapping_order == "ChRaBaRoCo";
  if (!one_stream && !per_pc) throw std::invalid_argument("stream: a theory for RoBaRaCoCh and ChRaBaRoCo only");
  HbmDram m(p);
  const DramTiming& t = m.timing();
  const AddressEncoder encode(p);
  const uint64_t pcs = uint64_t(p.channels) * p.dram_pseudo_channels, per_burst = columns(p);
  // Whole stripes of one row per pseudo-channel, so that every pseudo-channel gets as many.
  const uint64_t bursts = requests / (pcs * per_burst) * pcs;
  if (bursts == 0) throw std::invalid_argument("stream: needs one row per pseudo-channel at least");
  for (uint64_t j = 0; j < bursts; ++j) {
    Burst b;
    // RoBaRaCoCh: sequential addresses spread over channels, then columns, pseudo-channels,
    // banks. ChRaBaRoCo: burst j is one row of bank 0 of pseudo-channel j % pcs.
    b.base = one_stream ? j * p.dram_row_bytes : encode(location(p, j % pcs, 0, j / pcs, 0));
    b.row_bytes = p.dram_row_bytes;
    b.write = write;
    b.issue_cycle = j;
    b.par_dispatch = uint32_t(per_burst);
    m.serve_burst(b);
  }
  double theory = peak_bytes_per_cycle(p, t) * refresh_factor(t, write);
  std::string formula = "request_bytes/tBURST x pseudo-channels x channels";
  if (per_pc) {  // every row of a stream is a conflict in the same bank
    theory *= double(columns(p) * t.burst) / double(row_cycle(t, columns(p), write));
    formula += " x columns x tBURST / row cycle (" + std::to_string(row_cycle(t, columns(p), write)) + ")";
  }
  if (t.refi)
    formula += " x (1 - L/tREFI), L = " + std::to_string(refresh_loss(t, write)) + " (" +
               (write ? "tCWL + tWR + tRP + tRFC + tRCD" : "tRP + tRFC + tRCD") + ")";
  // Tolerance: the run holds a whole number of refreshes per pseudo-channel (one L off the
  // average at most) and a start (an idle latency, and the last pseudo-channel's first burst
  // comes within pcs cycles); under ChRaBaRoCo a refresh between two rows replaces their
  // precharge and activate, costing up to tRP + tRCD less than L.
  const double cycles = double(bursts * per_burst * p.request_bytes) / theory;
  const double tolerance =
      double((t.refi ? refresh_loss(t, write) : 0) + latency(p, t, RowState::kMiss, write) + pcs) / cycles +
      (per_pc && t.refi ? double(t.rp + t.rcd) / double(t.refi) : 0.0);
  const std::string name = std::string("stream ") + (write ? "writes" : "reads") + ", " + p.mapping_order +
                           (t.refi ? "" : ", no refresh") + ": bandwidth";
  return finish(m, {figure(name, "B/cycle", m.stats().achieved_bytes_per_cycle(), theory, Check::kWithin, tolerance,
                           formula)});
}

CaseResult rw_mix(const HbmParams& p, uint64_t block, bool other_group, uint64_t requests) {
  if (block == 0 || requests < 6 * block) throw std::invalid_argument("rw_mix: needs >= 3 pairs of blocks");
  HbmDram m(p);
  const DramTiming& t = m.timing();
  const AddressEncoder encode(p);
  const uint64_t write_bank = other_group ? 1 : 0;
  std::vector<uint64_t> column_cycle(requests);
  std::vector<bool> is_write(requests);
  for (uint64_t k = 0; k < requests; ++k) {
    is_write[k] = (k / block) % 2 == 1;
    const uint64_t addr = encode(location(p, 0, is_write[k] ? write_bank : 0, 0, k % columns(p)));
    // A row hit's first command is its column command (the first pair opens the rows: skipped).
    column_cycle[k] = m.serve_request(addr, is_write[k], k / 2, 0).start_cycle;
  }
  uint64_t rw_gaps = 0, rw_switches = 0, wr_gaps = 0, wr_switches = 0;
  for (uint64_t k = 2 * block; k < requests; ++k) {
    if (is_write[k] == is_write[k - 1]) continue;
    const uint64_t extra = column_cycle[k] - column_cycle[k - 1] - t.burst;
    if (is_write[k]) rw_gaps += extra, ++rw_switches;
    else wr_gaps += extra, ++wr_switches;
  }
  // Bandwidth over whole pairs of blocks, from the second pair to the start of the last.
  const uint64_t first = 2 * block, last = (requests / (2 * block) - 1) * 2 * block;
  const double bandwidth = double((last - first) * p.request_bytes) / double(column_cycle[last] - column_cycle[first]);
  const uint64_t rw = read_to_write_cost(t), wr = write_to_read_cost(t, !other_group);
  const std::string name = "rw mix N=" + std::to_string(block) + (other_group ? " (writes other group)" : "");
  const std::string wtr = other_group ? "tWTR_S" : "tWTR_L";
  return finish(
      m, {figure(name + ": read->write", "cycles", double(rw_gaps) / double(rw_switches), double(rw), Check::kExact, 0,
                 "tCL + tBURST + 2 - tCWL - tBURST"),
          figure(name + ": write->read", "cycles", double(wr_gaps) / double(wr_switches), double(wr), Check::kExact, 0,
                 "tCWL + " + wtr),
          figure(name + ": bandwidth", "B/cycle", bandwidth,
                 double(2 * block * p.request_bytes) / double(2 * block * t.burst + rw + wr), Check::kExact, 0,
                 "2N request_bytes / (2N tBURST + read->write + write->read)")});
}

CaseResult idle_latency(const HbmParams& p, bool write, uint64_t requests) {
  HbmDram m(p);
  const DramTiming& t = m.timing();
  const AddressEncoder encode(p);
  const uint64_t all_banks = uint64_t(p.channels) * p.dram_pseudo_channels * banks_per_pc(p);
  uint64_t sum[3] = {}, count[3] = {};
  for (uint64_t s = 0; s < requests; ++s) {
    // Triples on bank s / 3 (in turn over every bank): row r column 0 (a miss the first time,
    // then a conflict with the row the last triple left open), row r column 1 (a hit), row
    // r + 1 column 0 (a conflict).
    const uint64_t triple = s / 3, phase = s % 3, bank = triple % all_banks, row = 2 * (triple / all_banks);
    const DramAddress a = location(p, bank / banks_per_pc(p), bank % banks_per_pc(p), row + (phase == 2),
                                   phase == 1 ? 1 : 0);
    const DramStats before = m.dram_stats();
    const Completion c = m.serve_request(encode(a), write, 100 * s, 0);
    const DramStats& after = m.dram_stats();
    const int k = after.row_misses > before.row_misses ? 0 : after.row_hits > before.row_hits ? 1 : 2;
    sum[k] += c.completion_cycle - c.issue_cycle;
    ++count[k];
  }
  static const char* const kClass[] = {"miss", "hit", "conflict"};
  static const char* const kFormula[] = {"link + tRCD + tC(W)L + tBURST + link", "link + tC(W)L + tBURST + link",
                                         "link + tRP + tRCD + tC(W)L + tBURST + link"};
  std::vector<Figure> figures;
  for (int k = 0; k < 3; ++k) {
    if (count[k] == 0) continue;
    figures.push_back(figure(std::string("idle ") + (write ? "write" : "read") + " latency, " + p.page_policy +
                                 " page, row " + kClass[k],
                             "cycles", double(sum[k]) / double(count[k]),
                             double(latency(p, t, RowState(k), write)), Check::kExact, 0, kFormula[k]));
  }
  return finish(m, std::move(figures));
}

CaseResult random_one_at_a_time(const HbmParams& p, uint32_t rows, uint64_t requests) {
  HbmDram m(p);
  const DramTiming& t = m.timing();
  const AddressEncoder encode(p);
  const uint64_t pcs = uint64_t(p.channels) * p.dram_pseudo_channels, banks = pcs * banks_per_pc(p);
  std::mt19937_64 rng = seeded_rng();
  uint64_t cycle = 0, total = 0;
  for (uint64_t k = 0; k < requests; ++k) {
    const uint64_t bank = rng() % banks, row = rng() % rows, column = rng() % columns(p);
    const Completion c =
        m.serve_request(encode(location(p, bank / banks_per_pc(p), bank % banks_per_pc(p), row, column)), false,
                        cycle, 0);
    total += c.completion_cycle - c.issue_cycle;
    cycle = c.completion_cycle;  // one request outstanding
  }
  const Mix mix = expected_random_mix(banks, rows, requests);
  const double l_miss = double(latency(p, t, RowState::kMiss, false)), l_hit = double(latency(p, t, RowState::kHit, false)),
               l_conflict = double(latency(p, t, RowState::kConflict, false));
  const double mean = mix.miss * l_miss + mix.hit * l_hit + mix.conflict * l_conflict;
  const double variance = mix.miss * l_miss * l_miss + mix.hit * l_hit * l_hit + mix.conflict * l_conflict * l_conflict -
                          mean * mean;
  // The mix is random: five standard errors of the mean of `requests` draws (the seed is fixed,
  // so the figure is deterministic; the bound says the mix is the expected one).
  const double tolerance = 5.0 * std::sqrt(variance / double(requests)) / mean + 1e-12;
  const DramStats& d = m.dram_stats();
  const uint64_t by_counts = d.row_misses * latency(p, t, RowState::kMiss, false) +
                             d.row_hits * latency(p, t, RowState::kHit, false) +
                             d.row_conflicts * latency(p, t, RowState::kConflict, false);
  const std::string name = "random reads one at a time, " + std::to_string(rows) + " rows/bank";
  return finish(m, {figure(name + ": mean latency", "cycles", double(total) / double(requests), mean, Check::kWithin,
                           tolerance,
                           "expected mix (" + std::to_string(banks) + " banks, " + std::to_string(rows) +
                               " rows) x idle latencies; tolerance 5 standard errors"),
                    figure(name + ": latency of the model's own mix", "cycles", double(total) / double(requests),
                           double(by_counts) / double(requests), Check::kExact, 0,
                           "(misses x 20 + hits x 13 + conflicts x 27) / requests, counts from dram_stats()")});
}

CaseResult saturating_random(const HbmParams& p, bool interleave_banks, uint64_t requests) {
  HbmDram m(p);
  const DramTiming& t = m.timing();
  const AddressEncoder encode(p);
  std::mt19937_64 rng = seeded_rng();
  std::vector<uint64_t> completion(requests), handles(requests);
  std::vector<uint64_t> open_row(banks_per_pc(p), p.dram_rows);  // none yet
  for (uint64_t k = 0; k < requests; ++k) {
    const uint64_t bank = interleave_banks ? k % banks_per_pc(p) : rng() % banks_per_pc(p);
    // A random row other than the bank's open one: every read is a conflict (or, first, a miss)
    // and needs its own activate, as the bounds assume.
    uint64_t row = rng() % p.dram_rows;
    if (row == open_row[bank]) row = (row + 1) % p.dram_rows;
    open_row[bank] = row;
    const uint64_t column = rng() % columns(p);
    // Issued as one-request tiles whose results are taken at the end, so that the controller
    // sees the requests queue up (serve_request would settle each one at its call).
    Burst b;
    b.base = encode(location(p, 0, bank, row, column));
    b.row_bytes = p.request_bytes;
    b.issue_cycle = k / 2;
    handles[k] = m.issue_burst(b, nullptr);
  }
  for (uint64_t k = 0; k < requests; ++k) {
    BurstResult r;
    if (!m.try_result(handles[k], (requests - 1) / 2, &r)) throw std::logic_error("saturating_random: no result");
    completion[k] = r.completion_cycle;
  }
  const std::vector<Bound> bounds = activation_bounds(p, t);
  const Bound& least = *std::min_element(bounds.begin(), bounds.end(),
                                         [](const Bound& a, const Bound& b) { return a.rate < b.rate; });
  std::string formula = "min(";
  for (const Bound& b : bounds) formula += b.name + " " + with_digits(b.rate, 3) + (&b == &bounds.back() ? "" : ", ");
  formula += ") = " + least.name;
  const std::string name = std::string("saturating random reads, ") +
                           (interleave_banks ? "banks in turn" : "uniform banks") +
                           (t.burst != 4 ? ", tBURST " + std::to_string(t.burst) : "");
  // The queue holds every request (issued faster than served) and the controller serves the
  // first ready: the rate meets the least bound. Banks in turn with the data bus binding: one
  // read per tBURST exactly. Otherwise the reordering leaves the completions a few cycles off a
  // regular pattern at the ends of the measured span: within 0.2 %.
  const bool exact = interleave_banks && least.name == "1/tBURST";
  return finish(m, {figure(name + ": rate", "req/cycle", steady_rate(completion), least.rate,
                           exact ? Check::kExact : Check::kWithin, exact ? 0 : 0.002, formula)});
}

CaseResult activate_window(const HbmParams& p, uint64_t requests) {
  HbmParams closed = p;
  closed.page_policy = "closed";  // every request finds its bank closed: its first command is ACT
  HbmDram m(closed);
  const DramTiming& t = m.timing();
  const AddressEncoder encode(p);
  const uint64_t banks = banks_per_pc(p);
  if (banks < 5) throw std::invalid_argument("activate_window: needs >= 5 banks per pseudo-channel");
  uint64_t window_sum = 0, windows = 0;
  std::vector<uint64_t> act(banks);
  for (uint64_t round = 0; round < requests / banks; ++round) {
    for (uint64_t b = 0; b < banks; ++b)
      act[b] = m.serve_request(encode(location(p, 0, b, round, 0)), false, 200 * round, 0).start_cycle;
    for (uint64_t b = 0; b + 4 < banks; ++b, ++windows) window_sum += act[b + 4] - act[b];
  }
  const double window = double(window_sum) / double(windows);
  return finish(m, {figure("activates to distinct idle banks: rate", "ACT/cycle", 4.0 / window,
                           4.0 / double(std::max(t.faw, 4 * t.rrd_s)), Check::kExact, 0,
                           "4 / max(tFAW, 4 tRRD_S), from the spacing of ACT i and i + 4")});
}

const std::vector<Case>& cases() {
  static const std::vector<Case> kCases = {
      {"stream reads RoBaRaCoCh", [](uint64_t n) { return stream(hbm2_8ch(), false, n); }},
      {"stream writes RoBaRaCoCh", [](uint64_t n) { return stream(hbm2_8ch(), true, n); }},
      {"stream reads RoBaRaCoCh, no refresh", [](uint64_t n) { return stream(without_refresh(hbm2_8ch()), false, n); }},
      {"stream reads ChRaBaRoCo", [](uint64_t n) {
         HbmParams p = hbm2_8ch();
         p.mapping_order = "ChRaBaRoCo";
         return stream(p, false, n);
       }},
      {"stream writes ChRaBaRoCo", [](uint64_t n) {
         HbmParams p = hbm2_8ch();
         p.mapping_order = "ChRaBaRoCo";
         return stream(p, true, n);
       }},
      {"rw mix N=1", [](uint64_t n) { return rw_mix(without_refresh(hbm2_8ch()), 1, false, n); }},
      {"rw mix N=4", [](uint64_t n) { return rw_mix(without_refresh(hbm2_8ch()), 4, false, n); }},
      {"rw mix N=16", [](uint64_t n) { return rw_mix(without_refresh(hbm2_8ch()), 16, false, n); }},
      {"rw mix N=64", [](uint64_t n) { return rw_mix(without_refresh(hbm2_8ch()), 64, false, n); }},
      {"rw mix N=16, writes in another bank group",
       [](uint64_t n) { return rw_mix(without_refresh(hbm2_8ch()), 16, true, n); }},
      {"idle read latency, open page", [](uint64_t n) { return idle_latency(without_refresh(hbm2_8ch()), false, n); }},
      {"idle write latency, open page", [](uint64_t n) { return idle_latency(without_refresh(hbm2_8ch()), true, n); }},
      {"idle read latency, closed page", [](uint64_t n) {
         HbmParams p = without_refresh(hbm2_8ch());
         p.page_policy = "closed";
         return idle_latency(p, false, n);
       }},
      {"random reads one at a time, 4 rows/bank",
       [](uint64_t n) { return random_one_at_a_time(without_refresh(hbm2_8ch()), 4, n); }},
      {"random reads one at a time, all rows",
       [](uint64_t n) { return random_one_at_a_time(without_refresh(hbm2_8ch()), hbm2_8ch().dram_rows, n); }},
      {"saturating random reads, banks in turn",
       [](uint64_t n) { return saturating_random(without_refresh(hbm2_8ch()), true, n); }},
      {"saturating random reads, uniform banks",
       [](uint64_t n) { return saturating_random(without_refresh(hbm2_8ch()), false, n); }},
      {"saturating random reads, banks in turn, tBURST 2", [](uint64_t n) {
         HbmParams p = without_refresh(hbm2_8ch());
         p.dram_tBURST = 2;
         return saturating_random(p, true, n);
       }},
      {"activates to distinct idle banks", [](uint64_t n) { return activate_window(without_refresh(hbm2_8ch()), n); }},
  };
  return kCases;
}

}  // namespace stepsim::dram_micro
