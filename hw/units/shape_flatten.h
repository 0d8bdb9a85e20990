// Shape unit, Flatten<min,max> (docs/units.md): merges stop levels min..max into one.
// Per beat: min < s <= max -> min; s > max -> s - (max - min); a beat left with no element,
// no stop and no done (an empty inner dimension that vanished) is dropped.
// Latency 1 cycle, 1 beat/cycle. RTL twin: rtl/shape_flatten.sv.
#pragma once

#include "hw/units/protocol.h"

namespace stepsim::units {

template <int W = 32>
struct ShapeFlatten : sc_core::sc_module {
  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  sc_core::sc_in<stop_t> cfg_min_i{"cfg_min_i"};  // quasi-static: change only in reset
  sc_core::sc_in<stop_t> cfg_max_i{"cfg_max_i"};
  STEPSIM_STREAM_IN(in, W);
  STEPSIM_STREAM_OUT(out, 1, W);

  SC_HAS_PROCESS(ShapeFlatten);
  explicit ShapeFlatten(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    SC_CTHREAD(run, clk_i.pos());
    async_reset_signal_is(rst_ni, false);
  }

  void run() {
    InBuf<W> ib;
    OutReg<1, W> oq;
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
      const stop_t mn = cfg_min_i.read();
      const stop_t mx = cfg_max_i.read();

      const UBeat<W> h = ib.head();
      UBeat<W> o = h;
      if (h.stop > mn && h.stop <= mx)
        o.stop = mn;
      else if (h.stop > mx)
        o.stop = h.stop - (mx - mn);
      const bool keep = o.elem || o.stop != 0 || o.done;
      const bool consume = ib.head_valid() && (!keep || ofree);
      const bool emit = ib.head_valid() && keep && ofree;

      ib.update(consume);
      oq.update(oready, emit, o, true);
      in_ready_o.write(ib.ready());
      STEPSIM_WRITE_OUT(out, oq);
    }
  }
};

}  // namespace stepsim::units
