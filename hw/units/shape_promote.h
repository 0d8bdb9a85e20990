// Shape unit, Promote (docs/units.md): adds a dimension of size 1 (0 for an empty stream).
//   cfg_outer_i = 0: the new dimension sits above the cfg_rank_i innermost ones; per beat,
//                    s >= r and (s > 0 or (r == 0 and element)) -> s + 1.
//   cfg_outer_i = 1: a new outermost dimension; the last beat before done gets its stop
//                    raised, so the unit holds one beat back until the next beat arrives.
// Latency 1 cycle (outer form: the held beat leaves when the next one arrives), 1 beat/cycle;
// a done beat that carries an element or a stop behind a held beat costs one extra cycle.
// RTL twin: rtl/shape_promote.sv.
#pragma once

#include "hw/units/protocol.h"

namespace stepsim::units {

template <int W = 32>
struct ShapePromote : sc_core::sc_module {
  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  sc_core::sc_in<bool> cfg_outer_i{"cfg_outer_i"};  // quasi-static: change only in reset
  sc_core::sc_in<stop_t> cfg_rank_i{"cfg_rank_i"};
  STEPSIM_STREAM_IN(in, W);
  STEPSIM_STREAM_OUT(out, 1, W);

  SC_HAS_PROCESS(ShapePromote);
  explicit ShapePromote(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    SC_CTHREAD(run, clk_i.pos());
    async_reset_signal_is(rst_ni, false);
  }

  void run() {
    InBuf<W> ib;
    OutReg<1, W> oq;
    UBeat<W> hold;
    bool hold_v = false;
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
      const bool outer = cfg_outer_i.read();
      const stop_t r = cfg_rank_i.read();

      const bool hv = ib.head_valid();
      const UBeat<W> h = ib.head();
      UBeat<W> o = h;
      bool consume = false, emit = false;
      if (!outer) {
        if (h.stop >= r && (h.stop > 0 || (r == 0 && h.elem))) o.stop = h.stop + 1;
        emit = hv && ofree;
        consume = emit;
      } else if (hv) {
        if (!h.done) {
          if (!hold_v) {
            hold = h;
            hold_v = true;
            consume = true;
          } else if (ofree) {
            o = hold;
            emit = true;
            hold = h;
            consume = true;
          }
        } else if (h.elem || h.stop != 0) {
          if (hold_v) {
            if (ofree) {
              o = hold;
              emit = true;
              hold_v = false;
            }
          } else if (ofree) {
            o.stop = h.stop + 1;
            emit = true;
            consume = true;
          }
        } else if (ofree) {  // a bare done beat
          if (hold_v) {
            o = hold;
            o.stop = hold.stop + 1;
            o.done = true;
            hold_v = false;
          }
          emit = true;
          consume = true;
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
