// Router, Broadcast (docs/units.md): every input beat goes to all N outputs in lock-step.
// The N outputs share one payload register; output i has its own valid/ready bit, and the
// next beat is loaded once every output has taken the current one.
// Latency 1 cycle, 1 beat/cycle while all outputs are ready. RTL twin: rtl/router_broadcast.sv.
#pragma once

#include "hw/units/protocol.h"

namespace stepsim::units {

template <int N = 4, int W = 32>
struct RouterBroadcast : sc_core::sc_module {
  static_assert(N >= 1);
  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  STEPSIM_STREAM_IN(in, W);
  STEPSIM_STREAM_OUT(out, N, W);

  SC_HAS_PROCESS(RouterBroadcast);
  explicit RouterBroadcast(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    SC_CTHREAD(run, clk_i.pos());
    async_reset_signal_is(rst_ni, false);
  }

  void run() {
    InBuf<W> ib;
    OutReg<N, W> oq;
    ib.reset();
    oq.reset();
    in_ready_o.write(false);
    STEPSIM_WRITE_OUT(out, oq);
    while (true) {
      wait();
      UBeat<W> inb;
      STEPSIM_READ_IN(in, inb);
      ib.sample(in_valid_i.read(), inb);
      const bits_t<N> oready = out_ready_i.read();
      const bool emit = ib.head_valid() && oq.can_load(oready);
      const UBeat<W> h = ib.head();
      ib.update(emit);
      oq.update(oready, emit, h, all_ones<N>());
      in_ready_o.write(ib.ready());
      STEPSIM_WRITE_OUT(out, oq);
    }
  }
};

}  // namespace stepsim::units
