// Address generator (AG) with a memory port: LinearOffChipLoad (cfg_write_i = 0) and
// LinearOffChipStore (cfg_write_i = 1) of hw/ops/offchip_ops.cpp on [r x T] bf16 tiles,
// r = cfg_tile_rows_i (1..T), with the static view or, for a load, one pass of the view per
// element of a ref stream; with cfg_random_i, RandomOffChipLoad / RandomOffChipStore (one
// tile per tile index on `ref`) (docs/units.md, "The address generator").
//
// The tiled view (TiledView in offchip_ops.cpp): tile k of the pass (k counts row-major over
// out_shape, rank 1..MR, outermost dimension first) is stored tile
//   l(k) = offset + sum_d idx_d(k) * stride_d        (in tiles)
// and lives at byte address
//   base + (l / tiles_c) * A + (l % tiles_c) * B
// as a burst of `rows` rows of `row_bytes` bytes, `pitch` bytes apart (Burst in
// hw/memory/hbm_model.h). A and B carry the layout: row-major tensors have A = tile_rows *
// tensor row bytes, B = tile_cols * element bytes; a blocked layout has other constants.
// The configuration gives offset and every stride as a (quotient, remainder) pair by tiles_c
// (stride = q * tiles_c + r, r < tiles_c): the division is done once when the fabric is
// configured (the bridge does it), and the unit walks the view with adders only: each
// level d keeps the position (l / tiles_c, l % tiles_c) of dimensions 0..d, and a step adds
// (q, r) with one carry (r + r' >= tiles_c). The tile's address then takes two multipliers.
//
// Requests: those of Burst::request_addr, row-major: per row ceil(row_bytes / 64) requests of
// 64 bytes at row start + 64 c; request c of a row uses min(64, row_bytes - 64 c) bytes
// (req_len_o). One bundle of up to P requests per cycle; at most MAXO requests outstanding.
// The tile is the packed little-endian bytes of its elements in row-major order (lane (i, j)
// in bits [16(iT+j) +: 16], as the tile compute units), and the bursts carry these bytes in
// order: rows * row_bytes must be 2 T r (the tile's bytes, r = cfg_tile_rows_i).
// The tile payload (docs/unit-protocol.md, "square tile") is W = 16 T^2 + RW bits: the T^2
// lanes, then the tile header (the row count) in bits [16 T^2 +: RW], RW = clog2(T + 1).
//
// Memory port: req (valid/ready; addr, write, len, 64-byte wdata with byte i in bits
// [8i +: 8]; bytes at and above len are zero) and rsp (valid/ready; 64-byte rdata, byte i =
// memory byte addr + i, used below len). The memory answers every request, writes included
// (a write's response is its acknowledgement, its data is ignored), in request order.
//
// Load, static view (cfg_ref_i = 0): after reset, the unit issues the view's requests and
// emits every tile on `out` when its last response is consumed, with the stop level of
// TiledView::stop_after (the number of view dimensions that end with it) and done on the last
// tile; header = r, lanes of rows >= r zero. One pass per reset. `in` and `ref` are unused;
// their beats are dropped.
// Load with a ref stream (cfg_ref_i = 1): one pass of the view per ref element (its payload is
// ignored), as LinearOffChipLoad::run: the pass's requests go out while the element is at the
// head of the ref buffer, and the element is consumed with the pass's last request bundle. The
// last tile of a pass carries stop rank + s when the element carries stop s > 0 (else rank),
// and the element's done. A ref beat without element becomes a bare beat with stop rank + s
// (0 when s = 0) and its done. The ref beats travel to the response side in the pass queue
// (PQ entries of elem, stop, done, PQ = MAXO rounded up to a power of two: every queued pass
// has a request in flight, so only bare beats can fill it), so the tiles, bare stops and done
// leave in ref order. The unit loops over ref streams without reset.
// Store: the unit writes each tile of `in` (their stops are ignored, as the approximate store
// does) to the next tile of the view; it takes the beat with its last request. The approximate
// LinearOffChipStore has no output: the unit signals the end of the store with one bare done
// beat on `out`, once the input's done has arrived and every write is acknowledged (the
// approximate store ends at its last acknowledgement too). A tile beyond the view's last tile
// sets the sticky err_o (the approximate store fails the run) and is dropped. A tile whose
// header differs from cfg_tile_rows_i sets err_o too (the approximate store fails on the
// shape); its first r rows are written. A store ignores cfg_ref_i (it drops `ref`).
// Random access (cfg_random_i = 1; the view's cfg is ignored): `ref` carries tile indices l
// (payload [IW-1:0]), each a pass of one tile at stored tile l: the position (l / tiles_c,
// l % tiles_c) comes from a restoring divider (IW subtract steps, combinational) when the
// tile's first request bundle goes out. The output keeps the index stream's stops and done
// (nothing is raised), bare index beats pass as bare beats, through the pass queue as above.
// An index >= cfg_tiles_i (the stored tiles) sets err_o (the approximate operator fails; the
// unit reads the tile the address formula gives). RandomOffChipLoad: the tiles on `out`.
// RandomOffChipStore: the element at l is written with the next tile of `in` (bare beats of
// `in` are skipped), and the write's acknowledgement leaves on `out` as the element 1 (bit 0
// of the payload) with the index's stop and done, once the tile's last write is answered. A
// beat with done leaves only after `in` has ended too (the approximate store checks wdata for
// tiles left over). An index whose tile never comes (`in` ended) passes as a bare beat and a
// tile after the indices' done is dropped; both set err_o, as does a wrong header. One index
// stream per reset for a store; a load loops over index streams.
//
// Registered outputs everywhere: the request register, the input buffers of in, ref and rsp
// (two-entry skid buffers, ready registered), the output register.
// RTL twin: rtl/ag_offchip.sv.
#pragma once

