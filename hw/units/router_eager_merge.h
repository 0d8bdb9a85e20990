// Router, EagerMerge<rank> (docs/units.md): forwards whole chunks (one element for rank 0,
// else the beats up to the first stop >= rank, stops clamped to rank; none at rank 0) from
// whichever of the N inputs has one first, and emits the source as a one-hot selector on
// `sel` (N bits) with the chunk's first beat. Bare beats that are outer structure (no stop,
// or a stop above rank) are dropped whenever their input is not the one being forwarded.
// Arrival order on the pins: when no chunk is being forwarded, the lowest input whose buffer
// head is a chunk beat at that clock edge starts the next chunk (ties to the lowest input).
// When every input has ended, `out` and `sel` each get a bare done beat.
// The N inputs are one flat group (STEPSIM_STREAMS_IN); both outputs leave together.
// Latency 1 cycle, 1 beat/cycle, no bubble between chunks; the final done 1 cycle after
// the last input ends. RTL twin: rtl/router_eager_merge.sv.
#pragma once

#include "hw/units/protocol.h"

namespace stepsim::units {

template <int N = 4, int W = 32>
struct RouterEagerMerge : sc_core::sc_module {
  static_assert(N >= 2 && N <= 256, "selectors have up to 256 bits");
  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  sc_core::sc_in<stop_t> cfg_rank_i{"cfg_rank_i"};  // quasi-static: change only in reset
  STEPSIM_STREAMS_IN(in, N, W);
  STEPSIM_STREAM_OUT(out, 1, W);
  STEPSIM_STREAM_OUT(sel, 1, N);

  SC_HAS_PROCESS(RouterEagerMerge);
  explicit RouterEagerMerge(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    SC_CTHREAD(run, clk_i.pos());
    async_reset_signal_is(rst_ni, false);
  }

  void run() {
    InBufs<N, W> ib;
    OutReg<1, W> oq;
    OutReg<1, N> sq;
    bits_t<N> cur = 0;    // one-hot: the input whose chunk is being forwarded
    bits_t<N> ended = 0;  // inputs whose done has been consumed
    ib.reset();
    oq.reset();
    sq.reset();
    in_ready_o.write(0);
    STEPSIM_WRITE_OUT(out, oq);
    STEPSIM_WRITE_OUT(sel, sq);
    while (true) {
      wait();
      STEPSIM_SAMPLE_GROUP(in, N, W, ib);
      const bool oready = out_ready_i.read(), sready = sel_ready_i.read();
      const bool ofree = oq.can_load(oready) && sq.can_load(sready);
      const stop_t rank = cfg_rank_i.read();

      // Live heads, split into outer structure (dropped) and chunk beats.
      const bits_t<N> hv = ib.head_valid() & ~ended;
      bits_t<N> outer = 0;
      for (int i = 0; i < N; ++i) {
        const UBeat<W>& b = ib.b[i].head();
        set_bit<N>(outer, i, !b.elem && (b.stop == 0 || b.stop > rank));
      }
      bits_t<N> consume = hv & outer & ~cur;
      bits_t<N> ended_n = ended;
      for (int i = 0; i < N; ++i)
        if (bit_of<N>(consume, i) && ib.b[i].head().done) set_bit<N>(ended_n, i, true);
      bits_t<N> cur_n = cur;
      const bits_t<N> pick = any_bit<N>(cur) ? cur : lowest_one<N>(hv & ~outer);
      bool emit = false, emit_sel = false;
      UBeat<W> o;
      UBeat<N> so;
      if (!any_bit<N>(cur) && ended == all_ones<N>()) {
        if (ofree) {  // every input ended
          emit = true;
          emit_sel = true;
          o.done = true;
          so.done = true;
          ended_n = 0;
        }
      } else if (any_bit<N>(pick & hv) && ofree) {
        const UBeat<W> b = ib.head_of(pick);
        const bool chunk_end = rank == 0 ? b.elem : b.stop >= rank;
        emit = true;
        emit_sel = !any_bit<N>(cur);
        so.elem = true;
        so.data = pick;
        o = b;
        o.done = false;
        o.stop = rank == 0 ? stop_t(0) : b.stop > rank ? rank : b.stop;
        consume = consume | pick;
        if (b.done) ended_n = ended_n | pick;
        cur_n = chunk_end || b.done ? bits_t<N>(0) : pick;
      }
      cur = cur_n;
      ended = ended_n;

      ib.update(consume);
      oq.update(oready, emit, o, true);
      sq.update(sready, emit_sel, so, true);
      in_ready_o.write(ib.ready());
      STEPSIM_WRITE_OUT(out, oq);
      STEPSIM_WRITE_OUT(sel, sq);
    }
  }
};

}  // namespace stepsim::units
