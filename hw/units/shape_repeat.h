// Shape unit, Repeat<count> (docs/units.md): a new innermost dimension of `count` copies of
// every element. An element with stop s becomes count copies, the last one closing with
// S(s+1) (S1 when s = 0); count = 0 gives a bare S(s+1). Bare stops are raised by one.
// Latency 1 cycle; an element occupies max(count, 1) output cycles (one copy per cycle).
// CW: width of the count (cfg_count_i). RTL twin: rtl/shape_repeat.sv.
#pragma once

#include "hw/units/protocol.h"

namespace stepsim::units {

template <int W = 32, int CW = 8>
struct ShapeRepeat : sc_core::sc_module {
  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  sc_core::sc_in<bits_t<CW>> cfg_count_i{"cfg_count_i"};  // quasi-static: change only in reset
  STEPSIM_STREAM_IN(in, W);
  STEPSIM_STREAM_OUT(out, 1, W);

  SC_HAS_PROCESS(ShapeRepeat);
  explicit ShapeRepeat(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    SC_CTHREAD(run, clk_i.pos());
    async_reset_signal_is(rst_ni, false);
  }

  void run() {
    InBuf<W> ib;
    OutReg<1, W> oq;
    bits_t<CW> copy = 0;  // copies of the head element already sent
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
      const bits_t<CW> count = cfg_count_i.read();

      const UBeat<W> h = ib.head();
      UBeat<W> o = h;
      bool consume = false;
      const bool emit = ib.head_valid() && ofree;
      if (emit) {
        const stop_t close = h.stop != 0 ? stop_t(h.stop + 1) : stop_t(1);
        if (!h.elem) {
          if (h.stop != 0) o.stop = h.stop + 1;
          consume = true;
        } else if (count == 0) {
          o.elem = false;
          o.stop = close;
          consume = true;
        } else {
          const bool last = copy == count - 1;
          o.stop = last ? close : stop_t(0);
          o.done = last && h.done;
          if (last) {
            copy = 0;
            consume = true;
          } else {
            copy = copy + 1;
          }
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
