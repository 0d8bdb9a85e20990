// Benches of the compute units on 2-D tiles (PcuTileMap, PcuTileAccum): [T x T] bf16 tiles and
// dynamic [r x T] ones (T = kT = 4 by default, 16 for the T = 16 lock-step tests),
// random cases with every class of special value now and then, and the bit-exact comparison
// with the tile functions of hw/functions (harness.h, benches.h).
#pragma once

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "hw/units/pcu_tile_accum.h"
#include "hw/units/pcu_tile_map.h"
#include "testbench/units/benches.h"

namespace stepsim::unit_test {

constexpr int kT = 4;                        // tile side of the test configuration (RTL default)
constexpr int kTS = 2;                       // pipeline stages of PcuTileMap (RTL default NS)
constexpr int kTW = units::TileBits<kT>::W;  // payload width: lanes and the tile header

// ------------------------------------------------------------------ [r x T] bf16 tiles
// Lane (i, j) in bits [16(iT+j) +: 16], the row count r in the tile header (units::TileBits);
// values are bit-cast (NaN payloads travel unchanged).
inline Tile bf16_rows(int rows, int t, const std::vector<uint16_t>& v) {
  auto d = std::make_shared<TileData>();
  for (uint16_t b : v) d->f.push_back(f32_from_bf16_bits(b));
  Tile r = shape_tile(uint32_t(rows), uint32_t(t), DType::BF16);
  r.data = d;
  return r;
}
inline Tile bf16_square(int t, const std::vector<uint16_t>& v) { return bf16_rows(t, t, v); }
inline uint16_t bf16_lane(const Tile& t, size_t l) { return uint16_t(f32_bits(t.data->f.at(l)) >> 16); }

// The lanes of the tile's rows (the others 0) and its row count in the header.
template <int T>
bits_t<units::TileBits<T>::W> encode_square(const Element& e) {
  bits_t<units::TileBits<T>::W> v = 0;
  const Tile& t = e.tile();
  for (size_t l = 0; l < t.elems(); ++l) v.range(16 * int(l) + 15, 16 * int(l)) = bf16_lane(t, l);
  units::set_tile_rows<T>(v, units::tile_rows_t<T>(t.rows));
  return v;
}
// The header's rows (the lanes of the other rows are don't-care).
template <int T>
Element decode_square(const bits_t<units::TileBits<T>::W>& v) {
  const int rows = std::min(T, int(units::tile_rows<T>(v).to_uint()));
  std::vector<uint16_t> b;
  for (int l = 0; l < rows * T; ++l) b.push_back(uint16_t(v.range(16 * l + 15, 16 * l).to_uint()));
  return Element(bf16_rows(rows, T, b));
}

// Mostly finite values of moderate and mixed magnitude (so that the fp32 sums are exercised:
// rounding, cancellation, subnormal and overflowing products now and then), with every
// special class (random_bf16) in about one lane in `special`.
template <int T = kT>
Element random_square(std::mt19937_64& r, int special, int rows = T) {
  std::vector<uint16_t> v;
  for (int l = 0; l < rows * T; ++l) {
    const uint16_t u = uint16_t(r());
    if (special > 0 && int(r() % uint64_t(special)) == 0)
      v.push_back(random_bf16(r));
    else if (r() % 16 == 0)
      v.push_back(u & 0x8000u);  // a zero
    else
      v.push_back(uint16_t((u & 0x807Fu) | uint16_t((116 + r() % 24) << 7)));
  }
  if (r() % 4 == 0) v[size_t(r() % v.size())] = v[0] ^ 0x8000u;
  return Element(bf16_rows(rows, T, v));
}
template <int T = kT>
Element random_square_mixed(std::mt19937_64& r, int rows = T) {
  return random_square<T>(r, r() % 4 ? 200 : 12, rows);
}

template <int T = kT>
TensorTree resquare(const TensorTree& t, std::mt19937_64& r, int rows) {
  TensorTree o = t;
  if (t.leaf) o.elem = random_square_mixed<T>(r, rows);
  for (TensorTree& c : o.children) c = resquare<T>(c, r, rows);
  return o;
}

// A case's row count: mostly whole [T x T] tiles, one case in three a dynamic [r x T] tile.
template <int T = kT>
int random_rows(std::mt19937_64& r) {
  return r() % 3 == 0 ? rnd(r, 1, T) : T;
}

// Two streams of one structure (Map's zipped inputs; Accum matmul_acc's A and B tiles): A of
// `rows` rows, B of `rows` rows too (element-wise) or [T x T] (b_square: the matmul weights).
template <int T = kT>
std::vector<std::vector<Token>> square_pair(std::mt19937_64& r, int rank, int max_len = 0, int rows = T,
                                            bool b_square = true) {
  RandomStreamOptions o = stream_opts(r, rank);
  if (max_len > 0) o.max_len = rnd(r, 1, max_len);
  o.element = [rows](std::mt19937_64& g) { return random_square_mixed<T>(g, rows); };
  std::vector<TensorTree> a = random_tensors(r, o), b;
  for (const TensorTree& t : a) b.push_back(resquare<T>(t, r, b_square ? T : rows));
  return {tensors_to_tokens(a, rank), tensors_to_tokens(b, rank)};
}

// A shadow of one fp32 operation chain that notes an operation on two NaNs: which NaN a C++
// float operation returns then depends on the operand order the compiler emits, so
// hw/functions does not define it (docs/units.md) and any NaN is accepted for that lane.
struct NanShadow {
  bool two_nans = false;
  float mul(float x, float y) {
    two_nans = two_nans || (std::isnan(x) && std::isnan(y));
    return x * y;
  }
  float add(float x, float y) {
    two_nans = two_nans || (std::isnan(x) && std::isnan(y));
    return x + y;
  }
};

// Lane by lane; `loose[l]`: any NaN is accepted where the reference is NaN.
inline std::string compare_square(const Tile& want, const Tile& got, const std::vector<bool>& loose,
                                  const std::string& what) {
  if (got.rows != want.rows || got.cols != want.cols)
    return what + ": shape " + got.to_string() + ", want " + want.to_string();
  for (size_t l = 0; l < want.elems(); ++l) {
    const uint16_t w = bf16_lane(want, l), g = bf16_lane(got, l);
    if (w == g || (loose[l] && is_nan16(w) && is_nan16(g))) continue;
    std::ostringstream s;
    s << what << " lane " << l << std::hex << ": got " << g << " want " << w;
    return s.str();
  }
  return "";
}

// The products of one output of A x B (bt: B stored [N x K]) added to `s` in k order.
inline float shadow_dot(NanShadow& n, const Tile& a, const Tile& b, bool bt, uint32_t i, uint32_t j, float s,
                        bool first) {
  for (uint32_t k = 0; k < a.cols; ++k) {
    const float p = n.mul(a.f(i, k), bt ? b.f(j, k) : b.f(k, j));
    s = (first && k == 0) ? p : n.add(s, p);
  }
  return s;
}

// ------------------------------------------------------------------ PcuTileMap
inline const char* tile_map_fn(int op) {
  static const char* names[] = {"matmul", "matmul_t", "mul", "add", "silu", "exp", "sigmoid"};
  return names[op];
}

template <int T = kT>
std::vector<UnitCase> pcu_tile_map_cases(size_t n, uint64_t seed) {
  return make_cases(
      n, seed, [](std::mt19937_64& r) { return std::vector<int>{int(r() % 4)}; },
      [](std::mt19937_64& r, const std::vector<int>& c) {
        return square_pair<T>(r, rnd(r, 0, 2), 0, random_rows<T>(r), c[0] <= 1);  // matmul: B [T x T]
      });
}

// The unary functions (cfg {4, 5 or 6}): one input stream; values mostly where exp, sigmoid and
// silu are not saturated (|x| < 128), with every special class now and then.
template <int T = kT>
Element random_unary_square(std::mt19937_64& r, int rows) {
  std::vector<uint16_t> v;
  for (int l = 0; l < rows * T; ++l) {
    const uint16_t u = uint16_t(r());
    v.push_back(r() % 24 == 0 ? random_bf16(r) : uint16_t((u & 0x807Fu) | uint16_t((100 + r() % 34) << 7)));
  }
  return Element(bf16_rows(rows, T, v));
}
template <int T = kT>
std::vector<UnitCase> pcu_tile_unary_cases(size_t n, uint64_t seed) {
  return make_cases(
      n, seed, [](std::mt19937_64& r) { return std::vector<int>{4 + int(r() % 3)}; },
      [](std::mt19937_64& r, const std::vector<int>&) {
        RandomStreamOptions o = stream_opts(r, rnd(r, 0, 2));
        const int rows = random_rows<T>(r);
        o.element = [rows](std::mt19937_64& g) { return random_unary_square<T>(g, rows); };
        return std::vector<std::vector<Token>>{random_stream(r, o)};
      });
}

// Map fn on every element (pair) (hw/functions, bit for bit) with a's stop/done structure.
inline std::string check_pcu_tile_map(const UnitCase& c, const std::vector<Beat>& out) {
  const int op = c.cfg[0];
  const MapFunction& fn = map_function(tile_map_fn(op));
  const std::vector<Beat>& a = c.inputs[0];
  if (format_beats(out) != format_beats(a)) return "structure: got " + format_beats(out) + ", want " + format_beats(a);
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].has_elem) continue;
    const Tile& x = a[i].elem.tile();
    if (op >= 4) {  // unary: fully defined (a NaN input gives that NaN quieted)
      const std::string e = compare_square(fn.apply({x}), out[i].elem.tile(), std::vector<bool>(x.elems(), false),
                                           fn.name + " beat " + std::to_string(i));
      if (!e.empty()) return e;
      continue;
    }
    const Tile& y = c.inputs[1][i].elem.tile();
    std::vector<bool> loose(x.elems());
    for (uint32_t r = 0; r < x.rows; ++r)
      for (uint32_t q = 0; q < x.cols; ++q) {
        NanShadow s;
        if (op <= 1)
          shadow_dot(s, x, y, op == 1, r, q, 0.0f, true);
        else if (op == 2)
          s.mul(x.f(r, q), y.f(r, q));
        else
          s.add(x.f(r, q), y.f(r, q));
        loose[r * x.cols + q] = s.two_nans;
      }
    const std::string e =
        compare_square(fn.apply({x, y}), out[i].elem.tile(), loose, fn.name + " beat " + std::to_string(i));
    if (!e.empty()) return e;
  }
  return "";
}

