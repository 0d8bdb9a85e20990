// Router, Partition<rank> by a multi-hot selector (docs/units.md). Each selector element
// (N bits on sel_data_i, bit i = output i) routes one chunk of the data stream `in` to every
// output whose bit is set (lock-step multicast over a shared payload): for rank 0 one
// element (bare stops, the flattened outer structure, are dropped); for rank >= 1 the beats
// up to and including the next beat whose stop is >= rank (bare or not: every such stop
// closes one rank-`rank` chunk, possibly empty, as observe_shape reads the encoding), with
// stops clamped to rank. When the selector stream ends, the rest of the data's outer
// structure is dropped and every output gets a bare done beat.
// NOTE: the approximate Partition (hw/ops/routing.cpp) drops bare stops above rank for
// rank >= 1 too, which merges or loses chunks that end with empty dimensions
// (docs/units.md, "Known differences").
// Latency 1 cycle, 1 data beat/cycle; the selector beat is consumed with the chunk's last
// beat (a selector without element, and the end of stream, take one cycle each).
// RTL twin: rtl/router_partition.sv.
#pragma once

#include "hw/units/protocol.h"

namespace stepsim::units {

template <int N = 4, int W = 32>
struct RouterPartition : sc_core::sc_module {
  static_assert(N >= 2 && N <= 256, "selectors have up to 256 bits");
  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  sc_core::sc_in<stop_t> cfg_rank_i{"cfg_rank_i"};  // quasi-static: change only in reset
  STEPSIM_STREAM_IN(in, W);
  STEPSIM_STREAM_IN(sel, N);
  STEPSIM_STREAM_OUT(out, N, W);

  SC_HAS_PROCESS(RouterPartition);
  explicit RouterPartition(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    SC_CTHREAD(run, clk_i.pos());
    async_reset_signal_is(rst_ni, false);
  }

  void run() {
    InBuf<W> ibd;
    InBuf<N> ibs;
    OutReg<N, W> oq;
    bool drain = false;      // the selector stream ended
    bool data_done = false;  // the data stream ended
    ibd.reset();
    ibs.reset();
    oq.reset();
    in_ready_o.write(false);
    sel_ready_o.write(false);
    STEPSIM_WRITE_OUT(out, oq);
    while (true) {
      wait();
      UBeat<W> inb;
      UBeat<N> seb;
      STEPSIM_READ_IN(in, inb);
      STEPSIM_READ_IN(sel, seb);
      ibd.sample(in_valid_i.read(), inb);
      ibs.sample(sel_valid_i.read(), seb);
      const bits_t<N> oready = out_ready_i.read();
      const bool ofree = oq.can_load(oready);
      const stop_t rank = cfg_rank_i.read();

      const bool hd = ibd.head_valid(), hs = ibs.head_valid();
      const UBeat<W> d = ibd.head();
      const UBeat<N> s = ibs.head();
      UBeat<W> o;
      bits_t<N> mask = all_ones<N>();
      bool consume_d = false, consume_s = false, emit = false;
      if (drain) {
        if (!data_done) {
          if (hd) {
            consume_d = true;
            data_done = d.done;
          }
        } else if (ofree) {
          emit = true;  // a bare done beat to every output
          o.done = true;
          drain = false;
          data_done = false;
        }
      } else if (hs) {
        if (!s.elem) {
          consume_s = true;
          drain = s.done;
        } else if (hd) {
          if (!d.elem && (rank == 0 || d.stop == 0)) {
            consume_d = true;  // rank 0: outer structure between elements
          } else if (ofree) {
            emit = true;
            mask = s.data;
            o = d;
            o.done = false;
            if (rank == 0)
              o.stop = 0;
            else if (d.stop > rank)
              o.stop = rank;
            consume_d = true;
            data_done = d.done;
            const bool chunk_end = rank == 0 ? d.elem : d.stop >= rank;
            if (chunk_end) {
              consume_s = true;
              drain = s.done;
            }
          }
        }
      }

      ibd.update(consume_d);
      ibs.update(consume_s);
      oq.update(oready, emit, o, mask);
      in_ready_o.write(ibd.ready());
      sel_ready_o.write(ibs.ready());
      STEPSIM_WRITE_OUT(out, oq);
    }
  }
};

}  // namespace stepsim::units
