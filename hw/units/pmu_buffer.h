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
// Affine reads (Streamify out_shape/stride, view rank 1..NA, cfg_view_rank_i != 0): a replay of
// a regular buffer walks the view with NA index counters and NA running addresses (address of
// dimension k = address of the outer dimensions + idx[k] * stride[k], advanced by one add per
// beat: no multiplier), one read per cycle, the view's own stops on the elements; a ragged
// buffer (dimensions of different sizes) is replayed linearly, as the approximate Streamify does.
// To tell the two apart the write side tracks the size of each buffered dimension (Bufferize
// rank <= NA in affine mode). For the element index to be the word index, a bare stop that
// follows an element without a stop is folded into that element's word (its tag is rewritten,
// a fold bit set); a linear replay unfolds it again (two beats), so the output is unchanged.
// A read outside the buffer's elements sets err_o (the approximate Streamify fails the run)
// and replays a 0. Linear mode (cfg_view_rank_i = 0) is the unit without these parts.
// In static mode the ref port is unused and drops whatever arrives on it.
// RTL twin: rtl/pmu_buffer.sv.
#pragma once

#include <cstdint>

#include "hw/units/protocol.h"

namespace stepsim::units {

template <int W = 32, int BANKS = 4, int DEPTH = 16, int NBUF = 4, int R = 2, int CW = 8, int NA = 4, int VW = 16>
struct PmuBuffer : sc_core::sc_module {
  static constexpr int CAP = BANKS * DEPTH;  // words
  static constexpr int AW = clog2(CAP);      // ring address
  static constexpr int BW = clog2(BANKS);    // bank select (low address bits)
  static constexpr int LW = AW + 1;          // lengths and counts 0..CAP
  static constexpr int QW = clog2(NBUF);     // descriptor queue pointer
  static_assert((BANKS & (BANKS - 1)) == 0 && (DEPTH & (DEPTH - 1)) == 0, "BANKS and DEPTH are powers of two");
  static_assert(CAP >= 2, "at least two words");
  static_assert(NBUF >= 2 && (NBUF & (NBUF - 1)) == 0, "NBUF is a power of two, at least 2 (double buffering)");
  static_assert(R >= 1 && R <= 4, "1..4 static repeat factors");
  static constexpr int XW = LW + 1;  // affine running address (saturates: anything >= CAP is out of range)
  static_assert(NA >= 1 && NA <= 4 && NA * VW <= 64 && VW >= 2, "1..4 view dimensions, NA * VW <= 64");

  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  // Quasi-static configuration (change only in reset).
  sc_core::sc_in<stop_t> cfg_rank_i{"cfg_rank_i"};               // Bufferize rank b, 1..15
  sc_core::sc_in<bool> cfg_ref_i{"cfg_ref_i"};                   // 1: replays driven by the ref stream
  sc_core::sc_in<stop_t> cfg_ref_rank_i{"cfg_ref_rank_i"};       // Streamify rank c of the ref (>= 1)
  sc_core::sc_in<stop_t> cfg_nrep_i{"cfg_nrep_i"};               // static: number of repeat factors, 0..R
  sc_core::sc_in<bits_t<R * CW>> cfg_repeat_i{"cfg_repeat_i"};   // factor k (outermost first) in [CW*k +: CW]
  sc_core::sc_in<stop_t> cfg_view_rank_i{"cfg_view_rank_i"};     // 0: linear; 1..NA: affine view rank
  sc_core::sc_in<bits_t<NA * VW>> cfg_shape_i{"cfg_shape_i"};    // out_shape[k] (outermost first) in [VW*k +: VW]
  sc_core::sc_in<bits_t<NA * VW>> cfg_stride_i{"cfg_stride_i"};  // stride[k] in [VW*k +: VW]
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
    // The SRAM (not reset: its contents are only read after being written). The co-simulation
    // configuration's 1024 words take about 50 KB of the thread's stack (SystemC's default: 256 KB).
    bits_t<W> mem_data[BANKS][DEPTH];
    bool mem_elem[BANKS][DEPTH];
    stop_t mem_stop[BANKS][DEPTH];
    bool mem_fold[BANKS][DEPTH];  // affine mode: a bare stop folded into this element's word
    // Descriptor queue of closed buffers (entries are read only while valid: not reset).
    bits_t<AW> q_start[NBUF];
    bits_t<LW> q_len[NBUF];
    stop_t q_stop[NBUF];  // the buffer reference's stop (closing stop - rank)
    bool q_done[NBUF];    // the reference carried the stream's done
    bool q_eos[NBUF];     // no buffer: a bare done (the stream ended after its last buffer)
    bool q_aff[NBUF];     // replayed through the affine view (affine mode and a regular buffer)
    bool q_ne[NBUF];      // the buffer holds elements (a regular one then holds only elements)
    bits_t<QW> q_head = 0, q_tail = 0;
    bits_t<QW + 1> q_cnt = 0;
    // Write side.
    bits_t<AW> wp = 0;      // next word
    bits_t<AW> bstart = 0;  // first word of the open buffer
    bits_t<LW> blen = 0;    // beats of the open buffer
    bits_t<LW> used = 0;    // words held (closed buffers and the open one)
    bool err = false;
    // Write side, affine mode: fold and regularity tracking of the open buffer.
    bool pz = false;                       // its last word is an element without a stop (a bare stop folds into it)
    bool rg = false;                       // ragged so far
    bool hasel = false;                    // it holds an element
    bits_t<LW> cur[NA] = {}, sz[NA] = {};  // level j: count in the open group, size of the closed groups
    bool szv[NA] = {};                     // a group of level j has closed (sz[j] valid)
    // Read side.
    bits_t<LW> rpos = 0;      // beat of the current replay
    bits_t<R* CW> cnts = 0;   // static repeat counters, counter k in [CW*k +: CW]
    bool fin = false;         // ref mode: the done buffer's group ended; drain the ref, then a bare done
    bool rdone = false;       // ref mode: the ref's done has been consumed
    bool half = false;        // linear replay of a folded word: its element went out, its bare stop is next
    bits_t<VW> idx[NA] = {};  // affine view index, dimension k (outermost first)
    bits_t<XW> ad[NA] = {};   // running address: sum over j <= k of idx[j] * stride[j]
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
      const bits_t<R* CW> rep = cfg_repeat_i.read();
      bits_t<CW> fac[R], cnt[R];
      bool zero_total = false;
      for (int k = 0; k < R; ++k) {
        fac[k] = slice<CW, R * CW>(rep, CW * k);
        cnt[k] = slice<CW, R * CW>(cnts, CW * k);
        zero_total = zero_total || (k < int(nrep) && fac[k] == 0);
      }
      const stop_t vr = cfg_view_rank_i.read();
      const bool aff_cfg = vr != 0;
      const int nv = !aff_cfg ? 0 : int(vr) > NA ? NA : int(vr);  // view rank
      const uint64_t shp_pk = cfg_shape_i.read().to_uint64(), str_pk = cfg_stride_i.read().to_uint64();
      uint64_t shp[NA], str[NA];
      bool vzero = false;  // the view has an empty dimension: every replay is one bare stop
      for (int k = 0; k < NA; ++k) {
        shp[k] = (shp_pk >> (VW * k)) & ((uint64_t(1) << VW) - 1);
        str[k] = (str_pk >> (VW * k)) & ((uint64_t(1) << VW) - 1);
        vzero = vzero || (k < nv && shp[k] == 0);
      }