#include "hw/units/protocol.h"

namespace stepsim::units {

template <int T = 4, int MR = 4, int IW = 16, int AW = 32, int MAXO = 64, int P = 1>
struct AgOffchip : sc_core::sc_module {
  static constexpr int TW = TileBits<T>::kLanes;  // the tile's lanes
  static constexpr int RW = TileBits<T>::kRowsW;  // the tile header: rows 0..T
  static constexpr int W = TileBits<T>::W;        // tile payload: lanes, header in [TW +: RW]
  static constexpr int TB = 2 * T * T;            // bytes of a [T x T] tile
  static constexpr int GW = clog2(TB + 1);        // rows, row bytes, byte offsets 0..TB
  static constexpr int DW = 512;                  // request data: 64 bytes
  static constexpr int LW = 7;                    // request length 1..64
  static constexpr int OW = clog2(MAXO + 1);
  static constexpr int QW = clog2(MAXO) < 1 ? 1 : clog2(MAXO);  // pass queue pointer
  static constexpr int PQ = 1 << QW;                            // pass queue entries (>= MAXO)
  static_assert(MR >= 1 && MR <= 15, "view rank 1..MR");
  static_assert(GW <= 32 && IW <= 32 && AW <= 48, "widths");
  static_assert(P >= 1 && P <= 8 && P <= MAXO, "request lanes 1..8, at most MAXO");

  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  // Quasi-static configuration (change only in reset).
  sc_core::sc_in<bool> cfg_write_i{"cfg_write_i"};             // 0 load, 1 store
  sc_core::sc_in<stop_t> cfg_rank_i{"cfg_rank_i"};             // view rank 1..MR
  sc_core::sc_in<bits_t<MR * IW>> cfg_shape_i{"cfg_shape_i"};  // out_shape d (outermost first) in [IW*d +: IW], >= 1
  sc_core::sc_in<bits_t<MR * IW>> cfg_stride_q_i{"cfg_stride_q_i"};  // stride d / tiles_c
  sc_core::sc_in<bits_t<MR * IW>> cfg_stride_r_i{"cfg_stride_r_i"};  // stride d % tiles_c
  sc_core::sc_in<bits_t<IW>> cfg_offset_q_i{"cfg_offset_q_i"};       // offset / tiles_c
  sc_core::sc_in<bits_t<IW>> cfg_offset_r_i{"cfg_offset_r_i"};       // offset % tiles_c
  sc_core::sc_in<bits_t<IW>> cfg_tiles_c_i{"cfg_tiles_c_i"};         // tiles per stored row of tiles, >= 1
  sc_core::sc_in<bits_t<AW>> cfg_base_i{"cfg_base_i"};               // bytes
  sc_core::sc_in<bits_t<AW>> cfg_a_i{"cfg_a_i"};                     // bytes per l / tiles_c
  sc_core::sc_in<bits_t<AW>> cfg_b_i{"cfg_b_i"};                     // bytes per l % tiles_c
  sc_core::sc_in<bits_t<GW>> cfg_rows_i{"cfg_rows_i"};               // burst rows, >= 1
  sc_core::sc_in<bits_t<GW>> cfg_row_bytes_i{"cfg_row_bytes_i"};     // bytes per row, rows * row_bytes = 2 T r
  sc_core::sc_in<bits_t<AW>> cfg_pitch_i{"cfg_pitch_i"};             // bytes between row starts
  sc_core::sc_in<bits_t<RW>> cfg_tile_rows_i{"cfg_tile_rows_i"};     // tile rows r, 1..T
  sc_core::sc_in<bool> cfg_ref_i{"cfg_ref_i"};                       // load: 1 = one pass per ref element
  sc_core::sc_in<bool> cfg_random_i{"cfg_random_i"};                 // 1 = random access: tile indices on ref
  sc_core::sc_in<bits_t<IW>> cfg_tiles_i{"cfg_tiles_i"};  // random access: stored tiles (larger indices: err_o)
  STEPSIM_STREAM_IN(in, W);                               // store: the tiles
  STEPSIM_STREAM_IN(ref, IW);     // cfg_ref_i: the ref stream (payload ignored); cfg_random_i: tile indices
  STEPSIM_STREAM_OUT(out, 1, W);  // load: the tiles; store: one bare done at the end
  // Memory port: P request lanes, lane k in [AW*k +: AW] etc.; one bundle per handshake.
  sc_core::sc_out<bits_t<P>> req_valid_o{"req_valid_o"};  // lanes 0..n-1 of the bundle
  sc_core::sc_in<bool> req_ready_i{"req_ready_i"};        // takes the whole bundle
  sc_core::sc_out<bits_t<P * AW>> req_addr_o{"req_addr_o"};
  sc_core::sc_out<bool> req_write_o{"req_write_o"};
  sc_core::sc_out<bits_t<P * LW>> req_len_o{"req_len_o"};
  sc_core::sc_out<bits_t<P * DW>> req_wdata_o{"req_wdata_o"};
  sc_core::sc_in<bool> rsp_valid_i{"rsp_valid_i"};  // the response bundle of the oldest request bundle
  sc_core::sc_out<bool> rsp_ready_o{"rsp_ready_o"};
  sc_core::sc_in<bits_t<P * DW>> rsp_data_i{"rsp_data_i"};  // lane k answers request lane k
  sc_core::sc_out<bool> err_o{"err_o"};  // sticky: a store got more tiles than its view or a wrong header; a bad index

