// Router, Reassemble<rank> (docs/units.md): for each selector element (N bits on sel_data_i),
// one chunk from every selected input (a rank-`rank` unit: one element for rank 0, else the
// beats up to the first stop >= rank), chunk after chunk without interleaving, closing the
// group with S(rank + 1 + the selector's stop). Non-final chunks end with S_rank (no stop at
// rank 0). A selector without bits gives a bare group stop; a bare selector stop s gives a
// bare S(rank + 1 + s).
// Arrival order on the pins: when a chunk is to start, the lowest selected input whose
// buffer head is valid at that clock edge is taken (ties to the lowest input); its chunk is
// then forwarded to the end. When the selector stream ends (the output's done leaves with
// its last beat), the unit consumes every input up to its done before the next selector.
// The N data inputs are one flat group (STEPSIM_STREAMS_IN).
// Latency 1 cycle, 1 beat/cycle, no bubble between chunks or groups; a selector beat
// without element takes 1 cycle, and the end of the inputs 1 cycle after the last done.
// RTL twin: rtl/router_reassemble.sv.
#pragma once

#include "hw/units/protocol.h"

namespace stepsim::units {

template <int N = 4, int W = 32>
struct RouterReassemble : sc_core::sc_module {
  static_assert(N >= 2 && N <= 256, "selectors have up to 256 bits");
  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  sc_core::sc_in<stop_t> cfg_rank_i{"cfg_rank_i"};  // quasi-static: change only in reset
  STEPSIM_STREAMS_IN(in, N, W);
  STEPSIM_STREAM_IN(sel, N);
  STEPSIM_STREAM_OUT(out, 1, W);

  SC_HAS_PROCESS(RouterReassemble);
  explicit RouterReassemble(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    SC_CTHREAD(run, clk_i.pos());
    async_reset_signal_is(rst_ni, false);
  }

  void run() {
    InBufs<N, W> ib;
    InBuf<N> ibs;
    OutReg<1, W> oq;
    bits_t<N> taken = 0;  // inputs whose chunk of the current group has been sent
    bits_t<N> cur = 0;    // one-hot: the input whose chunk is being forwarded
    bits_t<N> ended = 0;  // inputs whose done has been consumed
    bool drain = false;   // the selector ended: consume the inputs up to their done
    ib.reset();
    ibs.reset();
    oq.reset();
    in_ready_o.write(0);
    sel_ready_o.write(false);
    STEPSIM_WRITE_OUT(out, oq);
    while (true) {
      wait();
      STEPSIM_SAMPLE_GROUP(in, N, W, ib);
      UBeat<N> seb;
      STEPSIM_READ_IN(sel, seb);
      ibs.sample(sel_valid_i.read(), seb);
      const bool oready = out_ready_i.read();
      const bool ofree = oq.can_load(oready);
      const stop_t rank = cfg_rank_i.read();

      const bits_t<N> hv = ib.head_valid();
      const UBeat<N> s = ibs.head();
      const stop_t close = rank + 1 + s.stop;  // the group's closing stop
      bits_t<N> consume = 0;
      bool consume_s = false, emit = false;
      UBeat<W> o;
      if (drain) {
        if (ended == all_ones<N>()) {
          drain = false;
          ended = 0;
        } else {
          for (int i = 0; i < N; ++i) {
            if (!bit_of<N>(ended, i) && bit_of<N>(hv, i)) {
              set_bit<N>(consume, i, true);
              if (ib.b[i].head().done) set_bit<N>(ended, i, true);
            }
          }
        }
      } else if (ibs.head_valid()) {
        if (!s.elem || !any_bit<N>(s.data)) {
          if (ofree) {  // a bare selector stop or done, or an empty selector
            emit = true;
            o.stop = s.elem || s.stop != 0 ? close : stop_t(0);
            o.done = s.done;
            consume_s = true;
            drain = s.done;
          }
        } else {
          const bits_t<N> pending = s.data & ~taken;
          const bits_t<N> pick = any_bit<N>(cur) ? cur : lowest_one<N>(pending & hv);
          if (any_bit<N>(pick & hv) && ofree) {
            const UBeat<W> b = ib.head_of(pick);
            const bool chunk_end = rank == 0 ? b.elem : b.stop >= rank;
            const bool last = !any_bit<N>(pending & ~pick);
            emit = true;
            o = b;
            o.done = false;
            consume = pick;
            if (b.done) ended = ended | pick;
            if (chunk_end) {
              o.stop = last ? close : rank;
              o.done = last && s.done;
              taken = taken | pick;
              cur = 0;
              if (last) {
                consume_s = true;
                taken = 0;
                drain = s.done;
              }
            } else {
              cur = pick;
            }
          }
        }
      }

      ib.update(consume);
      ibs.update(consume_s);
      oq.update(oready, emit, o, true);
      in_ready_o.write(ib.ready());
      sel_ready_o.write(ibs.ready());
      STEPSIM_WRITE_OUT(out, oq);
    }
  }
};

}  // namespace stepsim::units