      // ---- write side: store the head beat, close a buffer into a descriptor.
      const UBeat<W> h = ib.head();
      const bool closes = h.stop >= rank;
      // Affine mode: a bare stop right after an element without a stop rides on that element's word.
      const bool fold = aff_cfg && pz && !h.elem && h.stop != 0;
      const bool store = !fold && (h.elem || (h.stop != 0 && (!closes || blen != 0)));
      const bool push = closes || h.done;
      const bool overflow = store && blen == bits_t<LW>(CAP);
      const bool can_write = ib.head_valid() && (!store || overflow || used != bits_t<LW>(CAP)) &&
                             (!push || q_cnt != bits_t<QW + 1>(NBUF));
      const bool wr_en = can_write && store && !overflow;
      const bits_t<LW> len_w = blen + (wr_en ? 1 : 0);
      const bits_t<AW> wp_n = wr_en ? bits_t<AW>(wp + 1) : wp;
      bool err_n = err || (can_write && overflow) || (can_write && h.done && !closes && len_w != 0) ||
                   (aff_cfg && (int(vr) > NA || int(rank) > NA));
      const bool do_push = can_write && push;
      const bool fold_en = can_write && fold;
      // Affine mode: the sizes of the buffered dimensions (level j closes on a stop > j).
      bool clo[NA], mism = false;
      bits_t<LW> val[NA];
      for (int j = 0; j < NA; ++j) {
        clo[j] = can_write && j < int(h.stop) && j < int(rank);
        const bool inc = j == 0 ? (can_write && h.elem) : clo[j - 1];
        val[j] = cur[j] + (inc ? 1 : 0);
        mism = mism || (clo[j] && szv[j] && sz[j] != val[j]);
      }
      const bool regular = !rg && !mism;
      const bool ne_now = hasel || (can_write && h.elem);

