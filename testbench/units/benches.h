// Per-unit benches and random case generators for the unit tests (harness.h).
//
// Each bench instantiates the HLS unit and, when Rtl is not NoRtl, the Verilated RTL twin on
// the same input pins, runs all cases in one simulation, and returns the output streams per
// consumer and case. expected_*() gives the approximate operator's output (sim/engine/eval.h) for
// the same case, as token text per output port.
#pragma once

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hw/functions/functions.h"
#include "hw/presets/hardware.h"
#include "hw/stream/bf16.h"
#include "hw/stream/random_stream.h"
#include "hw/units/pcu_accum.h"
#include "hw/units/pcu_ew.h"
#include "hw/units/pcu_reduce.h"
#include "hw/units/router_broadcast.h"
#include "hw/units/router_eager_merge.h"
#include "hw/units/router_partition.h"
#include "hw/units/router_reassemble.h"
#include "hw/units/shape_expand.h"
#include "hw/units/shape_flatten.h"
#include "hw/units/shape_promote.h"
#include "hw/units/shape_repeat.h"
#include "hw/units/shape_reshape.h"
#include "hw/units/shape_zip.h"
#include "sim/engine/eval.h"
#include "testbench/units/harness.h"

namespace stepsim::unit_test {

struct NoRtl {};
template <class Rtl>
constexpr bool kHasRtl = !std::is_same_v<Rtl, NoRtl>;

constexpr int kW = 32;        // payload width of the test configurations
constexpr int kN = 4;         // consumers of the router test configurations
constexpr int kL = 8;         // lanes of the compute-unit test configuration (RTL default)
constexpr int kLW = 16 * kL;  // its payload width
constexpr int kRepeatCW = 8;  // count width of the Repeat and Reshape test configurations (RTL default)
constexpr int kZipN = 2;      // inputs of the Zip test configuration (RTL default)

// Output streams: [consumer][case] (all output ports' consumers, in port order).
using Outputs = std::vector<std::vector<std::vector<Beat>>>;
// The output streams of one case: [consumer].
using CaseOutputs = std::vector<std::vector<Beat>>;

struct BenchRun {
  RunResult result;
  Outputs out;
  std::vector<std::vector<std::vector<uint64_t>>> out_at;  // [consumer][case][beat]: clock edge
  std::vector<std::vector<std::vector<uint64_t>>> in_at;   // [input stream][case][beat]: clock edge
};

// ------------------------------------------------------------------ bench building blocks
// A bench is a struct deriving from Bench<Self, Rtl> whose members are its cfg pins (CfgPin),
// input ports (InPort, InGroup), output ports (OutPort) and the HLS unit `hls`, plus
//   template <class D> void bind(D& dut, bool rtl)   binds a unit or its RTL twin to them
//   static std::vector<UnitCase> cases(size_t n, uint64_t seed)   random cases
//   static std::string check(const UnitCase&, const CaseOutputs&)  "" when the outputs are right
// The members register themselves with the bench (UnitEnv) when they are constructed, so the
// run, the RTL comparison, the cfg pins and the outputs need no per-unit code.

struct OutBase {
  virtual ~OutBase() = default;
  virtual size_t completed() const = 0;
  virtual const Outputs& got() const = 0;
  virtual const std::vector<std::vector<std::vector<uint64_t>>>& at() const = 0;
  virtual void set_always_ready() = 0;
};

struct UnitEnv {
  sc_core::sc_clock clk{"clk", 1, sc_core::SC_NS};
  Controller ctrl{"ctrl"};
  RunResult result;
  size_t n_in = 0, n_out = 0;                                                      // streams so far
  std::vector<std::function<void(const std::vector<UnitCase>&, uint64_t)>> setup;  // per input stream
  std::vector<std::function<void()>> rtl_checks;                                   // per port
  std::vector<std::function<void(int)>> cfgs;                                      // per cfg pin
  std::vector<OutBase*> outs;
  UnitEnv() {
    ctrl.clk(clk);
    ctrl.result = &result;
  }
  virtual ~UnitEnv() = default;
};

inline std::vector<double> random_p(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const double levels[] = {1.0, 1.0, 0.7, 0.4, 0.15};
  std::vector<double> p;
  for (size_t i = 0; i < n; ++i) p.push_back(levels[rng() % 5]);
  return p;
}

// A quasi-static cfg pin; UnitCase::cfg[i] goes to the bench's i-th CfgPin.
template <class T>
struct CfgPin {
  sc_core::sc_signal<T> sig;
  explicit CfgPin(UnitEnv& env) {
    env.cfgs.push_back([this](int v) { sig.write(T(v)); });
  }
};
template <>
inline CfgPin<bool>::CfgPin(UnitEnv& env) {
  env.cfgs.push_back([this](int v) { sig.write(v != 0); });
}

// Feeds input stream `index` of every case (UnitCase::inputs[index]) to `pins`.
template <int W>
void add_source(UnitEnv& env, std::unique_ptr<Source<W>>& src, const std::string& name, InPins<W>& pins,
                std::function<bits_t<W>(const Element&)> enc) {
  const size_t index = env.n_in++;
  src = std::make_unique<Source<W>>(name.c_str(), pins, env.ctrl.released, 0);
  src->clk(env.clk);
  env.ctrl.sources.push_back(src.get());
  Source<W>* s = src.get();
  env.setup.push_back([s, index, enc](const std::vector<UnitCase>& cases, uint64_t seed) {
    for (const UnitCase& c : cases) {
      std::vector<UBeat<W>> beats;
      for (const Beat& b : c.inputs[index]) beats.push_back(to_ubeat<W>(b, enc));
      s->cases.push_back(std::move(beats));
    }
    s->p_valid = random_p(cases.size(), seed + 7 + 13 * index);
    s->rng.seed(seed + 2 * index);
  });
}

// One input stream port.
template <int W>
struct InPort {
  InPins<W> pins;
  std::unique_ptr<Source<W>> src;
  InPort(UnitEnv& env, const std::string& name, std::function<bits_t<W>(const Element&)> enc) {
    add_source<W>(env, src, "src_" + name, pins, std::move(enc));
    env.rtl_checks.push_back([&env, this, name] { check_in(env.ctrl, name, pins); });
  }
};

// N input streams in one flat pin group (UnitCase::inputs holds them as N consecutive streams).
template <int N, int W>
struct InGroup {
  InGroupPins<N, W> pins;
  std::unique_ptr<Source<W>> src[N];
  InGroup(UnitEnv& env, const std::string& name, std::function<bits_t<W>(const Element&)> enc)
      : pins(("group_" + name).c_str()) {
    for (int i = 0; i < N; ++i) add_source<W>(env, src[i], "src_" + name + std::to_string(i), pins.lane[i], enc);
    env.rtl_checks.push_back([&env, this, name] {
      env.ctrl.checks.push_back(
          [this, n = name + "_ready_o"] { return diff(n.c_str(), pins.ready_hls, pins.ready_rtl); });
    });
  }
};

// One output stream port with N consumers.
template <int N, int W>
struct OutPort : OutBase {
  OutPins<N, W> pins;
  Sink<N, W> sink;
  OutPort(UnitEnv& env, const std::string& name, std::function<Element(const bits_t<W>&)> dec)
      : sink(("sink_" + name).c_str(), pins, std::move(dec), 0) {
    sink.clk(env.clk);
    const size_t index = env.n_out++;
    env.outs.push_back(this);
    env.rtl_checks.push_back([&env, this, name] { check_out(env.ctrl, name, pins); });
    env.setup.push_back(
        [this, index](const std::vector<UnitCase>&, uint64_t seed) { sink.rng.seed(seed + 1 + 2 * index); });
  }
  size_t completed() const override { return sink.completed(); }
  const Outputs& got() const override { return sink.got; }
  const std::vector<std::vector<std::vector<uint64_t>>>& at() const override { return sink.at; }
  void set_always_ready() override { sink.always_ready = true; }
};

template <class Self, class Rtl>
struct Bench : UnitEnv {
  std::unique_ptr<Rtl> rtl;
  template <class D>
  void bind_clock(D& d) {
    d.clk_i(clk);
    d.rst_ni(ctrl.rst_n);
  }
  // Binds the unit (and the RTL twin), loads the cases into the sources.
  void elaborate(const std::vector<UnitCase>& cases, uint64_t seed) {
    Self& self = static_cast<Self&>(*this);
    self.bind(self.hls, false);
    if constexpr (kHasRtl<Rtl>) {
      rtl = std::make_unique<Rtl>("rtl");
      self.bind(*rtl, true);
      for (const auto& c : rtl_checks) c();
    }
    for (const auto& f : setup) f(cases, seed);
    ctrl.completed = [this] {
      size_t c = SIZE_MAX;
      for (const OutBase* o : outs) c = std::min(c, o->completed());
      return c;
    };
    // Cfg pins beyond the case's list read 0 (a pin added later keeps the older cases as they were).
    ctrl.apply_cfg = [this](const std::vector<int>& c) {
      for (size_t i = 0; i < cfgs.size(); ++i) cfgs[i](i < c.size() ? c[i] : 0);
    };
  }
  Outputs outputs() const {
    Outputs r;
    for (const OutBase* o : outs)
      for (const auto& consumer : o->got()) r.push_back(consumer);
    return r;
  }
};

// Runs a bench (in a fresh kernel) over `cases`. `full_rate`: no valid gaps, no back-pressure.
template <class B>
BenchRun run_bench(const std::vector<UnitCase>& cases, uint64_t seed, bool full_rate = false) {
  fresh_kernel();
  // Left behind with the kernel (its threads are suspended forever).
  B* b = new B();
  b->elaborate(cases, seed);
  if (full_rate) {
    for (SourceBase* s : b->ctrl.sources) s->p_valid.assign(cases.size(), 1.0);
    for (OutBase* o : b->outs) o->set_always_ready();
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
  for (const OutBase* o : b->outs)
    for (const auto& consumer : o->at()) r.out_at.push_back(consumer);
  for (SourceBase* s : b->ctrl.sources) r.in_at.push_back(s->sent);
  return r;
}

// The outputs of case i: [consumer].
inline CaseOutputs case_outputs(const Outputs& out, size_t i) {
  CaseOutputs r;
  for (const auto& consumer : out) r.push_back(consumer.at(i));
  return r;
}

// ------------------------------------------------------------------ checks
inline const HardwareParams& test_hw() {
  static HardwareParams hw = load_preset("step-artifact");
  return hw;
}

// Compares the outputs with the approximate operator `op` (sim/engine/eval.h) on the same inputs:
// `in` names the case's input streams (in order), `outs` the operator's outputs per consumer.
inline std::string check_eval(const std::string& op, const std::map<std::string, std::string>& params,
                              const std::vector<std::string>& in, const std::vector<std::string>& outs, size_t num_outs,
                              const UnitCase& c, const CaseOutputs& got) {
  std::vector<std::pair<std::string, std::string>> inputs;
  for (size_t i = 0; i < in.size(); ++i) inputs.push_back({in[i], format_beats(c.inputs.at(i))});
  EvalResult r = eval_op(op, params, inputs, test_hw(), num_outs);
  if (!r.sim.ok) return op + ": the approximate operator failed: " + r.sim.error;
  for (size_t o = 0; o < outs.size(); ++o) {
    const std::string g = format_beats(got.at(o)), w = r.text[outs[o]];
    if (g != w) {
      std::string s = op + " output " + outs[o] + ": got " + g + ", want " + w + "; inputs";
      for (const auto& [n, t] : inputs) s += " " + (n.empty() ? std::string("in") : n) + "=[" + t + "]";
      return s;
    }
  }
  return "";
}
inline std::vector<std::string> numbered(const std::string& p, int n) {
  std::vector<std::string> r;
  for (int i = 0; i < n; ++i) r.push_back(p + std::to_string(i));
  return r;
}

// ------------------------------------------------------------------ payload encodings
// [1 x L] bf16 tiles <-> payload (lane j in bits [16j+15:16j]); values are bit-cast, so NaN
// payloads (signalling ones too) travel unchanged.
inline Tile bf16_tile(const std::vector<uint16_t>& v) {
  auto d = std::make_shared<TileData>();
  for (uint16_t b : v) d->f.push_back(f32_from_bf16_bits(b));
  Tile t = shape_tile(1, uint32_t(v.size()), DType::BF16);
  t.data = d;
  return t;
}
inline uint16_t bf16_at(const Tile& t, uint32_t j) { return uint16_t(f32_bits(t.f(0, j)) >> 16); }
template <int L>
bits_t<16 * L> encode_tile(const Element& e) {
  bits_t<16 * L> v = 0;
  for (int j = 0; j < L; ++j) v.range(16 * j + 15, 16 * j) = bf16_at(e.tile(), uint32_t(j));
  return v;
}
template <int L>
Element decode_tile(const bits_t<16 * L>& v) {
  std::vector<uint16_t> b;
  for (int j = 0; j < L; ++j) b.push_back(uint16_t(v.range(16 * j + 15, 16 * j).to_uint()));
  return Element(bf16_tile(b));
}

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

// cfg {outer, rank}: outer = 1 is Promote's rank -1 (a new outermost dimension).
inline std::vector<UnitCase> promote_cases(size_t n, uint64_t seed) {
  return make_cases(
      n, seed,
      [](std::mt19937_64& r) {
        const int k = rnd(r, -1, 2);
        return std::vector<int>{k < 0, std::max(k, 0)};
      },
      [](std::mt19937_64& r, const std::vector<int>& c) {
        return std::vector<std::vector<Token>>{random_stream(r, stream_opts(r, rnd(r, c[1], 3)))};
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

template <int N = kN>
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
          for (int k = 0; k < N; ++k)
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
    case 0:
      return sign | frac;  // zero / subnormal
    case 1:
      return sign | 0x7F80u;  // Inf
    case 2:
      return sign | 0x7F80u | (frac ? frac : 0x40u);  // NaN
    case 3:
      return sign | uint16_t((240 + r() % 15) << 7) | frac;  // huge: overflows
    case 4:
      return sign | uint16_t((1 + r() % 20) << 7) | frac;  // tiny: subnormal results
    case 5:
      return u;  // any
    default:
      return sign | uint16_t((120 + r() % 16) << 7) | frac;  // moderate
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

// ---- Zip: N streams of one structure, different elements.
inline TensorTree revalue(const TensorTree& t, std::mt19937_64& r) {
  TensorTree o = t;
  if (t.leaf) o.elem = Element(Scalar{rnd(r, 0, 999)});
  for (TensorTree& c : o.children) c = revalue(c, r);
  return o;
}
inline std::vector<UnitCase> zip_cases(size_t n, uint64_t seed) {
  return make_cases(
      n, seed, [](std::mt19937_64&) { return std::vector<int>{}; },
      [](std::mt19937_64& r, const std::vector<int>&) {
        const int rank = rnd(r, 0, 3);
        std::vector<TensorTree> a = random_tensors(r, stream_opts(r, rank));
        std::vector<std::vector<Token>> in{tensors_to_tokens(a, rank)};
        for (int i = 1; i < kZipN; ++i) {
          std::vector<TensorTree> b;
          for (const TensorTree& t : a) b.push_back(revalue(t, r));
          in.push_back(tensors_to_tokens(b, rank));
        }
        return in;
      });
}
template <int N, int W>
Element decode_tuple(const bits_t<N * W>& v) {
  auto t = std::make_shared<std::vector<Element>>();
  for (int i = 0; i < N; ++i) t->push_back(Element(Scalar{int64_t(units::slice<W, N * W>(v, W * i).to_uint64())}));
  return Element(Tuple(t));
}

// ---- Reshape: cfg {chunk, rank, pad}. At rank r >= 1 every dimension r+1 holds a multiple of
// chunk units (whole chunks, as the operator requires); rank 0 streams are unconstrained.
inline TensorTree reshape_tree(std::mt19937_64& r, int level, int rank, int chunk, const RandomStreamOptions& o) {
  TensorTree t;
  if (level == 0) {
    t.leaf = true;
    t.elem = Element(Scalar{rnd(r, 1, 99)});
    return t;
  }
  // Empty dimensions only below rank + 1: an empty one above would close a partial chunk.
  const bool may_be_empty = level <= rank && std::uniform_real_distribution<double>(0, 1)(r) < o.empty_prob;
  const int k = level == rank + 1 ? chunk * rnd(r, 1, 2) : may_be_empty ? 0 : rnd(r, 1, o.max_len);
  for (int i = 0; i < k; ++i) t.children.push_back(reshape_tree(r, level - 1, rank, chunk, o));
  return t;
}
inline std::vector<UnitCase> reshape_cases(size_t n, uint64_t seed) {
  return make_cases(
      n, seed,
      [](std::mt19937_64& r) {
        return std::vector<int>{rnd(r, 1, 4), rnd(r, 0, 2), r() % 2 ? 0 : rnd(r, 1, 999)};
      },
      [](std::mt19937_64& r, const std::vector<int>& c) {
        const int chunk = c[0], rank = c[1];
        if (rank == 0) return std::vector<std::vector<Token>>{random_stream(r, stream_opts(r, rnd(r, 0, 3)))};
        const int a = rnd(r, rank, 3);
        RandomStreamOptions o = stream_opts(r, a);
        o.max_len = 2;
        std::vector<TensorTree> top;
        // When the split dimension is the stream's outermost (a == rank), it too holds whole chunks:
        // nothing closes a partial chunk there (docs/semantics.md, Reshape).
        const int k = a == rank ? chunk * rnd(r, 0, 1) : rnd(r, 0, 3);
        for (int i = 0; i < k; ++i) top.push_back(reshape_tree(r, a, rank, chunk, o));
        return std::vector<std::vector<Token>>{tensors_to_tokens(top, a)};
      });
}

// ---- Reassemble and EagerMerge inputs: streams of rank-`rank` chunks as Partition emits them
// (stops clamped to rank, a chunk ends with S_rank; one element per chunk at rank 0), element
// values naming their input. The done rides on the last beat or comes as a bare done beat.
inline std::vector<Token> random_chunk(std::mt19937_64& r, int rank, int input, int& seq) {
  if (rank == 0) return {Token::e(Element(Scalar{1000 * (input + 1) + seq++}))};
  RandomStreamOptions o = stream_opts(r, rank);
  o.element = [input, &seq](std::mt19937_64&) { return Element(Scalar{1000 * (input + 1) + seq++}); };
  std::vector<TensorTree> t = random_tensors(r, o);
  std::vector<Token> toks = tensors_to_tokens({t.empty() ? TensorTree{} : t[0]}, rank);
  toks.pop_back();  // D
  return toks;
}
inline std::vector<Beat> chunk_stream_beats(std::mt19937_64& r, std::vector<Token> toks) {
  toks.push_back(Token::d());
  std::vector<Beat> b = to_beats(toks);
  if (b.size() > 1 && b.back().done && r() % 2) {
    b.back().done = false;
    b.push_back(Beat::done_beat());
  }
  return b;
}
// Cases with beats built directly (make_cases takes tokens).
inline std::vector<UnitCase> make_beat_cases(
    size_t n, uint64_t seed, const std::function<std::vector<int>(std::mt19937_64&)>& cfg,
    const std::function<std::vector<std::vector<Beat>>(std::mt19937_64&, const std::vector<int>&)>& make) {
  std::mt19937_64 rng(seed);
  std::vector<UnitCase> cases;
  std::vector<int> c = cfg(rng);
  for (size_t i = 0; i < n; ++i) {
    if (rng() % 16 == 0) c = cfg(rng);
    UnitCase u;
    u.cfg = c;
    u.reset_before = rng() % 64 == 0;
    u.inputs = make(rng, c);
    cases.push_back(std::move(u));
  }
  return cases;
}

// Reassemble: N inputs and a selector stream (maybe split into rows); input i has exactly as
// many chunks as selectors name it.
template <int N = kN>
inline std::vector<UnitCase> reassemble_cases(size_t n, uint64_t seed) {
  return make_beat_cases(
      n, seed, [](std::mt19937_64& r) { return std::vector<int>{rnd(r, 0, 2)}; },
      [](std::mt19937_64& r, const std::vector<int>& c) {
        const int rank = c[0];
        std::vector<std::vector<Token>> in(N);
        std::vector<Token> sel;
        const bool rows = r() % 2;
        const int groups = rnd(r, 0, 6);
        int seq = 0;
        for (int g = 0; g < groups; ++g) {
          Selector s;
          for (int k = 0; k < N; ++k)
            if (r() % 2) {
              s.set(k);
              for (const Token& t : random_chunk(r, rank, k, seq)) in[size_t(k)].push_back(t);
            }
          sel.push_back(Token::e(Element(s)));
          if (rows && r() % 3 == 0) sel.push_back(Token::s(1));
        }
        if (rows && (sel.empty() || sel.back().kind != Token::kStop)) sel.push_back(Token::s(1));
        std::vector<std::vector<Beat>> out;
        for (auto& t : in) out.push_back(chunk_stream_beats(r, t));
        sel.push_back(Token::d());
        out.push_back(to_beats(sel));
        return out;
      });
}

// EagerMerge: kN inputs of 0..4 chunks, with bare outer stops (S_rank+1) between some.
inline std::vector<UnitCase> eager_merge_cases(size_t n, uint64_t seed) {
  return make_beat_cases(
      n, seed, [](std::mt19937_64& r) { return std::vector<int>{rnd(r, 0, 2)}; },
      [](std::mt19937_64& r, const std::vector<int>& c) {
        const int rank = c[0];
        std::vector<std::vector<Beat>> out;
        int seq = 0;
        for (int k = 0; k < kN; ++k) {
          std::vector<Beat> b;
          const int chunks = rnd(r, 0, 4);
          bool outer = false;  // a bare S(rank+1) was inserted: the stream has rank + 1
          for (int i = 0; i < chunks; ++i) {
            std::vector<Token> t = random_chunk(r, rank, k, seq);
            t.push_back(Token::d());
            std::vector<Beat> cb = to_beats(t);  // the done rides on the chunk's last beat
            cb.back().done = false;
            b.insert(b.end(), cb.begin(), cb.end());
            if (r() % 4 == 0) {
              b.push_back(Beat::bare_stop(uint8_t(rank + 1)));
              outer = true;
            }
          }
          // A well-formed stream of rank + 1 ends with S(rank+1) (hw/stream/token.h).
          if (outer && b.back().stop != rank + 1) b.push_back(Beat::bare_stop(uint8_t(rank + 1)));
          if (!b.empty() && r() % 2) {
            b.back().done = true;
          } else {
            b.push_back(Beat::done_beat());
          }
          out.push_back(b);
        }
        return out;
      });
}

inline bool same_beat(const Beat& a, const Beat& b) {
  return a.has_elem == b.has_elem && a.stop == b.stop && a.done == b.done &&
         (!a.has_elem || a.elem.to_string() == b.elem.to_string());
}

// The chunks of a Reassemble/EagerMerge input (stops clamped to rank, done cleared); beats
// that are outer structure (bare, no stop or a stop above rank) are skipped.
inline std::vector<std::vector<Beat>> input_chunks(const std::vector<Beat>& in, int rank) {
  std::vector<std::vector<Beat>> r;
  std::vector<Beat> cur;
  for (const Beat& b : in) {
    if (cur.empty() && !b.has_elem && (b.stop == 0 || b.stop > rank)) continue;
    Beat o = b;
    o.done = false;
    o.stop = rank == 0 ? 0 : std::min<int>(b.stop, rank);
    cur.push_back(o);
    if (rank == 0 ? b.has_elem : b.stop >= rank) {
      r.push_back(cur);
      cur.clear();
    }
  }
  return r;
}

// Checks a Reassemble output: group by group, the selected inputs' next chunks in some order
// (each chunk whole; the order is the one the output shows, matched chunk by chunk).
template <int N = kN>
inline std::string check_reassemble(const UnitCase& c, const std::vector<Beat>& got) {
  const int rank = c.cfg[0];
  std::vector<std::vector<std::vector<Beat>>> chunks;
  for (int i = 0; i < N; ++i) chunks.push_back(input_chunks(c.inputs[size_t(i)], rank));
  std::vector<size_t> next(N, 0);
  std::vector<Beat> want;
  for (const Beat& s : c.inputs[N]) {
    const uint8_t close = uint8_t(rank + 1 + s.stop);
    std::vector<int> pending;
    if (s.has_elem) pending = s.elem.selector().indices();
    if (pending.empty()) {
      if (s.has_elem || s.stop || s.done) {
        Beat o = Beat::bare_stop(s.has_elem || s.stop ? close : 0);
        o.done = s.done;
        want.push_back(o);
      }
      continue;
    }
    while (!pending.empty()) {
      const bool last = pending.size() == 1;
      size_t pick = 0;
      std::vector<std::vector<Beat>> cand;
      for (size_t k = 0; k < pending.size(); ++k) {
        const size_t i = size_t(pending[k]);
        if (next[i] >= chunks[i].size()) return "input " + std::to_string(i) + " has too few chunks";
        std::vector<Beat> ch = chunks[i][next[i]];
        ch.back().stop = last ? close : uint8_t(rank);
        ch.back().done = last && s.done;
        cand.push_back(ch);
      }
      for (size_t k = 0; k < cand.size(); ++k) {
        bool match = want.size() + cand[k].size() <= got.size();
        for (size_t j = 0; match && j < cand[k].size(); ++j) match = same_beat(got[want.size() + j], cand[k][j]);
        if (match) {
          pick = k;
          break;
        }
      }
      want.insert(want.end(), cand[pick].begin(), cand[pick].end());
      ++next[size_t(pending[pick])];
      pending.erase(pending.begin() + long(pick));
    }
  }
  if (format_beats(got) != format_beats(want))
    return "Reassemble: got " + format_beats(got) + ", want " + format_beats(want);
  return "";
}

// Checks an EagerMerge output: every input's chunks whole and in order, in the order the
// one-hot selectors on `sel` name, then a bare done on both outputs.
inline std::string check_eager_merge(const UnitCase& c, const std::vector<Beat>& out, const std::vector<Beat>& sel) {
  const int rank = c.cfg[0];
  std::vector<std::vector<std::vector<Beat>>> chunks;
  for (int i = 0; i < kN; ++i) chunks.push_back(input_chunks(c.inputs[size_t(i)], rank));
  std::vector<size_t> next(kN, 0);
  std::vector<Beat> want, want_sel;
  for (const Beat& s : sel) {
    if (!s.has_elem) continue;
    const std::vector<int> idx = s.elem.selector().indices();
    if (idx.size() != 1) return "EagerMerge: selector " + s.elem.to_string() + " is not one-hot";
    const size_t i = size_t(idx[0]);
    if (next[i] >= chunks[i].size()) return "EagerMerge: input " + std::to_string(i) + " has no chunk left";
    want.insert(want.end(), chunks[i][next[i]].begin(), chunks[i][next[i]].end());
    ++next[i];
    want_sel.push_back(Beat::data(s.elem));
  }
  for (int i = 0; i < kN; ++i)
    if (next[size_t(i)] != chunks[size_t(i)].size()) return "EagerMerge: input " + std::to_string(i) + " not drained";
  want.push_back(Beat::done_beat());
  want_sel.push_back(Beat::done_beat());
  if (format_beats(out) != format_beats(want))
    return "EagerMerge out: got " + format_beats(out) + ", want " + format_beats(want);
  if (format_beats(sel) != format_beats(want_sel))
    return "EagerMerge sel: got " + format_beats(sel) + ", want " + format_beats(want_sel);
  return "";
}

// ---- compute-unit reductions: tiles with few special values (so sums stay finite and the
// rounding is exercised), and the bit-exact comparison with hw/functions.
inline Element random_finite_tile(std::mt19937_64& r) {
  std::vector<uint16_t> v;
  for (int j = 0; j < kL; ++j) {
    const uint16_t u = uint16_t(r());
    v.push_back(r() % 40 == 0 ? random_bf16(r) : uint16_t((u & 0x807Fu) | uint16_t((118 + r() % 20) << 7)));
  }
  if (r() % 4 == 0) v[size_t(r() % kL)] = v[0] ^ 0x8000u;
  return Element(bf16_tile(v));
}
inline bool is_nan16(uint16_t v) { return (v & 0x7F80u) == 0x7F80u && (v & 0x7Fu) != 0; }

// Compares bf16 tiles lane by lane. `nan_ops[j]` >= 2 when an fp32 sum behind lane j added two
// NaNs (from the inputs or made on the way, such as Inf - Inf): which one a C++ `a + b` returns
// depends on the operand order the compiler emits (docs/units.md), so any NaN is accepted there.
inline std::string compare_lanes(const Tile& want, const Tile& got, const std::vector<int>& nan_ops,
                                 const std::string& what) {
  if (want.cols != got.cols)
    return what + ": " + std::to_string(got.cols) + " lanes, want " + std::to_string(want.cols);
  for (uint32_t j = 0; j < want.cols; ++j) {
    const uint16_t w = bf16_at(want, j), g = bf16_at(got, j);
    if (w == g || (is_nan16(w) && is_nan16(g) && nan_ops[j] >= 2)) continue;
    std::ostringstream s;
    s << what << " lane " << j << std::hex << ": got " << g << " want " << w;
    return s.str();
  }
  return "";
}

// cfg {op, rank, scan}: Accum (scan 0) or Scan (1) add / max.
inline std::vector<UnitCase> pcu_accum_cases(size_t n, uint64_t seed, bool scan = false) {
  return make_cases(
      n, seed,
      [scan](std::mt19937_64& r) {
        return std::vector<int>{int(r() % 2), rnd(r, 1, 2), scan ? 1 : 0};
      },
      [](std::mt19937_64& r, const std::vector<int>& c) {
        const int a = rnd(r, c[1], 3);
        RandomStreamOptions o = stream_opts(r, a);
        if (a == 1) o.max_len = rnd(r, 1, 8);
        o.element = r() % 4 ? random_finite_tile : random_bf16_tile;
        return std::vector<std::vector<Token>>{random_stream(r, o)};
      });
}

// Accum `add`/`max` of hw/functions over the input, against the unit's output stream; Scan
// (cfg[2] = 1, hw/ops/higher_order.cpp): every beat out as it came, an element carrying the
// finalized running state.
inline std::string check_pcu_accum(const UnitCase& c, const std::vector<Beat>& got) {
  const bool is_max = c.cfg[0] != 0;
  const int rank = c.cfg[1];
  const bool scan = c.cfg[2] != 0;
  const AccumFunction& fn = accum_function(is_max ? "max" : "add");
  Tile acc = fn.init();
  std::vector<int> nans(kL, 0);
  std::vector<Beat> want;
  std::vector<std::vector<int>> want_nans;
  for (const Beat& b : c.inputs[0]) {
    if (b.has_elem) {
      for (int j = 0; j < kL; ++j)  // an fp32 add of two NaNs (the first update is a copy)
        if (!is_empty_acc(acc) && std::isnan(acc.f(0, uint32_t(j))) && is_nan16(bf16_at(b.elem.tile(), uint32_t(j))))
          nans[size_t(j)] = 2;
      acc = fn.update(std::move(acc), {b.elem.tile()});
    }
    if (scan) {
      Beat o = b;
      if (b.has_elem) o.elem = Element(fn.finalize(acc));
      want.push_back(o);
      want_nans.push_back(is_max ? std::vector<int>(kL, 0) : nans);
      if (b.stop >= rank) {
        acc = fn.init();
        nans.assign(kL, 0);
      }
    } else if (b.stop >= rank) {
      Tile t = fn.finalize(acc);
      if (is_empty_acc(t)) t = bf16_tile(std::vector<uint16_t>(kL, 0));  // no tile header: a zero payload
      Beat o = Beat::data(Element(t), uint8_t(b.stop - rank));
      o.done = b.done;
      want.push_back(o);
      want_nans.push_back(is_max ? std::vector<int>(kL, 0) : nans);
      acc = fn.init();
      nans.assign(kL, 0);
    } else if (b.done) {
      want.push_back(Beat::done_beat());
      want_nans.push_back({});
    }
  }
  if (got.size() != want.size()) return "Accum: got " + format_beats(got) + ", want " + format_beats(want);
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i].has_elem != want[i].has_elem || got[i].stop != want[i].stop || got[i].done != want[i].done)
      return "Accum structure: got " + format_beats(got) + ", want " + format_beats(want);
    if (want[i].has_elem) {
      const std::string e = compare_lanes(want[i].elem.tile(), got[i].elem.tile(), want_nans[i],
                                          std::string(is_max ? "max" : "add") + " beat " + std::to_string(i));
      if (!e.empty()) return e;
    }
  }
  return "";
}

inline std::vector<UnitCase> pcu_reduce_cases(size_t n, uint64_t seed) {
  return make_cases(
      n, seed, [](std::mt19937_64& r) { return std::vector<int>{int(r() % 2)}; },
      [](std::mt19937_64& r, const std::vector<int>&) {
        RandomStreamOptions o = stream_opts(r, rnd(r, 0, 2));
        o.element = r() % 2 ? random_finite_tile : random_bf16_tile;
        return std::vector<std::vector<Token>>{random_stream(r, o)};
      });
}

// Map row_sum / row_max of hw/functions on every tile ([1 x kL] -> [1 x 1]).
inline std::string check_pcu_reduce(const UnitCase& c, const std::vector<Beat>& got) {
  const bool is_max = c.cfg[0] != 0;
  const MapFunction& fn = map_function(is_max ? "row_max" : "row_sum");
  const std::vector<Beat>& in = c.inputs[0];
  if (got.size() != in.size()) return "row reduce: got " + format_beats(got) + ", want " + format_beats(in);
  for (size_t i = 0; i < in.size(); ++i) {
    if (got[i].has_elem != in[i].has_elem || got[i].stop != in[i].stop || got[i].done != in[i].done)
      return "row reduce structure: got " + format_beats(got) + ", want " + format_beats(in);
    if (!in[i].has_elem) continue;
    int nans = 0;  // 2 when the left-to-right fp32 sum adds two NaNs
    float s = in[i].elem.tile().f(0, 0);
    for (uint32_t j = 1; j < uint32_t(kL); ++j) {
      const float e = in[i].elem.tile().f(0, j);
      if (std::isnan(s) && std::isnan(e)) nans = 2;
      s = s + e;
    }
    const std::string e = compare_lanes(fn.apply({in[i].elem.tile()}), got[i].elem.tile(), {is_max ? 0 : nans},
                                        fn.name + " beat " + std::to_string(i));
    if (!e.empty()) return e;
  }
  return "";
}

// ------------------------------------------------------------------ benches
template <class Rtl>
struct FlattenBench : Bench<FlattenBench<Rtl>, Rtl> {
  CfgPin<stop_t> min{*this}, max{*this};
  InPort<kW> in{*this, "in", encode_scalar<kW>};
  OutPort<1, kW> out{*this, "out", decode_scalar<kW>};
  units::ShapeFlatten<kW> hls{"hls"};
  template <class D>
  void bind(D& d, bool r) {
    this->bind_clock(d);
    d.cfg_min_i(min.sig);
    d.cfg_max_i(max.sig);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
  }
  static std::vector<UnitCase> cases(size_t n, uint64_t seed) { return flatten_cases(n, seed); }
  static std::string check(const UnitCase& c, const CaseOutputs& got) {
    return check_eval("Flatten", {{"min", std::to_string(c.cfg[0])}, {"max", std::to_string(c.cfg[1])}}, {""}, {"out"},
                      0, c, got);
  }
};

template <class Rtl>
struct PromoteBench : Bench<PromoteBench<Rtl>, Rtl> {
  CfgPin<bool> outer{*this};
  CfgPin<stop_t> rank{*this};
  InPort<kW> in{*this, "in", encode_scalar<kW>};
  OutPort<1, kW> out{*this, "out", decode_scalar<kW>};
  units::ShapePromote<kW> hls{"hls"};
  template <class D>
  void bind(D& d, bool r) {
    this->bind_clock(d);
    d.cfg_outer_i(outer.sig);
    d.cfg_rank_i(rank.sig);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
  }
  static std::vector<UnitCase> cases(size_t n, uint64_t seed) { return promote_cases(n, seed); }
  static std::string check(const UnitCase& c, const CaseOutputs& got) {
    return check_eval("Promote", {{"rank", c.cfg[0] ? "-1" : std::to_string(c.cfg[1])}}, {""}, {"out"}, 0, c, got);
  }
};

template <class Rtl>
struct RepeatBench : Bench<RepeatBench<Rtl>, Rtl> {
  CfgPin<bits_t<kRepeatCW>> count{*this};
  InPort<kW> in{*this, "in", encode_scalar<kW>};
  OutPort<1, kW> out{*this, "out", decode_scalar<kW>};
  units::ShapeRepeat<kW, kRepeatCW> hls{"hls"};
  template <class D>
  void bind(D& d, bool r) {
    this->bind_clock(d);
    d.cfg_count_i(count.sig);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
  }
  static std::vector<UnitCase> cases(size_t n, uint64_t seed) { return repeat_cases(n, seed); }
  static std::string check(const UnitCase& c, const CaseOutputs& got) {
    return check_eval("Repeat", {{"count", std::to_string(c.cfg[0])}}, {""}, {"out"}, 0, c, got);
  }
};

template <class Rtl>
struct ExpandBench : Bench<ExpandBench<Rtl>, Rtl> {
  CfgPin<stop_t> rank{*this};
  InPort<kW> in{*this, "in", encode_scalar<kW>};
  InPort<kW> ref{*this, "ref", encode_scalar<kW>};
  OutPort<1, kW> out{*this, "out", decode_scalar<kW>};
  units::ShapeExpand<kW> hls{"hls"};
  template <class D>
  void bind(D& d, bool r) {
    this->bind_clock(d);
    d.cfg_rank_i(rank.sig);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_IN(d, ref, ref.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
  }
  static std::vector<UnitCase> cases(size_t n, uint64_t seed) { return expand_cases(n, seed); }
  static std::string check(const UnitCase& c, const CaseOutputs& got) {
    return check_eval("Expand", {{"rank", std::to_string(c.cfg[0])}}, {"in", "ref"}, {"out"}, 0, c, got);
  }
};

template <class Rtl>
struct BroadcastBench : Bench<BroadcastBench<Rtl>, Rtl> {
  InPort<kW> in{*this, "in", encode_scalar<kW>};
  OutPort<kN, kW> out{*this, "out", decode_scalar<kW>};
  units::RouterBroadcast<kN, kW> hls{"hls"};
  template <class D>
  void bind(D& d, bool r) {
    this->bind_clock(d);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
  }
  static std::vector<UnitCase> cases(size_t n, uint64_t seed) { return broadcast_cases(n, seed); }
  static std::string check(const UnitCase& c, const CaseOutputs& got) {
    return check_eval("Broadcast", {}, {""}, numbered("out", kN), kN, c, got);
  }
};

// N = kN (4) in the unit tests; N = 8 for the 8-expert MoE's routers (Partition8Bench).
template <class Rtl, int N = kN>
struct PartitionBenchN : Bench<PartitionBenchN<Rtl, N>, Rtl> {
  CfgPin<stop_t> rank{*this};
  InPort<kW> in{*this, "in", encode_scalar<kW>};
  InPort<N> sel{*this, "sel", encode_selector<N>};
  OutPort<N, kW> out{*this, "out", decode_scalar<kW>};
  units::RouterPartition<N, kW> hls{"hls"};
  template <class D>
  void bind(D& d, bool r) {
    this->bind_clock(d);
    d.cfg_rank_i(rank.sig);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_IN(d, sel, sel.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
  }
  static std::vector<UnitCase> cases(size_t n, uint64_t seed) { return partition_cases<N>(n, seed); }
  static std::string check(const UnitCase& c, const CaseOutputs& got) {
    return check_eval("Partition", {{"rank", std::to_string(c.cfg[0])}}, {"in", "sel"}, numbered("out", N), N, c, got);
  }
};
template <class Rtl>
using PartitionBench = PartitionBenchN<Rtl, kN>;
template <class Rtl>
using Partition8Bench = PartitionBenchN<Rtl, 8>;

template <class Rtl>
struct PcuEwBench : Bench<PcuEwBench<Rtl>, Rtl> {
  CfgPin<bool> op{*this};
  InPort<kLW> a{*this, "a", encode_tile<kL>};
  InPort<kLW> b{*this, "b", encode_tile<kL>};
  OutPort<1, kLW> out{*this, "out", decode_tile<kL>};
  units::PcuEw<kL> hls{"hls"};
  template <class D>
  void bind(D& d, bool r) {
    this->bind_clock(d);
    d.cfg_op_i(op.sig);
    STEPSIM_BIND_IN(d, a, a.pins, r);
    STEPSIM_BIND_IN(d, b, b.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
  }
  static std::vector<UnitCase> cases(size_t n, uint64_t seed) { return pcu_ew_cases(n, seed); }
  static std::string check(const UnitCase& c, const CaseOutputs& got) { return check_pcu_ew(c, got[0]); }
};

template <class Rtl>
struct ZipBench : Bench<ZipBench<Rtl>, Rtl> {
  InGroup<kZipN, kW> in{*this, "in", encode_scalar<kW>};
  OutPort<1, kZipN * kW> out{*this, "out", decode_tuple<kZipN, kW>};
  units::ShapeZip<kZipN, kW> hls{"hls"};
  template <class D>
  void bind(D& d, bool r) {
    this->bind_clock(d);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
  }
  static std::vector<UnitCase> cases(size_t n, uint64_t seed) { return zip_cases(n, seed); }
  static std::string check(const UnitCase& c, const CaseOutputs& got) {
    return check_eval("Zip", {}, std::vector<std::string>(kZipN, ""), {"out"}, 0, c, got);
  }
};

template <class Rtl>
struct ReshapeBench : Bench<ReshapeBench<Rtl>, Rtl> {
  CfgPin<bits_t<kRepeatCW>> chunk{*this};
  CfgPin<stop_t> rank{*this};
  CfgPin<bits_t<kW>> pad_value{*this};
  InPort<kW> in{*this, "in", encode_scalar<kW>};
  OutPort<1, kW> out{*this, "out", decode_scalar<kW>};
  OutPort<1, 1> pad{*this, "pad", decode_scalar<1>};
  units::ShapeReshape<kW, kRepeatCW> hls{"hls"};
  template <class D>
  void bind(D& d, bool r) {
    this->bind_clock(d);
    d.cfg_chunk_i(chunk.sig);
    d.cfg_rank_i(rank.sig);
    d.cfg_pad_i(pad_value.sig);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
    STEPSIM_BIND_OUT(d, pad, pad.pins, r);
  }
  static std::vector<UnitCase> cases(size_t n, uint64_t seed) { return reshape_cases(n, seed); }
  static std::string check(const UnitCase& c, const CaseOutputs& got) {
    return check_eval("Reshape",
                      {{"chunk", std::to_string(c.cfg[0])},
                       {"rank", std::to_string(c.cfg[1])},
                       {"pad", c.cfg[2] ? std::to_string(c.cfg[2]) : "zero"}},
                      {""}, {"out", "pad"}, 0, c, got);
  }
};

template <class Rtl, int N = kN>
struct ReassembleBenchN : Bench<ReassembleBenchN<Rtl, N>, Rtl> {
  CfgPin<stop_t> rank{*this};
  InGroup<N, kW> in{*this, "in", encode_scalar<kW>};
  InPort<N> sel{*this, "sel", encode_selector<N>};
  OutPort<1, kW> out{*this, "out", decode_scalar<kW>};
  units::RouterReassemble<N, kW> hls{"hls"};
  template <class D>
  void bind(D& d, bool r) {
    this->bind_clock(d);
    d.cfg_rank_i(rank.sig);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_IN(d, sel, sel.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
  }
  static std::vector<UnitCase> cases(size_t n, uint64_t seed) { return reassemble_cases<N>(n, seed); }
  // The chunk order depends on arrival times, which differ between the pins and the
  // approximate model: both outputs must pass the same order-aware reference check.
  static std::string check(const UnitCase& c, const CaseOutputs& got) {
    std::string e = check_reassemble<N>(c, got[0]);
    if (!e.empty()) return e;
    std::vector<std::pair<std::string, std::string>> in;
    for (int i = 0; i < N; ++i) in.push_back({"in" + std::to_string(i), format_beats(c.inputs[size_t(i)])});
    in.push_back({"sel", format_beats(c.inputs[N])});
    EvalResult r = eval_op("Reassemble", {{"rank", std::to_string(c.cfg[0])}}, in, test_hw(), N);
    if (!r.sim.ok) return "approximate Reassemble failed: " + r.sim.error;
    e = check_reassemble<N>(c, to_beats(parse_tokens(r.text["out"])));
    return e.empty() ? "" : "approximate model: " + e;
  }
};
template <class Rtl>
using ReassembleBench = ReassembleBenchN<Rtl, kN>;
template <class Rtl>
using Reassemble8Bench = ReassembleBenchN<Rtl, 8>;

template <class Rtl>
struct EagerMergeBench : Bench<EagerMergeBench<Rtl>, Rtl> {
  CfgPin<stop_t> rank{*this};
  InGroup<kN, kW> in{*this, "in", encode_scalar<kW>};
  OutPort<1, kW> out{*this, "out", decode_scalar<kW>};
  OutPort<1, kN> sel{*this, "sel", decode_selector<kN>};
  units::RouterEagerMerge<kN, kW> hls{"hls"};
  template <class D>
  void bind(D& d, bool r) {
    this->bind_clock(d);
    d.cfg_rank_i(rank.sig);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
    STEPSIM_BIND_OUT(d, sel, sel.pins, r);
  }
  static std::vector<UnitCase> cases(size_t n, uint64_t seed) { return eager_merge_cases(n, seed); }
  static std::string check(const UnitCase& c, const CaseOutputs& got) {
    std::string e = check_eager_merge(c, got[0], got[1]);
    if (!e.empty()) return e;
    std::vector<std::pair<std::string, std::string>> in;
    for (int i = 0; i < kN; ++i) in.push_back({"", format_beats(c.inputs[size_t(i)])});
    EvalResult r = eval_op("EagerMerge", {{"rank", std::to_string(c.cfg[0])}}, in, test_hw());
    if (!r.sim.ok) return "approximate EagerMerge failed: " + r.sim.error;
    e = check_eager_merge(c, to_beats(parse_tokens(r.text["out"])), to_beats(parse_tokens(r.text["sel"])));
    return e.empty() ? "" : "approximate model: " + e;
  }
};

template <class Rtl, bool kScan = false>
struct PcuAccumBenchT : Bench<PcuAccumBenchT<Rtl, kScan>, Rtl> {
  CfgPin<bool> op{*this};
  CfgPin<stop_t> rank{*this};
  CfgPin<bool> scan{*this};
  InPort<kLW> in{*this, "in", encode_tile<kL>};
  OutPort<1, kLW> out{*this, "out", decode_tile<kL>};
  units::PcuAccum<kL> hls{"hls"};
  template <class D>
  void bind(D& d, bool r) {
    this->bind_clock(d);
    d.cfg_op_i(op.sig);
    d.cfg_rank_i(rank.sig);
    d.cfg_scan_i(scan.sig);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
  }
  static std::vector<UnitCase> cases(size_t n, uint64_t seed) { return pcu_accum_cases(n, seed, kScan); }
  static std::string check(const UnitCase& c, const CaseOutputs& got) { return check_pcu_accum(c, got[0]); }
};
template <class Rtl>
using PcuAccumBench = PcuAccumBenchT<Rtl>;
template <class Rtl>
using PcuScanBench = PcuAccumBenchT<Rtl, true>;

template <class Rtl>
struct PcuReduceBench : Bench<PcuReduceBench<Rtl>, Rtl> {
  CfgPin<bool> op{*this};
  InPort<kLW> in{*this, "in", encode_tile<kL>};
  OutPort<1, 16> out{*this, "out", decode_tile<1>};
  units::PcuReduce<kL> hls{"hls"};
  template <class D>
  void bind(D& d, bool r) {
    this->bind_clock(d);
    d.cfg_op_i(op.sig);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
  }
  static std::vector<UnitCase> cases(size_t n, uint64_t seed) { return pcu_reduce_cases(n, seed); }
  static std::string check(const UnitCase& c, const CaseOutputs& got) { return check_pcu_reduce(c, got[0]); }
};

}  // namespace stepsim::unit_test
