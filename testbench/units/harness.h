// Randomized testbench for the cycle-accurate units (hw/units) and their Verilated RTL twins.
//
// One simulation runs many cases back to back: random-gap sources drive the input pins, a
// random-back-pressure sink takes the outputs, and a controller pulses reset (and changes the
// quasi-static cfg pins, which may only change in reset) between some cases. With an RTL model
// the HLS unit and the RTL share every input signal and a checker compares all their outputs
// (valid, payload, ready) at every falling clock edge: the first difference stops the run.
//
// Test-only code: not subject to the synthesizable-subset rules.
#pragma once

#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <systemc>
#include <vector>

#include "hw/stream/token.h"
#include "hw/units/protocol.h"
#include "sim/engine/sc_kernel.h"

namespace stepsim::unit_test {

using units::bits_t;
using units::stop_t;
using units::UBeat;

// ------------------------------------------------------------------ element <-> payload
template <int W>
bits_t<W> encode_scalar(const Element& e) {
  return bits_t<W>(uint64_t(e.scalar()));
}
template <int W>
Element decode_scalar(const bits_t<W>& v) {
  if constexpr (W == 1)
    return Element(Scalar{v ? 1 : 0});
  else
    return Element(Scalar{int64_t(v.to_uint64())});
}
template <int N>
bits_t<N> encode_selector(const Element& e) {
  bits_t<N> v = 0;
  for (int i : e.selector().indices()) units::set_bit<N>(v, i, true);
  return v;
}

template <int N>
Element decode_selector(const bits_t<N>& v) {
  Selector s;
  for (int i = 0; i < N; ++i)
    if (units::bit_of<N>(v, i)) s.set(i);
  return Element(s);
}

template <int W>
UBeat<W> to_ubeat(const Beat& b, const std::function<bits_t<W>(const Element&)>& enc) {
  UBeat<W> u;
  u.elem = b.has_elem;
  if (b.has_elem) u.data = enc(b.elem);
  u.stop = b.stop;
  u.done = b.done;
  return u;
}

template <int W>
std::string show(const UBeat<W>& b) {
  std::ostringstream s;
  s << "{elem=" << b.elem << " data=" << b.data << " stop=" << b.stop << " done=" << b.done << "}";
  return s.str();
}

// ------------------------------------------------------------------ pins
template <int W>
struct InPins {
  sc_core::sc_signal<bool> valid, ready_hls, ready_rtl, elem, done;
  sc_core::sc_signal<bits_t<W>> data;
  sc_core::sc_signal<stop_t> stop;
};

template <int N, int W>
struct OutPins {
  sc_core::sc_signal<bits_t<N>> ready;
  sc_core::sc_signal<bits_t<N>> valid_hls, valid_rtl;
  sc_core::sc_signal<bits_t<W>> data_hls, data_rtl;
  sc_core::sc_signal<bool> elem_hls, elem_rtl, done_hls, done_rtl;
  sc_core::sc_signal<stop_t> stop_hls, stop_rtl;
};

// Binds a unit's (or RTL model's) stream ports to the pins. `rtl` selects the RTL copies of
// the pins the unit drives.
#define STEPSIM_BIND_IN(dut, p, pins, rtl)                      \
  do {                                                          \
    (dut).p##_valid_i(pins.valid);                              \
    (dut).p##_ready_o((rtl) ? pins.ready_rtl : pins.ready_hls); \
    (dut).p##_data_i(pins.data);                                \
    (dut).p##_elem_i(pins.elem);                                \
    (dut).p##_stop_i(pins.stop);                                \
    (dut).p##_done_i(pins.done);                                \
  } while (0)
#define STEPSIM_BIND_OUT(dut, p, pins, rtl)                     \
  do {                                                          \
    (dut).p##_valid_o((rtl) ? pins.valid_rtl : pins.valid_hls); \
    (dut).p##_ready_i(pins.ready);                              \
    (dut).p##_data_o((rtl) ? pins.data_rtl : pins.data_hls);    \
    (dut).p##_elem_o((rtl) ? pins.elem_rtl : pins.elem_hls);    \
    (dut).p##_stop_o((rtl) ? pins.stop_rtl : pins.stop_hls);    \
    (dut).p##_done_o((rtl) ? pins.done_rtl : pins.done_hls);    \
  } while (0)

// N input streams packed into one flat pin group (the units with a parametric number of
// inputs): stream i in slice i of every pin. Each stream has its own Source on `lane[i]`; a
// combinational method packs the lanes into the group's pins and hands each lane its ready bit.
template <int N, int W>
struct InGroupPins : sc_core::sc_module {
  InPins<W> lane[N];
  sc_core::sc_signal<bits_t<N>> valid, ready_hls, ready_rtl, elem, done;
  sc_core::sc_signal<bits_t<N * W>> data;
  sc_core::sc_signal<bits_t<4 * N>> stop;

