// Compute unit on 2-D tiles, Accum<rank> (docs/units.md) with the accum functions of
// hw/functions on [T x T] bf16 tiles, bit for bit (tile encoding as PcuTileMap):
//   add (cfg_op_i = 0)           fp32 accumulator: the group's first tile (exact), then
//                                acc = acc + x per lane (RNE); rounded to bf16 at the close;
//   max (1)                      acc = max_f32(acc, x) per lane; exact (output as it is);
//   matmul_acc (2)               inputs a = A[T x T], b = B[T x T]; per output (i, j):
//                                s = acc (the group's first update: s = p_0 and k starts at 1),
//                                then s = s + p_k for k in order, p_k = A[i][k] * B[k][j] (fp32
//                                RNE); rounded to bf16 at the close. A K-tiled reduction thus
//                                equals the untiled matmul's fp32 sums (hw/functions);
//   matmul_t_acc (3)             the same with p_k = A[i][k] * B[j][k].
// add and max use input a only; b is not consumed (its pins may stay idle).
// A beat whose stop is >= rank closes the group (its element is included): the result leaves
// with stop - rank and the beat's done. A bare done below the rank passes as a bare done. An
// empty group leaves a zero payload (a tile of 0 rows; the approximate Accum emits a 0x0 tile).
// Scan<rank> (cfg_scan_i = 1; the bank is unused): every beat leaves at once with its stop and
// done, an element carrying the accumulator after it (its header the element's); a beat with
// stop >= rank then restarts the accumulator. Bare beats pass (payload as an Accum close).
// Tile header (TileBits): the result has the row count of the group's last element (the
// elements of a group have one shape: a dynamic [r x T] A tile gives an [r x T] result); the
// unit computes all T rows.
// One datapath stage: the accumulator recurrence. For matmul_acc it is T multipliers and a
// chain of T fp32 adders per output, because the reference order adds every product to the
// running accumulator (docs/units.md discusses this). Latency 1 cycle from the closing beat,
// 1 input beat per cycle. RTL twin: rtl/pcu_tile_accum.sv.
//
// Accumulator bank (cfg_bank_i = q >= 1, rank 2; docs/units.md): the input has shape
// [O.., C, B1..Bq, K]; K and C are reduced, B1..Bq index a bank of NB fp32 tiles (the paired
// memory unit: one read and one write per cycle). A beat with stop s: 0 stays on entry m;
// 1..q ends entry m's K-run (bank[m] = acc; chunk 0 remembers its output stop s - 1); q + 1
// also ends the chunk (m = 0); >= q + 2 ends the last chunk, and the M entries then leave in
// order, one per cycle (the input waits), the last with stop s - 2 and the beat's done. Entry
// m of chunk c > 0 continues from bank[m], so the result equals a rank-2 Accum over
// [O.., B1..Bq, C, K] bit for bit. err_o (sticky): more than NB entries, a chunk whose
// structure differs from the first, a bare stop, a stream ending inside a group, q > 0 with
// rank != 2.
#pragma once

#include "hw/units/fp32_arith.h"
#include "hw/units/pcu_tile_map.h"
#include "hw/units/protocol.h"

namespace stepsim::units {

template <int T = 4, int NB = 16>
struct PcuTileAccum : sc_core::sc_module {
  static_assert(T >= 1);
  static_assert(NB >= 2 && NB <= 256);
  static constexpr int W = TileBits<T>::W;
  static constexpr int N = T * T;
  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  sc_core::sc_in<bits_t<2>> cfg_op_i{"cfg_op_i"};   // kTileAccAdd .. kTileAccMatmulT; quasi-static
  sc_core::sc_in<stop_t> cfg_rank_i{"cfg_rank_i"};  // >= 1
  sc_core::sc_in<stop_t> cfg_bank_i{"cfg_bank_i"};  // q: bank dimensions (0 = no bank); quasi-static
  sc_core::sc_in<bool> cfg_scan_i{"cfg_scan_i"};    // 0 = Accum, 1 = Scan (no bank); quasi-static
  STEPSIM_STREAM_IN(a, W);
  STEPSIM_STREAM_IN(b, W);
  STEPSIM_STREAM_OUT(out, 1, W);
  sc_core::sc_out<bool> err_o{"err_o"};  // sticky until reset

