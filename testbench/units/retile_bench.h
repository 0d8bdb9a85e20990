// Bench of the retile unit (PcuRetile / pcu_retile): dynamic [r x T] bf16 tiles with the tile
// header (docs/unit-protocol.md), random token streams for both modes, a software reference of
// the two STeP operators (hw/ops Accum with hw/functions retile_row, FlatMap with
// retile_streamify_row), and the comparison with the approximate operators (sim/engine/eval.h).
//
// Payloads travel as Tiles of `rows` = the header and `cols` = T whose data holds all T² lanes
// (bf16 bit patterns in floats, as tile_benches.h): the rows below the header are don't-care on
// the inputs (the generator fills them with garbage) and must be 0 on the outputs (the unit
// forms its tiles), so the check compares every lane.
//
// Test-only code: not subject to the synthesizable-subset rules.
#pragma once

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "hw/units/pcu_retile.h"
#include "testbench/units/benches.h"

namespace stepsim::unit_test {

constexpr int kRetileT = 4;  // tile side of the test configuration (RTL default)

// cfg of a retile case: {mode, rank}.
constexpr int kRetileMode = 0;
constexpr int kRetileRank = 1;

// ------------------------------------------------------------------ payload <-> tile
// A [rows x T] bf16 tile whose data holds `lanes` (T² values, row-major; lanes of rows >= rows
// are the don't-care part of the payload).
inline Tile retile_tile(int t, int rows, const std::vector<uint16_t>& lanes) {
  auto d = std::make_shared<TileData>();
  for (uint16_t b : lanes) d->f.push_back(f32_from_bf16_bits(b));
  Tile r = shape_tile(uint32_t(rows), uint32_t(t), DType::BF16);
  r.data = d;
  return r;
}
// Lane l of a tile's data (0 beyond its data).
inline uint16_t retile_lane(const Tile& t, size_t l) {
  return t.data && l < t.data->f.size() ? uint16_t(f32_bits(t.data->f[l]) >> 16) : uint16_t(0);
}

template <int T>
bits_t<units::PcuRetile<T>::W> encode_retile(const Element& e) {
  using U = units::PcuRetile<T>;
  bits_t<U::W> v = 0;
  const Tile& t = e.tile();
  for (int l = 0; l < T * T; ++l) v.range(16 * l + 15, 16 * l) = retile_lane(t, size_t(l));
  v.range(U::W - 1, U::DW) = t.rows;
  return v;
}
template <int T>
Element decode_retile(const bits_t<units::PcuRetile<T>::W>& v) {
  using U = units::PcuRetile<T>;
  std::vector<uint16_t> b;
  for (int l = 0; l < T * T; ++l) b.push_back(uint16_t(v.range(16 * l + 15, 16 * l).to_uint()));
  return Element(retile_tile(T, int(v.range(U::W - 1, U::DW).to_uint()), b));
}

// The STeP tile of an element: exactly its r rows (the data without the don't-care lanes).
inline Tile retile_trim(const Tile& x, int t) {
  const int r = std::min<int>(int(x.rows), t);
  std::vector<uint16_t> v;
  for (size_t l = 0; l < size_t(r) * size_t(t); ++l) v.push_back(retile_lane(x, l));
  Tile o = retile_tile(t, r, v);
  return o;
}
// A STeP tile [r x T] (r <= T) as the unit's payload: lanes beyond its rows 0.
inline Tile retile_pad(const Tile& x, int t) {
  std::vector<uint16_t> v(size_t(t) * size_t(t), 0);
  for (size_t l = 0; l < x.elems() && l < v.size(); ++l) v[l] = retile_lane(x, l);
  return retile_tile(t, int(x.rows), v);
}

// A random [r x T] tile: random bf16 bit patterns (every class), garbage or zeros in the
// don't-care lanes.
template <int T>
Element random_retile_tile(std::mt19937_64& r, int rows) {
  std::vector<uint16_t> v;
  const bool garbage = r() % 2;
  for (int l = 0; l < T * T; ++l)
    v.push_back(l < rows * T ? (r() % 4 ? uint16_t(r()) : random_bf16(r)) : garbage ? uint16_t(r() | 1u) : uint16_t(0));
  return Element(retile_tile(T, rows, v));
}

// ------------------------------------------------------------------ the reference
struct RetileRef {
  std::vector<Beat> out;        // payloads as the unit's (retile_pad)
  bool err = false;             // err_o after the case
  bool approx_fails = false;    // the approximate operator fails the run on this case
  bool approx_differs = false;  // it does not: rows beyond T, a header above T, an S16
};

// The two STeP operators on the beats, as hw/ops/higher_order.cpp (Accum, FlatMap) with the
// tile functions of hw/functions, plus what the unit does where they fail or cannot be
// represented on the pins (docs/units.md, PcuRetile).
template <int T>
RetileRef retile_reference(const UnitCase& c) {
  RetileRef ref;
  const int mode = c.cfg[kRetileMode], rank = c.cfg[kRetileRank];
  if (mode == 0) {
    const AccumFunction& fn = accum_function("retile_row");
    Tile acc = fn.init();
    bool seen = false;  // the group has seen an element
    for (const Beat& b : c.inputs[0]) {
      if (b.has_elem) {
        Tile x = retile_trim(b.elem.tile(), T);
        const int held = is_empty_acc(acc) ? 0 : int(acc.rows);
        if (held + int(x.rows) > T) {  // the rows beyond T are dropped
          ref.err = ref.approx_differs = true;
          std::vector<uint16_t> v;
          for (size_t l = 0; l < size_t(T - held) * T; ++l) v.push_back(retile_lane(x, l));
          x = retile_tile(T, T - held, v);
        }
        acc = fn.update(std::move(acc), {x});
        seen = true;
      }
      if (b.stop >= rank) {
        Tile t = fn.finalize(acc);
        if (is_empty_acc(t)) t = retile_tile(T, 0, {});  // the approximate Accum: a 0x0 tile
        Beat o = Beat::data(Element(retile_pad(t, T)), uint8_t(b.stop - rank));
        o.done = b.done;
        ref.out.push_back(o);
        acc = fn.init();
        seen = false;
      } else if (b.done) {
        if (seen) ref.err = ref.approx_fails = true;  // "stream ended inside a reduction group"
        ref.out.push_back(Beat::done_beat());
        acc = fn.init();
        seen = false;
      }
    }
    return ref;
  }
  const FlatMapFunction& fn = flatmap_function("retile_streamify_row");
  for (const Beat& b : c.inputs[0]) {
    std::vector<Tile> outs;
    if (b.has_elem) {
      if (int(b.elem.tile().rows) > T) ref.err = ref.approx_differs = true;  // a header above T: T rows
      outs = fn.apply({retile_trim(b.elem.tile(), T)});
    }
    int close = b.stop ? b.stop + 1 : (b.has_elem ? 1 : 0);
    if (close > 15) {  // S16 cannot travel: S15 and err_o
      close = 15;
      ref.err = ref.approx_differs = true;
    }
    if (outs.empty()) {
      if (close || b.done) {
        Beat o = close ? Beat::bare_stop(uint8_t(close)) : Beat::done_beat();
        o.done = b.done;
        ref.out.push_back(o);
      }
    } else {
      for (size_t k = 0; k < outs.size(); ++k) {
        const bool last = k + 1 == outs.size();
        Beat o = Beat::data(Element(retile_pad(outs[k], T)), uint8_t(last ? close : 0));
        o.done = last && b.done;
        ref.out.push_back(o);
      }
    }
  }
  return ref;
}

inline std::string show_lanes(const Tile& t, int n) {
  std::ostringstream s;
  s << t.to_string() << std::hex << " {";
  for (int l = 0; l < n; ++l) s << (l ? "," : "") << retile_lane(t, size_t(l));
  return s.str() + "}";
}

// Beat by beat: element, stop, done, the header and every lane (the don't-care ones are 0).
template <int T>
std::string compare_retile(const std::vector<Beat>& want, const std::vector<Beat>& got) {
  if (got.size() != want.size() || format_beats(got) != format_beats(want))
    return "got " + format_beats(got) + ", want " + format_beats(want);
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i].has_elem != want[i].has_elem || got[i].stop != want[i].stop || got[i].done != want[i].done)
      return "beat " + std::to_string(i) + ": got " + format_beats(got) + ", want " + format_beats(want);
    if (!want[i].has_elem) continue;
    const Tile &w = want[i].elem.tile(), &g = got[i].elem.tile();
    bool same = w.rows == g.rows && w.cols == g.cols;
    for (size_t l = 0; l < size_t(T) * T && same; ++l) same = retile_lane(w, l) == retile_lane(g, l);
    if (!same) return "beat " + std::to_string(i) + ": got " + show_lanes(g, T * T) + ", want " + show_lanes(w, T * T);
  }
  return "";
}