// One unit, two benches: the binary functions (a and b driven) and the unary ones (b idle).
template <class Rtl, bool kUnary, int T = kT, int NS = kTS>
struct PcuTileMapBenchT : Bench<PcuTileMapBenchT<Rtl, kUnary, T, NS>, Rtl> {
  static constexpr int TW = units::TileBits<T>::W;
  CfgPin<bits_t<3>> op{*this};
  InPort<TW> a{*this, "a", encode_square<T>};
  std::unique_ptr<InPort<TW>> b;
  InPins<TW> idle_b;  // never valid
  OutPort<1, TW> out{*this, "out", decode_square<T>};
  units::PcuTileMap<T, NS> hls{"hls"};
  PcuTileMapBenchT() {
    if (!kUnary) b = std::make_unique<InPort<TW>>(*this, "b", encode_square<T>);
  }
  template <class D>
  void bind(D& d, bool r) {
    this->bind_clock(d);
    d.cfg_op_i(op.sig);
    STEPSIM_BIND_IN(d, a, a.pins, r);
    if (kUnary)
      STEPSIM_BIND_IN(d, b, idle_b, r);
    else
      STEPSIM_BIND_IN(d, b, b->pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
  }
  static std::vector<UnitCase> cases(size_t n, uint64_t seed) {
    return kUnary ? pcu_tile_unary_cases<T>(n, seed) : pcu_tile_map_cases<T>(n, seed);
  }
  static std::string check(const UnitCase& c, const CaseOutputs& got) { return check_pcu_tile_map(c, got[0]); }
};
template <class Rtl>
using PcuTileMapBench = PcuTileMapBenchT<Rtl, false>;
template <class Rtl>
using PcuTileUnaryBench = PcuTileMapBenchT<Rtl, true>;
// T = 16 (NS = 2): the SwiGLU validation's tiles.
template <class Rtl>
using PcuTileMap16Bench = PcuTileMapBenchT<Rtl, false, 16, 2>;
template <class Rtl>
using PcuTileUnary16Bench = PcuTileMapBenchT<Rtl, true, 16, 2>;

// ------------------------------------------------------------------ PcuTileAccum
inline const char* tile_accum_fn(int op) {
  static const char* names[] = {"add", "max", "matmul_acc", "matmul_t_acc"};
  return names[op];
}

// Accum fn (cfg {op, rank}) of hw/functions over the input stream(s), against the unit's output;
// Scan (cfg[3] = 1): every beat out as it came, an element carrying the finalized running state.
template <int T = kT>
std::string check_pcu_tile_accum(const UnitCase& c, const std::vector<Beat>& got) {
  const int op = c.cfg[0];
  const int rank = c.cfg[1];
  const bool scan = c.cfg.size() > 3 && c.cfg[3] != 0;
  const bool two = op >= 2;
  const AccumFunction& fn = accum_function(tile_accum_fn(op));
  const size_t n = size_t(T) * T;
  Tile acc = fn.init();
  std::vector<float> shadow(n, 0.0f);
  std::vector<bool> loose(n, false);
  std::vector<Beat> want;
  std::vector<std::vector<bool>> want_loose;
  const std::vector<Beat>& a = c.inputs[0];
  for (size_t k = 0; k < a.size(); ++k) {
    const Beat& x = a[k];
    if (x.has_elem) {
      const bool first = is_empty_acc(acc);
      const Tile& ta = x.elem.tile();
      for (uint32_t i = 0; i < ta.rows; ++i)
        for (uint32_t j = 0; j < uint32_t(T); ++j) {
          const size_t l = i * T + j;
          NanShadow s;
          if (two)
            shadow[l] = shadow_dot(s, ta, c.inputs[1][k].elem.tile(), op == 3, i, j, shadow[l], first);
          else if (op == 0)
            shadow[l] = first ? ta.f(i, j) : s.add(shadow[l], ta.f(i, j));
          loose[l] = loose[l] || s.two_nans;
        }
      std::vector<Tile> in{ta};
      if (two) in.push_back(c.inputs[1][k].elem.tile());
      acc = fn.update(std::move(acc), in);
    }
    if (scan) {
      Beat o = x;
      if (x.has_elem) o.elem = Element(fn.finalize(acc));
      want.push_back(o);
      want_loose.push_back(loose);
      if (x.stop >= rank) {
        acc = fn.init();
        loose.assign(n, false);
      }
    } else if (x.stop >= rank) {
      Tile t = fn.finalize(acc);
      if (is_empty_acc(t)) t = bf16_rows(0, T, {});  // a zero payload: a tile of 0 rows
      Beat o = Beat::data(Element(t), uint8_t(x.stop - rank));
      o.done = x.done;
      want.push_back(o);
      want_loose.push_back(loose);
      acc = fn.init();
      loose.assign(n, false);
    } else if (x.done) {
      want.push_back(Beat::done_beat());
      want_loose.push_back({});
    }
  }
  if (got.size() != want.size()) return "Accum: got " + format_beats(got) + ", want " + format_beats(want);
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i].has_elem != want[i].has_elem || got[i].stop != want[i].stop || got[i].done != want[i].done)
      return "Accum structure: got " + format_beats(got) + ", want " + format_beats(want);
    if (want[i].has_elem) {
      const std::string e = compare_square(want[i].elem.tile(), got[i].elem.tile(), want_loose[i],
                                           fn.name + " beat " + std::to_string(i));
      if (!e.empty()) return e;
    }
  }
  return "";
}

