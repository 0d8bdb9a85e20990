// Bench, testbench memory and random cases of the address generator (hw/units/ag_offchip.h):
// LinearOffChipLoad / LinearOffChipStore with a memory port, on [r x T] tiles (the tile
// header), with the static view or a ref stream (one pass per ref element), and
// RandomOffChipLoad / RandomOffChipStore (tile indices on ref). The reference is the tiled
// view of hw/ops/offchip_ops.cpp (TiledView: lin, stop_after, burst), LinearOffChipLoad::run's
// passes, stops and done and the Random operators' runs, written out here once more for the
// bytes.
//
// Every case gets its own region of the testbench memory (case i at i * ag_region(T): 64 KiB,
// 256 KiB at T = 16), so the memory needs no reset: a byte never written reads as
// mem_byte(addr), and a store's bytes are looked up in its region after the run. The memory
// takes a bundle of up to P requests (the unit's P request lanes) per handshake and answers it
// as one response bundle, in request order, once its slowest request is done (a random latency
// of 1..40 cycles per request, the range changes now and then); it stalls requests at random.
// It records every bundle, so the tests check the requests' order and bundling too.
#pragma once

#include <deque>
#include <map>
#include <unordered_map>

#include "hw/memory/hbm_model.h"
#include "hw/stream/random_stream.h"
#include "hw/units/ag_offchip.h"
#include "testbench/units/tile_benches.h"

namespace stepsim::unit_test {

constexpr int kAgMR = 4, kAgIW = 16, kAgAW = 32, kAgMaxo = 64;
constexpr uint64_t kAgRegion = 65536;
// A case's memory region (its tensor fits: ag_cases bounds the T = 16 geometries).
constexpr uint64_t ag_region(int t) { return t >= 16 ? 4 * kAgRegion : kAgRegion; }
template <int T, int P = 1>
using AgUnit = units::AgOffchip<T, kAgMR, kAgIW, kAgAW, kAgMaxo, P>;

// A tile of `rows` rows of t columns whose data holds `lanes` (t^2 for the store's input tiles:
// the lanes of rows >= `rows` are the don't-care lanes a store must not write).
inline Tile ag_tile(int rows, int t, const std::vector<uint16_t>& lanes) {
  auto d = std::make_shared<TileData>();
  for (uint16_t b : lanes) d->f.push_back(f32_from_bf16_bits(b));
  Tile r = shape_tile(uint32_t(rows), uint32_t(t), DType::BF16);
  r.data = d;
  return r;
}
// Payload of a tile: every lane its data holds (up to T^2), the header = its rows.
// (A random store's acknowledgement, the payload 1, decodes as the scalar 1.)
template <int T>
bits_t<units::TileBits<T>::W> encode_ag_tile(const Element& e) {
  constexpr int W = units::TileBits<T>::W;
  bits_t<W> v = 0;
  const Tile& t = e.tile();
  for (size_t l = 0; l < t.data->f.size() && l < size_t(T * T); ++l)
    v.range(16 * int(l) + 15, 16 * int(l)) = bf16_lane(t, l);
  units::set_slice<units::TileBits<T>::kRowsW, W>(v, 16 * T * T, bits_t<units::TileBits<T>::kRowsW>(t.rows));
  return v;
}
// A loaded tile: [r x T] with the lanes of its r rows when the header r is 1..T and every lane
// of the rows beyond is 0 (a load forms the tile: it drives them 0); otherwise the scalar
// 1000 + r (a bad header) or 2000 + r (a nonzero lane beyond the rows), which the checks
// report.
template <int T>
Element decode_ag_tile(const bits_t<units::TileBits<T>::W>& v) {
  constexpr int W = units::TileBits<T>::W;
  if (v == bits_t<W>(1)) return Element(Scalar{1});
  const int r = int(units::slice<units::TileBits<T>::kRowsW, W>(v, 16 * T * T));
  if (r < 1 || r > T) return Element(Scalar{1000 + r});
  std::vector<uint16_t> b;
  for (int l = 0; l < T * T; ++l) {
    const uint16_t x = uint16_t(v.range(16 * l + 15, 16 * l).to_uint());
    if (l < r * T)
      b.push_back(x);
    else if (x != 0)
      return Element(Scalar{2000 + r});
  }
  return Element(ag_tile(r, T, b));
}

// Contents of a memory byte never written.
inline uint8_t mem_byte(uint64_t a) {
  uint64_t x = a * 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  return uint8_t(x >> 40);
}

// One case: the view (as TiledView), the burst geometry, the layout constants, the tile rows,
// the ref mode and random access (the view's pins are then don't-cares).
struct AgCfg {
  bool write = false;
  std::vector<int> shape, stride;  // outermost first, in tiles
  int offset = 0, tiles_r = 1, tiles_c = 1;
  int base = 0, a = 0, b = 0, rows = 1, row_bytes = 1, pitch = 0;
  int tile_rows = 0;    // rows of a tile, 1..T; 0: T
  bool ref = false;     // a load with a ref stream (UnitCase::inputs[1])
  bool random = false;  // RandomOffChipLoad / Store: tile indices on UnitCase::inputs[1]