// The approximate operator's output (token text, shapes) on the case's input, with the known
// difference of an empty Accum group (the operator's 0x0 fp32 tile, the unit's [0 x T] tile).
template <int T>
std::string retile_approx(const UnitCase& c, bool* ok, std::string* error) {
  const int mode = c.cfg[kRetileMode];
  const std::string in = format_beats(c.inputs[0]);
  EvalResult r = mode == 0 ? eval_op("Accum", {{"fn", "retile_row"}, {"rank", std::to_string(c.cfg[kRetileRank])}},
                                     {{"", in}}, test_hw())
                           : eval_op("FlatMap", {{"fn", "retile_streamify_row"}, {"rank", "1"}}, {{"", in}}, test_hw());
  *ok = r.sim.ok;
  if (error) *error = r.sim.error;
  std::string t = r.text["out"];
  const std::string empty = "T[0x0:fp32]", unit = "T[0x" + std::to_string(T) + "]";
  for (size_t p = t.find(empty); p != std::string::npos; p = t.find(empty, p + unit.size()))
    t.replace(p, empty.size(), unit);
  return t;
}

// The full check of a legal case: the reference beat for beat and lane for lane, and the same
// tokens (shapes) as the approximate operator.
template <int T>
std::string check_retile(const UnitCase& c, const std::vector<Beat>& got) {
  const RetileRef ref = retile_reference<T>(c);
  std::string e = compare_retile<T>(ref.out, got);
  if (!e.empty()) return "reference: " + e + "; input " + format_beats(c.inputs[0]);
  if (ref.approx_fails || ref.approx_differs) return "";
  bool ok = false;
  std::string err;
  const std::string approx = retile_approx<T>(c, &ok, &err);
  if (!ok) return "the approximate operator failed: " + err + "; input " + format_beats(c.inputs[0]);
  if (approx != format_beats(got))
    return "approximate operator: got " + format_beats(got) + ", want " + approx + "; input " +
           format_beats(c.inputs[0]);
  return "";
}