// Accum add / max (cfg {0 or 1, rank, 0, scan}): input a only; the unit's b pins stay idle.
template <int T = kT>
std::vector<UnitCase> pcu_tile_accum_cases(size_t n, uint64_t seed, bool scan = false) {
  return make_cases(
      n, seed,
      [scan](std::mt19937_64& r) {
        return std::vector<int>{int(r() % 2), rnd(r, 1, 2), 0, scan ? 1 : 0};
      },
      [](std::mt19937_64& r, const std::vector<int>& c) {
        const int a = rnd(r, c[1], 3);
        return std::vector<std::vector<Token>>{square_pair<T>(r, a, a == 1 ? 8 : 0, random_rows<T>(r))[0]};
      });
}

// Accum matmul_acc / matmul_t_acc (cfg {2 or 3, rank, 0, scan}): A and B streams of one structure.
template <int T = kT>
std::vector<UnitCase> pcu_tile_matmul_acc_cases(size_t n, uint64_t seed, bool scan = false) {
  return make_cases(
      n, seed,
      [scan](std::mt19937_64& r) {
        return std::vector<int>{2 + int(r() % 2), rnd(r, 1, 2), 0, scan ? 1 : 0};
      },
      [](std::mt19937_64& r, const std::vector<int>& c) {
        const int a = rnd(r, c[1], 3);
        return square_pair<T>(r, a, a == 1 ? 8 : 0, random_rows<T>(r));  // A [r x T], B [T x T]
      });
}