  int tr(int t) const { return tile_rows ? tile_rows : t; }
  int stored() const { return tiles_r * tiles_c; }

  int rank() const { return int(shape.size()); }
  int count() const {
    int c = 1;
    for (int n : shape) c *= n;
    return c;
  }
  int lin(int k) const {
    int l = offset;
    for (int d = rank() - 1; d >= 0; --d) {
      l += (k % shape[size_t(d)]) * stride[size_t(d)];
      k /= shape[size_t(d)];
    }
    return l;
  }
  int stop_after(int k) const {
    int e = 0;
    for (int d = rank() - 1; d >= 0; --d) {
      if (k % shape[size_t(d)] != shape[size_t(d)] - 1) break;
      ++e;
      k /= shape[size_t(d)];
    }
    return e;
  }
  uint64_t tile_addr(int l) const { return uint64_t(base) + uint64_t(l / tiles_c) * a + uint64_t(l % tiles_c) * b; }
  // Memory address of byte i of stored tile l (the burst's rows, packed).
  uint64_t byte_addr(int l, int i) const { return tile_addr(l) + uint64_t(i / row_bytes) * pitch + i % row_bytes; }

  // The cfg pins, one int per field: write, rank, shape[MR], stride_q[MR], stride_r[MR],
  // offset_q, offset_r, tiles_c, base, a, b, rows, row_bytes, pitch, tile_rows, ref, random,
  // tiles (the stored tiles).
  std::vector<int> pins(int t) const {
    std::vector<int> p{write ? 1 : 0, rank()};
    for (int d = 0; d < kAgMR; ++d) p.push_back(d < rank() ? shape[size_t(d)] : 1);
    for (int d = 0; d < kAgMR; ++d) p.push_back(d < rank() ? stride[size_t(d)] / tiles_c : 0);
    for (int d = 0; d < kAgMR; ++d) p.push_back(d < rank() ? stride[size_t(d)] % tiles_c : 0);
    for (int v : {offset / tiles_c, offset % tiles_c, tiles_c, base, a, b, rows, row_bytes, pitch, tr(t), ref ? 1 : 0,
                  random ? 1 : 0, stored()})
      p.push_back(v);
    return p;
  }
};

// Passes of the view a case makes: one (the static view), or one per ref element (random
// access: one tile per index).
inline int ag_passes(const AgCfg& c, const UnitCase& u) {
  if (!c.ref && !c.random) return 1;
  int n = 0;
  for (const Beat& b : u.inputs[1]) n += b.has_elem;
  return n;
}

// The cfg of each case, by case index (pins() loses tiles_r; the checks need the whole view).
inline std::vector<AgCfg>& ag_cfgs() {
  static std::vector<AgCfg> v;
  return v;
}

// A quasi-static cfg pin of MR packed IW-bit fields, one UnitCase::cfg entry per field.
template <int N, int IW>
struct CfgFields {
  sc_core::sc_signal<bits_t<N * IW>> sig;
  bits_t<N* IW> shadow = 0;
  explicit CfgFields(UnitEnv& env) {
    for (int d = 0; d < N; ++d)
      env.cfgs.push_back([this, d](int v) {
        units::set_slice<IW, N * IW>(shadow, IW * d, bits_t<IW>(uint64_t(v)));
        sig.write(shadow);
      });
  }
};

// The memory port's pins (P lanes): the unit's outputs twice (HLS, RTL), its inputs once.
template <int P>
struct MemPins {
  static constexpr int DW = 512;
  sc_core::sc_signal<bits_t<P>> req_valid_hls, req_valid_rtl;
  sc_core::sc_signal<bool> req_write_hls, req_write_rtl, req_ready;
  sc_core::sc_signal<bits_t<P * kAgAW>> req_addr_hls, req_addr_rtl;
  sc_core::sc_signal<bits_t<P * 7>> req_len_hls, req_len_rtl;
  sc_core::sc_signal<bits_t<P * DW>> req_wdata_hls, req_wdata_rtl, rsp_data;
  sc_core::sc_signal<bool> rsp_valid, rsp_ready_hls, rsp_ready_rtl;
};

// One request as the memory saw it.
struct AgReq {
  uint64_t addr;
  int len;
  bool operator==(const AgReq& o) const { return addr == o.addr && len == o.len; }
};

// The testbench memory: takes the HLS unit's requests (the RTL's must be identical), answers
// in order after a random latency, with random request stalls.
template <int P>
struct TbMemory : sc_core::sc_module {
  sc_core::sc_in<bool> clk{"clk"};
  MemPins<P>& p;
  std::vector<std::vector<AgReq>> bundles;  // every bundle taken, in order
  std::vector<uint64_t> bundle_at;          // the clock edge that took it
  std::unordered_map<uint64_t, uint8_t> written;
  std::mt19937_64 rng;
  uint64_t requests = 0, writes = 0;
  bool no_stall = false;  // full rate: ready always, latency fixed
  int fixed_latency = 1;
  struct Rsp {
    uint64_t at;
    bits_t<P * 512> data;
  };
  std::deque<Rsp> q;
  // Monitor: err_o at the edge where each case's done beat is taken on `out`.
  const sc_core::sc_signal<bool>*mon_err = nullptr, *mon_valid = nullptr, *mon_ready = nullptr, *mon_done = nullptr;
  std::vector<bool> err_at_done;