// ------------------------------------------------------------------ random cases
// A random legal stream: a rank-a tensor sequence (random_stream.h: ragged, empty dimensions,
// bare stops) whose stop levels >= p are raised by `lift` (so that level p becomes the Accum
// rank; the levels below p stay), elements [r x T] with random r (mode 0: each rank-`rank`
// group holds at most T rows; r = 0 now and then), and now and then the done as a bare beat of
// its own.
template <int T>
std::vector<Beat> random_retile_stream(std::mt19937_64& r, int mode, int rank) {
  int a, p, lift;
  if (mode == 0) {
    p = rnd(r, 1, std::min(rank, 3));
    a = rnd(r, p, std::min(3, p + 15 - rank));
    lift = rank - p;
  } else {
    a = rnd(r, 0, 3);
    p = a == 0 ? 1 : rnd(r, 1, a);
    lift = r() % 4 == 0 ? rnd(r, 0, 14 - a) : 0;  // output stops up to 15
  }
  RandomStreamOptions o = stream_opts(r, a);
  o.element = [](std::mt19937_64&) { return Element(Scalar{0}); };
  std::vector<Beat> beats = to_beats(random_stream(r, o));
  int held = 0;
  const int full = r() % 3 == 0;  // this stream prefers full groups
  for (Beat& b : beats) {
    if (b.stop >= p) b.stop = uint8_t(b.stop + lift);
    if (b.has_elem) {
      int rows;
      if (mode == 0) {
        const int room = T - held;
        rows = r() % 6 == 0 ? 0 : full ? rnd(r, 0, room) : rnd(r, 0, std::min(room, 1 + int(r() % 3)));
        held += rows;
      } else {
        rows = r() % 7 == 0 ? 0 : rnd(r, 1, T);
      }
      b.elem = random_retile_tile<T>(r, rows);
    }
    if (mode == 0 && b.stop >= rank) held = 0;
  }
  if (beats.size() > 1 && beats.back().done && (beats.back().has_elem || beats.back().stop) && r() % 3 == 0) {
    beats.back().done = false;
    beats.push_back(Beat::done_beat());
  }
  return beats;
}