// ------------------------------------------------------------------ PcuTileAccum: the bank
// Accum rank 2 with an accumulator bank (cfg {op, 2, q}): outer groups of shape [C, B1..Bq, K]
// (docs/units.md). A group is its entries' K-runs, chunk by chunk: runs[c][e] = the K tiles
// (pairs for matmul_acc) of entry e in chunk c.
struct BankGroup {
  std::vector<int> dims;                               // B1..Bq
  std::vector<std::vector<std::vector<size_t>>> runs;  // [chunk][entry] -> indices into tiles
};

// How many of B1..Bq are at their last index after entry e (row-major, Bq innermost).
inline int bank_dims_ending(const std::vector<int>& dims, int e) {
  int n = 0;
  for (int d = int(dims.size()) - 1; d >= 0; --d) {
    if (e % dims[size_t(d)] != dims[size_t(d)] - 1) break;
    ++n;
    e /= dims[size_t(d)];
  }
  return n;
}

// The case's streams in bank order [O, C, B1..Bq, K] and, for the reference, the same tiles in
// the reordered order [O, B1..Bq, C, K]; `split_done`: the done as a bare beat of its own.
struct BankStreams {
  std::vector<std::vector<Beat>> bank, reordered;
};
inline BankStreams bank_streams(const std::vector<BankGroup>& groups, const std::vector<std::vector<Element>>& tiles,
                                int q, bool outer, bool split_done) {
  BankStreams r;
  r.bank.resize(tiles.size());
  r.reordered.resize(tiles.size());
  auto put = [&](std::vector<std::vector<Beat>>& out, size_t t, int stop) {
    for (size_t i = 0; i < tiles.size(); ++i) out[i].push_back(Beat::data(tiles[i][t], uint8_t(stop)));
  };
  for (size_t g = 0; g < groups.size(); ++g) {
    const BankGroup& G = groups[g];
    const int outer_end = outer && g + 1 == groups.size() ? 1 : 0;
    const size_t nc = G.runs.size(), ne = G.runs[0].size();
    for (size_t c = 0; c < nc; ++c)
      for (size_t e = 0; e < ne; ++e) {
        const std::vector<size_t>& k = G.runs[c][e];
        const int b = bank_dims_ending(G.dims, int(e));
        const int end = b < q ? 1 + b : c + 1 < nc ? q + 1 : q + 2 + outer_end;
        for (size_t i = 0; i < k.size(); ++i) put(r.bank, k[i], i + 1 == k.size() ? end : 0);
      }
    for (size_t e = 0; e < ne; ++e)
      for (size_t c = 0; c < nc; ++c) {
        const std::vector<size_t>& k = G.runs[c][e];
        const int end = c + 1 < nc ? 1 : 2 + bank_dims_ending(G.dims, int(e)) + (e + 1 == ne ? outer_end : 0);
        for (size_t i = 0; i < k.size(); ++i) put(r.reordered, k[i], i + 1 == k.size() ? end : 0);
      }
  }
  for (auto* v : {&r.bank, &r.reordered})
    for (std::vector<Beat>& s : *v) {
      if (split_done)
        s.push_back(Beat::done_beat());
      else
        s.back().done = true;
    }
  return r;
}

