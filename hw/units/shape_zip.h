// Shape unit, Zip (docs/units.md): tuples of the elements of N streams with the same
// structure. The inputs are one flat group of N streams (STEPSIM_STREAMS_IN); the output
// payload is the tuple, element i in bits [W*i +: W], with stream 0's stops and done. A beat
// leaves when every input has one.
// Latency 1 cycle, 1 beat/cycle. RTL twin: rtl/shape_zip.sv.
#pragma once

#include "hw/units/protocol.h"

namespace stepsim::units {

template <int N = 2, int W = 32>
struct ShapeZip : sc_core::sc_module {
  static_assert(N >= 2);
  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  STEPSIM_STREAMS_IN(in, N, W);
  STEPSIM_STREAM_OUT(out, 1, N* W);

  SC_HAS_PROCESS(ShapeZip);
  explicit ShapeZip(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    SC_CTHREAD(run, clk_i.pos());
    async_reset_signal_is(rst_ni, false);
  }

  void run() {
    InBufs<N, W> ib;
    OutReg<1, N * W> oq;
    ib.reset();
    oq.reset();
    in_ready_o.write(0);
    STEPSIM_WRITE_OUT(out, oq);
    while (true) {
      wait();
      STEPSIM_SAMPLE_GROUP(in, N, W, ib);
      const bool oready = out_ready_i.read();
      const bool fire = ib.head_valid() == all_ones<N>() && oq.can_load(oready);
      UBeat<N * W> o;
      o.elem = ib.b[0].head().elem;
      o.stop = ib.b[0].head().stop;
      o.done = ib.b[0].head().done;
      for (int i = 0; i < N; ++i) set_slice<W, N * W>(o.data, W * i, ib.b[i].head().data);
      ib.update(fire ? all_ones<N>() : bits_t<N>(0));
      oq.update(oready, fire, o, true);
      in_ready_o.write(ib.ready());
      STEPSIM_WRITE_OUT(out, oq);
    }
  }
};

}  // namespace stepsim::units