// cfg {mode, rank}: mode 0 with rank 1..3 mostly, up to 15; mode 1 with a random (unused) rank.
inline std::vector<int> random_retile_cfg(std::mt19937_64& r) {
  const int mode = int(r() % 2);
  const int rank = mode == 0 ? (r() % 6 == 0 ? rnd(r, 4, 15) : rnd(r, 1, 3)) : rnd(r, 0, 15);
  return {mode, rank};
}

template <int T>
std::vector<UnitCase> retile_cases(size_t n, uint64_t seed) {
  return make_beat_cases(n, seed, random_retile_cfg, [](std::mt19937_64& r, const std::vector<int>& c) {
    return std::vector<std::vector<Beat>>{random_retile_stream<T>(r, c[kRetileMode], c[kRetileRank])};
  });
}

// Faulty streams (each case after a reset, err_o is sticky): mode 0 an element whose rows
// overflow its group, or the last closing stop lowered below the rank (the stream ends inside
// a group); mode 1 a header above T or a stop 15. About one case in four stays legal.
template <int T>
std::vector<UnitCase> retile_fault_cases(size_t n, uint64_t seed) {
  std::vector<UnitCase> cases = retile_cases<T>(n, seed);
  std::mt19937_64 r(seed + 1);
  constexpr int kMaxHeader = (1 << units::PcuRetile<T>::RW) - 1;
  for (UnitCase& c : cases) {
    c.reset_before = true;
    std::vector<Beat>& v = c.inputs[0];
    const int kind = int(r() % 4);
    std::vector<size_t> elems;
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i].has_elem) elems.push_back(i);
    if (kind == 3) continue;
    if (c.cfg[kRetileMode] == 0) {
      if (kind == 0 && !elems.empty()) {  // more rows than T in its group
        const size_t i = elems[r() % elems.size()];
        v[i].elem = random_retile_tile<T>(r, rnd(r, T / 2, T));
        if (r() % 2 && i + 1 < v.size() && !v[i + 1].has_elem) {
          v[i].stop = 0;  // the next beat closes: one more element of T rows before it
          v.insert(v.begin() + long(i) + 1, Beat::data(random_retile_tile<T>(r, T)));
        }
      } else {  // the last close below the rank (and maybe the done on its own)
        for (size_t i = v.size(); i-- > 0;)
          if (v[i].stop >= c.cfg[kRetileRank]) {
            v[i].stop = uint8_t(rnd(r, 0, c.cfg[kRetileRank] - 1));
            break;
          }
        if (kind == 2 && !elems.empty()) {
          for (size_t i = v.size(); i-- > 0;)
            if (v[i].stop >= c.cfg[kRetileRank]) v[i].stop = 0;
        }
      }
    } else {
      if (kind == 0 && !elems.empty()) {  // a header above T
        const size_t i = elems[r() % elems.size()];
        std::vector<uint16_t> lanes;
        for (int l = 0; l < T * T; ++l) lanes.push_back(uint16_t(r()));
        v[i].elem = Element(retile_tile(T, rnd(r, T + 1, kMaxHeader), lanes));
      } else {  // a stop 15
        v[r() % v.size()].stop = 15;
      }
    }
  }
  return cases;
}

// ------------------------------------------------------------------ the bench
// err_o of the HLS unit at each case's done beat (the bench's cases: a fault case and the case
// after it start after a reset, so the value belongs to the case).
template <int W>
struct ErrAtDone : sc_core::sc_module {
  sc_core::sc_in<bool> clk{"clk"};
  const sc_core::sc_signal<bool>& err;
  OutPins<1, W>& pins;
  std::vector<bool> at_done;
  SC_HAS_PROCESS(ErrAtDone);
  ErrAtDone(sc_core::sc_module_name n, const sc_core::sc_signal<bool>& e, OutPins<1, W>& p)
      : sc_core::sc_module(n), err(e), pins(p) {
    SC_CTHREAD(run, clk.pos());
  }
  void run() {
    for (;;) {
      wait();
      if (pins.valid_hls.read() && pins.ready.read() && pins.done_hls.read()) at_done.push_back(err.read());
    }
  }
};

