// Compute unit, retiling of dynamic [r x T] tiles (docs/units.md): the two STeP retile
// operators on the square tiles with the tile header (docs/unit-protocol.md: lane (i, j) in
// bits [16(iT+j) +: 16], the row count r = 0..T in bits [16T² +: RW], RW = clog2(T + 1)).
//
//   cfg_mode_i = 0   Accum<rank> retile_row (hw/functions accum retile_row, hw/ops Accum):
//                    the unit holds an accumulating tile of up to T rows and its row count.
//                    Each element [r x T] is appended below the rows held. A beat (element or
//                    bare stop) with stop s >= rank (cfg_rank_i, 1..15) closes the group: the
//                    accumulated tile leaves (header = its rows, lanes of the other rows 0) with
//                    stop s - rank and the beat's done, and the accumulator is cleared. A group
//                    without rows (a closing bare stop, or only [0 x T] elements) leaves as a
//                    [0 x T] tile (the approximate Accum emits a 0x0 tile there). Bare stops below
//                    the rank leave nothing; a bare done on an empty group leaves a bare done.
//   cfg_mode_i = 1   FlatMap<1> retile_streamify_row: an element [r x T] with stop s and done d
//                    leaves as r beats [1 x T] (header 1, row k in the lanes of row 0, the other
//                    lanes 0), the last one with stop (s ? s + 1 : 1) and done d; r = 0 leaves one
//                    bare stop (s ? s + 1 : 1) with done d. A bare stop s leaves as a bare stop
//                    s + 1 (with its done), a bare done as a bare done. cfg_rank_i is not used.
//
// err_o (sticky until reset; the beat still moves, so the stream still ends):
//   mode 0: an element whose rows do not fit the T rows (the rows beyond T are dropped), a done
//           without a closing stop in a group that has seen an element (the group is dropped,
//           a bare done leaves); the approximate operator fails the run in both cases;
//   mode 1: a header r > T (T rows leave), a stop 15 (S16 cannot travel: S15 leaves).
//
// Pins: clk_i, rst_ni, cfg_mode_i, cfg_rank_i [3:0], stream in and stream out of W = 16T² + RW
// bits (protocol.h), err_o. Standard port logic (InBuf, OutReg): latency 1 cycle from the
// closing beat (mode 0) or from the element (mode 1, its first row). Mode 0 takes 1 input beat
// per cycle (a closing beat needs the output register); mode 1 emits 1 beat per cycle, max(r, 1)
// cycles per element: the element stays in the input buffer until its last row leaves.
// Datapath: a shifter that places the element's rows below the held ones (T row muxes of up to
// T + 1 inputs) and a T-input row mux for mode 1; no arithmetic on the lanes.
// RTL twin: rtl/pcu_retile.sv (rtl/pcu_retile_t16.sv at T = 16).
#pragma once

#include "hw/units/protocol.h"

namespace stepsim::units {

// cfg_mode_i of PcuRetile.
constexpr bool kRetileRow = false;       // Accum<rank> retile_row
constexpr bool kRetileStreamify = true;  // FlatMap<1> retile_streamify_row

template <int T = 4>
struct PcuRetile : sc_core::sc_module {
  static_assert(T >= 2 && T <= 64, "square tiles of 2..64 rows");
  static constexpr int RW = clog2(T + 1);  // header width: r = 0..T
  static constexpr int DW = 16 * T * T;    // the lanes
  static constexpr int W = DW + RW;        // payload: lanes and header
  static constexpr int RB = 16 * T;        // bits of one row
  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  sc_core::sc_in<bool> cfg_mode_i{"cfg_mode_i"};    // kRetileRow / kRetileStreamify; quasi-static
  sc_core::sc_in<stop_t> cfg_rank_i{"cfg_rank_i"};  // mode 0: the Accum rank, 1..15
  STEPSIM_STREAM_IN(in, W);
  STEPSIM_STREAM_OUT(out, 1, W);
  sc_core::sc_out<bool> err_o{"err_o"};  // sticky until reset

