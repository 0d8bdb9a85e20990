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
// empty group leaves a zero payload (no tile header on the pins, as PcuAccum).
// One datapath stage: the accumulator recurrence. For matmul_acc it is T multipliers and a
// chain of T fp32 adders per output, because the reference order adds every product to the
// running accumulator (docs/units.md discusses this). Latency 1 cycle from the closing beat,
// 1 input beat per cycle. RTL twin: rtl/pcu_tile_accum.sv.
#pragma once

#include "hw/units/fp32_arith.h"
#include "hw/units/pcu_tile_map.h"
#include "hw/units/protocol.h"

namespace stepsim::units {

// cfg_op_i of PcuTileAccum.
constexpr int kTileAccAdd = 0;
constexpr int kTileAccMax = 1;
constexpr int kTileAccMatmul = 2;
constexpr int kTileAccMatmulT = 3;

template <int T = 4>
struct PcuTileAccum : sc_core::sc_module {
  static_assert(T >= 1);
  static constexpr int W = 16 * T * T;
  static constexpr int N = T * T;
  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  sc_core::sc_in<bits_t<2>> cfg_op_i{"cfg_op_i"};   // kTileAccAdd .. kTileAccMatmulT; quasi-static
  sc_core::sc_in<stop_t> cfg_rank_i{"cfg_rank_i"};  // >= 1
  STEPSIM_STREAM_IN(a, W);
  STEPSIM_STREAM_IN(b, W);
  STEPSIM_STREAM_OUT(out, 1, W);

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

  void run() {
    InBuf<W> iba, ibb;
    OutReg<1, W> oq;
    f32_t acc[N];        // the fp32 accumulator, row-major (reset: 0)
    bool acc_v = false;  // the group has seen an element
    iba.reset();
    ibb.reset();
    oq.reset();
    a_ready_o.write(false);
    b_ready_o.write(false);
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
      const UBeat<W>& h = iba.head();
      const bool hv = iba.head_valid() && (!two || ibb.head_valid());

      // The accumulator after this beat's element.
      f32_t next[N];
      for (int l = 0; l < N; ++l) next[l] = acc[l];
      if (hv && h.elem) {
        bf16_t xa[N], xb[N];
        unpack_tile<T>(h.data, xa);
        unpack_tile<T>(ibb.head().data, xb);
        update(op, acc, acc_v, xa, xb, next);
      }
      const bool closes = h.stop >= rank;
      bool consume = false, emit = false;
      UBeat<W> o;
      if (hv) {
        if (closes || h.done) {
          if (ofree) {
            emit = true;
            consume = true;
            o.elem = closes;
            o.stop = closes ? stop_t(h.stop - rank) : stop_t(0);
            o.done = h.done;
            if (acc_v || h.elem)
              for (int l = 0; l < N; ++l)
                o.data.range(16 * l + 15, 16 * l) =
                    (op == kTileAccMax ? bf16_t(next[l].range(31, 16)) : bf16_round(next[l])).to_uint();
            acc_v = false;
          }
        } else {
          consume = true;
          for (int l = 0; l < N; ++l) acc[l] = next[l];
          acc_v = acc_v || h.elem;
        }
      }

      iba.update(consume);
      ibb.update(consume && two);
      oq.update(oready, emit, o, true);
      a_ready_o.write(iba.ready());
      b_ready_o.write(ibb.ready());
      STEPSIM_WRITE_OUT(out, oq);
    }
  }
};

}  // namespace stepsim::units
