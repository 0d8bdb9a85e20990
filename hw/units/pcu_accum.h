// Compute unit, Accum<rank> with the accum functions `add` (cfg_op_i = 0) or `max` (1) over
// [1 x L] bf16 vector tiles, element-wise (docs/units.md), bit for bit as hw/functions:
//   add: the fp32 accumulator starts as the group's first tile (exact), then
//        acc = acc + x per lane (fp32, round to nearest even); the result is rounded to
//        bf16 once when the group closes;
//   max: acc = max_f32(acc, x) per lane; exact, so the result is the accumulator as it is
//        (a lone signalling NaN stays signalling, as in hw/functions).
// A beat whose stop is >= rank closes the group: the result leaves with stop - rank (and
// the beat's done). A bare done below the rank passes as a bare done.
// Scan<rank> (cfg_scan_i = 1): every beat leaves at once with its stop and done, an element
// carrying the accumulator after it (rounded as above: the running state); a beat with stop
// >= rank then restarts the accumulator. Bare beats pass as they are (the payload as for
// an Accum close, ignored).
// An empty group (a closing bare stop with no element since the last close) has no tile; it
// leaves as an element with a zero payload: the pins carry no tile header yet (the
// approximate Accum emits an empty 0x0 tile there; docs/units.md, "Known differences").
// One datapath stage (L fp32 adders and max units between the input buffer and the
// accumulator registers). Latency 1 cycle from the closing beat, 1 beat per cycle.
// RTL twin: rtl/pcu_accum.sv.
#pragma once

#include "hw/units/fp32_arith.h"
#include "hw/units/protocol.h"

namespace stepsim::units {

template <int L = 8>
struct PcuAccum : sc_core::sc_module {
  static constexpr int W = 16 * L;
  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  sc_core::sc_in<bool> cfg_op_i{"cfg_op_i"};        // 0 = add, 1 = max; quasi-static
  sc_core::sc_in<stop_t> cfg_rank_i{"cfg_rank_i"};  // >= 1
  sc_core::sc_in<bool> cfg_scan_i{"cfg_scan_i"};    // 0 = Accum, 1 = Scan; quasi-static
  STEPSIM_STREAM_IN(in, W);
  STEPSIM_STREAM_OUT(out, 1, W);

  SC_HAS_PROCESS(PcuAccum);
  explicit PcuAccum(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    SC_CTHREAD(run, clk_i.pos());
    async_reset_signal_is(rst_ni, false);
  }

  void run() {
    InBuf<W> ib;
    OutReg<1, W> oq;
    bits_t<32 * L> acc = 0;  // the fp32 accumulator, lane j in bits [32j+31:32j]
    bool acc_v = false;      // the group has seen an element
    ib.reset();
    oq.reset();
    in_ready_o.write(false);
    STEPSIM_WRITE_OUT(out, oq);
    while (true) {
      wait();
      UBeat<W> inb;
      STEPSIM_READ_IN(in, inb);
      ib.sample(in_valid_i.read(), inb);
      const bool oready = out_ready_i.read();
      const bool ofree = oq.can_load(oready);
      const bool is_max = cfg_op_i.read();
      const stop_t rank = cfg_rank_i.read();

      const UBeat<W> h = ib.head();
      // The accumulator after this beat's element, and the group's bf16 result.
      bits_t<32 * L> next = acc;
      UBeat<W> o;
      for (int j = 0; j < L; ++j) {
        const f32_t a = slice<32, 32 * L>(acc, 32 * j);
        const f32_t x = f32_from_bf16(slice<16, W>(h.data, 16 * j));
        const f32_t upd = is_max ? fp32_max(a, x) : fp32_add(a, x);
        const f32_t n = !h.elem ? a : !acc_v ? x : upd;
        set_slice<32, 32 * L>(next, 32 * j, n);
        const bf16_t r = is_max ? bf16_t(n.range(31, 16)) : bf16_round(n);  // max: exact, as is
        set_slice<16, W>(o.data, 16 * j, acc_v || h.elem ? r : bf16_t(0));
      }
      const bool closes = h.stop >= rank;
      bool consume = false, emit = false;
      if (ib.head_valid()) {
        if (cfg_scan_i.read()) {
          if (ofree) {  // Scan: every beat leaves, with the state after its element
            emit = true;
            consume = true;
            o.elem = h.elem;
            o.stop = h.stop;
            o.done = h.done;
            acc = next;
            acc_v = !closes && (acc_v || h.elem);
          }
        } else if (closes || h.done) {
          if (ofree) {
            emit = true;
            consume = true;
            o.elem = closes;
            o.stop = closes ? stop_t(h.stop - rank) : stop_t(0);
            o.done = h.done;
            acc_v = false;
          }
        } else {
          consume = true;
          acc = next;
          acc_v = acc_v || h.elem;
        }
      }

      ib.update(consume);
      oq.update(oready, emit, o, true);
      in_ready_o.write(ib.ready());
      STEPSIM_WRITE_OUT(out, oq);
    }
  }
};

}  // namespace stepsim::units
