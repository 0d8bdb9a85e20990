// Per-unit benches and random case generators for the unit tests (harness.h).
//
// Each bench instantiates the HLS unit and, when Rtl is not NoRtl, the Verilated RTL twin on
// the same input pins, runs all cases in one simulation, and returns the output streams per
// consumer and case. expected_*() gives the approximate operator's output (sim/eval.h) for
// the same case, as token text per output port.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hw/functions/bf16.h"
#include "hw/functions/functions.h"
#include "hw/presets/hardware.h"
#include "hw/stream/random_stream.h"
#include "hw/units/pcu_ew.h"
#include "hw/units/router_broadcast.h"
#include "hw/units/router_partition.h"
#include "hw/units/shape_expand.h"
#include "hw/units/shape_flatten.h"
#include "hw/units/shape_promote.h"
#include "hw/units/shape_repeat.h"
#include "sim/eval.h"
#include "testbench/units/harness.h"

namespace stepsim::unit_test {

struct NoRtl {};
template <class Rtl>
constexpr bool kHasRtl = !std::is_same_v<Rtl, NoRtl>;

constexpr int kW = 32;        // payload width of the test configurations
constexpr int kN = 4;         // consumers of the router test configurations
constexpr int kL = 8;         // lanes of the compute-unit test configuration (RTL default)
constexpr int kLW = 16 * kL;  // its payload width
constexpr int kRepeatCW = 8;  // count width of the Repeat test configuration (RTL default)

// Output streams: [consumer][case].
using Outputs = std::vector<std::vector<std::vector<Beat>>>;

struct BenchRun {
  RunResult result;
  Outputs out;
  std::vector<std::vector<std::vector<uint64_t>>> out_at;  // [consumer][case][beat]: clock edge
  std::vector<std::vector<std::vector<uint64_t>>> in_at;   // [input port][case][beat]: clock edge
};

// Clock and controller of one simulation (in a fresh kernel).
struct Env {
  sc_core::sc_clock clk{"clk", 1, sc_core::SC_NS};
  Controller ctrl{"ctrl"};
  RunResult result;
  Env() {
    ctrl.clk(clk);
    ctrl.result = &result;
  }
  virtual ~Env() = default;
};

template <int W>
std::vector<std::vector<UBeat<W>>> port_cases(const std::vector<UnitCase>& cases, size_t port,
                                              const std::function<bits_t<W>(const Element&)>& enc) {
  std::vector<std::vector<UBeat<W>>> r;
  for (const UnitCase& c : cases) {
    std::vector<UBeat<W>> s;
    for (const Beat& b : c.inputs[port]) s.push_back(to_ubeat<W>(b, enc));
    r.push_back(std::move(s));
  }
  return r;
}

inline std::vector<double> random_p(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const double levels[] = {1.0, 1.0, 0.7, 0.4, 0.15};
  std::vector<double> p;
  for (size_t i = 0; i < n; ++i) p.push_back(levels[rng() % 5]);
  return p;
}

// Source + pins for input port `port`.
template <int W>
struct InPort {
  InPins<W> pins;
  Source<W> src;
  InPort(Env& env, const char* name, const std::vector<UnitCase>& cases, size_t port,
         std::function<bits_t<W>(const Element&)> enc, uint64_t seed)
      : src(name, pins, env.ctrl.released, seed) {
    src.clk(env.clk);
    src.cases = port_cases<W>(cases, port, enc);
    src.p_valid = random_p(cases.size(), seed + 7);  // per case
    env.ctrl.sources.push_back(&src);
  }
};

template <int N, int W>
struct OutPort {
  OutPins<N, W> pins;
  Sink<N, W> sink;
  OutPort(Env& env, const char* name, std::function<Element(const bits_t<W>&)> dec, uint64_t seed)
      : sink(name, pins, std::move(dec), seed) {
    sink.clk(env.clk);
  }
};

// Runs a bench (in a fresh kernel) over `cases`. `full_rate`: no valid gaps, no back-pressure.
template <class Bench>
BenchRun run_bench(const std::vector<UnitCase>& cases, uint64_t seed, bool full_rate = false) {
  fresh_kernel();
  // Left behind with the kernel (its threads are suspended forever).
  Bench* b = new Bench(cases, seed);
  if (full_rate) {
    for (SourceBase* s : b->ctrl.sources) s->p_valid.assign(cases.size(), 1.0);
    b->out.sink.always_ready = true;
  }
  b->ctrl.cases = &cases;
  size_t beats = 0;
  for (const UnitCase& c : cases)
    for (const auto& s : c.inputs) beats += s.size();
  b->ctrl.max_cycles = 200 + 40 * beats;
  sc_core::sc_start();
  BenchRun r;
  r.result = b->result;
  r.result.cycles = b->ctrl.cycle;
  r.out = b->outputs();
  r.out_at = b->out.sink.at;
  for (SourceBase* s : b->ctrl.sources) r.in_at.push_back(s->sent);
  return r;
}

// ------------------------------------------------------------------ benches
// Binds the unit `u` (rtl = false) or the RTL model (rtl = true): clk, reset, and the ports
// listed by the bench's bind function.
#define STEPSIM_BIND_COMMON(dut) \
  do {                           \
    (dut).clk_i(clk);            \
    (dut).rst_ni(ctrl.rst_n);    \
  } while (0)

template <class Rtl>
struct FlattenBench : Env {
  sc_core::sc_signal<stop_t> cfg_min, cfg_max;
  InPort<kW> in;
  OutPort<1, kW> out;
  units::ShapeFlatten<kW> hls{"hls"};
  std::unique_ptr<Rtl> rtl;
  FlattenBench(const std::vector<UnitCase>& cases, uint64_t seed)
      : in(*this, "src", cases, 0, encode_scalar<kW>, seed), out(*this, "sink", decode_scalar<kW>, seed + 1) {
    bind(hls, false);
    if constexpr (kHasRtl<Rtl>) {
      rtl = std::make_unique<Rtl>("rtl");
      bind(*rtl, true);
      check_in(ctrl, "in", in.pins);
      check_out(ctrl, "out", out.pins);
    }
    ctrl.completed = [this] { return out.sink.completed(); };
    ctrl.apply_cfg = [this](const std::vector<int>& c) {
      cfg_min.write(c[0]);
      cfg_max.write(c[1]);
    };
  }
  template <class D>
  void bind(D& d, bool r) {
    STEPSIM_BIND_COMMON(d);
    d.cfg_min_i(cfg_min);
    d.cfg_max_i(cfg_max);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
  }
  Outputs outputs() { return out.sink.got; }
};

template <class Rtl>
struct PromoteBench : Env {
  sc_core::sc_signal<bool> cfg_outer;
  sc_core::sc_signal<stop_t> cfg_rank;
  InPort<kW> in;
  OutPort<1, kW> out;
  units::ShapePromote<kW> hls{"hls"};
  std::unique_ptr<Rtl> rtl;
  PromoteBench(const std::vector<UnitCase>& cases, uint64_t seed)
      : in(*this, "src", cases, 0, encode_scalar<kW>, seed), out(*this, "sink", decode_scalar<kW>, seed + 1) {
    bind(hls, false);
    if constexpr (kHasRtl<Rtl>) {
      rtl = std::make_unique<Rtl>("rtl");
      bind(*rtl, true);
      check_in(ctrl, "in", in.pins);
      check_out(ctrl, "out", out.pins);
    }
    ctrl.completed = [this] { return out.sink.completed(); };
    ctrl.apply_cfg = [this](const std::vector<int>& c) {
      cfg_outer.write(c[0] < 0);
      cfg_rank.write(c[0] < 0 ? 0 : c[0]);
    };
  }
  template <class D>
  void bind(D& d, bool r) {
    STEPSIM_BIND_COMMON(d);
    d.cfg_outer_i(cfg_outer);
    d.cfg_rank_i(cfg_rank);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
  }
  Outputs outputs() { return out.sink.got; }
};

template <class Rtl>
struct RepeatBench : Env {
  sc_core::sc_signal<bits_t<kRepeatCW>> cfg_count;
  InPort<kW> in;
  OutPort<1, kW> out;
  units::ShapeRepeat<kW, kRepeatCW> hls{"hls"};
  std::unique_ptr<Rtl> rtl;
  RepeatBench(const std::vector<UnitCase>& cases, uint64_t seed)
      : in(*this, "src", cases, 0, encode_scalar<kW>, seed), out(*this, "sink", decode_scalar<kW>, seed + 1) {
    bind(hls, false);
    if constexpr (kHasRtl<Rtl>) {
      rtl = std::make_unique<Rtl>("rtl");
      bind(*rtl, true);
      check_in(ctrl, "in", in.pins);
      check_out(ctrl, "out", out.pins);
    }
    ctrl.completed = [this] { return out.sink.completed(); };
    ctrl.apply_cfg = [this](const std::vector<int>& c) { cfg_count.write(c[0]); };
  }
  template <class D>
  void bind(D& d, bool r) {
    STEPSIM_BIND_COMMON(d);
    d.cfg_count_i(cfg_count);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
  }
  Outputs outputs() { return out.sink.got; }
};

template <class Rtl>
struct ExpandBench : Env {
  sc_core::sc_signal<stop_t> cfg_rank;
  InPort<kW> in, ref;
  OutPort<1, kW> out;
  units::ShapeExpand<kW> hls{"hls"};
  std::unique_ptr<Rtl> rtl;
  ExpandBench(const std::vector<UnitCase>& cases, uint64_t seed)
      : in(*this, "src", cases, 0, encode_scalar<kW>, seed),
        ref(*this, "ref", cases, 1, encode_scalar<kW>, seed + 2),
        out(*this, "sink", decode_scalar<kW>, seed + 1) {
    bind(hls, false);
    if constexpr (kHasRtl<Rtl>) {
      rtl = std::make_unique<Rtl>("rtl");
      bind(*rtl, true);
      check_in(ctrl, "in", in.pins);
      check_in(ctrl, "ref", ref.pins);
      check_out(ctrl, "out", out.pins);
    }
    ctrl.completed = [this] { return out.sink.completed(); };
    ctrl.apply_cfg = [this](const std::vector<int>& c) { cfg_rank.write(c[0]); };
  }
  template <class D>
  void bind(D& d, bool r) {
    STEPSIM_BIND_COMMON(d);
    d.cfg_rank_i(cfg_rank);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_IN(d, ref, ref.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
  }
  Outputs outputs() { return out.sink.got; }
};

template <class Rtl>
struct BroadcastBench : Env {
  InPort<kW> in;
  OutPort<kN, kW> out;
  units::RouterBroadcast<kN, kW> hls{"hls"};
  std::unique_ptr<Rtl> rtl;
  BroadcastBench(const std::vector<UnitCase>& cases, uint64_t seed)
      : in(*this, "src", cases, 0, encode_scalar<kW>, seed), out(*this, "sink", decode_scalar<kW>, seed + 1) {
    bind(hls, false);
    if constexpr (kHasRtl<Rtl>) {
      rtl = std::make_unique<Rtl>("rtl");
      bind(*rtl, true);
      check_in(ctrl, "in", in.pins);
      check_out(ctrl, "out", out.pins);
    }
    ctrl.completed = [this] { return out.sink.completed(); };
    ctrl.apply_cfg = [](const std::vector<int>&) {};
  }
  template <class D>
  void bind(D& d, bool r) {
    STEPSIM_BIND_COMMON(d);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
  }
  Outputs outputs() { return out.sink.got; }
};

template <class Rtl>
struct PartitionBench : Env {
  sc_core::sc_signal<stop_t> cfg_rank;
  InPort<kW> in;
  InPort<kN> sel;
  OutPort<kN, kW> out;
  units::RouterPartition<kN, kW> hls{"hls"};
  std::unique_ptr<Rtl> rtl;
  PartitionBench(const std::vector<UnitCase>& cases, uint64_t seed)
      : in(*this, "src", cases, 0, encode_scalar<kW>, seed),
        sel(*this, "sel", cases, 1, encode_selector<kN>, seed + 2),
        out(*this, "sink", decode_scalar<kW>, seed + 1) {
    bind(hls, false);
    if constexpr (kHasRtl<Rtl>) {
      rtl = std::make_unique<Rtl>("rtl");
      bind(*rtl, true);
      check_in(ctrl, "in", in.pins);
      check_in(ctrl, "sel", sel.pins);
      check_out(ctrl, "out", out.pins);
    }
    ctrl.completed = [this] { return out.sink.completed(); };
    ctrl.apply_cfg = [this](const std::vector<int>& c) { cfg_rank.write(c[0]); };
  }
  template <class D>
  void bind(D& d, bool r) {
    STEPSIM_BIND_COMMON(d);
    d.cfg_rank_i(cfg_rank);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_IN(d, sel, sel.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
  }
  Outputs outputs() { return out.sink.got; }
};

// [1 x kL] bf16 tiles <-> payload (lane j in bits [16j+15:16j]); values are bit-cast, so NaN
// payloads (signalling ones too) travel unchanged.
inline Tile bf16_tile(const std::vector<uint16_t>& v) {
  auto d = std::make_shared<TileData>();
  for (uint16_t b : v) d->f.push_back(f32_from_bf16_bits(b));
  Tile t = shape_tile(1, uint32_t(v.size()), DType::BF16);
  t.data = d;
  return t;
}
inline uint16_t bf16_at(const Tile& t, uint32_t j) { return uint16_t(f32_bits(t.f(0, j)) >> 16); }
inline bits_t<kLW> encode_tile(const Element& e) {
  bits_t<kLW> v = 0;
  for (int j = 0; j < kL; ++j) v.range(16 * j + 15, 16 * j) = bf16_at(e.tile(), uint32_t(j));
  return v;
}
inline Element decode_tile(const bits_t<kLW>& v) {
  std::vector<uint16_t> b;
  for (int j = 0; j < kL; ++j) b.push_back(uint16_t(v.range(16 * j + 15, 16 * j).to_uint()));
  return Element(bf16_tile(b));
}

template <class Rtl>
struct PcuEwBench : Env {
  sc_core::sc_signal<bool> cfg_op;
  InPort<kLW> a, b;
  OutPort<1, kLW> out;
  units::PcuEw<kL> hls{"hls"};
  std::unique_ptr<Rtl> rtl;
  PcuEwBench(const std::vector<UnitCase>& cases, uint64_t seed)
      : a(*this, "a", cases, 0, encode_tile, seed),
        b(*this, "b", cases, 1, encode_tile, seed + 2),
        out(*this, "sink", decode_tile, seed + 1) {
    bind(hls, false);
    if constexpr (kHasRtl<Rtl>) {
      rtl = std::make_unique<Rtl>("rtl");
      bind(*rtl, true);
      check_in(ctrl, "a", a.pins);
      check_in(ctrl, "b", b.pins);
      check_out(ctrl, "out", out.pins);
    }
    ctrl.completed = [this] { return out.sink.completed(); };
    ctrl.apply_cfg = [this](const std::vector<int>& c) { cfg_op.write(c[0] != 0); };
  }
  template <class D>
  void bind(D& d, bool r) {
    STEPSIM_BIND_COMMON(d);
    d.cfg_op_i(cfg_op);
    STEPSIM_BIND_IN(d, a, a.pins, r);
    STEPSIM_BIND_IN(d, b, b.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
  }
  Outputs outputs() { return out.sink.got; }
};

// ------------------------------------------------------------------ random cases
// Cases come in runs that share a cfg (a cfg change needs a reset); some cases also ask for a
// reset. `make(rng, cfg)` builds the input streams of one case.
inline std::vector<UnitCase> make_cases(
    size_t n, uint64_t seed, const std::function<std::vector<int>(std::mt19937_64&)>& cfg,
    const std::function<std::vector<std::vector<Token>>(std::mt19937_64&, const std::vector<int>&)>& make) {
  std::mt19937_64 rng(seed);
  std::vector<UnitCase> cases;
  std::vector<int> c = cfg(rng);
  for (size_t i = 0; i < n; ++i) {
    if (rng() % 16 == 0) c = cfg(rng);
    UnitCase u;
    u.cfg = c;
    u.reset_before = rng() % 64 == 0;
    for (const auto& toks : make(rng, c)) u.inputs.push_back(to_beats(toks));
    cases.push_back(std::move(u));
  }
  return cases;
}

inline int rnd(std::mt19937_64& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

inline RandomStreamOptions stream_opts(std::mt19937_64& rng, int rank) {
  RandomStreamOptions o;
  o.rank = rank;
  o.max_len = rank == 0 ? rnd(rng, 1, 10) : rank == 1 ? rnd(rng, 2, 5) : rank == 2 ? rnd(rng, 1, 4) : 2;
  o.empty_prob = std::uniform_real_distribution<double>(0.0, 0.35)(rng);
  return o;
}

inline std::vector<UnitCase> flatten_cases(size_t n, uint64_t seed) {
  return make_cases(
      n, seed,
      [](std::mt19937_64& r) {
        int mn = rnd(r, 0, 2);
        return std::vector<int>{mn, rnd(r, mn, 3)};
      },
      [](std::mt19937_64& r, const std::vector<int>& c) {
        return std::vector<std::vector<Token>>{random_stream(r, stream_opts(r, rnd(r, c[1], 4)))};
      });
}

inline std::vector<UnitCase> promote_cases(size_t n, uint64_t seed) {
  return make_cases(
      n, seed, [](std::mt19937_64& r) { return std::vector<int>{rnd(r, -1, 2)}; },
      [](std::mt19937_64& r, const std::vector<int>& c) {
        return std::vector<std::vector<Token>>{random_stream(r, stream_opts(r, rnd(r, std::max(c[0], 0), 3)))};
      });
}

inline std::vector<UnitCase> repeat_cases(size_t n, uint64_t seed) {
  return make_cases(
      n, seed, [](std::mt19937_64& r) { return std::vector<int>{rnd(r, 0, 4)}; },
      [](std::mt19937_64& r, const std::vector<int>&) {
        return std::vector<std::vector<Token>>{random_stream(r, stream_opts(r, rnd(r, 0, 3)))};
      });
}

// Expand: the ref stream is random; the data stream has the ref's outer structure with every
// rank-`rank` group replaced by a single element.
inline TensorTree expand_data(std::mt19937_64& r, const TensorTree& ref, int level, int rank) {
  TensorTree t;
  if (level == rank) {
    // A tensor of `rank` dimensions of size 1 around one element.
    TensorTree leaf;
    leaf.leaf = true;
    leaf.elem = Element(Scalar{rnd(r, 100, 999)});
    t = leaf;
    for (int k = 0; k < rank; ++k) {
      TensorTree up;
      up.children.push_back(t);
      t = up;
    }
    return t;
  }
  for (const TensorTree& c : ref.children) t.children.push_back(expand_data(r, c, level - 1, rank));
  return t;
}

inline std::vector<UnitCase> expand_cases(size_t n, uint64_t seed) {
  return make_cases(
      n, seed, [](std::mt19937_64& r) { return std::vector<int>{rnd(r, 0, 2)}; },
      [](std::mt19937_64& r, const std::vector<int>& c) {
        const int rank = c[0];
        const int a = rnd(r, rank, 3);
        std::vector<TensorTree> ref = random_tensors(r, stream_opts(r, a));
        std::vector<TensorTree> data;
        for (const TensorTree& t : ref) data.push_back(expand_data(r, t, a, rank));
        return std::vector<std::vector<Token>>{tensors_to_tokens(data, a), tensors_to_tokens(ref, a)};
      });
}

inline std::vector<UnitCase> broadcast_cases(size_t n, uint64_t seed) {
  return make_cases(
      n, seed, [](std::mt19937_64&) { return std::vector<int>{}; },
      [](std::mt19937_64& r, const std::vector<int>&) {
        return std::vector<std::vector<Token>>{random_stream(r, stream_opts(r, rnd(r, 0, 3)))};
      });
}

// Chunks of a Partition data stream (one per selector element): rank 0 every element; rank
// >= 1 every beat whose stop is >= rank (bare or not) closes one chunk.
inline size_t partition_chunks(const std::vector<Beat>& beats, int rank) {
  size_t n = 0;
  for (const Beat& b : beats) n += rank == 0 ? b.has_elem : b.stop >= rank;
  return n;
}

// The approximate Partition drops bare stops above rank (for rank >= 1 too), so it differs
// from the unit exactly on data streams that have one (docs/units.md, "Known differences").
inline bool partition_approx_diverges(const UnitCase& c) {
  const int rank = c.cfg[0];
  if (rank == 0) return false;
  for (const Beat& b : c.inputs[0])
    if (!b.has_elem && b.stop > rank) return true;
  return false;
}

// Reference Partition with the chunk rule of partition_chunks, per consumer as token text.
inline std::vector<std::string> partition_reference(const UnitCase& c, int n) {
  const int rank = c.cfg[0];
  std::vector<std::vector<Beat>> out{size_t(n)};
  size_t i = 0;
  const std::vector<Beat>& data = c.inputs[0];
  for (const Beat& s : c.inputs[1]) {
    if (!s.has_elem) continue;
    for (; i < data.size(); ++i) {
      const Beat& b = data[i];
      if (!b.has_elem && (rank == 0 || b.stop == 0)) continue;
      Beat o = b;
      o.done = false;
      o.stop = rank == 0 ? 0 : std::min<int>(b.stop, rank);
      for (int k : s.elem.selector().indices()) out[size_t(k)].push_back(o);
      if (rank == 0 ? b.has_elem : b.stop >= rank) {
        ++i;
        break;
      }
    }
  }
  std::vector<std::string> r;
  for (auto& o : out) {
    o.push_back(Beat::done_beat());
    r.push_back(format_beats(o));
  }
  return r;
}

inline std::vector<UnitCase> partition_cases(size_t n, uint64_t seed) {
  return make_cases(
      n, seed, [](std::mt19937_64& r) { return std::vector<int>{rnd(r, 0, 2)}; },
      [](std::mt19937_64& r, const std::vector<int>& c) {
        const int rank = c[0];
        std::vector<Token> data = random_stream(r, stream_opts(r, rnd(r, rank, 3)));
        const size_t chunks = partition_chunks(to_beats(data), rank);
        // Selector stream: `chunks` multi-hot selectors (some empty), as rank 0 or split into
        // random rows (rank 1, empty rows allowed).
        std::vector<Token> sel;
        const bool rows = r() % 2;
        for (size_t i = 0; i < chunks; ++i) {
          Selector s;
          for (int k = 0; k < kN; ++k)
            if (r() % 3 == 0) s.set(k);
          sel.push_back(Token::e(Element(s)));
          if (rows && r() % 3 == 0) sel.push_back(Token::s(1));
        }
        if (rows && (sel.empty() || sel.back().kind != Token::kStop)) sel.push_back(Token::s(1));
        sel.push_back(Token::d());
        return std::vector<std::vector<Token>>{data, sel};
      });
}

// Random bf16 bit patterns of every class: moderate and extreme normals, subnormals, zeros,
// infinities and NaNs (quiet and signalling).
inline uint16_t random_bf16(std::mt19937_64& r) {
  const uint16_t u = uint16_t(r());
  const uint16_t sign = u & 0x8000u, frac = u & 0x7Fu;
  switch (r() % 10) {
    case 0: return sign | frac;                                      // zero / subnormal
    case 1: return sign | 0x7F80u;                                   // Inf
    case 2: return sign | 0x7F80u | (frac ? frac : 0x40u);           // NaN
    case 3: return sign | uint16_t((240 + r() % 15) << 7) | frac;    // huge: overflows
    case 4: return sign | uint16_t((1 + r() % 20) << 7) | frac;      // tiny: subnormal results
    case 5: return u;                                                // any
    default: return sign | uint16_t((120 + r() % 16) << 7) | frac;  // moderate
  }
}

inline Element random_bf16_tile(std::mt19937_64& r) {
  std::vector<uint16_t> v;
  for (int j = 0; j < kL; ++j) v.push_back(random_bf16(r));
  if (r() % 4 == 0) v[size_t(r() % kL)] = v[0] ^ 0x8000u;  // a cancellation in the sum
  return Element(bf16_tile(v));
}

inline TensorTree retile(const TensorTree& t, std::mt19937_64& r) {
  TensorTree o = t;
  if (t.leaf) o.elem = random_bf16_tile(r);
  for (TensorTree& c : o.children) c = retile(c, r);
  return o;
}

inline std::vector<UnitCase> pcu_ew_cases(size_t n, uint64_t seed) {
  return make_cases(
      n, seed, [](std::mt19937_64& r) { return std::vector<int>{int(r() % 2)}; },
      [](std::mt19937_64& r, const std::vector<int>&) {
        const int rank = rnd(r, 0, 2);
        RandomStreamOptions o = stream_opts(r, rank);
        o.element = random_bf16_tile;
        std::vector<TensorTree> a = random_tensors(r, o), b;
        for (const TensorTree& t : a) b.push_back(retile(t, r));
        return std::vector<std::vector<Token>>{tensors_to_tokens(a, rank), tensors_to_tokens(b, rank)};
      });
}

// Checks a compute-unit output stream against hw/functions (map "mul" / "add" on the bf16
// tiles, bit for bit) and a's stop/done structure. "" when it matches.
inline std::string check_pcu_ew(const UnitCase& c, const std::vector<Beat>& out) {
  const MapFunction& fn = map_function(c.cfg[0] ? "add" : "mul");
  const std::vector<Beat>& a = c.inputs[0];
  const std::vector<Beat>& b = c.inputs[1];
  if (format_beats(out) != format_beats(a)) return "structure: got " + format_beats(out) + ", want " + format_beats(a);
  std::vector<const Beat*> ae, be, oe;
  for (const Beat& x : a)
    if (x.has_elem) ae.push_back(&x);
  for (const Beat& x : b)
    if (x.has_elem) be.push_back(&x);
  for (const Beat& x : out)
    if (x.has_elem) oe.push_back(&x);
  for (size_t i = 0; i < ae.size(); ++i) {
    const Tile want = fn.apply({ae[i]->elem.tile(), be[i]->elem.tile()});
    for (uint32_t j = 0; j < uint32_t(kL); ++j) {
      const uint16_t w = bf16_at(want, j), g = bf16_at(oe[i]->elem.tile(), j);
      const uint16_t x = bf16_at(ae[i]->elem.tile(), j), y = bf16_at(be[i]->elem.tile(), j);
      auto is_nan = [](uint16_t v) { return (v & 0x7F80u) == 0x7F80u && (v & 0x7Fu) != 0; };
      // Two NaN operands: which one a C++ float operation returns depends on the code the
      // compiler emits (operand order of addss/mulss), so hw/functions does not define it;
      // the unit returns a's (docs/units.md). Either quieted operand is accepted here.
      if (is_nan(x) && is_nan(y) && (g == (x | 0x40u) || g == (y | 0x40u))) continue;
      if (w != g) {
        std::ostringstream s;
        s << std::hex << fn.name << " element " << std::dec << i << " lane " << j << std::hex
          << ": a=" << bf16_at(ae[i]->elem.tile(), j) << " b=" << bf16_at(be[i]->elem.tile(), j) << " got " << g
          << " want " << w;
        return s.str();
      }
    }
  }
  return "";
}

// ------------------------------------------------------------------ expected outputs
inline const HardwareParams& test_hw() {
  static HardwareParams hw = load_preset("step-artifact");
  return hw;
}

// The approximate operator's outputs for one case, per consumer, as token text.
inline std::vector<std::string> expected(const std::string& unit, const UnitCase& c) {
  std::map<std::string, std::string> params;
  std::vector<std::pair<std::string, std::string>> in;
  size_t outs = 0;
  std::vector<std::string> ports{"out"};
  const std::string t0 = format_beats(c.inputs[0]);
  std::string op = unit;
  if (unit == "Flatten") {
    params = {{"min", std::to_string(c.cfg[0])}, {"max", std::to_string(c.cfg[1])}};
    in = {{"", t0}};
  } else if (unit == "Promote") {
    params = {{"rank", std::to_string(c.cfg[0])}};
    in = {{"", t0}};
  } else if (unit == "Repeat") {
    params = {{"count", std::to_string(c.cfg[0])}};
    in = {{"", t0}};
  } else if (unit == "Expand") {
    params = {{"rank", std::to_string(c.cfg[0])}};
    in = {{"in", t0}, {"ref", format_beats(c.inputs[1])}};
  } else if (unit == "Broadcast" || unit == "Partition") {
    outs = kN;
    ports.clear();
    for (int i = 0; i < kN; ++i) ports.push_back("out" + std::to_string(i));
    if (unit == "Broadcast") {
      in = {{"", t0}};
    } else {
      params = {{"rank", std::to_string(c.cfg[0])}};
      in = {{"in", t0}, {"sel", format_beats(c.inputs[1])}};
    }
  }
  EvalResult r = eval_op(op, params, in, test_hw(), outs);
  std::vector<std::string> res;
  for (const std::string& p : ports) res.push_back(r.sim.ok ? r.text[p] : "error: " + r.sim.error);
  return res;
}

}  // namespace stepsim::unit_test