  // The bank: a memory (the paired memory unit), not reset. A member, because NB x T^2 words
  // (64 x 256 at T = 16) would not fit the thread's stack.
  f32_t bank_[NB][N];
  stop_t bank_stop_[NB];  // entry e's output stop, from chunk 0

  SC_HAS_PROCESS(PcuTileAccum);
  explicit PcuTileAccum(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    SC_CTHREAD(run, clk_i.pos());
    async_reset_signal_is(rst_ni, false);
  }

  // The accumulator after one element (acc_v: the group has seen an element before).
  static void update(int op, const f32_t* acc, bool acc_v, const bf16_t* a, const bf16_t* b, f32_t* next) {
    if (op == kTileAccAdd || op == kTileAccMax) {
      for (int l = 0; l < N; ++l) {
        const f32_t x = f32_from_bf16(a[l]);
        next[l] = !acc_v ? x : op == kTileAccMax ? fp32_max(acc[l], x) : fp32_add(acc[l], x);
      }
      return;
    }
    for (int i = 0; i < T; ++i)
      for (int j = 0; j < T; ++j) {
        f32_t s = acc[i * T + j];
        for (int k = 0; k < T; ++k) {
          const f32_t x = f32_from_bf16(a[i * T + k]);
          const f32_t y = f32_from_bf16(op == kTileAccMatmul ? b[k * T + j] : b[j * T + k]);
          const f32_t p = fp32_mul(x, y);
          s = (k == 0 && !acc_v) ? p : fp32_add(s, p);
        }
        next[i * T + j] = s;
      }
  }

  // The beat a unit emits for an accumulator (valid: it has seen an element) of `rows` rows.
  static bits_t<W> result(int op, const f32_t* v, bool valid, const tile_rows_t<T>& rows) {
    bits_t<W> d = 0;
    if (valid) {
      for (int l = 0; l < N; ++l)
        d.range(16 * l + 15, 16 * l) = (op == kTileAccMax ? bf16_t(v[l].range(31, 16)) : bf16_round(v[l])).to_uint();
      set_tile_rows<T>(d, rows);
    }
    return d;
  }

