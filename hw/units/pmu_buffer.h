// Memory unit (PMU): a Bufferize<rank> -> Streamify pair fused on one banked SRAM
// (docs/units.md). The unit stores the inner `rank` dimensions of its input stream as buffers
// and replays every buffer, either a static number of times (Streamify `repeat`, up to R
// nested factors) or once per element of the inner `ref_rank` dimensions of the `ref` stream
// (Streamify with a ref input). The output is exactly the stream the approximate
// Bufferize -> Streamify pair produces (hw/ops/onchip.cpp); buffer references stay inside
// the unit (a descriptor queue), they never appear on the pins.
//
// Storage: BANKS x DEPTH words (CAP = BANKS * DEPTH), address a in bank a % BANKS, row
// a / BANKS, one write and one read port (1R1W banks), so a write and a read proceed in the
// same cycle. A word is one beat: the W-bit payload plus a 5-bit tag (elem, stop clamped to
// rank). The words form a ring: a buffer is a contiguous range of it. Closed buffers wait in
// a queue of NBUF descriptors (start, length, outer stop, done), so the next buffers are
// written while the oldest one is replayed (double buffering and more), as long as the ring
// and the queue have room. The words of a buffer are freed when its last replay ends.
//
// Capacity: a buffer of more than CAP beats can never fit. Its beat CAP+1 sets the sticky
// error pin err_o (cleared by reset only) and every further beat of that buffer is dropped,
// so the unit never stalls on it; the approximate Bufferize fails the run on a buffer larger
// than the memory available to it, and the bridge fails the run when err_o rises. err_o is
// also set by a stream that ends inside a buffer (no closing stop, an error in the
// approximate Bufferize too). A buffer that fits but not into the free part of the ring waits
// (back-pressure: in_ready_o drops once the input buffer is full).
//
// Timing: writes 1 beat/cycle; replays 1 beat/cycle, no bubble between replays or buffers.
// The first beat of a buffer can be taken 2 cycles after the edge that accepted its closing
// beat (descriptor register, then the output register). An empty buffer replays as one bare
// stop per replay (1 cycle each); repeat 0 gives one bare stop.
// Affine (strided) reads are not implemented: the unit replays linearly. In static mode the ref
// port is unused and drops whatever arrives on it.
// RTL twin: rtl/pmu_buffer.sv.
#pragma once

#include "hw/units/protocol.h"

namespace stepsim::units {

template <int W = 32, int BANKS = 4, int DEPTH = 16, int NBUF = 4, int R = 2, int CW = 8>
struct PmuBuffer : sc_core::sc_module {
  static constexpr int CAP = BANKS * DEPTH;   // words
  static constexpr int AW = clog2(CAP);   // ring address
  static constexpr int BW = clog2(BANKS); // bank select (low address bits)
  static constexpr int LW = AW + 1;           // lengths and counts 0..CAP
  static constexpr int QW = clog2(NBUF);  // descriptor queue pointer
  static_assert((BANKS & (BANKS - 1)) == 0 && (DEPTH & (DEPTH - 1)) == 0, "BANKS and DEPTH are powers of two");
  static_assert(CAP >= 2, "at least two words");
  static_assert(NBUF >= 2 && (NBUF & (NBUF - 1)) == 0, "NBUF is a power of two, at least 2 (double buffering)");
  static_assert(R >= 1 && R <= 4, "1..4 static repeat factors");

  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  // Quasi-static configuration (change only in reset).
  sc_core::sc_in<stop_t> cfg_rank_i{"cfg_rank_i"};          // Bufferize rank b, 1..15
  sc_core::sc_in<bool> cfg_ref_i{"cfg_ref_i"};              // 1: replays driven by the ref stream
  sc_core::sc_in<stop_t> cfg_ref_rank_i{"cfg_ref_rank_i"};  // Streamify rank c of the ref (>= 1)
  sc_core::sc_in<stop_t> cfg_nrep_i{"cfg_nrep_i"};          // static: number of repeat factors, 0..R
  sc_core::sc_in<bits_t<R * CW>> cfg_repeat_i{"cfg_repeat_i"};  // factor k (outermost first) in [CW*k +: CW]
  STEPSIM_STREAM_IN(in, W);
  STEPSIM_STREAM_IN(ref, W);
  STEPSIM_STREAM_OUT(out, 1, W);
  sc_core::sc_out<bool> err_o{"err_o"};  // sticky: a buffer exceeded CAP, or the input ended inside a buffer

  SC_HAS_PROCESS(PmuBuffer);
  explicit PmuBuffer(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    SC_CTHREAD(run, clk_i.pos());
    async_reset_signal_is(rst_ni, false);
  }