// Random bank cases: cfg {op, 2, q}, q in 1..2; 1..3 outer groups (an outer dimension or none),
// each with 1..4 chunks, B sizes so that M <= nb entries, K-runs of 1..4 tiles (each run its own
// length). UnitCase::inputs holds the bank-order streams, then the reordered ones (not fed).
template <int T = kT>
std::vector<UnitCase> pcu_tile_bank_cases(size_t n, uint64_t seed, bool two, int nb) {
  std::mt19937_64 rng(seed);
  std::vector<UnitCase> cases;
  std::vector<int> cfg;
  auto new_cfg = [&] { cfg = {two ? 2 + int(rng() % 2) : int(rng() % 2), 2, rnd(rng, 1, 2)}; };
  new_cfg();
  for (size_t i = 0; i < n; ++i) {
    if (rng() % 16 == 0) new_cfg();
    const int q = cfg[2];
    const bool outer = rng() % 2 == 0;
    const int ng = outer ? rnd(rng, 1, 3) : 1;
    const int mmax = std::min(nb, rng() % 8 == 0 ? nb : 6);
    std::vector<BankGroup> groups;
    std::vector<std::vector<Element>> tiles(two ? 2 : 1);
    for (int g = 0; g < ng; ++g) {
      BankGroup G;
      int m = 1;
      for (int d = 0; d < q; ++d) {
        const int hi = d + 1 == q ? mmax / m : mmax / m / 2;  // leave room for the inner dimension
        G.dims.push_back(rnd(rng, 1, std::max(1, hi)));
        m *= G.dims.back();
      }
      const int nc = rnd(rng, 1, 4);
      G.runs.assign(size_t(nc), std::vector<std::vector<size_t>>(size_t(m)));
      for (int c = 0; c < nc; ++c)
        for (int e = 0; e < m; ++e) {
          const int k = rnd(rng, 1, 4);
          for (int j = 0; j < k; ++j) {
            G.runs[size_t(c)][size_t(e)].push_back(tiles[0].size());
            for (auto& t : tiles) t.push_back(random_square_mixed<T>(rng));
          }
        }
      groups.push_back(std::move(G));
    }
    const BankStreams st = bank_streams(groups, tiles, q, outer, rng() % 3 == 0);
    UnitCase u;
    u.cfg = cfg;
    u.reset_before = rng() % 64 == 0;
    u.inputs = st.bank;
    for (const auto& v : st.reordered) u.inputs.push_back(v);
    cases.push_back(std::move(u));
  }
  return cases;
}