      // ---- read side: replay the head descriptor.
      const int qh = int(q_head.to_uint());
      const bool dv = q_cnt != 0;
      const bits_t<AW> d_start = q_start[qh];
      const bits_t<LW> d_len = q_len[qh];
      const stop_t d_stop = q_stop[qh];
      const bool d_done = q_done[qh], d_eos = q_eos[qh];
      const bool d_aff = q_aff[qh], d_ne = q_ne[qh];
      const stop_t vrank = d_aff ? stop_t(nv) : rank;  // rank of one replay
      // Affine view: the dimensions at their last index (trailing), the address, its range.
      int aended = 0;
      bool arun = true;
      for (int k = NA - 1; k >= 0; --k)
        if (k < nv) {
          arun = arun && uint64_t(idx[k].to_uint64()) + 1 == shp[k];
          if (arun) ++aended;
        }
      const bits_t<XW> lin = nv ? ad[nv - 1] : bits_t<XW>(0);
      const bool oob = lin.to_uint64() >= (d_ne ? d_len.to_uint64() : 0);
      const bits_t<AW> raddr = d_start + (d_aff ? bits_t<AW>(lin.to_uint64()) : bits_t<AW>(rpos.to_uint()));
      const int rb_ = int(raddr.to_uint()) & (BANKS - 1), rr_ = int(raddr.to_uint()) >> BW;
      UBeat<W> word;
      word.data = mem_data[rb_][rr_];
      word.elem = mem_elem[rb_][rr_];
      word.stop = mem_stop[rb_][rr_];
      const bool wf = d_len != 0 && mem_fold[rb_][rr_];
      const bool rempty = d_aff ? vzero : d_len == 0;  // a replay is one bare stop
      const bool lastbeat = d_aff ? (vzero || aended == nv) : (d_len == 0 || (rpos == d_len - 1 && (!wf || half)));
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
              o.stop = vrank + nrep + d_stop;
              o.done = d_done;
              pop = true;
            }
          } else {
            replay_beat = true;
            close = vrank + ended + (all_last ? d_stop : stop_t(0));
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
              o.stop = vrank + rh.stop;
              consume_r = true;
            }
          } else {
            replay_beat = true;
            close = vrank + rh.stop;
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
        if (rempty) {
          o.stop = close;
        } else if (d_aff) {
          o.elem = true;
          o.data = oob ? bits_t<W>(0) : word.data;
          o.stop = lastbeat ? close : stop_t(aended);
          err_n = err_n || oob;
        } else if (wf && !half) {  // a folded word: its element first
          o.elem = true;
          o.data = word.data;
        } else if (wf) {  // then its bare stop
          o.stop = lastbeat ? close : word.stop;
        } else {
          o = word;
          if (lastbeat) o.stop = close;
        }
        o.done = lastbeat && close_done;
      }
      if (emit && replay_beat) {
        if (lastbeat) {
          rpos = 0;
          half = false;
          for (int k = 0; k < NA; ++k) {
            idx[k] = 0;
            ad[k] = 0;
          }
        } else if (d_aff) {
          // Step the innermost dimension not at its last index; the inner ones restart there.
          const int ks = nv - 1 - aended;
          const uint64_t sum = ad[ks].to_uint64() + str[ks];
          const uint64_t xmax = (uint64_t(1) << XW) - 1;
          const bits_t<XW> na = bits_t<XW>(sum > xmax ? xmax : sum);
          idx[ks] = idx[ks] + 1;
          for (int k = 0; k < NA; ++k)
            if (k >= ks && k < nv) {
              ad[k] = na;
              if (k > ks) idx[k] = 0;
            }
        } else if (wf && !half) {
          half = true;
        } else {
          rpos = rpos + 1;
          half = false;
        }
      }
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
        mem_fold[wb][wr] = false;
      } else if (fold_en) {  // the tag of the previous word (the open buffer's last)
        const bits_t<AW> pw = wp - 1;
        const int wb = int(pw.to_uint()) & (BANKS - 1), wr = int(pw.to_uint()) >> BW;
        mem_stop[wb][wr] = closes ? rank : h.stop;
        mem_fold[wb][wr] = true;
      }
      if (do_push) {
        const int qt = int(q_tail.to_uint());
        q_start[qt] = bstart;
        q_len[qt] = len_w;
        q_stop[qt] = closes ? stop_t(h.stop - rank) : stop_t(0);
        q_done[qt] = h.done;
        q_eos[qt] = !closes;
        q_aff[qt] = aff_cfg && regular;
        q_ne[qt] = ne_now;
        q_tail = q_tail + 1;
        bstart = wp_n;
        blen = 0;
      } else {
        blen = len_w;
      }
      if (do_push) {
        pz = rg = hasel = false;
      } else {
        if (wr_en)
          pz = aff_cfg && h.elem && h.stop == 0;
        else if (fold_en || (can_write && overflow))
          pz = false;
        rg = !regular;
        hasel = ne_now;
      }
      for (int j = 0; j < NA; ++j) {
        if (do_push) {
          cur[j] = 0;
          szv[j] = false;
        } else if (clo[j]) {
          sz[j] = val[j];
          szv[j] = true;
          cur[j] = 0;
        } else {
          cur[j] = val[j];
        }
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