  void run() {
    // The SRAM (not reset: its contents are only read after being written).
    bits_t<W> mem_data[BANKS][DEPTH];
    bool mem_elem[BANKS][DEPTH];
    stop_t mem_stop[BANKS][DEPTH];
    // Descriptor queue of closed buffers (entries are read only while valid: not reset).
    bits_t<AW> q_start[NBUF];
    bits_t<LW> q_len[NBUF];
    stop_t q_stop[NBUF];  // the buffer reference's stop (closing stop - rank)
    bool q_done[NBUF];    // the reference carried the stream's done
    bool q_eos[NBUF];     // no buffer: a bare done (the stream ended after its last buffer)
    bits_t<QW> q_head = 0, q_tail = 0;
    bits_t<QW + 1> q_cnt = 0;
    // Write side.
    bits_t<AW> wp = 0;      // next word
    bits_t<AW> bstart = 0;  // first word of the open buffer
    bits_t<LW> blen = 0;    // beats of the open buffer
    bits_t<LW> used = 0;    // words held (closed buffers and the open one)
    bool err = false;
    // Read side.
    bits_t<LW> rpos = 0;  // beat of the current replay
    bits_t<R * CW> cnts = 0;  // static repeat counters, counter k in [CW*k +: CW]
    bool fin = false;     // ref mode: the done buffer's group ended; drain the ref, then a bare done
    bool rdone = false;   // ref mode: the ref's done has been consumed
    InBuf<W> ib, ibr;
    OutReg<1, W> oq;
    ib.reset();
    ibr.reset();
    oq.reset();
    in_ready_o.write(false);
    ref_ready_o.write(false);
    err_o.write(false);
    STEPSIM_WRITE_OUT(out, oq);
    while (true) {
      wait();
      UBeat<W> inb, rfb;
      STEPSIM_READ_IN(in, inb);
      STEPSIM_READ_IN(ref, rfb);
      ib.sample(in_valid_i.read(), inb);
      ibr.sample(ref_valid_i.read(), rfb);
      const bool oready = out_ready_i.read();
      const bool ofree = oq.can_load(oready);
      const stop_t rank = cfg_rank_i.read();
      const bool dyn = cfg_ref_i.read();
      const stop_t crank = cfg_ref_rank_i.read();
      const stop_t nrep = cfg_nrep_i.read();
      const bits_t<R * CW> rep = cfg_repeat_i.read();
      bits_t<CW> fac[R], cnt[R];
      bool zero_total = false;
      for (int k = 0; k < R; ++k) {
        fac[k] = slice<CW, R * CW>(rep, CW * k);
        cnt[k] = slice<CW, R * CW>(cnts, CW * k);
        zero_total = zero_total || (k < int(nrep) && fac[k] == 0);
      }

      // ---- write side: store the head beat, close a buffer into a descriptor.
      const UBeat<W> h = ib.head();
      const bool closes = h.stop >= rank;
      const bool store = h.elem || (h.stop != 0 && (!closes || blen != 0));
      const bool push = closes || h.done;
      const bool overflow = store && blen == bits_t<LW>(CAP);
      const bool can_write = ib.head_valid() && (!store || overflow || used != bits_t<LW>(CAP)) &&
                             (!push || q_cnt != bits_t<QW + 1>(NBUF));
      const bool wr_en = can_write && store && !overflow;
      const bits_t<LW> len_w = blen + (wr_en ? 1 : 0);
      const bits_t<AW> wp_n = wr_en ? bits_t<AW>(wp + 1) : wp;
      bool err_n = err || (can_write && overflow) || (can_write && h.done && !closes && len_w != 0);
      const bool do_push = can_write && push;

      // ---- read side: replay the head descriptor.
      const int qh = int(q_head.to_uint());
      const bool dv = q_cnt != 0;
      const bits_t<AW> d_start = q_start[qh];
      const bits_t<LW> d_len = q_len[qh];
      const stop_t d_stop = q_stop[qh];
      const bool d_done = q_done[qh], d_eos = q_eos[qh];
      const bits_t<AW> raddr = d_start + bits_t<AW>(rpos.to_uint());
      const int rb_ = int(raddr.to_uint()) & (BANKS - 1), rr_ = int(raddr.to_uint()) >> BW;
      UBeat<W> word;
      word.data = mem_data[rb_][rr_];
      word.elem = mem_elem[rb_][rr_];
      word.stop = mem_stop[rb_][rr_];
      const bool lastbeat = d_len == 0 || rpos == d_len - 1;
      // Static repeat: the trailing factors at their last count end with this replay.
      stop_t ended = 0;
      bool run_on = true;
      for (int k = R - 1; k >= 0; --k) {
        if (k < int(nrep)) {
          run_on = run_on && cnt[k] == fac[k] - 1;
          if (run_on) ended = ended + 1;
        }
      }
      const bool all_last = ended == nrep;
      const UBeat<W> rh = ibr.head();
      const bool rv = ibr.head_valid();

      bool emit = false, pop = false, consume_r = false, advance = false;
      bool fin_n = fin, rdone_n = rdone;
      UBeat<W> o;
      bool replay_beat = false;  // emit `word` (or the bare stop of an empty buffer), closing with `close`
      stop_t close = 0;
      bool close_done = false;
      if (!dyn) consume_r = rv;  // static mode: the ref port is unused, its beats are dropped
      if (dv) {
        if (!dyn) {
          if (d_eos) {
            if (ofree) {
              emit = true;
              o.done = true;
              pop = true;
            }
          } else if (zero_total) {
            if (ofree) {
              emit = true;
              o.stop = rank + nrep + d_stop;
              o.done = d_done;
              pop = true;
            }
          } else {
            replay_beat = true;
            close = rank + ended + (all_last ? d_stop : stop_t(0));
            close_done = all_last && d_done;
            if (ofree && lastbeat) {
              advance = true;
              pop = all_last;
            }
          }
        } else if (d_eos || fin) {
          if (!rdone) {
            if (rv) {  // drain the rest of the ref stream
              consume_r = true;
              rdone_n = rh.done;
            }
          } else if (ofree) {
            emit = true;
            o.done = true;
            pop = true;
            fin_n = false;
            rdone_n = false;
          }
        } else if (rv) {
          const bool group_end = rh.stop >= crank || rh.done;
          if (!rh.elem) {
            if (ofree) {
              emit = true;
              o.stop = rank + rh.stop;
              consume_r = true;
            }
          } else {
            replay_beat = true;
            close = rank + rh.stop;
            consume_r = ofree && lastbeat;
          }
          if (consume_r) {
            rdone_n = rh.done;
            if (group_end) {
              if (d_done)
                fin_n = true;
              else
                pop = true;
            }
          }
        }
      }
      if (replay_beat && ofree) {
        emit = true;
        if (d_len == 0) {
          o.stop = close;
        } else {
          o = word;
          if (lastbeat) o.stop = close;
        }
        o.done = lastbeat && close_done;
      }
      if (emit && replay_beat) rpos = lastbeat ? bits_t<LW>(0) : bits_t<LW>(rpos + 1);
      if (advance) {
        bool carry = true;
        for (int k = R - 1; k >= 0; --k) {
          if (k < int(nrep) && carry) {
            if (cnt[k] == fac[k] - 1) {
              set_slice<CW, R * CW>(cnts, CW * k, bits_t<CW>(0));
            } else {
              set_slice<CW, R * CW>(cnts, CW * k, bits_t<CW>(cnt[k] + 1));
              carry = false;
            }
          }
        }
      }

      // ---- registers (the SRAM write port: the read above never addresses the word written,
      // which lies outside every closed buffer)
      if (wr_en) {
        const int wb = int(wp.to_uint()) & (BANKS - 1), wr = int(wp.to_uint()) >> BW;
        mem_data[wb][wr] = h.elem ? h.data : bits_t<W>(0);
        mem_elem[wb][wr] = h.elem;
        mem_stop[wb][wr] = closes ? rank : h.stop;
      }
      if (do_push) {
        const int qt = int(q_tail.to_uint());
        q_start[qt] = bstart;
        q_len[qt] = len_w;
        q_stop[qt] = closes ? stop_t(h.stop - rank) : stop_t(0);
        q_done[qt] = h.done;
        q_eos[qt] = !closes;
        q_tail = q_tail + 1;
        bstart = wp_n;
        blen = 0;
      } else {
        blen = len_w;
      }
      if (pop) q_head = q_head + 1;
      q_cnt = q_cnt + (do_push ? 1 : 0) - (pop ? 1 : 0);
      used = used + (wr_en ? 1 : 0) - (pop ? d_len : bits_t<LW>(0));
      wp = wp_n;
      err = err_n;
      fin = fin_n;
      rdone = rdone_n;

      ib.update(can_write);
      ibr.update(consume_r);
      oq.update(oready, emit, o, true);
      in_ready_o.write(ib.ready());
      ref_ready_o.write(ibr.ready());
      err_o.write(err);
      STEPSIM_WRITE_OUT(out, oq);
    }
  }
};

}  // namespace stepsim::units