  void run() {
    InBuf<W> iba, ibb;
    OutReg<1, W> oq;
    f32_t acc[N];             // the fp32 accumulator, row-major (read only once acc_v says it holds a value)
    bool acc_v = false;       // the group has seen an element
    tile_rows_t<T> rows = 0;  // the header of the last element taken
    // Bank mode: entry m of the current chunk, M entries (known after chunk 0), emission.
    int m = 0, nent = 0, e = 0;
    bool chunk0 = true, emitting = false, close_done = false, err = false;
    stop_t close_stop = 0;
    iba.reset();
    ibb.reset();
    oq.reset();
    a_ready_o.write(false);
    b_ready_o.write(false);
    err_o.write(false);
    STEPSIM_WRITE_OUT(out, oq);
    while (true) {
      wait();
      UBeat<W> ab, bb;
      STEPSIM_READ_IN(a, ab);
      STEPSIM_READ_IN(b, bb);
      iba.sample(a_valid_i.read(), ab);
      ibb.sample(b_valid_i.read(), bb);
      const bool oready = out_ready_i.read();
      const bool ofree = oq.can_load(oready);
      const int op = int(cfg_op_i.read());
      const bool two = op == kTileAccMatmul || op == kTileAccMatmulT;  // b is an operand
      const stop_t rank = cfg_rank_i.read();
      const int q = int(cfg_bank_i.read());
      const bool bank = q != 0;
      if (bank && rank != 2) err = true;
      const UBeat<W>& h = iba.head();
      const bool hv = !emitting && iba.head_valid() && (!two || ibb.head_valid());

      // The accumulator after this beat's element.
      f32_t next[N];
      for (int l = 0; l < N; ++l) next[l] = acc[l];
      if (hv && h.elem) {
        bf16_t xa[N], xb[N];
        unpack_tile<T>(h.data, xa);
        unpack_tile<T>(ibb.head().data, xb);
        update(op, acc, acc_v, xa, xb, next);
      }
      bool consume = false, emit = false;
      UBeat<W> o;
      if (emitting) {
        // Entry e leaves (one bank read per cycle); the last one with the closing beat's stop.
        if (ofree) {
          const bool last = e == nent - 1;
          emit = true;
          o.elem = true;
          o.data = result(op, bank_[e], true, rows);
          o.stop = last ? stop_t(close_stop - 2) : bank_stop_[e];
          o.done = last && close_done;
          if (last) {
            emitting = false;
            m = 0;
            chunk0 = true;
            acc_v = false;
          } else {
            e = e + 1;
          }
        }
      } else if (hv && cfg_scan_i.read()) {
        if (ofree) {  // Scan: every beat leaves, with the state after its element
          emit = true;
          consume = true;
          o.elem = h.elem;
          o.stop = h.stop;
          o.done = h.done;
          o.data = result(op, next, acc_v || h.elem, h.elem ? tile_rows<T>(h.data) : rows);
          for (int l = 0; l < N; ++l) acc[l] = next[l];
          acc_v = !(h.stop >= rank) && (acc_v || h.elem);
        }
      } else if (hv && bank) {
        const int s = int(h.stop);
        if (h.done && !(h.elem && s >= q + 2)) {
          // A bare done, or a stream ending inside a group: a bare done; the group is lost.
          if (ofree) {
            emit = true;
            consume = true;
            o.done = true;
            if (h.elem || s != 0 || m != 0 || !chunk0 || acc_v) err = true;
            m = 0;
            chunk0 = true;
            acc_v = false;
          }
        } else if (!h.elem) {
          consume = true;  // a bare stop has no place in the bank: dropped
          err = true;
        } else if (s == 0) {
          consume = true;
          for (int l = 0; l < N; ++l) acc[l] = next[l];
          acc_v = true;
        } else {
          // The K-run of entry m ends: one bank write; the next entry's start is one bank read.
          consume = true;
          for (int l = 0; l < N; ++l) bank_[m][l] = next[l];
          const bool last = !chunk0 && m == nent - 1;  // the last entry of a later chunk
          if (s <= q) {
            if (chunk0) bank_stop_[m] = stop_t(s - 1);
            const bool full = chunk0 ? m == NB - 1 : last;
            if (full) err = true;
            const int mn = full ? m : m + 1;
            for (int l = 0; l < N; ++l) acc[l] = bank_[mn][l];
            acc_v = !chunk0;
            m = mn;
          } else {
            if (chunk0)
              nent = m + 1;
            else if (!last)
              err = true;
            if (s == q + 1) {  // next chunk
              for (int l = 0; l < N; ++l) acc[l] = bank_[0][l];
              acc_v = true;
              chunk0 = false;
              m = 0;
            } else {  // the last chunk: emit the bank
              emitting = true;
              e = 0;
              close_stop = h.stop;
              close_done = h.done;
            }
          }
        }
      } else if (hv) {
        const bool closes = h.stop >= rank;
        if (closes || h.done) {
          if (ofree) {
            emit = true;
            consume = true;
            o.elem = closes;
            o.stop = closes ? stop_t(h.stop - rank) : stop_t(0);
            o.done = h.done;
            o.data = result(op, next, acc_v || h.elem, h.elem ? tile_rows<T>(h.data) : rows);
            acc_v = false;
          }
        } else {
          consume = true;
          for (int l = 0; l < N; ++l) acc[l] = next[l];
          acc_v = acc_v || h.elem;
        }
      }

      if (consume && h.elem) rows = tile_rows<T>(h.data);
      iba.update(consume);
      ibb.update(consume && two);
      oq.update(oready, emit, o, true);
      a_ready_o.write(iba.ready());
      b_ready_o.write(ibb.ready());
      err_o.write(err);
      STEPSIM_WRITE_OUT(out, oq);
    }
  }
};

}  // namespace stepsim::units