template <class Rtl, int T = kRetileT, bool kFaults = false>
struct PcuRetileBenchT : Bench<PcuRetileBenchT<Rtl, T, kFaults>, Rtl> {
  static constexpr int W = units::PcuRetile<T>::W;
  CfgPin<bool> mode{*this};
  CfgPin<stop_t> rank{*this};
  InPort<W> in{*this, "in", encode_retile<T>};
  OutPort<1, W> out{*this, "out", decode_retile<T>};
  sc_core::sc_signal<bool> err_hls{"err_hls"}, err_rtl{"err_rtl"};
  ErrAtDone<W> err_at_done{"err_at_done", err_hls, out.pins};
  units::PcuRetile<T> hls{"hls"};
  // The last bench constructed (the tests read err_at_done after the run).
  static inline PcuRetileBenchT* last = nullptr;
  PcuRetileBenchT() {
    last = this;
    err_at_done.clk(this->clk);
    this->rtl_checks.push_back(
        [this] { this->ctrl.checks.push_back([this] { return diff("err_o", err_hls, err_rtl); }); });
  }
  template <class D>
  void bind(D& d, bool r) {
    this->bind_clock(d);
    d.cfg_mode_i(mode.sig);
    d.cfg_rank_i(rank.sig);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
    d.err_o(r ? err_rtl : err_hls);
  }
  static std::vector<UnitCase> cases(size_t n, uint64_t seed) {
    return kFaults ? retile_fault_cases<T>(n, seed) : retile_cases<T>(n, seed);
  }
  // Legal cases: the reference and the approximate operator; fault cases: the reference only.
  static std::string check(const UnitCase& c, const CaseOutputs& got) {
    if (!kFaults) return check_retile<T>(c, got[0]);
    const std::string e = compare_retile<T>(retile_reference<T>(c).out, got[0]);
    return e.empty() ? "" : "reference: " + e + "; input " + format_beats(c.inputs[0]);
  }
};
template <class Rtl>
using PcuRetileBench = PcuRetileBenchT<Rtl, kRetileT, false>;
template <class Rtl>
using PcuRetileFaultBench = PcuRetileBenchT<Rtl, kRetileT, true>;
template <class Rtl>
using PcuRetile16Bench = PcuRetileBenchT<Rtl, 16, false>;
template <class Rtl>
using PcuRetileFault16Bench = PcuRetileBenchT<Rtl, 16, true>;

// Runs a retile bench over `cases` and checks every case: the outputs (B::check) and err_o at
// each case's done against the reference. Returns "" or the first failure; `stats` gets a line.
template <class B, int T>
std::string run_retile(const std::vector<UnitCase>& cases, uint64_t seed, std::string* stats = nullptr) {
  BenchRun r = run_bench<B>(cases, seed);
  if (!r.result.ok) return "seed " + std::to_string(seed) + ": " + r.result.error;
  if (r.result.cases_done != cases.size()) return "cases done " + std::to_string(r.result.cases_done);
  const std::vector<bool>& err = B::last->err_at_done.at_done;
  if (err.size() != cases.size()) return "err_o samples " + std::to_string(err.size());
  size_t beats = 0, errs = 0, rows = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const CaseOutputs out = case_outputs(r.out, i);
    const std::string e = B::check(cases[i], out);
    if (!e.empty()) return "seed " + std::to_string(seed) + " case " + std::to_string(i) + ": " + e;
    const bool want = retile_reference<T>(cases[i]).err;
    if (err[i] != want)
      return "seed " + std::to_string(seed) + " case " + std::to_string(i) + ": err_o " + std::to_string(err[i]) +
             ", want " + std::to_string(want) + "; input " + format_beats(cases[i].inputs[0]);
    errs += want;
    beats += out[0].size();
    for (const Beat& b : out[0]) rows += b.has_elem ? b.elem.tile().rows : 0;
  }
  if (stats) {
    std::ostringstream s;
    s << cases.size() << " cases, " << r.result.cycles << " cycles, " << beats << " output beats (" << rows
      << " rows), " << errs << " cases raise err_o";
    *stats = s.str();
  }
  return "";
}

}  // namespace stepsim::unit_test