  SC_HAS_PROCESS(TbMemory);
  TbMemory(sc_core::sc_module_name n, MemPins<P>& pins, uint64_t seed) : sc_core::sc_module(n), p(pins), rng(seed) {
    SC_CTHREAD(run, clk.pos());
  }
  uint8_t read(uint64_t a) const {
    auto it = written.find(a);
    return it == written.end() ? mem_byte(a) : it->second;
  }
  void run() {
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const double ready_levels[] = {1.0, 1.0, 0.7, 0.3};
    const int lat_levels[] = {1, 3, 10, 40};
    double p_ready = 1.0;
    int max_lat = 1;
    uint64_t last_at = 0;
    p.req_ready.write(false);
    p.rsp_valid.write(false);
    for (uint64_t now = 1;; ++now) {
      wait();
      if (mon_err && mon_valid->read() && mon_ready->read() && mon_done->read()) err_at_done.push_back(mon_err->read());
      if (p.rsp_valid.read() && p.rsp_ready_hls.read()) q.pop_front();
      const bits_t<P> lanes = p.req_valid_hls.read();
      if (units::bit_of<P>(lanes, 0) && p.req_ready.read()) {
        Rsp r;
        r.data = 0;
        r.at = last_at;
        std::vector<AgReq> bundle;
        const bits_t<P* 512> w = p.req_wdata_hls.read();
        for (int k = 0; k < P && units::bit_of<P>(lanes, k); ++k) {
          const uint64_t addr = units::slice<kAgAW, P * kAgAW>(p.req_addr_hls.read(), kAgAW * k).to_uint64();
          const int len = int(units::slice<7, P * 7>(p.req_len_hls.read(), 7 * k).to_uint());
          if (p.req_write_hls.read()) {
            for (int i = 0; i < len; ++i)
              written[addr + uint64_t(i)] = uint8_t(w.range(512 * k + 8 * i + 7, 512 * k + 8 * i).to_uint());
            ++writes;
          } else {
            for (int i = 0; i < len; ++i) r.data.range(512 * k + 8 * i + 7, 512 * k + 8 * i) = read(addr + uint64_t(i));
          }
          ++requests;
          bundle.push_back({addr, len});
          const int lat = no_stall ? fixed_latency : 1 + int(rng() % uint64_t(max_lat));
          r.at = std::max(r.at, now + uint64_t(lat) - 1);
        }
        last_at = r.at;
        q.push_back(r);
        bundles.push_back(std::move(bundle));
        bundle_at.push_back(now);
      }
      if (!no_stall && now % 37 == 0) {
        p_ready = ready_levels[rng() % 4];
        max_lat = lat_levels[rng() % 4];
      }
      const bool rv = !q.empty() && q.front().at <= now && (no_stall || u(rng) < 0.9);
      p.rsp_valid.write(rv);
      p.rsp_data.write(rv ? q.front().data : bits_t<P * 512>(0));
      p.req_ready.write(no_stall || u(rng) < p_ready);
    }
  }
};

template <int T, class Rtl, int P = 1>
struct AgBench : Bench<AgBench<T, Rtl, P>, Rtl> {
  static constexpr int W = units::TileBits<T>::W;
  static constexpr int RW = units::TileBits<T>::kRowsW;
  static constexpr int GW = units::clog2(2 * T * T + 1);
  CfgPin<bool> write{*this};
  CfgPin<stop_t> rank{*this};
  CfgFields<kAgMR, kAgIW> shape{*this}, stride_q{*this}, stride_r{*this};
  CfgPin<bits_t<kAgIW>> offset_q{*this}, offset_r{*this}, tiles_c{*this};
  CfgPin<bits_t<kAgAW>> base{*this}, a{*this}, b{*this};
  CfgPin<bits_t<GW>> rows{*this}, row_bytes{*this};
  CfgPin<bits_t<kAgAW>> pitch{*this};
  CfgPin<bits_t<RW>> tile_rows{*this};
  CfgPin<bool> ref_mode{*this};
  CfgPin<bool> random_mode{*this};
  CfgPin<bits_t<kAgIW>> tiles{*this};
  InPort<W> in{*this, "in", encode_ag_tile<T>};
  InPort<kAgIW> ref{*this, "ref", encode_scalar<kAgIW>};
  OutPort<1, W> out{*this, "out", decode_ag_tile<T>};
  MemPins<P> mem;
  TbMemory<P> memory{"memory", mem, 99};
  sc_core::sc_signal<bool> err_hls{"err_hls"}, err_rtl{"err_rtl"};
  AgUnit<T, P> hls{"hls"};
  static inline AgBench* last = nullptr;
  AgBench() {
    last = this;
    memory.clk(this->clk);
    memory.mon_err = &err_hls;
    memory.mon_valid = &out.pins.valid_hls;
    memory.mon_ready = &out.pins.ready;
    memory.mon_done = &out.pins.done_hls;
    this->setup.push_back([this](const std::vector<UnitCase>&, uint64_t seed) { memory.rng.seed(seed + 77); });
    this->rtl_checks.push_back([this] {
      auto& c = this->ctrl;
      c.checks.push_back([this] { return diff("err_o", err_hls, err_rtl); });
      c.checks.push_back([this] {
        std::string e = diff("req_valid_o", mem.req_valid_hls, mem.req_valid_rtl);
        if (e.empty()) e = diff("req_addr_o", mem.req_addr_hls, mem.req_addr_rtl);
        if (e.empty()) e = diff("req_write_o", mem.req_write_hls, mem.req_write_rtl);
        if (e.empty()) e = diff("req_len_o", mem.req_len_hls, mem.req_len_rtl);
        if (e.empty()) e = diff("req_wdata_o", mem.req_wdata_hls, mem.req_wdata_rtl);
        if (e.empty()) e = diff("rsp_ready_o", mem.rsp_ready_hls, mem.rsp_ready_rtl);
        return e;
      });
    });
  }
  template <class D>
  void bind(D& d, bool r) {
    this->bind_clock(d);
    d.cfg_write_i(write.sig);
    d.cfg_rank_i(rank.sig);
    d.cfg_shape_i(shape.sig);
    d.cfg_stride_q_i(stride_q.sig);
    d.cfg_stride_r_i(stride_r.sig);
    d.cfg_offset_q_i(offset_q.sig);
    d.cfg_offset_r_i(offset_r.sig);
    d.cfg_tiles_c_i(tiles_c.sig);
    d.cfg_base_i(base.sig);
    d.cfg_a_i(a.sig);
    d.cfg_b_i(b.sig);
    d.cfg_rows_i(rows.sig);
    d.cfg_row_bytes_i(row_bytes.sig);
    d.cfg_pitch_i(pitch.sig);
    d.cfg_tile_rows_i(tile_rows.sig);
    d.cfg_ref_i(ref_mode.sig);
    d.cfg_random_i(random_mode.sig);
    d.cfg_tiles_i(tiles.sig);
    STEPSIM_BIND_IN(d, in, in.pins, r);
    STEPSIM_BIND_IN(d, ref, ref.pins, r);
    STEPSIM_BIND_OUT(d, out, out.pins, r);
    d.req_valid_o(r ? mem.req_valid_rtl : mem.req_valid_hls);
    d.req_ready_i(mem.req_ready);
    d.req_addr_o(r ? mem.req_addr_rtl : mem.req_addr_hls);
    d.req_write_o(r ? mem.req_write_rtl : mem.req_write_hls);
    d.req_len_o(r ? mem.req_len_rtl : mem.req_len_hls);
    d.req_wdata_o(r ? mem.req_wdata_rtl : mem.req_wdata_hls);
    d.rsp_valid_i(mem.rsp_valid);
    d.rsp_ready_o(r ? mem.rsp_ready_rtl : mem.rsp_ready_hls);
    d.rsp_data_i(mem.rsp_data);
    d.err_o(r ? err_rtl : err_hls);
  }
};

// A random tile of bf16 bit patterns (any class).
inline Element random_bits_square(std::mt19937_64& r, int t) {
  std::vector<uint16_t> v;
  for (int i = 0; i < t * t; ++i) v.push_back(uint16_t(r()));
  return Element(bf16_square(t, v));
}

// What ag_cases draws beyond the original cases (both off: exactly the original cases).
struct AgGen {
  bool rows = false;    // tile rows 1..T: a third [T x T], a third row tiles [1 x T], a third any;
                        // one store tile in 16 with a wrong header (err_o)
  bool ref = false;     // half the loads with a ref stream; a third of those continue the previous
                        // ref case's stream of streams without reset (the unit loops)
  bool random = false;  // a quarter of the cases random access (loads and stores; a load's index
                        // streams continue without reset as ref streams do)
};

// A random ref stream (payload ignored): rank 0..2 (scalars, with empty dimensions: bare
// stops), 0..3 entries per dimension, an empty stream now and then; the done on the last beat
// or, one time in three, as a separate bare done. With `stored`, a stream of tile indices
// 0..stored-1, and (with bad_ok) one case in 16 has an index `stored` (outside the tensor:
// err_o). A stream that follows another without reset has no bad index: the unit flags an
// index as it reaches the head of its input, which may be before the stream ahead ends.
inline std::vector<Beat> random_ref(std::mt19937_64& r, int stored = 0, bool bad_ok = true) {
  RandomStreamOptions o;
  o.rank = rnd(r, 0, 2);
  o.max_len = 3;
  o.empty_prob = 0.25;
  if (stored) o.element = [stored](std::mt19937_64& g) { return Element(Scalar{int64_t(g() % uint64_t(stored))}); };
  std::vector<Beat> b = to_beats(random_stream(r, o));
  if (r() % 3 == 0 && (b.back().has_elem || b.back().stop)) {
    b.back().done = false;
    b.push_back(Beat::done_beat());
  }
  if (stored && r() % 16 == 0 && bad_ok) {
    std::vector<size_t> elems;
    for (size_t k = 0; k < b.size(); ++k)
      if (b[k].has_elem) elems.push_back(k);
    if (!elems.empty()) b[elems[r() % elems.size()]].elem = Element(Scalar{stored});
  }
  return b;
}
inline int ref_elems(const std::vector<Beat>& s) {
  int n = 0;
  for (const Beat& b : s) n += b.has_elem;
  return n;
}

// Random views within the unit's limits: a stored tensor of 1..6 x 1..6 tiles; rank 1..4 with
// dimensions of 1..3 tiles, strides 0..3 (0 re-reads a tile) that stay inside the tensor, any
// offset that fits; the burst geometry of a row-major layout, a blocked layout (tiles
// contiguous) or a random one (rows x row_bytes = the tile bytes, pitch >= row_bytes, gaps
// between tiles); loads and stores. A store's input has 0..count tiles (one in 12 cases
// count + 1: err_o) with random stops, its done on the last tile or as a bare done.
// At T = 16 the random geometries keep rows of >= 16 bytes (at most 32 rows), so a case stays
// inside its region. AgGen adds tiles of fewer rows and ref streams.
inline std::vector<UnitCase> ag_cases(size_t n, uint64_t seed, int t, size_t first_region = 0, AgGen gen = {}) {
  std::mt19937_64 r(seed);
  std::vector<UnitCase> cases;
  std::vector<AgCfg>& cfgs = ag_cfgs();
  cfgs.clear();
  const int rw = units::clog2(t + 1);
  size_t region = first_region;
  for (size_t i = 0; i < n; ++i) {
    if ((gen.ref || gen.random) && !cfgs.empty() && (cfgs.back().ref || (cfgs.back().random && !cfgs.back().write)) &&
        r() % 3 == 0) {
      // The same unit configuration, no reset: the next ref (or index) stream.
      UnitCase u;
      u.cfg = cases.back().cfg;
      u.reset_before = false;
      u.inputs = {{Beat::done_beat()}, random_ref(r, cfgs.back().random ? cfgs.back().stored() : 0, false)};
      cases.push_back(std::move(u));
      cfgs.push_back(cfgs.back());
      continue;
    }
    AgCfg c;
    c.random = gen.random && r() % 4 == 0;
    c.write = r() % 2;
    c.tiles_r = rnd(r, 1, 6);
    c.tiles_c = rnd(r, 1, 6);
    const int stored = c.tiles_r * c.tiles_c;
    for (;;) {
      const int rank = rnd(r, 1, kAgMR);
      c.shape.clear();
      c.stride.clear();
      int reach = 0;
      for (int d = 0; d < rank; ++d) {
        c.shape.push_back(rnd(r, 1, 3));
        c.stride.push_back(r() % 4 == 0 ? 0 : rnd(r, 0, 3));
        reach += (c.shape.back() - 1) * c.stride.back();
      }
      if (r() % 5 == 0) {  // row-major over the whole tensor, as the default view
        c.shape = {c.tiles_r, c.tiles_c};
        c.stride = {c.tiles_c, 1};
        reach = stored - 1;
      }
      if (reach < stored) {
        c.offset = rnd(r, 0, stored - 1 - reach);
        break;
      }
    }
    const int tr = gen.rows ? std::vector<int>{t, 1, rnd(r, 1, t)}[r() % 3] : t;
    c.tile_rows = tr;
    const int tb = 2 * t * tr;  // the tile's bytes
    const int layout = rnd(r, 0, 2);
    if (layout == 0) {  // row-major tensor of [tiles_r * tr, tiles_c * t] bf16
      c.rows = tr;
      c.row_bytes = 2 * t;
      c.pitch = c.tiles_c * 2 * t;
      c.a = tr * c.pitch;
      c.b = 2 * t;
    } else if (layout == 1) {  // blocked: every tile contiguous
      c.rows = 1;
      c.row_bytes = tb;
      c.pitch = tb;
      c.b = tb;
      c.a = c.tiles_c * tb;
    } else {
      std::vector<int> divs;
      for (int k = 1; k <= tb; ++k)
        if (tb % k == 0 && (t < 16 || k <= 32)) divs.push_back(k);
      c.rows = divs[r() % divs.size()];
      c.row_bytes = tb / c.rows;
      c.pitch = c.row_bytes + rnd(r, 0, 40);
      c.b = c.rows * c.pitch + rnd(r, 0, 16);
      c.a = c.tiles_c * c.b + rnd(r, 0, 64);
    }
    c.base = int(region++ * ag_region(t)) + rnd(r, 0, 200);
    std::vector<Beat> in, ref{Beat::done_beat()};
    if (c.random) ref = random_ref(r, stored);
    if (c.write) {
      // The tiles: 0..count for the view (one case in 12 count + 1: err_o); one per index
      // (one case in 12 one more or one fewer: err_o).
      int k = 0;
      if (c.random) {
        k = ref_elems(ref);
        if (r() % 12 == 0) k = std::max(0, k + (r() % 2 ? 1 : -1));
      } else {
        k = rnd(r, 0, c.count());
        if (r() % 12 == 0) k = c.count() + 1;
      }
      for (int j = 0; j < k; ++j) {
        if (r() % 8 == 0) in.push_back(Beat::bare_stop(uint8_t(rnd(r, 1, 2))));
        // (The stop before the tile: the order in which GCC evaluated the two arguments of
        // Beat::data when they were drawn in the call, so the original cases stay the same.)
        const uint8_t stop = uint8_t(r() % 3 == 0 ? rnd(r, 1, 2) : 0);
        Element e = random_bits_square(r, t);
        if (gen.rows) {  // [tr x t] with t^2 lanes (the don't-care ones too); now and then a wrong header
          int hdr = tr;
          if (r() % 16 == 0)
            while (hdr == tr) hdr = rnd(r, 0, (1 << rw) - 1);
          Tile x = e.tile();
          x.rows = uint32_t(hdr);
          e = Element(std::move(x));
        }
        in.push_back(Beat::data(std::move(e), stop));
      }
      if (!in.empty() && r() % 2) {
        in.back().done = true;
      } else {
        in.push_back(Beat::done_beat());
      }
    } else {
      in.push_back(Beat::done_beat());
      if (gen.ref && !c.random && r() % 2) {
        c.ref = true;
        ref = random_ref(r);
      }
    }
    UnitCase u;
    u.cfg = c.pins(t);
    u.reset_before = true;
    u.inputs = {in, ref};
    cases.push_back(std::move(u));
    cfgs.push_back(c);
  }
  return cases;
}

// The tile the reference reads at stored tile l: bytes mem(byte_addr(l, i)), its r rows.
template <int T, int P>
inline std::vector<uint16_t> ref_tile(const AgCfg& c, int l, const TbMemory<P>& m) {
  std::vector<uint16_t> v;
  for (int e = 0; e < c.tr(T) * T; ++e)
    v.push_back(uint16_t(m.read(c.byte_addr(l, 2 * e)) | (m.read(c.byte_addr(l, 2 * e + 1)) << 8)));
  return v;
}

// One beat a load emits: a tile (stored tile l) or a bare beat, with its stop and done.
struct AgWant {
  bool elem = false;
  int l = 0;
  int stop = 0;
  bool done = false;
};
// LinearOffChipLoad::run (hw/ops/offchip_ops.cpp): the static view is one pass with done on
// its last tile. With a ref stream, one pass per ref element: its last tile carries stop
// rank + s when the element carries stop s > 0 (otherwise stop_after, = rank) and the
// element's done; a ref beat without element becomes a bare stop rank + s (s > 0) or a bare
// done, with its done.
inline std::vector<AgWant> ag_expected_out(const AgCfg& c, const std::vector<Beat>& ref) {
  std::vector<AgWant> w;
  const auto pass = [&](int s, bool done) {
    for (int k = 0; k < c.count(); ++k) {
      const bool last = k + 1 == c.count();
      int stop = c.stop_after(k);
      if (last && s) stop = c.rank() + s;
      w.push_back({true, c.lin(k), stop, last && done});
    }
  };
  if (c.random) {  // RandomOffChipLoad::run: a tile per index, the stream's stops and done as they are
    for (const Beat& b : ref) {
      if (b.has_elem)
        w.push_back({true, int(b.elem.scalar()), b.stop, b.done});
      else if (b.stop || b.done)
        w.push_back({false, 0, b.stop, b.done});
    }
    return w;
  }
  if (!c.ref) {
    pass(0, true);
    return w;
  }
  for (const Beat& b : ref) {
    if (b.has_elem)
      pass(b.stop, b.done);
    else if (b.stop || b.done)
      w.push_back({false, 0, b.stop ? c.rank() + b.stop : 0, b.done});
  }
  return w;
}

// Load: the beats of ag_expected_out, every tile's header and lanes (its r rows; the rows
// beyond must be 0, decode_ag_tile); err_o when an index is outside the tensor. Linear store:
// a bare done. Random store: RandomOffChipStore::run's acknowledgements (the element 1 per
// index with its stop and done; an index without a tile passes bare). A store's memory: every
// byte of the region as the reference's writes leave it (the r rows of each tile); err_o when
// a tile is too many (or, random, too few), has a header other than r, or an index is outside
// the tensor (or err_o was set before, `err_before`: it is sticky until a reset).
template <int T, int P>
inline std::string check_ag(const AgCfg& c, const UnitCase& u, const std::vector<Beat>& got, const TbMemory<P>& m,
                            bool err, bool err_before = false) {
  const int tr = c.tr(T);
  bool want_err = err_before;  // sticky from the case before (no reset between them)
  if (c.random)
    for (const Beat& b : u.inputs[1]) want_err = want_err || (b.has_elem && b.elem.scalar() >= c.stored());
  const auto same_beats = [&](const std::vector<AgWant>& want, const char* what) -> std::string {
    if (got.size() != want.size())
      return std::string(what) + ": " + std::to_string(got.size()) + " beats, want " + std::to_string(want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      const Beat& b = got[k];
      const AgWant& w = want[k];
      if (b.has_elem != w.elem || b.stop != w.stop || b.done != w.done)
        return std::string(what) + ": beat " + std::to_string(k) + " is " + format_beats({b}) + ", want " +
               (w.elem ? "an element" : "no element") + " with stop " + std::to_string(w.stop) +
               (w.done ? " and done" : "");
    }
    return "";
  };
  if (!c.write) {
    if (err != want_err)
      return std::string("load: err_o ") + (err ? "set" : "clear") + ", want " + (want_err ? "set" : "clear");
    const std::vector<AgWant> want = ag_expected_out(c, u.inputs[1]);
    if (std::string e = same_beats(want, "load"); !e.empty()) return e;
    for (size_t k = 0; k < want.size(); ++k) {
      const Beat& b = got[k];
      const AgWant& w = want[k];
      if (!w.elem) continue;
      if (!b.elem.is_tile())
        return "load: beat " + std::to_string(k) + " has a bad payload (" + std::to_string(b.elem.scalar()) +
               ": 1000 + header out of range, 2000 + header with a nonzero lane beyond the rows)";
      if (b.elem.tile().rows != uint32_t(tr))
        return "load: beat " + std::to_string(k) + " has header " + std::to_string(b.elem.tile().rows) + ", want " +
               std::to_string(tr);
      const std::vector<uint16_t> v = ref_tile<T, P>(c, w.l, m);
      for (int e = 0; e < tr * T; ++e)
        if (bf16_lane(b.elem.tile(), size_t(e)) != v[size_t(e)])
          return "load: beat " + std::to_string(k) + " (stored tile " + std::to_string(w.l) + ") lane " +
                 std::to_string(e) + " differs";
    }
    return "";
  }
  std::map<uint64_t, uint8_t> want;
  const auto write = [&](int l, const Beat& b) {
    if (b.elem.tile().rows != uint32_t(tr)) want_err = true;  // a wrong header: its r rows are still written
    for (int e = 0; e < tr * T; ++e) {
      const uint16_t v = bf16_lane(b.elem.tile(), size_t(e));
      want[c.byte_addr(l, 2 * e)] = uint8_t(v);
      want[c.byte_addr(l, 2 * e + 1)] = uint8_t(v >> 8);
    }
  };
  std::vector<const Beat*> tiles;
  for (const Beat& b : u.inputs[0])
    if (b.has_elem) tiles.push_back(&b);
  if (c.random) {
    std::vector<AgWant> acks;
    size_t j = 0;
    for (const Beat& b : u.inputs[1]) {
      if (b.has_elem && j < tiles.size()) {
        write(int(b.elem.scalar()), *tiles[j++]);
        acks.push_back({true, 0, b.stop, b.done});
      } else if (b.has_elem || b.stop || b.done) {
        want_err = want_err || b.has_elem;  // no tile for the index
        if (b.stop || b.done) acks.push_back({false, 0, b.stop, b.done});
      }
    }
    if (j < tiles.size()) want_err = true;  // tiles after the last index
    if (std::string e = same_beats(acks, "store"); !e.empty()) return e;
    for (const Beat& b : got)
      if (b.has_elem && !(b.elem.is_scalar() && b.elem.scalar() == 1))
        return "store: an acknowledgement is " + format_beats({b}) + ", not the element 1";
  } else {
    if (got.size() != 1 || got[0].has_elem || !got[0].done || got[0].stop)
      return "store: output " + format_beats(got) + ", want D";
    int k = 0;
    for (const Beat* b : tiles) {
      if (k >= c.count()) {
        want_err = true;  // a tile too many
        continue;
      }
      write(c.lin(k++), *b);
    }
  }
  if (want_err != err)
    return std::string("store: err_o ") + (err ? "set" : "clear") + ", want " + (want_err ? "set" : "clear");
  // Every written byte of the region must be one the reference writes, with its value.
  const uint64_t reg = ag_region(T), lo = uint64_t(c.base) / reg * reg;
  for (const auto& [a, v] : m.written)
    if (a >= lo && a < lo + reg && !want.count(a)) return "store: stray write at " + std::to_string(a);
  for (const auto& [a, v] : want) {
    auto it = m.written.find(a);
    if (it == m.written.end() || it->second != v) return "store: byte " + std::to_string(a) + " wrong";
  }
  return "";
}

// The request bundles of a case as the approximate operator issues them: the stored tiles in
// view order, once per pass, or one per index (a store: as many as it wrote), each tile's requests those of
// Burst::request_addr (row-major, ceil(row_bytes / 64) per row), request j of a tile in bundle
// j / P, a bundle never crossing a tile.
inline std::vector<std::vector<AgReq>> ag_expected_bundles(const AgCfg& c, const UnitCase& u, int p) {
  std::vector<int> ls;                                            // the stored tiles in request order
  const int data = c.write ? ref_elems(u.inputs[0]) : INT32_MAX;  // a store writes as many tiles as it gets
  if (c.random) {
    for (const Beat& b : u.inputs[1])
      if (b.has_elem && int(ls.size()) < data) ls.push_back(int(b.elem.scalar()));
  } else {
    const int tiles = std::min(c.count() * ag_passes(c, u), data);
    for (int j = 0; j < tiles; ++j) ls.push_back(c.lin(j % c.count()));
  }
  std::vector<std::vector<AgReq>> out;
  for (const int li : ls) {
    const uint64_t l = uint64_t(li);
    Burst b;
    b.base = c.tile_addr(int(l));
    b.rows = uint32_t(c.rows);
    b.row_bytes = uint64_t(c.row_bytes);
    b.row_pitch = uint64_t(c.pitch);
    std::vector<AgReq> reqs;
    for (uint64_t r = 0; r < b.rows; ++r)
      for (uint64_t q = 0; q < b.requests_per_row(64); ++q)
        reqs.push_back({b.request_addr(r, q, 64), int(std::min<uint64_t>(64, b.row_bytes - 64 * q))});
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (i % size_t(p) == 0) out.emplace_back();
      out.back().push_back(reqs[i]);
    }
  }
  return out;
}

}  // namespace stepsim::unit_test