  SC_HAS_PROCESS(AgOffchip);
  explicit AgOffchip(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    SC_CTHREAD(run, clk_i.pos());
    async_reset_signal_is(rst_ni, false);
  }

  // Bytes used by request c of a row: min(64, row_bytes - 64 c).
  static bits_t<LW> used_bytes(const bits_t<GW>& row_bytes, const bits_t<GW>& chunk) {
    const int left = int(row_bytes.to_uint()) - 64 * int(chunk.to_uint());
    return left >= 64 ? bits_t<LW>(64) : bits_t<LW>(left);
  }
  static bool last_chunk_of(const bits_t<GW>& row_bytes, const bits_t<GW>& chunk) {
    return (int(chunk.to_uint()) + 1) * 64 >= int(row_bytes.to_uint());
  }
  // The low `len` bytes of a 64-byte lane (the rest zero).
  static bits_t<DW> low_bytes(const bits_t<DW>& v, const bits_t<LW>& len) {
    bits_t<DW> m = all_ones<DW>();
    m = m >> (DW - 8 * int(len.to_uint()));
    return bits_and<DW>(v, m);
  }

  // l / d and l % d by restoring division, one subtract step per bit (d = 0 gives all ones and l).
  static void divide(const bits_t<IW>& l, const bits_t<IW>& d, bits_t<IW>& q, bits_t<IW>& rem) {
    bits_t<IW + 1> acc = 0;
    q = 0;
    for (int i = IW - 1; i >= 0; --i) {
      acc = (acc << 1) | bits_t<IW + 1>(bit_of<IW>(l, i) ? 1 : 0);
      if (acc >= bits_t<IW + 1>(d)) {
        acc = acc - bits_t<IW + 1>(d);
        set_bit<IW>(q, i, true);
      }
    }
    rem = bits_t<IW>(acc);
  }

