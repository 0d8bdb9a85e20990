// Memory unit (PMU): a Bufferize<rank> -> Streamify pair fused on one banked SRAM
// (docs/units.md). Stores the inner `rank` dimensions of `in` as buffers in a ring of
// BANKS x DEPTH words (1R1W banks, address a in bank a % BANKS), queues closed buffers as
// descriptors (NBUF), and replays the oldest one: statically (up to R nested repeat factors)
// or once per element of the ref stream's inner cfg_ref_rank_i dimensions. err_o (sticky) rises
// when a buffer exceeds the capacity (its extra beats are dropped) or a stream ends inside a
// buffer. SystemC twin: hw/units/pmu_buffer.h (same pins, same behaviour on every cycle).
// Writes and replays 1 beat/cycle each; the first beat of a buffer leaves 2 cycles after its
// closing beat is accepted.
`include "stream_macros.svh"
module pmu_buffer #(
  parameter int W     = 32,
  parameter int BANKS = 4,
  parameter int DEPTH = 16,
  parameter int NBUF  = 4,
  parameter int R     = 2,
  parameter int CW    = 8
) (
  input  logic          clk_i,
  input  logic          rst_ni,
  // quasi-static configuration: change only in reset
  input  logic [3:0]    cfg_rank_i,      // Bufferize rank, 1..15
  input  logic          cfg_ref_i,       // 1: replays driven by the ref stream
  input  logic [3:0]    cfg_ref_rank_i,  // Streamify rank of the ref stream (>= 1)
  input  logic [3:0]    cfg_nrep_i,      // static: number of repeat factors, 0..R
  input  logic [R*CW-1:0] cfg_repeat_i,  // factor k (outermost first) in [CW*k +: CW]
  // in: the stream to bufferize
  `STREAM_IN_PORTS(in, W),
  // ref: the reference stream (ref mode)
  `STREAM_IN_PORTS(ref, W),
  // out: the replayed stream
  `STREAM_OUT_PORTS(out, 1, W),
  output logic          err_o
);
  localparam int CAP = BANKS * DEPTH;
  localparam int AW  = $clog2(CAP);
  localparam int BW  = $clog2(BANKS);
  localparam int LW  = AW + 1;
  localparam int QW  = $clog2(NBUF);
  localparam int WW  = W + 5;  // payload, elem, stop

  logic consume_r, ofree, emit;
  logic closes, store, push, overflow, can_write, do_push;
  logic [W-1:0] o_data;
  logic         o_elem, o_done;
  logic [3:0]   o_stop;

  `STREAM_IN_BUF(in, h, W, can_write);
  `STREAM_IN_BUF(ref, r, W, consume_r);

  // The ref payload is not used: the replays carry the buffer's elements.
  logic unused_ref_data;
  assign unused_ref_data = ^r_data;

  // ---- state
  logic [AW-1:0]     q_start_q [NBUF];
  logic [LW-1:0]     q_len_q   [NBUF];
  logic [3:0]        q_stop_q  [NBUF];
  logic [NBUF-1:0]   q_done_q, q_eos_q;
  logic [QW-1:0]     q_head_d, q_head_q, q_tail_d, q_tail_q;
  logic [QW:0]       q_cnt_d, q_cnt_q;
  logic [AW-1:0]     wp_d, wp_q, bstart_d, bstart_q;
  logic [LW-1:0]     blen_d, blen_q, used_d, used_q, rpos_d, rpos_q;
  logic [R*CW-1:0]   cnts_d, cnts_q;
  logic              err_d, err_q, fin_d, fin_q, rdone_d, rdone_q;

  // ---- the SRAM: BANKS banks of DEPTH words, one write and one read port each
  logic          wr_en;
  logic [AW-1:0] raddr;
  logic [WW-1:0] wword;
  logic [WW-1:0] rd_word [BANKS];
  for (genvar b = 0; b < BANKS; b++) begin : g_bank
    logic [WW-1:0] mem_q [DEPTH];
    always_ff @(posedge clk_i) begin
      if (wr_en && wp_q[BW-1:0] == BW'(b)) begin
        mem_q[wp_q[AW-1:BW]] <= wword;
      end
    end
    assign rd_word[b] = mem_q[raddr[AW-1:BW]];
  end

  // ---- write side
  logic [LW-1:0] len_w;
  logic [AW-1:0] wp_n;
  always_comb begin
    closes    = h_stop >= cfg_rank_i;
    store     = h_elem | ((h_stop != 4'd0) & (!closes | (blen_q != '0)));
    push      = closes | h_done;
    overflow  = store & (blen_q == LW'(CAP));
    can_write = h_valid & (!store | overflow | (used_q != LW'(CAP))) &
                (!push | (q_cnt_q != (QW+1)'(NBUF)));
    wr_en     = can_write & store & !overflow;
    len_w     = blen_q + LW'(wr_en);
    wp_n      = wr_en ? wp_q + AW'(1) : wp_q;
    do_push   = can_write & push;
    err_d     = err_q | (can_write & overflow) | (can_write & h_done & !closes & (len_w != '0));
    wword     = {h_elem ? h_data : '0, h_elem, closes ? cfg_rank_i : h_stop};
  end

  // ---- read side
  logic [AW-1:0] d_start;
  logic [LW-1:0] d_len;
  logic [3:0]    d_stop, ended, close;
  logic          d_done, d_eos, dv, lastbeat, all_last, zero_total, run_on, group_end;
  logic          pop, advance, replay_beat, close_done, carry;
  logic [CW-1:0] fac [R];
  logic [CW-1:0] cnt [R];
  logic [W-1:0]  w_data;
  logic          w_elem;
  logic [3:0]    w_stop;
  // The head descriptor and the word it reads.
  assign dv      = q_cnt_q != '0;
  assign d_start = q_start_q[q_head_q];
  assign d_len   = q_len_q[q_head_q];
  assign d_stop  = q_stop_q[q_head_q];
  assign d_done  = q_done_q[q_head_q];
  assign d_eos   = q_eos_q[q_head_q];
  assign raddr   = d_start + rpos_q[AW-1:0];
  assign {w_data, w_elem, w_stop} = rd_word[raddr[BW-1:0]];

  always_comb begin
    lastbeat = (d_len == '0) | (rpos_q == d_len - LW'(1));
    zero_total = 1'b0;
    for (int k = 0; k < R; k++) begin
      fac[k] = cfg_repeat_i[CW*k +: CW];
      cnt[k] = cnts_q[CW*k +: CW];
      zero_total = zero_total | ((4'(k) < cfg_nrep_i) & (fac[k] == '0));
    end
    // Static repeat: the trailing factors at their last count end with this replay.
    ended  = 4'd0;
    run_on = 1'b1;
    for (int k = R - 1; k >= 0; k--) begin
      if (4'(k) < cfg_nrep_i) begin
        run_on = run_on & (cnt[k] == fac[k] - CW'(1));
        if (run_on) begin
          ended = ended + 4'd1;
        end
      end
    end
    all_last = ended == cfg_nrep_i;

    emit        = 1'b0;
    pop         = 1'b0;
    consume_r   = 1'b0;
    advance     = 1'b0;
    fin_d       = fin_q;
    rdone_d     = rdone_q;
    replay_beat = 1'b0;
    close       = 4'd0;
    close_done  = 1'b0;
    group_end   = 1'b0;
    o_data      = '0;
    o_elem      = 1'b0;
    o_stop      = 4'd0;
    o_done      = 1'b0;
    if (!cfg_ref_i) begin
      consume_r = r_valid;  // static mode: the ref port is unused, its beats are dropped
    end
    if (dv) begin
      if (!cfg_ref_i) begin
        if (d_eos) begin
          if (ofree) begin
            emit   = 1'b1;
            o_done = 1'b1;
            pop    = 1'b1;
          end
        end else if (zero_total) begin
          if (ofree) begin
            emit   = 1'b1;
            o_stop = cfg_rank_i + cfg_nrep_i + d_stop;
            o_done = d_done;
            pop    = 1'b1;
          end
        end else begin
          replay_beat = 1'b1;
          close       = cfg_rank_i + ended + (all_last ? d_stop : 4'd0);
          close_done  = all_last & d_done;
          if (ofree && lastbeat) begin
            advance = 1'b1;
            pop     = all_last;
          end
        end
      end else if (d_eos || fin_q) begin
        if (!rdone_q) begin
          if (r_valid) begin  // drain the rest of the ref stream
            consume_r = 1'b1;
            rdone_d   = r_done;
          end
        end else if (ofree) begin
          emit    = 1'b1;
          o_done  = 1'b1;
          pop     = 1'b1;
          fin_d   = 1'b0;
          rdone_d = 1'b0;
        end
      end else if (r_valid) begin
        group_end = (r_stop >= cfg_ref_rank_i) | r_done;
        if (!r_elem) begin
          if (ofree) begin
            emit      = 1'b1;
            o_stop    = cfg_rank_i + r_stop;
            consume_r = 1'b1;
          end
        end else begin
          replay_beat = 1'b1;
          close       = cfg_rank_i + r_stop;
          consume_r   = ofree & lastbeat;
        end
        if (consume_r) begin
          rdone_d = r_done;
          if (group_end) begin
            if (d_done) begin
              fin_d = 1'b1;
            end else begin
              pop = 1'b1;
            end
          end
        end
      end
    end
    if (replay_beat && ofree) begin
      emit = 1'b1;
      if (d_len != '0) begin
        o_data = w_data;
        o_elem = w_elem;
        o_stop = lastbeat ? close : w_stop;
      end else begin
        o_stop = close;
      end
      o_done = lastbeat & close_done;
    end
    rpos_d = rpos_q;
    if (emit && replay_beat) begin
      rpos_d = lastbeat ? '0 : rpos_q + LW'(1);
    end
    cnts_d = cnts_q;
    carry  = 1'b1;
    if (advance) begin
      for (int k = R - 1; k >= 0; k--) begin
        if ((4'(k) < cfg_nrep_i) && carry) begin
          if (cnt[k] == fac[k] - CW'(1)) begin
            cnts_d[CW*k +: CW] = '0;
          end else begin
            cnts_d[CW*k +: CW] = cnt[k] + CW'(1);
            carry = 1'b0;
          end
        end
      end
    end

    // ---- next state of the queue and the ring
    q_tail_d = q_tail_q;
    bstart_d = bstart_q;
    blen_d   = len_w;
    if (do_push) begin
      q_tail_d = q_tail_q + QW'(1);
      bstart_d = wp_n;
      blen_d   = '0;
    end
    q_head_d = pop ? q_head_q + QW'(1) : q_head_q;
    q_cnt_d  = q_cnt_q + (QW+1)'(do_push) - (QW+1)'(pop);
    used_d   = used_q + LW'(wr_en) - (pop ? d_len : '0);
    wp_d     = wp_n;
  end

  // Descriptor entries: read only while valid, so not reset.
  always_ff @(posedge clk_i) begin
    if (do_push) begin
      q_start_q[q_tail_q] <= bstart_q;
      q_len_q[q_tail_q]   <= len_w;
      q_stop_q[q_tail_q]  <= closes ? h_stop - cfg_rank_i : 4'd0;
      q_done_q[q_tail_q]  <= h_done;
      q_eos_q[q_tail_q]   <= !closes;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      q_head_q <= '0;
      q_tail_q <= '0;
      q_cnt_q  <= '0;
      wp_q     <= '0;
      bstart_q <= '0;
      blen_q   <= '0;
      used_q   <= '0;
      rpos_q   <= '0;
      cnts_q   <= '0;
      err_q    <= 1'b0;
      fin_q    <= 1'b0;
      rdone_q  <= 1'b0;
    end else begin
      q_head_q <= q_head_d;
      q_tail_q <= q_tail_d;
      q_cnt_q  <= q_cnt_d;
      wp_q     <= wp_d;
      bstart_q <= bstart_d;
      blen_q   <= blen_d;
      used_q   <= used_d;
      rpos_q   <= rpos_d;
      cnts_q   <= cnts_d;
      err_q    <= err_d;
      fin_q    <= fin_d;
      rdone_q  <= rdone_d;
    end
  end

  assign err_o = err_q;

  `STREAM_OUT_REG(out, 1, W, emit, 1'b1, o_data, o_elem, o_stop, o_done, ofree);
endmodule
