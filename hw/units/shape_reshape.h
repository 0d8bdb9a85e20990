// Shape unit, Reshape<chunk, rank> with its padding output (docs/units.md): splits dimension
// `rank` (0 = innermost) into chunks of `chunk` entries, adding a dimension.
//   rank 0: every chunk-th element closes a chunk with S1 (S(s+1) when it carries S_s); a
//     stop or the stream's end inside a chunk pads it to `chunk` elements with cfg_pad_i,
//     the last padding element closing with S(s+1) (S1 at the end); bare stops are raised by
//     one.
//   rank r >= 1: stops below r pass; each S_r closes a unit and every chunk-th one becomes
//     S(r+1); a stop S_s > r (which must close a whole number of chunks) becomes S(s+1).
// The `pad` output has the same structure with a 1-bit payload per element: 1 = padding.
// Both outputs leave together (a beat is emitted when both registers are free).
// Latency 1 cycle, 1 beat/cycle; padding elements one per cycle; a bare stop (or done) that
// closes a partial chunk costs one extra cycle before its padding.
// CW: width of the chunk size (cfg_chunk_i >= 1). RTL twin: rtl/shape_reshape.sv.
#pragma once

#include "hw/units/protocol.h"

namespace stepsim::units {

template <int W = 32, int CW = 8>
struct ShapeReshape : sc_core::sc_module {
  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  sc_core::sc_in<bits_t<CW>> cfg_chunk_i{"cfg_chunk_i"};  // quasi-static: change only in reset
  sc_core::sc_in<stop_t> cfg_rank_i{"cfg_rank_i"};
  sc_core::sc_in<bits_t<W>> cfg_pad_i{"cfg_pad_i"};  // the padding element
  STEPSIM_STREAM_IN(in, W);
  STEPSIM_STREAM_OUT(out, 1, W);
  STEPSIM_STREAM_OUT(pad, 1, 1);

  SC_HAS_PROCESS(ShapeReshape);
  explicit ShapeReshape(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    SC_CTHREAD(run, clk_i.pos());
    async_reset_signal_is(rst_ni, false);
  }

  void run() {
    InBuf<W> ib;
    OutReg<1, W> oq;
    OutReg<1, 1> pq;
    bits_t<CW> count = 0;   // elements (rank 0) or closed units (rank >= 1) of the open chunk
    bool padding = false;   // emitting the padding of a chunk
    stop_t pad_level = 0;   // stop of the last padding element
    bool pad_done = false;  // ... and its done
    ib.reset();
    oq.reset();
    pq.reset();
    in_ready_o.write(false);
    STEPSIM_WRITE_OUT(out, oq);
    STEPSIM_WRITE_OUT(pad, pq);
    while (true) {
      wait();
      UBeat<W> inb;
      STEPSIM_READ_IN(in, inb);
      ib.sample(in_valid_i.read(), inb);
      const bool oready = out_ready_i.read(), pready = pad_ready_i.read();
      const bool ofree = oq.can_load(oready) && pq.can_load(pready);
      const bits_t<CW> chunk = cfg_chunk_i.read();
      const stop_t rank = cfg_rank_i.read();

      const UBeat<W> h = ib.head();
      const bits_t<CW> c1 = count + 1;
      const bool full = c1 == chunk;
      const stop_t up = h.stop != 0 ? stop_t(h.stop + 1) : stop_t(1);  // the chunk's closing stop
      UBeat<W> o = h;
      bool is_pad = false, emit = false, consume = false;
      if (padding) {
        if (ofree) {
          emit = true;
          is_pad = true;
          o.elem = true;
          o.data = cfg_pad_i.read();
          o.stop = full ? pad_level : stop_t(0);
          o.done = full && pad_done;
          count = full ? bits_t<CW>(0) : c1;
          padding = !full;
        }
      } else if (ib.head_valid() && ofree) {
        consume = true;
        if (rank == 0) {
          if (h.elem) {
            const bool pad_after = !full && (h.stop != 0 || h.done);
            emit = true;
            o.stop = full ? up : stop_t(0);
            o.done = h.done && !pad_after;
            count = full ? bits_t<CW>(0) : c1;
            padding = pad_after;
            pad_level = up;
            pad_done = h.done;
          } else if (count != 0) {  // a bare stop or done inside a chunk: pad it first
            padding = true;
            pad_level = up;
            pad_done = h.done;
          } else {
            emit = true;
            o.stop = h.stop != 0 ? stop_t(h.stop + 1) : stop_t(0);
          }
        } else {
          emit = true;
          if (h.stop >= rank) {
            if (h.stop == rank) {
              o.stop = full ? stop_t(rank + 1) : rank;
              count = full ? bits_t<CW>(0) : c1;
            } else {
              o.stop = h.stop + 1;
              count = 0;
            }
          }
          if (h.done) count = 0;  // the stream may end inside a chunk (its outermost dimension)
        }
      }
      UBeat<1> f;
      f.elem = o.elem;
      f.data = is_pad;
      f.stop = o.stop;
      f.done = o.done;

      ib.update(consume);
      oq.update(oready, emit, o, true);
      pq.update(pready, emit, f, true);
      in_ready_o.write(ib.ready());
      STEPSIM_WRITE_OUT(out, oq);
      STEPSIM_WRITE_OUT(pad, pq);
    }
  }
};

}  // namespace stepsim::units