  void run() {
    // Request side: the position of the tile being requested (store: the next tile). The
    // arrays reset to 0 (bits_t default).
    bits_t<IW> g_idx[MR], g_q[MR], g_r[MR];
    bits_t<GW> g_row = 0, g_chunk = 0, g_ofs = 0;
    bits_t<AW> g_rowaddr = 0;
    bool g_active = true;  // tiles of the view left
    bool g_init = true;    // the positions start at the offset: after reset, after a ref pass
    // Response side: the tile being assembled (stores walk it too, to count acknowledgements).
    bits_t<IW> a_idx[MR];
    bits_t<GW> a_row = 0, a_chunk = 0, a_ofs = 0;
    bits_t<TW> a_acc = 0;
    bits_t<OW> ocnt = 0;  // requests issued and not answered
    bool st_in_done = false, st_sent = false, err = false;
    bool rf_done = false;  // random store: the indices' done is in the pass queue
    // The request register: one bundle.
    bits_t<P> rq_valid = 0;
    bool rq_write = false;
    bits_t<P* AW> rq_addr = 0;
    bits_t<P* LW> rq_len = 0;
    bits_t<P* DW> rq_wdata = 0;
    // The pass queue (ref mode): one entry per ref beat consumed, in order (entries are read
    // only while valid).
    bool pq_elem[PQ] = {}, pq_done[PQ] = {};
    stop_t pq_stop[PQ] = {};
    bits_t<QW> pq_wp = 0, pq_rp = 0;
    bits_t<QW + 1> pq_n = 0;
    InBuf<W> ib;
    InBuf<IW> fb;  // ref
    InBuf<P * DW> rb;
    OutReg<1, W> oq;
    ib.reset();
    fb.reset();
    rb.reset();
    oq.reset();
    in_ready_o.write(false);
    ref_ready_o.write(false);
    rsp_ready_o.write(false);
    req_valid_o.write(0);
    req_addr_o.write(0);
    req_write_o.write(false);
    req_len_o.write(0);
    req_wdata_o.write(0);
    err_o.write(false);
    STEPSIM_WRITE_OUT(out, oq);
    while (true) {
      wait();
      UBeat<W> inb;
      STEPSIM_READ_IN(in, inb);
      ib.sample(in_valid_i.read(), inb);
      UBeat<IW> fib;
      STEPSIM_READ_IN(ref, fib);
      fb.sample(ref_valid_i.read(), fib);
      UBeat<P * DW> rsb;
      rsb.data = rsp_data_i.read();
      rsb.elem = true;
      rb.sample(rsp_valid_i.read(), rsb);
      const bool oready = out_ready_i.read();
      const bool ofree = oq.can_load(oready);
      const bool rq_busy = bit_of<P>(rq_valid, 0);
      const bool rq_free = !rq_busy || req_ready_i.read();
      const bool wr = cfg_write_i.read();
      const bool randm = cfg_random_i.read();
      const bool refm =
          randm || (cfg_ref_i.read() && !wr);  // passes through the pass queue (a linear store ignores cfg_ref_i)
      const bool rstore = randm && wr;
      const bits_t<RW> trows = cfg_tile_rows_i.read();
      const int rank = randm ? 1 : int(cfg_rank_i.read());  // random access: a view of one tile
      const bits_t<MR* IW> shape = cfg_shape_i.read();
      const bits_t<MR* IW> sq = cfg_stride_q_i.read();
      const bits_t<MR* IW> sr = cfg_stride_r_i.read();
      const bits_t<IW> tiles_c = cfg_tiles_c_i.read();
      const bits_t<GW> rows = cfg_rows_i.read();
      const bits_t<GW> row_bytes = cfg_row_bytes_i.read();
      const bits_t<AW> pitch = cfg_pitch_i.read();
      bits_t<IW> n[MR];
      for (int d = 0; d < MR; ++d) n[d] = randm ? bits_t<IW>(1) : slice<IW, MR * IW>(shape, IW * d);
      const UBeat<IW> fh = fb.head();
      bits_t<IW> lq = 0, lr = 0;  // random access: the index's position
      if (randm) divide(fh.data, tiles_c, lq, lr);
      bits_t<IW> cq[MR], cr[MR];  // the positions (at a pass's start: the offset, or the index's)
      for (int d = 0; d < MR; ++d) {
        cq[d] = !g_init ? g_q[d] : randm ? lq : cfg_offset_q_i.read();
        cr[d] = !g_init ? g_r[d] : randm ? lr : cfg_offset_r_i.read();
      }

      // ---- request side: the next bundle, up to P requests of the current tile.
      const bits_t<AW> tile_base = cfg_base_i.read() + cq[MR - 1] * cfg_a_i.read() + cr[MR - 1] * cfg_b_i.read();
      const bool first_req = g_row == 0 && g_chunk == 0;
      const UBeat<W> h = ib.head();
      bits_t<GW> w_row = g_row, w_chunk = g_chunk, w_ofs = g_ofs;
      bits_t<AW> w_start = first_req ? tile_base : g_rowaddr;
      bits_t<P> lanes = 0;
      bits_t<P* AW> b_addr = 0;
      bits_t<P* LW> b_len = 0;
      bits_t<P* DW> b_wdata = 0;
      bool last_req = false;  // the bundle ends the tile
      bits_t<OW + 1> nb = 0;  // requests in the bundle
      for (int k = 0; k < P; ++k) {
        if (!last_req) {
          const bits_t<LW> len = used_bytes(row_bytes, w_chunk);
          set_bit<P>(lanes, k, true);
          set_slice<AW, P * AW>(b_addr, AW * k, bits_t<AW>(w_start + (bits_t<AW>(w_chunk) << 6)));
          set_slice<LW, P * LW>(b_len, LW * k, len);
          if (wr) {
            // The tile's bytes from the byte offset on (one barrel shift), bytes at and above
            // the length zero.
            bits_t<W + DW> ws = h.data;
            ws = ws >> (8 * int(w_ofs.to_uint()));
            const bits_t<DW> lane = ws.range(DW - 1, 0);
            b_wdata.range(DW * k + DW - 1, DW * k) = low_bytes(lane, len);
          }
          const bool lc = last_chunk_of(row_bytes, w_chunk);
          last_req = lc && w_row == rows - 1;
          w_ofs = w_ofs + bits_t<GW>(len);
          if (lc) {
            w_chunk = 0;
            w_row = w_row + 1;
            w_start = w_start + pitch;
          } else {
            w_chunk = w_chunk + 1;
          }
          nb = nb + 1;
        }
      }
      // The next position: the innermost dimension that does not wrap steps by its stride.
      bool carry = true;
      int step_d = -1;
      for (int d = MR - 1; d >= 0; --d) {
        if (d < rank && carry) {
          if (g_idx[d] == n[d] - 1) {
            // wraps
          } else {
            step_d = d;
            carry = false;
          }
        }
      }
      const bool pass_end = last_req && step_d < 0;  // the bundle ends the view's last tile
      const bool hv = ib.head_valid();
      const bool fv = fb.head_valid();
      const bool pq_room = pq_n != bits_t<QW + 1>(PQ);
      const bool room = rq_free && bits_t<OW + 1>(ocnt) + nb <= bits_t<OW + 1>(MAXO);
      bool issue = false, consume_in = false, consume_ref = false;
      bool ref_drop = false;  // random store: the index passes as a bare beat (no tile for it)
      if (randm && fv && fh.elem && fh.data >= cfg_tiles_i.read()) err = true;  // outside the tensor
      if (!wr) {
        consume_in = hv;  // load: `in` is unused
        if (!refm) {
          issue = g_active && room;
          consume_ref = fv;  // static view: `ref` is unused
        } else if (fv && fh.elem) {
          // A pass while its ref element is at the head; the element (and its queue entry)
          // goes with the pass's last bundle.
          issue = room && (!pass_end || pq_room);
          consume_ref = issue && pass_end;
        } else if (fv) {
          consume_ref = pq_room;  // a bare stop or done: straight into the pass queue
        }
      } else if (rstore) {
        // A write per index, its tile the next one of `in`; the index goes with the last bundle.
        if (hv && !h.elem) {
          consume_in = true;  // a bare stop or done: nothing to write
        } else if (hv && rf_done) {
          consume_in = true;  // a tile after the last index: dropped, flagged
          err = true;
        }
        if (fv && fh.elem) {
          if (st_in_done) {
            consume_ref = pq_room;  // `in` has ended: the index passes as a bare beat, flagged
            ref_drop = true;
            err = true;
          } else if (hv && h.elem) {
            issue = room && (!pass_end || pq_room);
            consume_ref = issue && pass_end;
            consume_in = issue && last_req;
            if (issue && slice<RW, W>(h.data, TW) != trows) err = true;  // a tile of another shape
          }
        } else if (fv) {
          consume_ref = pq_room;  // a bare stop or done: straight into the pass queue
        }
      } else {
        consume_ref = fv;  // a store ignores `ref`
        if (hv) {
          if (!h.elem) {
            consume_in = true;  // a bare stop or done: nothing to write
          } else if (!g_active) {
            consume_in = true;  // beyond the view: dropped, flagged
            err = true;
          } else if (room) {
            issue = true;
            consume_in = last_req;
            if (slice<RW, W>(h.data, TW) != trows) err = true;  // a tile of another shape
          }
        }
      }

      // ---- response side: the bundle answering the oldest request bundle, the same lanes.
      const UBeat<P* DW> rh = rb.head();
      const bool rv = rb.head_valid();
      bits_t<GW> r_row = a_row, r_chunk = a_chunk, r_ofs = a_ofs;
      bits_t<TW> merged = a_acc;
      bool a_last = false;
      bits_t<OW + 1> rn = 0;  // responses in the bundle
      for (int k = 0; k < P; ++k) {
        if (!a_last) {
          const bits_t<LW> len = used_bytes(row_bytes, r_chunk);
          if (!wr) {
            // The response's used bytes land at the byte offset (one barrel shift).
            const bits_t<DW> lane = rh.data.range(DW * k + DW - 1, DW * k);
            bits_t<TW + DW> rs = low_bytes(lane, len);
            rs = rs << (8 * int(r_ofs.to_uint()));
            const bits_t<TW> placed = rs.range(TW - 1, 0);
            merged = bits_or<TW>(merged, placed);
          }
          const bool lc = last_chunk_of(row_bytes, r_chunk);
          a_last = lc && r_row == rows - 1;
          r_ofs = r_ofs + bits_t<GW>(len);
          if (lc) {
            r_chunk = 0;
            r_row = r_row + 1;
          } else {
            r_chunk = r_chunk + 1;
          }
          rn = rn + 1;
        }
      }
      stop_t ended = 0;
      bool run_on = true;
      for (int d = MR - 1; d >= 0; --d) {
        if (d < rank) {
          run_on = run_on && a_idx[d] == n[d] - 1;
          if (run_on) ended = ended + 1;
        }
      }
      // The pass queue's head (ref mode): the ref beat of the pass being assembled, or a bare
      // beat that comes before the responses still to arrive.
      const bool pqv = pq_n != 0;
      const int qh = int(pq_rp.to_uint());
      const bool q_elem = pqv && pq_elem[qh];
      const stop_t q_stop = pqv ? pq_stop[qh] : stop_t(0);
      const bool q_done = pqv && pq_done[qh];
      // Stops of a ref element are raised above the view's dimensions; an index's stay as they are.
      const stop_t raised = q_stop != 0 ? stop_t((randm ? 0 : rank) + int(q_stop.to_uint())) : stop_t(0);
      // A random store's done waits for the end of `in` too.
      const bool done_ok = !rstore || st_in_done;
      const bool pass_last = int(ended.to_uint()) == rank;  // the tile ends the pass
      bits_t<W> tile = 0;
      tile.range(TW - 1, 0) = merged;
      set_slice<RW, W>(tile, TW, trows);
      bool consume_r = false, emit = false, pop = false;
      UBeat<W> o;
      if (wr && !rstore) {
        consume_r = rv;  // write acknowledgements
        if (st_in_done && ocnt == 0 && !st_sent && ofree) {
          emit = true;
          o.done = true;
          st_sent = true;
        }
      } else if (refm && pqv && !q_elem) {
        // A bare ref beat: a bare stop raised above the view's dimensions, and/or a bare done.
        const bool any = q_stop != 0 || q_done;
        if (!any || (ofree && (!q_done || done_ok))) {
          pop = true;
          emit = any;
          o.stop = raised;
          o.done = q_done;
        }
      } else if (rv && (!a_last || (ofree && (!refm || !pass_last || (pqv && (!q_done || done_ok)))))) {
        consume_r = true;
        if (a_last) {
          emit = true;
          o.elem = true;
          o.data = rstore ? bits_t<W>(1) : tile;  // a random store: the write's acknowledgement
          o.stop = ended;
          o.done = !refm && pass_last;
          if (refm && pass_last) {  // the pass's last tile: the ref element's stop and done
            pop = true;
            if (q_stop != 0 || randm) o.stop = raised;
            o.done = q_done;
          }
        }
      }

      // ---- registers
      if (!randm || issue) g_init = false;  // random access: the index's position until its first bundle
      for (int d = 0; d < MR; ++d) {
        g_q[d] = cq[d];
        g_r[d] = cr[d];
      }
      if (rq_busy && req_ready_i.read()) rq_valid = 0;
      if (issue) {
        rq_valid = lanes;
        rq_addr = b_addr;
        rq_write = wr;
        rq_len = b_len;
        rq_wdata = b_wdata;
        g_row = w_row;
        g_chunk = w_chunk;
        g_ofs = w_ofs;
        g_rowaddr = w_start;
        if (last_req) {
          g_row = 0;
          g_chunk = 0;
          g_ofs = 0;
          if (step_d < 0) {
            if (refm) {
              // The pass ends: the next one starts at the view's first tile (the offset).
              for (int d = 0; d < MR; ++d) g_idx[d] = 0;
              g_init = true;
            } else {
              g_active = false;
            }
          } else {
            // (q, r) + (sq, sr) with one carry; the inner levels restart from the new position.
            const bits_t<IW> q_s = slice<IW, MR * IW>(sq, IW * step_d);
            const bits_t<IW> r_s = slice<IW, MR * IW>(sr, IW * step_d);
            const bits_t<IW + 1> rr = bits_t<IW + 1>(cr[step_d]) + bits_t<IW + 1>(r_s);
            const bool wrap = rr >= bits_t<IW + 1>(tiles_c);
            const bits_t<IW> nr = wrap ? bits_t<IW>(rr - tiles_c) : bits_t<IW>(rr);
            const bits_t<IW> nq = cq[step_d] + q_s + (wrap ? 1 : 0);
            for (int d = 0; d < MR; ++d) {
              if (d == step_d) g_idx[d] = g_idx[d] + 1;
              if (d > step_d) g_idx[d] = 0;
              if (d >= step_d) {
                g_q[d] = nq;
                g_r[d] = nr;
              }
            }
          }
        }
      }
      if (consume_in && h.done) st_in_done = true;
      if (consume_ref && rstore && fh.done) rf_done = true;
      if (consume_r) {
        if (a_last) {
          a_row = 0;
          a_chunk = 0;
          a_ofs = 0;
          a_acc = 0;
          bool c = true;
          for (int d = MR - 1; d >= 0; --d) {
            if (d < rank && c) {
              if (a_idx[d] == n[d] - 1) {
                a_idx[d] = 0;
              } else {
                a_idx[d] = a_idx[d] + 1;
                c = false;
              }
            }
          }
        } else {
          a_acc = merged;
          a_ofs = r_ofs;
          a_chunk = r_chunk;
          a_row = r_row;
        }
      }
      ocnt = bits_t<OW>(bits_t<OW + 1>(ocnt) + (issue ? nb : bits_t<OW + 1>(0)) - (consume_r ? rn : bits_t<OW + 1>(0)));

      if (consume_ref && refm) {
        const int qt = int(pq_wp.to_uint());
        pq_elem[qt] = fh.elem && !ref_drop;
        pq_stop[qt] = fh.stop;
        pq_done[qt] = fh.done;
        pq_wp = pq_wp + 1;
      }
      if (pop) pq_rp = pq_rp + 1;
      pq_n = bits_t<QW + 1>(pq_n + ((consume_ref && refm) ? 1 : 0) - (pop ? 1 : 0));

      ib.update(consume_in);
      fb.update(consume_ref);
      rb.update(consume_r);
      oq.update(oready, emit, o, true);
      in_ready_o.write(ib.ready());
      ref_ready_o.write(fb.ready());
      rsp_ready_o.write(rb.ready());
      req_valid_o.write(rq_valid);
      req_addr_o.write(rq_addr);
      req_write_o.write(rq_write);
      req_len_o.write(rq_len);
      req_wdata_o.write(rq_wdata);
      err_o.write(err);
      STEPSIM_WRITE_OUT(out, oq);
    }
  }
};

}  // namespace stepsim::units
