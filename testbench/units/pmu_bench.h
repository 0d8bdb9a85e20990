// Bench and random cases of the memory unit (hw/units/pmu_buffer.h): the Bufferize -> Streamify
// pair fused on one PMU. Kept apart from benches.h (the shared bench file) so the unit adds
// one header. The reference is the approximate pair, Source -> Bufferize -> Streamify -> Sink,
// simulated as a graph (a buffer reference has no token text, so eval_op of one operator cannot
// hand the references over).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hw/units/pmu_buffer.h"
#include "sim/graph.h"
#include "sim/simulation.h"
#include "testbench/units/benches.h"

namespace stepsim::unit_test {

// Test configuration (= the RTL defaults): 4 banks x 16 words, 4 descriptors, 2 repeat factors.
constexpr int kPmuBanks = 4, kPmuDepth = 16, kPmuNbuf = 4, kPmuR = 2;
constexpr int kPmuCap = kPmuBanks * kPmuDepth;
using PmuUnit = units::PmuBuffer<kW, kPmuBanks, kPmuDepth, kPmuNbuf, kPmuR, kRepeatCW>;

// cfg: {rank, ref mode, ref rank, nrep, repeat factors packed (factor k in bits [8k +: 8])}.
struct PmuCfg {
  int rank = 1;
  bool ref = false;
  int ref_rank = 1;
  std::vector<int> repeat;  // static factors, outermost first
  std::vector<int> pins() const {
    int packed = 0;
    for (size_t k = 0; k < repeat.size(); ++k) packed |= repeat[k] << (kRepeatCW * int(k));
    return {rank, ref ? 1 : 0, ref_rank, int(repeat.size()), packed};
  }
  static PmuCfg of(const std::vector<int>& c) {
    PmuCfg p;
    p.rank = c[0];
    p.ref = c[1] != 0;
    p.ref_rank = c[2];
    for (int k = 0; k < c[3]; ++k) p.repeat.push_back((c[4] >> (kRepeatCW * k)) & 0xFF);
    return p;
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

template <class Rtl>
struct PmuBench : Bench<PmuBench<Rtl>, Rtl> {
  CfgPin<stop_t> rank{*this};
  CfgPin<bool> ref_mode{*this};
  CfgPin<stop_t> ref_rank{*this};
  CfgPin<stop_t> nrep{*this};
  CfgPin<bits_t<kPmuR * kRepeatCW>> repeat{*this};
  InPort<kW> in{*this, "in", encode_scalar<kW>};
  InPort<kW> ref{*this, "ref", encode_scalar<kW>};
  OutPort<1, kW> out{*this, "out", decode_scalar<kW>};
  sc_core::sc_signal<bool> err_hls{"err_hls"}, err_rtl{"err_rtl"};
  PmuUnit hls{"hls"};
  // The last bench constructed (the tests read its err_o after the run).
  static inline PmuBench* last = nullptr;
  PmuBench() {
    last = this;
    this->rtl_checks.push_back([this] {
      this->ctrl.checks.push_back([this] { return diff("err_o", err_hls, err_rtl); });
    });
  }
  template <class D>
  void bind(D& d, bool r) {
    this->bind_clock(d);
    d.cfg_rank_i(rank.sig);
    d.cfg_ref_i(ref_mode.sig);
    d.cfg_ref_rank_i(ref_rank.sig);
    d.cfg_nrep_i(nrep.sig);
    d.cfg_repeat_i(repeat.sig);
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
    std::string s = "PMU (rank " + std::to_string(p.rank) + (p.ref ? ", ref rank " + std::to_string(p.ref_rank) : ", repeat [");
    if (!p.ref)
      for (size_t k = 0; k < p.repeat.size(); ++k) s += (k ? "," : "") + std::to_string(p.repeat[k]);
    s += p.ref ? ")" : "])";
    return s + ": got " + g + ", want " + want + "; in=[" + format_beats(c.inputs[0]) + "] ref=[" +
           format_beats(c.inputs[1]) + "]";
  }
};

}  // namespace stepsim::unit_test