  SC_HAS_PROCESS(InGroupPins);
  explicit InGroupPins(sc_core::sc_module_name n) : sc_core::sc_module(n) {
    SC_METHOD(pack);
    for (int i = 0; i < N; ++i)
      sensitive << lane[i].valid << lane[i].data << lane[i].elem << lane[i].stop << lane[i].done;
    sensitive << ready_hls << ready_rtl;
  }
  void pack() {
    bits_t<N> v = 0, e = 0, d = 0;
    bits_t<N* W> x = 0;
    bits_t<4 * N> s = 0;
    for (int i = 0; i < N; ++i) {
      units::set_bit<N>(v, i, lane[i].valid.read());
      units::set_bit<N>(e, i, lane[i].elem.read());
      units::set_bit<N>(d, i, lane[i].done.read());
      const bits_t<W> li = lane[i].data.read();
      for (int k = 0; k < W; ++k) units::set_bit<N * W>(x, W * i + k, units::bit_of<W>(li, k));
      for (int k = 0; k < 4; ++k) units::set_bit<4 * N>(s, 4 * i + k, (lane[i].stop.read().to_uint() >> k) & 1);
      lane[i].ready_hls.write(units::bit_of<N>(ready_hls.read(), i));
      lane[i].ready_rtl.write(units::bit_of<N>(ready_rtl.read(), i));
    }
    valid.write(v);
    elem.write(e);
    done.write(d);
    data.write(x);
    stop.write(s);
  }
};

// ------------------------------------------------------------------ one case
struct UnitCase {
  std::vector<std::vector<Beat>> inputs;  // one stream per input port, in port order
  std::vector<int> cfg;                   // the unit's cfg pin values
  bool reset_before = false;              // pulse reset before this case (always when cfg changes)
};

// ------------------------------------------------------------------ sources and sinks
struct SourceBase {
  virtual ~SourceBase() = default;
  size_t case_idx = 0;                      // cases completely sent
  std::vector<std::vector<uint64_t>> sent;  // [case][beat]: clock edge of the transfer
  std::vector<double> p_valid;              // per case: probability of offering a beat
};

template <int W>
struct Source : sc_core::sc_module, SourceBase {
  sc_core::sc_in<bool> clk{"clk"};
  InPins<W>& pins;
  std::vector<std::vector<UBeat<W>>> cases;
  const sc_core::sc_signal<int>& released;
  std::mt19937_64 rng;

