// Bench and random cases of the memory unit (hw/units/pmu_buffer.h): the Bufferize -> Streamify
// pair fused on one PMU. Kept apart from benches.h (the shared bench file) so the unit adds
// one header. The reference is the approximate pair, Source -> Bufferize -> Streamify -> Sink,
// simulated as a graph (a buffer reference has no token text, so eval_op of one operator cannot
// hand the references over).
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "hw/units/pmu_buffer.h"
#include "sim/engine/simulation.h"
#include "sim/graph/graph.h"
#include "testbench/units/benches.h"

namespace stepsim::unit_test {

// Test configuration (= the RTL defaults): 4 banks x 16 words, 4 descriptors, 2 repeat factors,
// affine views of up to 4 dimensions with 16-bit out_shape/stride entries.
constexpr int kPmuBanks = 4, kPmuDepth = 16, kPmuNbuf = 4, kPmuR = 2, kPmuNA = 4, kPmuVW = 16;
constexpr int kPmuCap = kPmuBanks * kPmuDepth;
using PmuUnit = units::PmuBuffer<kW, kPmuBanks, kPmuDepth, kPmuNbuf, kPmuR, kRepeatCW, kPmuNA, kPmuVW>;

// cfg: {rank, ref mode, ref rank, nrep, repeat factors packed (factor k in bits [8k +: 8]),
// view rank, out_shape packed (low 32 bits, high 32 bits), stride packed (low, high)}.
struct PmuCfg {
  int rank = 1;
  bool ref = false;
  int ref_rank = 1;
  std::vector<int> repeat;         // static factors, outermost first
  std::vector<int> shape, stride;  // affine view (empty: linear), outermost first
  static uint64_t pack(const std::vector<int>& v) {
    uint64_t p = 0;
    for (size_t k = 0; k < v.size(); ++k) p |= uint64_t(uint16_t(v[k])) << (kPmuVW * k);
    return p;
  }
  std::vector<int> pins() const {
    int packed = 0;
    for (size_t k = 0; k < repeat.size(); ++k) packed |= repeat[k] << (kRepeatCW * int(k));
    const uint64_t sp = pack(shape), tp = pack(stride);
    return {rank,
            ref ? 1 : 0,
            ref_rank,
            int(repeat.size()),
            packed,
            int(shape.size()),
            int(uint32_t(sp)),
            int(uint32_t(sp >> 32)),
            int(uint32_t(tp)),
            int(uint32_t(tp >> 32))};
  }
  static PmuCfg of(const std::vector<int>& c) {
    PmuCfg p;
    p.rank = c[0];
    p.ref = c[1] != 0;
    p.ref_rank = c[2];
    for (int k = 0; k < c[3]; ++k) p.repeat.push_back((c[4] >> (kRepeatCW * k)) & 0xFF);
    const uint64_t sp = uint64_t(uint32_t(c[6])) | uint64_t(uint32_t(c[7])) << 32;
    const uint64_t tp = uint64_t(uint32_t(c[8])) | uint64_t(uint32_t(c[9])) << 32;
    for (int k = 0; k < c[5]; ++k) {
      p.shape.push_back(int((sp >> (kPmuVW * k)) & 0xFFFF));
      p.stride.push_back(int((tp >> (kPmuVW * k)) & 0xFFFF));
    }
    return p;
  }
  std::string text() const {
    auto list = [](const std::vector<int>& v) {
      std::string l = "[";
      for (size_t k = 0; k < v.size(); ++k) l += (k ? "," : "") + std::to_string(v[k]);
      return l + "]";
    };
    std::string s = "PMU (rank " + std::to_string(rank) +
                    (ref ? ", ref rank " + std::to_string(ref_rank) : ", repeat " + list(repeat));
    if (!shape.empty()) s += ", out_shape " + list(shape) + ", stride " + list(stride);
    return s + ")";
  }
};

// A 64-bit cfg pin fed by two cfg entries (low and high 32 bits: UnitCase::cfg holds ints).
struct PmuWideCfgPin {
  sc_core::sc_signal<bits_t<64>> sig;
  uint64_t lo = 0;
  explicit PmuWideCfgPin(UnitEnv& env) {
    env.cfgs.push_back([this](int v) { lo = uint32_t(v); });
    env.cfgs.push_back([this](int v) { sig.write(bits_t<64>(lo | uint64_t(uint32_t(v)) << 32)); });
  }
};

// The approximate Bufferize -> Streamify pair on `data` (and `ref`): the output stream as text,
// or "error: ..." when the approximate model fails.
inline std::string pmu_reference(const PmuCfg& c, const std::vector<Beat>& data, const std::vector<Beat>& ref) {
  Graph g;
  g.name = "pmu_ref";
  g.streams["data"] = data;
  g.nodes.push_back(node_spec("src", "Source", {{"stream", "data"}, {"interval", "0"}}));
  g.nodes.push_back(node_spec("buf", "Bufferize", {{"rank", std::to_string(c.rank)}}, {{"in", "src.out0"}}));
  std::map<std::string, std::string> sp;
  if (c.ref) {
    sp["rank"] = std::to_string(c.ref_rank);
  } else {
    std::string l = "[";
    for (size_t k = 0; k < c.repeat.size(); ++k) l += (k ? "," : "") + std::to_string(c.repeat[k]);
    sp["repeat"] = l + "]";
  }
  if (!c.shape.empty()) {
    std::string a = "[", b = "[";
    for (size_t k = 0; k < c.shape.size(); ++k) {
      a += (k ? "," : "") + std::to_string(c.shape[k]);
      b += (k ? "," : "") + std::to_string(c.stride[k]);
    }
    sp["out_shape"] = a + "]";
    sp["stride"] = b + "]";
  }
  NodeSpec s = node_spec("str", "Streamify", sp, {{"in", "buf"}});
  if (c.ref) {
    g.streams["ref"] = ref;
    g.nodes.push_back(node_spec("refsrc", "Source", {{"stream", "ref"}, {"interval", "0"}}));
    s.inputs["ref"] = "refsrc.out0";
  }
  g.nodes.push_back(s);
  g.nodes.push_back(node_spec("sink", "Sink", {}, {{"in", "str"}}));
  SimOptions opt;
  opt.hw = test_hw();
  opt.static_check = false;  // random streams, empty ones too: the operators' run-time checks decide
  SimResult r = simulate(g, opt);
  if (!r.ok) return "error: " + r.error;
  return format_beats(r.recorded["sink"]);
}

// The buffer references the approximate Bufferize<rank> emits for `data`: one stop level per
// reference (closing stop - rank), -1 for the final bare done. Used to build ref streams.
inline std::vector<int> bufferize_ref_stops(const std::vector<Beat>& data, int rank) {
  std::vector<int> r;
  for (const Beat& b : data) {
    if (b.stop >= rank) r.push_back(b.stop - rank);
    if (b.done && b.stop < rank) r.push_back(-1);
  }
  return r;
}

// Splits the done off the last beat (a separate bare done beat), if it rides on an element or stop.
inline void split_done(std::vector<Beat>& b) {
  if (b.empty() || !b.back().done || (!b.back().has_elem && !b.back().stop)) return;
  b.back().done = false;
  b.push_back(Beat::done_beat());
}

// A ref stream for the references of `data` (ref mode, Streamify rank c): per reference a random
// rank-c tensor (any dimension may be empty) whose closing S_c is raised by the reference's stop.
inline std::vector<Beat> pmu_ref_stream(std::mt19937_64& r, const std::vector<int>& refs, int c, bool split) {
  std::vector<Token> toks;
  for (int s : refs) {
    if (s < 0) break;
    RandomStreamOptions o = stream_opts(r, c - 1);
    o.max_len = rnd(r, 1, 3);
    TensorTree t;
    if (rnd(r, 0, 5) != 0) t.children = random_tensors(r, o);
    std::vector<Token> tt = tensors_to_tokens({t}, c);
    tt.pop_back();  // D
    tt.back().level = uint8_t(c + s);
    toks.insert(toks.end(), tt.begin(), tt.end());
  }
  toks.push_back(Token::d());
  std::vector<Beat> b = to_beats(toks);
  if (split) split_done(b);
  return b;
}

// Random cases: static repeat (0..2 factors of 0..3) or ref-driven replay; bufferize rank 1..3
// over streams of rank up to 4 with empty dimensions; now and then buffers of 10..40 beats, so
// the 64-word ring fills and the write side waits for the replays (double buffering at the limit).
inline std::vector<UnitCase> pmu_cases(size_t n, uint64_t seed) {
  return make_beat_cases(
      n, seed,
      [](std::mt19937_64& r) {
        PmuCfg c;
        c.rank = rnd(r, 1, 3);
        c.ref = r() % 3 == 0;
        c.ref_rank = rnd(r, 1, 2);
        if (!c.ref) {
          const int nrep = rnd(r, 0, kPmuR);
          for (int k = 0; k < nrep; ++k) c.repeat.push_back(r() % 8 == 0 ? 0 : rnd(r, 1, 3));
        }
        return c.pins();
      },
      [](std::mt19937_64& r, const std::vector<int>& pins) {
        const PmuCfg c = PmuCfg::of(pins);
        std::vector<Beat> data;
        if (r() % 5 == 0) {
          // Long buffers: rows of 10..40 elements at rank 1, or 2..3 rows of them at rank 2.
          std::vector<Token> t;
          const int bufs = rnd(r, 1, 4);
          int v = 0;
          for (int i = 0; i < bufs; ++i) {
            const int rows = c.rank == 1 ? 1 : rnd(r, 1, 3);
            for (int j = 0; j < rows; ++j) {
              const int len = rnd(r, 10, c.rank == 1 ? 40 : 20);
              for (int e = 0; e < len; ++e) t.push_back(Token::e(Element(Scalar{v++})));
              t.push_back(Token::s(uint8_t(j + 1 == rows ? c.rank : 1)));
            }
          }
          t.push_back(Token::d());
          data = to_beats(t);
        } else {
          data = to_beats(random_stream(r, stream_opts(r, rnd(r, c.rank, 4))));
        }
        const bool split = r() % 4 == 0;
        if (split) split_done(data);
        std::vector<Beat> ref{Beat::done_beat()};
        if (c.ref) ref = pmu_ref_stream(r, bufferize_ref_stops(data, c.rank), c.ref_rank, split || r() % 3 == 0);
        return std::vector<std::vector<Beat>>{data, ref};
      });
}

// ---- affine views (Streamify out_shape/stride)

// Appends the tokens of a rank-`level` tensor whose groups at level j have size(j) children
// (level 0: elements, values v, v+1, ...), closed by S_level (the highest stop only).
inline void pmu_tensor(std::vector<Token>& t, int level, const std::function<int(int)>& size, int& v) {
  const int n = size(level - 1);
  for (int i = 0; i < n; ++i) {
    if (level == 1)
      t.push_back(Token::e(Element(Scalar{v++})));
    else
      pmu_tensor(t, level - 1, size, v);
  }
  if (n > 0 && level > 1 && t.back().kind == Token::kStop) t.pop_back();  // S_{level-1} rides in S_level
  t.push_back(Token::s(uint8_t(level)));
}

// Splits some packed beats {elem, stop s} into {elem} and a bare {stop s}: the same tokens,
// packed loosely (as some units emit them); the memory unit folds them back in affine mode.
inline std::vector<Beat> loosen(std::mt19937_64& r, const std::vector<Beat>& in, int one_in) {
  std::vector<Beat> out;
  for (const Beat& b : in) {
    if (b.has_elem && b.stop && r() % uint64_t(one_in) == 0) {
      Beat e = b, s = Beat::bare_stop(b.stop);
      e.stop = 0;
      e.done = false;
      s.done = b.done;
      out.push_back(e);
      out.push_back(s);
    } else {
      out.push_back(b);
    }
  }
  return out;
}

// The highest element index of the view (elements needed per buffer - 1), 0 for an empty view.
inline int pmu_view_max(const PmuCfg& c) {
  int m = 0;
  for (size_t k = 0; k < c.shape.size(); ++k) {
    if (c.shape[k] == 0) return 0;
    m += (c.shape[k] - 1) * c.stride[k];
  }
  return m;
}

// Random affine cases: a view of rank 1..4 (sizes 1..4, now and then 0; strides chosen so the view
// stays inside buffers of `need` elements, transposes and broadcasts (stride 0) included) over
// Bufferize rank 1..4, with static repeat or a ref stream. The buffers are regular (replayed
// through the view), ragged now and then (replayed linearly, as the approximate Streamify does),
// and some beats are packed loosely (a bare stop after its element).
inline std::vector<UnitCase> pmu_affine_cases(size_t n, uint64_t seed) {
  return make_beat_cases(
      n, seed,
      [](std::mt19937_64& r) {
        PmuCfg c;
        c.rank = r() % 8 == 0 ? 4 : rnd(r, 1, 3);
        c.ref = r() % 4 == 0;
        c.ref_rank = rnd(r, 1, 2);
        if (!c.ref) {
          const int nrep = rnd(r, 0, kPmuR);
          for (int k = 0; k < nrep; ++k) c.repeat.push_back(r() % 10 == 0 ? 0 : rnd(r, 1, 3));
        }
        const int nv = rnd(r, 1, kPmuNA);
        int budget = rnd(r, 1, 24) - 1;  // the highest element index the view may reach
        for (int k = 0; k < nv; ++k) c.shape.push_back(r() % 24 == 0 ? 0 : rnd(r, 1, 4));
        c.stride.assign(size_t(nv), 0);
        for (int k : {3, 1, 0, 2})  // an order that is not outermost-first
          if (k < nv && c.shape[size_t(k)] > 1) {
            const int st = r() % 5 == 0 ? 0 : rnd(r, 0, budget / (c.shape[size_t(k)] - 1));
            c.stride[size_t(k)] = st;
            budget -= st * (c.shape[size_t(k)] - 1);
          }
        return c.pins();
      },
      [](std::mt19937_64& r, const std::vector<int>& pins) {
        const PmuCfg c = PmuCfg::of(pins);
        const int need = pmu_view_max(c) + 1;
        const bool vzero = std::find(c.shape.begin(), c.shape.end(), 0) != c.shape.end();
        const int outer = rnd(r, 0, 1);  // stream rank rank + outer
        const int bufs = rnd(r, 0, 3);
        std::vector<Token> t;
        int v = 0;
        for (int i = 0; i < bufs; ++i) {
          if (vzero && r() % 4 == 0) {
            t.push_back(Token::s(uint8_t(c.rank)));  // an empty buffer (fine: the view is empty)
          } else if (c.rank >= 2 && r() % 5 == 0) {
            // Ragged: rows of different lengths (maybe empty), replayed linearly; at most
            // 3 x 2 x 2 rows of 4 (48 words: the ring holds 64).
            int row = 0;
            const int first = rnd(r, 0, 3);
            pmu_tensor(
                t, c.rank,
                [&](int j) {
                  if (j > 0) return j == 1 ? rnd(r, 2, 3) : rnd(r, 1, 2);
                  const int len = row == 0 ? first : row == 1 ? (first + rnd(r, 1, 3)) % 5 : rnd(r, 0, 4);
                  ++row;
                  return len;
                },
                v);
          } else {
            // Regular, with at least `need` elements: inner sizes 1..3, the outermost raised.
            std::vector<int> dims(size_t(c.rank));
            int inner = 1;
            for (int j = 0; j + 1 < c.rank; ++j) inner *= dims[size_t(j)] = rnd(r, 1, 3);
            dims[size_t(c.rank - 1)] = std::max(1, (need + inner - 1) / inner) + (r() % 3 == 0 ? 1 : 0);
            pmu_tensor(
                t, c.rank, [&](int j) { return dims[size_t(j)]; }, v);
          }
          if (outer && (i + 1 == bufs || r() % 2 == 0)) t.back() = Token::s(uint8_t(c.rank + 1));
        }
        if (outer && bufs == 0 && r() % 2 == 0 && vzero) t.push_back(Token::s(uint8_t(c.rank + 1)));
        t.push_back(Token::d());
        std::vector<Beat> data = to_beats(t);
        if (r() % 3 == 0) data = loosen(r, data, rnd(r, 1, 3));
        const bool split = r() % 4 == 0;
        if (split) split_done(data);
        std::vector<Beat> ref{Beat::done_beat()};
        if (c.ref) ref = pmu_ref_stream(r, bufferize_ref_stops(data, c.rank), c.ref_rank, split || r() % 3 == 0);
        return std::vector<std::vector<Beat>>{data, ref};
      });
}

// Linear and affine cases, in alternating blocks of 32 (the lock-step test).
inline std::vector<UnitCase> pmu_all_cases(size_t n, uint64_t seed) {
  std::vector<UnitCase> a = pmu_cases(n - n / 2, seed), b = pmu_affine_cases(n / 2, seed + 1);
  std::vector<UnitCase> out;
  for (size_t i = 0; i < a.size() || i < b.size(); i += 32)
    for (std::vector<UnitCase>* v : {&a, &b})
      for (size_t j = i; j < i + 32 && j < v->size(); ++j) out.push_back(std::move((*v)[j]));
  return out;
}

template <class Rtl>
struct PmuBench : Bench<PmuBench<Rtl>, Rtl> {
  CfgPin<stop_t> rank{*this};
  CfgPin<bool> ref_mode{*this};
  CfgPin<stop_t> ref_rank{*this};
  CfgPin<stop_t> nrep{*this};
  CfgPin<bits_t<kPmuR * kRepeatCW>> repeat{*this};
  CfgPin<stop_t> view_rank{*this};
  PmuWideCfgPin shape{*this}, stride{*this};
  InPort<kW> in{*this, "in", encode_scalar<kW>};
  InPort<kW> ref{*this, "ref", encode_scalar<kW>};
  OutPort<1, kW> out{*this, "out", decode_scalar<kW>};
  sc_core::sc_signal<bool> err_hls{"err_hls"}, err_rtl{"err_rtl"};
  PmuUnit hls{"hls"};
  // The last bench constructed (the tests read its err_o after the run).
  static inline PmuBench* last = nullptr;
  PmuBench() {
    last = this;
    this->rtl_checks.push_back(
        [this] { this->ctrl.checks.push_back([this] { return diff("err_o", err_hls, err_rtl); }); });
  }
  template <class D>
  void bind(D& d, bool r) {
    this->bind_clock(d);
    d.cfg_rank_i(rank.sig);
    d.cfg_ref_i(ref_mode.sig);
    d.cfg_ref_rank_i(ref_rank.sig);
    d.cfg_nrep_i(nrep.sig);
    d.cfg_repeat_i(repeat.sig);
    d.cfg_view_rank_i(view_rank.sig);
    d.cfg_shape_i(shape.sig);
    d.cfg_stride_i(stride.sig);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_IN(d, ref, ref.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
    d.err_o(r ? err_rtl : err_hls);
  }
  static std::vector<UnitCase> cases(size_t n, uint64_t seed) { return pmu_cases(n, seed); }
  static std::string check(const UnitCase& c, const CaseOutputs& got) {
    const PmuCfg p = PmuCfg::of(c.cfg);
    const std::string want = pmu_reference(p, c.inputs[0], c.inputs[1]);
    const std::string g = format_beats(got[0]);
    if (g == want) return "";
    return p.text() + ": got " + g + ", want " + want + "; in=[" + format_beats(c.inputs[0]) + "] ref=[" +
           format_beats(c.inputs[1]) + "]";
  }
};

}  // namespace stepsim::unit_test