// Bank cases with faults (for the lock-step comparison of err_o; no reference): every other
// case has one beat before its last changed (both streams alike) to another stop level, or to a
// bare stop. Each case starts after a reset (err_o is sticky).
template <int T = kT>
std::vector<UnitCase> pcu_tile_bank_fault_cases(size_t n, uint64_t seed, bool two, int nb) {
  std::vector<UnitCase> cases = pcu_tile_bank_cases<T>(n, seed, two, nb);
  std::mt19937_64 rng(seed + 1);
  for (size_t i = 0; i < cases.size(); ++i) {
    UnitCase& c = cases[i];
    c.reset_before = true;
    c.inputs.resize(two ? 2 : 1);
    if (i % 2 || c.inputs[0].size() < 2) continue;
    const size_t k = size_t(rng() % (c.inputs[0].size() - 1));
    const bool bare = rng() % 4 == 0;
    const uint8_t stop = uint8_t(rnd(rng, bare ? 1 : 0, c.cfg[2] + 3));
    for (std::vector<Beat>& v : c.inputs) {
      v[k].stop = stop;
      if (bare) v[k].has_elem = false;
    }
  }
  return cases;
}

// The bank's result must equal a rank-2 Accum (hw/functions, check_pcu_tile_accum) over the
// reordered stream [O, B1..Bq, C, K], bit for bit.
template <int T = kT>
std::string check_pcu_tile_bank(const UnitCase& c, const std::vector<Beat>& got) {
  UnitCase r;
  r.cfg = {c.cfg[0], 2};
  const size_t k = c.inputs.size() / 2;
  for (size_t i = 0; i < k; ++i) r.inputs.push_back(c.inputs[k + i]);
  return check_pcu_tile_accum<T>(r, got);
}