  SC_HAS_PROCESS(Source);
  Source(sc_core::sc_module_name n, InPins<W>& p, const sc_core::sc_signal<int>& rel, uint64_t seed)
      : sc_core::sc_module(n), pins(p), released(rel), rng(seed) {
    SC_CTHREAD(run, clk.pos());
  }
  void run() {
    size_t i = 0;
    bool valid = false;
    std::uniform_real_distribution<double> u(0.0, 1.0);
    pins.valid.write(false);
    sent.assign(cases.size(), {});
    for (uint64_t now = 1;; ++now) {
      wait();
      if (valid && pins.ready_hls.read()) {
        valid = false;
        sent[case_idx].push_back(now);
        if (++i == cases[case_idx].size()) {
          ++case_idx;
          i = 0;
        }
      }
      if (!valid && case_idx < cases.size() && int(case_idx) < released.read() && u(rng) < p_valid[case_idx]) {
        const UBeat<W>& b = cases[case_idx][i];
        pins.data.write(b.data);
        pins.elem.write(b.elem);
        pins.stop.write(b.stop);
        pins.done.write(b.done);
        valid = true;
      }
      pins.valid.write(valid);
    }
  }
};

// Records the beats of an output group with N consumers; one stream per consumer and case.
template <int N, int W>
struct Sink : sc_core::sc_module {
  sc_core::sc_in<bool> clk{"clk"};
  OutPins<N, W>& pins;
  std::function<Element(const bits_t<W>&)> dec;
  std::vector<std::vector<std::vector<Beat>>> got;     // [consumer][case]
  std::vector<std::vector<std::vector<uint64_t>>> at;  // [consumer][case][beat]: clock edge
  bool always_ready = false;                           // no back-pressure
  std::mt19937_64 rng;

  SC_HAS_PROCESS(Sink);
  Sink(sc_core::sc_module_name n, OutPins<N, W>& p, std::function<Element(const bits_t<W>&)> d, uint64_t seed)
      : sc_core::sc_module(n),
        pins(p),
        dec(std::move(d)),
        got(N, std::vector<std::vector<Beat>>(1)),
        at(N, std::vector<std::vector<uint64_t>>(1)),
        rng(seed) {
    SC_CTHREAD(run, clk.pos());
  }
  // Cases whose done beat every consumer has taken.
  size_t completed() const {
    size_t c = got[0].size() - 1;
    for (int i = 1; i < N; ++i) c = std::min(c, got[size_t(i)].size() - 1);
    return c;
  }
  void run() {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const double levels[] = {1.0, 0.8, 0.5, 0.2};
    double p[N];
    for (int i = 0; i < N; ++i) p[i] = 1.0;
    pins.ready.write(0);
    for (uint64_t cycle = 0, now = 1;; ++cycle, ++now) {
      wait();
      const bits_t<N> valid = pins.valid_hls.read(), ready = pins.ready.read();
      for (int i = 0; i < N; ++i) {
        if (!units::bit_of<N>(valid, i) || !units::bit_of<N>(ready, i)) continue;
        Beat b;
        b.has_elem = pins.elem_hls.read();
        if (b.has_elem) b.elem = dec(pins.data_hls.read());
        b.stop = uint8_t(pins.stop_hls.read().to_uint());
        b.done = pins.done_hls.read();
        got[size_t(i)].back().push_back(b);
        at[size_t(i)].back().push_back(now);
        if (b.done) {
          got[size_t(i)].emplace_back();
          at[size_t(i)].emplace_back();
        }
      }
      if (cycle % 53 == 0)  // change the back-pressure pattern now and then
        for (int i = 0; i < N; ++i) p[i] = levels[rng() % 4];
      bits_t<N> r = 0;
      for (int i = 0; i < N; ++i) units::set_bit<N>(r, i, always_ready || u(rng) < p[i]);
      pins.ready.write(r);
    }
  }
};

// ------------------------------------------------------------------ controller and checker
struct RunResult {
  bool ok = true;
  std::string error;    // first mismatch or timeout
  uint64_t cycles = 0;  // clock cycles simulated
  size_t cases_done = 0;
};

struct Controller : sc_core::sc_module {
  sc_core::sc_in<bool> clk{"clk"};
  sc_core::sc_signal<bool> rst_n{"rst_n"};
  sc_core::sc_signal<int> released{"released"};
  const std::vector<UnitCase>* cases = nullptr;
  std::vector<SourceBase*> sources;
  std::function<size_t()> completed;  // cases fully received
  std::function<void(const std::vector<int>&)> apply_cfg;
  std::vector<std::function<std::string()>> checks;  // "" when HLS and RTL agree
  RunResult* result = nullptr;
  uint64_t max_cycles = 0;
  uint64_t cycle = 0;