  SC_HAS_PROCESS(PcuRetile);
  explicit PcuRetile(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    SC_CTHREAD(run, clk_i.pos());
    async_reset_signal_is(rst_ni, false);
  }

  void run() {
    InBuf<W> ib;
    OutReg<1, W> oq;
    bits_t<DW> acc = 0;  // mode 0: the accumulated tile; lanes of rows >= held are 0
    int held = 0;        // mode 0: its rows, 0..T
    bool acc_v = false;  // mode 0: the group has seen an element
    int k = 0;           // mode 1: the next row of the head element
    bool err = false;
    ib.reset();
    oq.reset();
    in_ready_o.write(false);
    err_o.write(false);
    STEPSIM_WRITE_OUT(out, oq);
    while (true) {
      wait();
      UBeat<W> inb;
      STEPSIM_READ_IN(in, inb);
      ib.sample(in_valid_i.read(), inb);
      const bool oready = out_ready_i.read();
      const bool ofree = oq.can_load(oready);
      const bool mode1 = cfg_mode_i.read();
      const stop_t rank = cfg_rank_i.read();
      const UBeat<W>& h = ib.head();
      const bool hv = ib.head_valid();
      const int r_in = int(h.data.range(W - 1, DW).to_uint());  // the element's header

      bool consume = false, emit = false;
      UBeat<W> o;
      if (hv && mode1 == kRetileRow) {
        // Append the element's rows below the held ones: row i = input row i - held.
        const int total = held + (h.elem ? r_in : 0);
        const int rows = total > T ? T : total;
        bits_t<DW> next = acc;
        for (int i = 0; i < T; ++i)
          if (h.elem && i >= held && i < total) copy_range<RB, DW, W>(next, RB * i, h.data, RB * (i - held));
        const bool closes = h.stop >= rank;
        if (closes || h.done) {
          if (ofree) {
            emit = true;
            consume = true;
            o.elem = closes;
            o.stop = closes ? stop_t(h.stop - rank) : stop_t(0);
            o.done = h.done;
            o.data.range(DW - 1, 0) = next;
            o.data.range(W - 1, DW) = unsigned(rows);
            if (h.elem && total > T) err = true;
            if (!closes && (acc_v || h.elem)) err = true;  // the stream ends inside a group
            acc = 0;
            held = 0;
            acc_v = false;
          }
        } else {
          consume = true;
          if (h.elem && total > T) err = true;
          acc = next;
          held = rows;
          acc_v = acc_v || h.elem;
        }
      } else if (hv) {
        // Streamify: one row per cycle; the element leaves the buffer with its last row.
        const bool top = h.stop == 15;  // S16 cannot travel
        const stop_t close = h.stop == 0 ? stop_t(1) : top ? stop_t(15) : stop_t(h.stop + 1);
        const int rr = r_in > T ? T : r_in;
        if (ofree) {
          emit = true;
          if (!h.elem) {
            o.stop = h.stop == 0 ? stop_t(0) : close;
            o.done = h.done;
            emit = h.stop != 0 || h.done;  // an empty beat is dropped
            consume = true;
            if (top) err = true;
          } else if (rr == 0) {
            o.stop = close;
            o.done = h.done;
            consume = true;
            if (top) err = true;
          } else {
            const bool last = k == rr - 1;
            o.elem = true;
            for (int j = 0; j < T; ++j)
              if (j == k) copy_range<RB, W, W>(o.data, 0, h.data, RB * j);
            o.data.range(W - 1, DW) = 1u;
            o.stop = last ? close : stop_t(0);
            o.done = last && h.done;
            if (last) {
              consume = true;
              k = 0;
              if (top || r_in > T) err = true;
            } else {
              k = k + 1;
            }
          }
        }
      }

      ib.update(consume);
      oq.update(oready, emit, o, true);
      in_ready_o.write(ib.ready());
      err_o.write(err);
      STEPSIM_WRITE_OUT(out, oq);
    }
  }
};

}  // namespace stepsim::units