// One unit, several benches: with b driven (matmul_acc) or idle (add, max), bank off or on,
// Accum or Scan.
template <class Rtl, bool kTwo, int T = kT, int NB = 16, bool kBank = false, bool kScan = false>
struct PcuTileAccumBenchT : Bench<PcuTileAccumBenchT<Rtl, kTwo, T, NB, kBank, kScan>, Rtl> {
  static constexpr int TW = units::TileBits<T>::W;
  CfgPin<bits_t<2>> op{*this};
  CfgPin<stop_t> rank{*this};
  CfgPin<stop_t> bank{*this};
  CfgPin<bool> scan{*this};
  InPort<TW> a{*this, "a", encode_square<T>};
  std::unique_ptr<InPort<TW>> b;
  InPins<TW> idle_b;  // never valid
  OutPort<1, TW> out{*this, "out", decode_square<T>};
  sc_core::sc_signal<bool> err_hls{"err_hls"}, err_rtl{"err_rtl"};
  units::PcuTileAccum<T, NB> hls{"hls"};
  // The last bench constructed (the error tests read its err_o after the run).
  static inline PcuTileAccumBenchT* last = nullptr;
  PcuTileAccumBenchT() {
    last = this;
    if (kTwo) b = std::make_unique<InPort<TW>>(*this, "b", encode_square<T>);
    this->rtl_checks.push_back(
        [this] { this->ctrl.checks.push_back([this] { return diff("err_o", err_hls, err_rtl); }); });
  }
  template <class D>
  void bind(D& d, bool r) {
    this->bind_clock(d);
    d.cfg_op_i(op.sig);
    d.cfg_rank_i(rank.sig);
    d.cfg_bank_i(bank.sig);
    d.cfg_scan_i(scan.sig);
    STEPSIM_BIND_IN(d, a, a.pins, r);
    if (kTwo)
      STEPSIM_BIND_IN(d, b, b->pins, r);
    else
      STEPSIM_BIND_IN(d, b, idle_b, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
    d.err_o(r ? err_rtl : err_hls);
  }
  static std::vector<UnitCase> cases(size_t n, uint64_t seed) {
    if (kBank) return pcu_tile_bank_cases<T>(n, seed, kTwo, NB);
    return kTwo ? pcu_tile_matmul_acc_cases<T>(n, seed, kScan) : pcu_tile_accum_cases<T>(n, seed, kScan);
  }
  static std::string check(const UnitCase& c, const CaseOutputs& got) {
    return kBank ? check_pcu_tile_bank<T>(c, got[0]) : check_pcu_tile_accum<T>(c, got[0]);
  }
};
template <class Rtl>
using PcuTileAccumBench = PcuTileAccumBenchT<Rtl, false>;
template <class Rtl>
using PcuTileMatmulAccBench = PcuTileAccumBenchT<Rtl, true>;
template <class Rtl>
using PcuTileAccum16Bench = PcuTileAccumBenchT<Rtl, false, 16, 64>;
template <class Rtl>
using PcuTileMatmulAcc16Bench = PcuTileAccumBenchT<Rtl, true, 16, 64>;
// The accumulator bank (q = 1..2): add/max (b idle) and matmul_acc/matmul_t_acc.
template <class Rtl>
using PcuTileBankBench = PcuTileAccumBenchT<Rtl, false, kT, 16, true>;
template <class Rtl>
using PcuTileBankMatmulBench = PcuTileAccumBenchT<Rtl, true, kT, 16, true>;
template <class Rtl>
using PcuTileBank16Bench = PcuTileAccumBenchT<Rtl, false, 16, 64, true>;
template <class Rtl>
using PcuTileBankMatmul16Bench = PcuTileAccumBenchT<Rtl, true, 16, 64, true>;
// Scan add/max and matmul_acc/matmul_t_acc (the bank off).
template <class Rtl>
using PcuTileScanBench = PcuTileAccumBenchT<Rtl, false, kT, 16, false, true>;
template <class Rtl>
using PcuTileScanMatmulBench = PcuTileAccumBenchT<Rtl, true, kT, 16, false, true>;
template <class Rtl>
using PcuTileScan16Bench = PcuTileAccumBenchT<Rtl, false, 16, 64, false, true>;

}  // namespace stepsim::unit_test