  SC_HAS_PROCESS(Controller);
  explicit Controller(sc_core::sc_module_name n) : sc_core::sc_module(n) {
    SC_CTHREAD(run, clk.pos());
    SC_METHOD(check);
    sensitive << clk.neg();
    dont_initialize();
  }
  bool sources_at(size_t k) const {
    for (const SourceBase* s : sources)
      if (s->case_idx < k) return false;
    return true;
  }
  void run() {
    rst_n.write(false);
    released.write(0);
    const size_t n = cases->size();
    size_t k = 0;
    for (;;) {
      wait();
      ++cycle;
      if (completed() >= n) {
        result->cases_done = n;
        sc_core::sc_stop();
      }
      if (cycle > max_cycles) {
        fail("timeout after " + std::to_string(cycle) + " cycles: " + std::to_string(completed()) + " of " +
             std::to_string(n) + " cases done");
        return;
      }
      if (k >= n) continue;
      const UnitCase& c = (*cases)[k];
      const bool need_reset = k == 0 || c.reset_before || c.cfg != (*cases)[k - 1].cfg;
      if (!need_reset) {
        released.write(int(++k));
        continue;
      }
      if (k > 0 && !(completed() >= k && sources_at(k))) continue;  // quiesce first
      rst_n.write(false);
      apply_cfg(c.cfg);
      const int hold = 1 + int(cycle % 3);
      for (int i = 0; i < hold; ++i) {
        wait();
        ++cycle;
      }
      rst_n.write(true);
      released.write(int(++k));
    }
  }
  void check() {
    if (!result->ok) return;
    for (const auto& c : checks) {
      std::string e = c();
      if (!e.empty()) {
        fail("cycle " + std::to_string(cycle) + ": " + e);
        return;
      }
    }
  }
  void fail(const std::string& e) {
    if (!result->ok) return;
    result->ok = false;
    result->error = e;
    result->cycles = cycle;
    sc_core::sc_stop();
  }
};

// Adds HLS-vs-RTL comparisons of every signal of a port group to the checker.
template <typename T>
std::string diff(const char* name, const sc_core::sc_signal<T>& a, const sc_core::sc_signal<T>& b) {
  if (a.read() == b.read()) return "";
  std::ostringstream s;
  s << name << ": hls=" << a.read() << " rtl=" << b.read();
  return s.str();
}
template <int W>
void check_in(Controller& c, const std::string& port, InPins<W>& p) {
  c.checks.push_back([&p, n = port + "_ready_o"] { return diff(n.c_str(), p.ready_hls, p.ready_rtl); });
}
template <int N, int W>
void check_out(Controller& c, const std::string& port, OutPins<N, W>& p) {
  c.checks.push_back([&p, port] {
    std::string e = diff((port + "_valid_o").c_str(), p.valid_hls, p.valid_rtl);
    if (e.empty()) e = diff((port + "_data_o").c_str(), p.data_hls, p.data_rtl);
    if (e.empty()) e = diff((port + "_elem_o").c_str(), p.elem_hls, p.elem_rtl);
    if (e.empty()) e = diff((port + "_stop_o").c_str(), p.stop_hls, p.stop_rtl);
    if (e.empty()) e = diff((port + "_done_o").c_str(), p.done_hls, p.done_rtl);
    if (!e.empty()) {
      std::ostringstream s;
      s << e << std::hex << " (hls: valid=" << p.valid_hls.read() << " elem=" << p.elem_hls.read()
        << " stop=" << p.stop_hls.read() << " done=" << p.done_hls.read() << " data=" << p.data_hls.read()
        << "; rtl: valid=" << p.valid_rtl.read() << " elem=" << p.elem_rtl.read() << " stop=" << p.stop_rtl.read()
        << " done=" << p.done_rtl.read() << " data=" << p.data_rtl.read() << ")";
      e = s.str();
    }
    return e;
  });
}

// A fresh SystemC kernel for one simulation (ScKernel). The kernel is left behind afterwards:
// its clocked threads never finish, so it cannot be torn down safely.
inline void fresh_kernel() { ScKernel::fresh_forever(); }

}  // namespace stepsim::unit_test
