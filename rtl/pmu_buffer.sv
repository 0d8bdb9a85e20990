// Memory unit (PMU): a Bufferize<rank> -> Streamify pair fused on one banked SRAM
// (docs/units.md). Stores the inner `rank` dimensions of `in` as buffers in a ring of
// BANKS x DEPTH words (1R1W banks, address a in bank a % BANKS), queues closed buffers as
// descriptors (NBUF), and replays the oldest one: statically (up to R nested repeat factors)
// or once per element of the ref stream's inner cfg_ref_rank_i dimensions. err_o (sticky) rises
// when a buffer exceeds the capacity (its extra beats are dropped) or a stream ends inside a
// buffer. SystemC twin: hw/units/pmu_buffer.h (same pins, same behaviour on every cycle).
// Writes and replays 1 beat/cycle each; the first beat of a buffer leaves 2 cycles after its
// closing beat is accepted. Affine mode (cfg_view_rank_i = 1..NA): a regular buffer is replayed
// through the view out_shape/stride (index counters and running addresses, one add per beat);
// a ragged one linearly. A bare stop right after an element without a stop is folded into that
// element's word (tag rewrite, fold bit) so the element index is the word index; a linear
// replay unfolds it. A read outside the buffer's elements sets err_o and replays a 0.
`include "stream_macros.svh"
module pmu_buffer #(
  parameter int W     = 32,
  parameter int BANKS = 4,
  parameter int DEPTH = 16,
  parameter int NBUF  = 4,
  parameter int R     = 2,
  parameter int CW    = 8,
  parameter int NA    = 4,   // affine view dimensions (and buffered dimensions tracked)
  parameter int VW    = 16   // width of an out_shape / stride entry
) (
  input  logic          clk_i,
  input  logic          rst_ni,
  // quasi-static configuration: change only in reset
  input  logic [3:0]    cfg_rank_i,      // Bufferize rank, 1..15
  input  logic          cfg_ref_i,       // 1: replays driven by the ref stream
  input  logic [3:0]    cfg_ref_rank_i,  // Streamify rank of the ref stream (>= 1)
  input  logic [3:0]    cfg_nrep_i,      // static: number of repeat factors, 0..R
  input  logic [R*CW-1:0] cfg_repeat_i,  // factor k (outermost first) in [CW*k +: CW]
  input  logic [3:0]    cfg_view_rank_i, // 0: linear; 1..NA: affine view rank
  input  logic [NA*VW-1:0] cfg_shape_i,  // out_shape[k] (outermost first) in [VW*k +: VW]
  input  logic [NA*VW-1:0] cfg_stride_i, // stride[k] in [VW*k +: VW]
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
  localparam int TW  = 6;      // tag: fold, elem, stop
  localparam int XW  = LW + 1;  // affine running address (saturating)
  localparam int SW  = (XW > VW ? XW : VW) + 1;

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
  logic [NBUF-1:0]   q_done_q, q_eos_q, q_aff_q, q_ne_q;
  logic [QW-1:0]     q_head_d, q_head_q, q_tail_d, q_tail_q;
  logic [QW:0]       q_cnt_d, q_cnt_q;
  logic [AW-1:0]     wp_d, wp_q, bstart_d, bstart_q;
  logic [LW-1:0]     blen_d, blen_q, used_d, used_q, rpos_d, rpos_q;
  logic [R*CW-1:0]   cnts_d, cnts_q;
  logic              err_w, err_d, err_q, fin_d, fin_q, rdone_d, rdone_q;
  // affine mode
  logic              pz_d, pz_q, rg_d, rg_q, hasel_d, hasel_q, half_d, half_q;
  logic [LW-1:0]     cur_d [NA];
  logic [LW-1:0]     cur_q [NA];
  logic [LW-1:0]     sz_d [NA];
  logic [LW-1:0]     sz_q [NA];
  logic [NA-1:0]     szv_d, szv_q;
  logic [VW-1:0]     idx_d [NA];
  logic [VW-1:0]     idx_q [NA];
  logic [XW-1:0]     ad_d [NA];
  logic [XW-1:0]     ad_q [NA];

  // ---- the SRAM: BANKS banks of DEPTH words (payload and tag), one write and one read port
  // each; a fold rewrites the tag of the previous word instead of writing a new word
  logic          wr_en, fold, fold_en;
  logic [AW-1:0] raddr, taddr;
  logic [W-1:0]  wdata;
  logic [TW-1:0] wtag;
  logic [W-1:0]  rd_data [BANKS];
  logic [TW-1:0] rd_tag [BANKS];
  assign taddr = fold_en ? wp_q - AW'(1) : wp_q;
  for (genvar b = 0; b < BANKS; b++) begin : g_bank
    logic [W-1:0]  mem_q [DEPTH];
    logic [TW-1:0] tag_q [DEPTH];
    always_ff @(posedge clk_i) begin
      if (wr_en && wp_q[BW-1:0] == BW'(b)) begin
        mem_q[wp_q[AW-1:BW]] <= wdata;
      end
      if ((wr_en || fold_en) && taddr[BW-1:0] == BW'(b)) begin
        tag_q[taddr[AW-1:BW]] <= wtag;
      end
    end
    assign rd_data[b] = mem_q[raddr[AW-1:BW]];
    assign rd_tag[b]  = tag_q[raddr[AW-1:BW]];
  end

  // ---- affine configuration
  logic          aff_cfg, vzero, cfg_bad;
  logic [3:0]    nv;
  logic [VW-1:0] shp [NA];
  logic [VW-1:0] str [NA];
  always_comb begin
    aff_cfg = cfg_view_rank_i != 4'd0;
    nv      = !aff_cfg ? 4'd0 : (cfg_view_rank_i > 4'(NA) ? 4'(NA) : cfg_view_rank_i);
    cfg_bad = aff_cfg & ((cfg_view_rank_i > 4'(NA)) | (cfg_rank_i > 4'(NA)));
    vzero   = 1'b0;
    for (int k = 0; k < NA; k++) begin
      shp[k] = cfg_shape_i[VW*k +: VW];
      str[k] = cfg_stride_i[VW*k +: VW];
      vzero  = vzero | ((4'(k) < nv) & (shp[k] == '0));
    end
  end

  // ---- write side
  logic [LW-1:0] len_w;
  logic [AW-1:0] wp_n;
  logic          regular, ne_now, mism, inc;
  logic [NA-1:0] clo;
  logic [LW-1:0] val [NA];
  always_comb begin
    closes    = h_stop >= cfg_rank_i;
    fold      = aff_cfg & pz_q & !h_elem & (h_stop != 4'd0);
    store     = !fold & (h_elem | ((h_stop != 4'd0) & (!closes | (blen_q != '0))));
    push      = closes | h_done;
    overflow  = store & (blen_q == LW'(CAP));
    can_write = h_valid & (!store | overflow | (used_q != LW'(CAP))) &
                (!push | (q_cnt_q != (QW+1)'(NBUF)));
    wr_en     = can_write & store & !overflow;
    len_w     = blen_q + LW'(wr_en);
    wp_n      = wr_en ? wp_q + AW'(1) : wp_q;
    do_push   = can_write & push;
    fold_en   = can_write & fold;
    err_w     = err_q | (can_write & overflow) | (can_write & h_done & !closes & (len_w != '0));
    wdata     = h_elem ? h_data : '0;
    wtag      = {fold_en, fold_en | h_elem, closes ? cfg_rank_i : h_stop};
    // affine mode: the sizes of the buffered dimensions (level j closes on a stop > j)
    mism = 1'b0;
    for (int j = 0; j < NA; j++) begin
      clo[j] = can_write & (4'(j) < h_stop) & (4'(j) < cfg_rank_i);
      inc    = (j == 0) ? (can_write & h_elem) : clo[(j == 0) ? 0 : j - 1];
      val[j] = cur_q[j] + LW'(inc);
      mism   = mism | (clo[j] & szv_q[j] & (sz_q[j] != val[j]));
    end
    regular = !rg_q & !mism;
    ne_now  = hasel_q | (can_write & h_elem);
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
  logic          w_elem, w_fold, wf;
  logic [3:0]    w_stop;
  logic          d_aff, d_ne, arun, oob, rempty;
  logic [3:0]    vrank, aended;
  logic [XW-1:0] lin, na;
  logic [SW-1:0] sum;
  logic [LW-1:0] nel;
  // The head descriptor and the word it reads.
  assign dv      = q_cnt_q != '0;
  assign d_start = q_start_q[q_head_q];
  assign d_len   = q_len_q[q_head_q];
  assign d_stop  = q_stop_q[q_head_q];
  assign d_done  = q_done_q[q_head_q];
  assign d_eos   = q_eos_q[q_head_q];
  assign d_aff   = q_aff_q[q_head_q];
  assign d_ne    = q_ne_q[q_head_q];
  assign vrank   = d_aff ? nv : cfg_rank_i;
  always_comb begin
    lin = '0;
    for (int k = 0; k < NA; k++) begin
      if (4'(k) + 4'd1 == nv) begin
        lin = ad_q[k];
      end
    end
  end
  assign nel     = d_ne ? d_len : '0;
  assign oob     = lin >= XW'(nel);
  assign raddr   = d_start + (d_aff ? lin[AW-1:0] : rpos_q[AW-1:0]);
  assign w_data  = rd_data[raddr[BW-1:0]];
  assign {w_fold, w_elem, w_stop} = rd_tag[raddr[BW-1:0]];
  assign wf      = (d_len != '0) & w_fold;
  assign rempty  = d_aff ? vzero : (d_len == '0);

  always_comb begin
    // affine view: the dimensions at their last index (trailing)
    aended = 4'd0;
    arun   = 1'b1;
    for (int k = NA - 1; k >= 0; k--) begin
      if (4'(k) < nv) begin
        arun = arun & (idx_q[k] == shp[k] - VW'(1));
        if (arun) begin
          aended = aended + 4'd1;
        end
      end
    end
    lastbeat = d_aff ? (vzero | (aended == nv))
                     : ((d_len == '0) | ((rpos_q == d_len - LW'(1)) & (!wf | half_q)));
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
            o_stop = vrank + cfg_nrep_i + d_stop;
            o_done = d_done;
            pop    = 1'b1;
          end
        end else begin
          replay_beat = 1'b1;
          close       = vrank + ended + (all_last ? d_stop : 4'd0);
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
            o_stop    = vrank + r_stop;
            consume_r = 1'b1;
          end
        end else begin
          replay_beat = 1'b1;
          close       = vrank + r_stop;
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
    err_d = err_w | cfg_bad;
    if (replay_beat && ofree) begin
      emit = 1'b1;
      if (rempty) begin
        o_stop = close;
      end else if (d_aff) begin
        o_data = oob ? '0 : w_data;
        o_elem = 1'b1;
        o_stop = lastbeat ? close : aended;
        err_d  = err_d | oob;
      end else if (wf && !half_q) begin  // a folded word: its element first
        o_data = w_data;
        o_elem = 1'b1;
      end else if (wf) begin  // then its bare stop
        o_stop = lastbeat ? close : w_stop;
      end else begin
        o_data = w_data;
        o_elem = w_elem;
        o_stop = lastbeat ? close : w_stop;
      end
      o_done = lastbeat & close_done;
    end
    rpos_d = rpos_q;
    half_d = half_q;
    for (int k = 0; k < NA; k++) begin
      idx_d[k] = idx_q[k];
      ad_d[k]  = ad_q[k];
    end
    sum    = '0;
    na     = '0;
    if (emit && replay_beat) begin
      if (lastbeat) begin
        rpos_d = '0;
        half_d = 1'b0;
        for (int k = 0; k < NA; k++) begin
          idx_d[k] = '0;
          ad_d[k]  = '0;
        end
      end else if (d_aff) begin
        // step the innermost dimension not at its last index; the inner ones restart there
        for (int k = 0; k < NA; k++) begin
          if (4'(k) == nv - 4'd1 - aended) begin
            sum      = SW'(ad_q[k]) + SW'(str[k]);
            na       = (sum > SW'({XW{1'b1}})) ? {XW{1'b1}} : sum[XW-1:0];
            idx_d[k] = idx_q[k] + VW'(1);
          end
        end
        for (int k = 0; k < NA; k++) begin
          if ((4'(k) >= nv - 4'd1 - aended) && (4'(k) < nv)) begin
            ad_d[k] = na;
            if (4'(k) != nv - 4'd1 - aended) begin
              idx_d[k] = '0;
            end
          end
        end
      end else if (wf && !half_q) begin
        half_d = 1'b1;
      end else begin
        rpos_d = rpos_q + LW'(1);
        half_d = 1'b0;
      end
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
    // affine mode: fold and regularity state of the open buffer
    pz_d    = pz_q;
    rg_d    = !regular;
    hasel_d = ne_now;
    if (do_push) begin
      pz_d    = 1'b0;
      rg_d    = 1'b0;
      hasel_d = 1'b0;
    end else if (wr_en) begin
      pz_d = aff_cfg & h_elem & (h_stop == 4'd0);
    end else if (fold_en || (can_write && overflow)) begin
      pz_d = 1'b0;
    end
    for (int j = 0; j < NA; j++) begin
      sz_d[j]  = sz_q[j];
      szv_d[j] = szv_q[j];
      cur_d[j] = val[j];
      if (do_push) begin
        cur_d[j] = '0;
        szv_d[j] = 1'b0;
      end else if (clo[j]) begin
        sz_d[j]  = val[j];
        szv_d[j] = 1'b1;
        cur_d[j] = '0;
      end
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
      q_aff_q[q_tail_q]   <= aff_cfg & regular;
      q_ne_q[q_tail_q]    <= ne_now;
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
      pz_q     <= 1'b0;
      rg_q     <= 1'b0;
      hasel_q  <= 1'b0;
      half_q   <= 1'b0;
      szv_q    <= '0;
      for (int k = 0; k < NA; k++) begin
        cur_q[k] <= '0;
        sz_q[k]  <= '0;
        idx_q[k] <= '0;
        ad_q[k]  <= '0;
      end
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
      pz_q     <= pz_d;
      rg_q     <= rg_d;
      hasel_q  <= hasel_d;
      half_q   <= half_d;
      szv_q    <= szv_d;
      for (int k = 0; k < NA; k++) begin
        cur_q[k] <= cur_d[k];
        sz_q[k]  <= sz_d[k];
        idx_q[k] <= idx_d[k];
        ad_q[k]  <= ad_d[k];
      end
    end
  end

  assign err_o = err_q;

  `STREAM_OUT_REG(out, 1, W, emit, 1'b1, o_data, o_elem, o_stop, o_done, ofree);
endmodule
