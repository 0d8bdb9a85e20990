// Shape unit, Expand<rank> (docs/units.md): repeats each element of the data stream (`in`,
// whose inner `rank` dimensions have size 1) over the matching group of the reference
// stream (`ref`): one output beat per ref beat, carrying the held data element where the ref
// beat has an element and the ref beat's stop and done. A group ends at the first ref stop
// >= rank (rank 0: at every ref element). Empty outer dimensions (bare stops) appear in both
// streams and pass once.
// Latency 1 cycle, 1 beat/cycle (one per ref beat). RTL twin: rtl/shape_expand.sv.
#pragma once

#include "hw/units/protocol.h"

namespace stepsim::units {

template <int W = 32>
struct ShapeExpand : sc_core::sc_module {
  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  sc_core::sc_in<stop_t> cfg_rank_i{"cfg_rank_i"};  // quasi-static: change only in reset
  STEPSIM_STREAM_IN(in, W);
  STEPSIM_STREAM_IN(ref, W);
  STEPSIM_STREAM_OUT(out, 1, W);

  SC_HAS_PROCESS(ShapeExpand);
  explicit ShapeExpand(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    SC_CTHREAD(run, clk_i.pos());
    async_reset_signal_is(rst_ni, false);
  }

  void run() {
    InBuf<W> ibd, ibr;
    OutReg<1, W> oq;
    bool data_done = false, ref_done = false;
    ibd.reset();
    ibr.reset();
    oq.reset();
    in_ready_o.write(false);
    ref_ready_o.write(false);
    STEPSIM_WRITE_OUT(out, oq);
    while (true) {
      wait();
      UBeat<W> inb, rfb;
      STEPSIM_READ_IN(in, inb);
      STEPSIM_READ_IN(ref, rfb);
      ibd.sample(in_valid_i.read(), inb);
      ibr.sample(ref_valid_i.read(), rfb);
      const bool oready = out_ready_i.read();
      const bool ofree = oq.can_load(oready);
      const stop_t rank = cfg_rank_i.read();

      const bool hd = ibd.head_valid(), hr = ibr.head_valid();
      const UBeat<W> d = ibd.head();
      const UBeat<W> r = ibr.head();
      UBeat<W> o;
      bool consume_d = false, consume_r = false, emit = false;
      bool dd = data_done, rd = ref_done;
      if (data_done) {
        // The data ended first: the ref's bare done closes the output.
        if (hr && ofree) {
          consume_r = true;
          emit = true;
          o.done = true;
          rd = true;
        }
      } else if (hd) {
        if (!d.elem && d.stop != 0) {
          // An empty outer dimension: the ref has the same bare stop.
          if (hr && ofree) {
            consume_d = true;
            consume_r = true;
            emit = true;
            o.stop = d.stop;
            o.done = r.done;
            dd = d.done;
            rd = r.done;
          }
        } else if (!d.elem) {
          consume_d = true;  // the data's bare done
          dd = true;
        } else if (hr && ofree) {
          // Replay the data element over the ref group, one ref beat per cycle.
          consume_r = true;
          emit = true;
          o.elem = r.elem;
          o.data = d.data;
          o.stop = r.stop;
          o.done = r.done;
          const bool closes = rank == 0 ? r.elem : r.stop >= rank;
          if (closes || r.done) {
            consume_d = true;
            dd = d.done;
            rd = r.done;
          }
        }
      }
      // Both streams ended: ready for the next pair.
      data_done = dd && !rd ? true : false;
      ref_done = rd && !dd ? true : false;

      ibd.update(consume_d);
      ibr.update(consume_r);
      oq.update(oready, emit, o, true);
      in_ready_o.write(ibd.ready());
      ref_ready_o.write(ibr.ready());
      STEPSIM_WRITE_OUT(out, oq);
    }
  }
};

}  // namespace stepsim::units
