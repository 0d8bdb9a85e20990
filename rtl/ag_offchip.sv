// Address generator (AG) with a memory port: LinearOffChipLoad (cfg_write_i = 0) and
// LinearOffChipStore (cfg_write_i = 1) on [T x T] bf16 tiles (docs/units.md). Tile k of the
// view (out_shape rank 1..MR, outermost first) is stored tile l = offset + sum idx_d stride_d
// at base + (l / tiles_c) A + (l % tiles_c) B, a burst of cfg_rows_i rows of cfg_row_bytes_i
// bytes cfg_pitch_i apart; offset and strides come as (quotient, remainder) by tiles_c, so
// the view is walked with adders and one carry per step. One 64-byte request per cycle
// (row-major, request c of a row uses min(64, row_bytes - 64c) bytes), at most MAXO
// outstanding; responses in request order (writes are acknowledged too).
// Load: tiles on out with the view's stop levels and done on the last. Store: tiles from in
// (stops ignored) written to the view; one bare done on out once the input ended and every
// write is acknowledged; err_o (sticky) on a tile beyond the view.
// SystemC twin: hw/units/ag_offchip.h (same pins, same behaviour on every cycle).
`include "stream_macros.svh"
module ag_offchip #(
  parameter int T    = 4,
  parameter int MR   = 4,
  parameter int IW   = 16,
  parameter int AW   = 32,
  parameter int MAXO = 64,
  parameter int W    = 16 * T * T,          // derived: the tile payload
  parameter int GW   = $clog2(2 * T * T + 1),  // derived: rows, row bytes, byte offsets
  parameter int DW   = 512,                 // fixed: 64-byte requests
  parameter int LW   = 7                    // fixed: request length 1..64
) (
  input  logic           clk_i,
  input  logic           rst_ni,
  // quasi-static configuration: change only in reset
  input  logic           cfg_write_i,     // 0 load, 1 store
  input  logic [3:0]     cfg_rank_i,      // view rank 1..MR
  input  logic [MR*IW-1:0] cfg_shape_i,   // out_shape d (outermost first) in [IW*d +: IW]
  input  logic [MR*IW-1:0] cfg_stride_q_i,  // stride d / tiles_c
  input  logic [MR*IW-1:0] cfg_stride_r_i,  // stride d % tiles_c
  input  logic [IW-1:0]  cfg_offset_q_i,
  input  logic [IW-1:0]  cfg_offset_r_i,
  input  logic [IW-1:0]  cfg_tiles_c_i,
  input  logic [AW-1:0]  cfg_base_i,
  input  logic [AW-1:0]  cfg_a_i,
  input  logic [AW-1:0]  cfg_b_i,
  input  logic [GW-1:0]  cfg_rows_i,
  input  logic [GW-1:0]  cfg_row_bytes_i,
  input  logic [AW-1:0]  cfg_pitch_i,
  // in: the tiles to store
  `STREAM_IN_PORTS(in, W),
  // out: the loaded tiles (store: one bare done)
  `STREAM_OUT_PORTS(out, 1, W),
  // memory port
  output logic           req_valid_o,
  input  logic           req_ready_i,
  output logic [AW-1:0]  req_addr_o,
  output logic           req_write_o,
  output logic [LW-1:0]  req_len_o,
  output logic [DW-1:0]  req_wdata_o,
  input  logic           rsp_valid_i,
  output logic           rsp_ready_o,
  input  logic [DW-1:0]  rsp_data_i,
  output logic           err_o
);
  localparam int OW = $clog2(MAXO + 1);
  localparam int TB = 2 * T * T;

  // The response buffer carries data only.
  logic rsp_elem_i, rsp_done_i;
  logic [3:0] rsp_stop_i;
  assign rsp_elem_i = 1'b1;
  assign rsp_done_i = 1'b0;
  assign rsp_stop_i = 4'd0;

  logic consume_in, consume_r, ofree, emit;
  logic [W-1:0] o_data;
  logic         o_elem, o_done;
  logic [3:0]   o_stop;

  `STREAM_IN_BUF(in, h, W, consume_in);
  `STREAM_IN_BUF(rsp, r, DW, consume_r);
  logic unused_r;
  assign unused_r = r_elem ^ r_done ^ (^r_stop) ^ (^h_stop);  // store: tile stops are not stored

  // ---- state
  logic [IW-1:0] g_idx_d [MR];
  logic [IW-1:0] g_idx_q [MR];
  logic [IW-1:0] g_q_d [MR];
  logic [IW-1:0] g_q_q [MR];
  logic [IW-1:0] g_r_d [MR];
  logic [IW-1:0] g_r_q [MR];
  logic [IW-1:0] a_idx_d [MR];
  logic [IW-1:0] a_idx_q [MR];
  logic [GW-1:0] g_row_d, g_row_q, g_chunk_d, g_chunk_q, g_ofs_d, g_ofs_q;
  logic [GW-1:0] a_row_d, a_row_q, a_chunk_d, a_chunk_q, a_ofs_d, a_ofs_q;
  logic [AW-1:0] g_rowaddr_d, g_rowaddr_q;
  logic          g_active_d, g_active_q, g_init_q;
  logic [W-1:0]  a_acc_d, a_acc_q;
  logic [OW-1:0] ocnt_d, ocnt_q;
  logic          st_in_done_d, st_in_done_q, st_sent_d, st_sent_q, err_d, err_q;
  logic          rq_valid_d, rq_valid_q, rq_write_d, rq_write_q;
  logic [AW-1:0] rq_addr_d, rq_addr_q;
  logic [LW-1:0] rq_len_d, rq_len_q;
  logic [DW-1:0] rq_wdata_d, rq_wdata_q;

  // Bytes used by request c of a row: min(64, row_bytes - 64c).
  function automatic logic [LW-1:0] used_bytes(logic [GW-1:0] row_bytes, logic [GW-1:0] chunk);
    logic [GW+6:0] left;
    left = (GW+7)'(row_bytes) - ((GW+7)'(chunk) << 6);
    used_bytes = (left >= (GW+7)'(64)) ? LW'(64) : LW'(left);
  endfunction

  // ---- combinational
  logic [IW-1:0] n  [MR];
  logic [IW-1:0] cq [MR];
  logic [IW-1:0] cr [MR];
  logic [AW-1:0] tile_base, row_start, addr;
  logic [LW-1:0] len, a_len;
  logic          first_req, last_chunk, last_row, last_req, room, issue, carry, c2, run_on;
  logic          a_last_chunk, a_last, has_step;
  logic [3:0]    step_d;
  logic [3:0]    ended;
  logic [DW-1:0] wdata;
  logic [W+DW-1:0] wsh, rsh;
  logic [W-1:0]  merged;
  logic [IW-1:0] q_s, r_s, sel_q, sel_r, nr, nq;
  logic [IW:0]   rr;
  logic          wrap;

  always_comb begin
    for (int d = 0; d < MR; d++) begin
      n[d]  = cfg_shape_i[IW*d +: IW];
      cq[d] = g_init_q ? cfg_offset_q_i : g_q_q[d];
      cr[d] = g_init_q ? cfg_offset_r_i : g_r_q[d];
    end

    // ---- request side
    tile_base  = cfg_base_i + AW'(cq[MR-1]) * cfg_a_i + AW'(cr[MR-1]) * cfg_b_i;
    first_req  = (g_row_q == '0) && (g_chunk_q == '0);
    row_start  = first_req ? tile_base : g_rowaddr_q;
    addr       = row_start + (AW'(g_chunk_q) << 6);
    len        = used_bytes(cfg_row_bytes_i, g_chunk_q);
    last_chunk = (((GW+7)'(g_chunk_q) + (GW+7)'(1)) << 6) >= (GW+7)'(cfg_row_bytes_i);
    last_row   = g_row_q == cfg_rows_i - GW'(1);
    last_req   = last_chunk & last_row;
    room       = (!rq_valid_q || req_ready_i) && (ocnt_q != OW'(MAXO));
    issue      = 1'b0;
    consume_in = 1'b0;
    err_d      = err_q;
    if (!cfg_write_i) begin
      issue      = g_active_q & room;
      consume_in = h_valid;  // load: in is unused
    end else if (h_valid) begin
      if (!h_elem) begin
        consume_in = 1'b1;  // a bare stop or done: nothing to write
      end else if (!g_active_q) begin
        consume_in = 1'b1;  // beyond the view: dropped, flagged
        err_d      = 1'b1;
      end else if (room) begin
        issue      = 1'b1;
        consume_in = last_req;
      end
    end
    // Write data: the tile's bytes from the byte offset on (one barrel shift), bytes at and
    // above the length zero.
    wsh   = (W+DW)'(h_data) >> {g_ofs_q, 3'b000};
    wdata = '0;
    if (cfg_write_i) begin
      for (int k = 0; k < 64; k++) begin
        if ((LW'(k) < len) && (k < TB)) begin
          wdata[8*k +: 8] = wsh[8*k +: 8];
        end
      end
    end
    // The next position: the innermost dimension that does not wrap steps by its stride.
    carry    = 1'b1;
    has_step = 1'b0;
    step_d   = 4'd0;
    q_s      = '0;
    r_s      = '0;
    sel_q    = '0;
    sel_r    = '0;
    for (int d = MR - 1; d >= 0; d--) begin
      if ((4'(d) < cfg_rank_i) && carry) begin
        if (g_idx_q[d] != n[d] - IW'(1)) begin
          has_step = 1'b1;
          step_d   = 4'(d);
          carry    = 1'b0;
          q_s      = cfg_stride_q_i[IW*d +: IW];
          r_s      = cfg_stride_r_i[IW*d +: IW];
          sel_q    = cq[d];
          sel_r    = cr[d];
        end
      end
    end
    rr   = (IW+1)'(sel_r) + (IW+1)'(r_s);
    wrap = rr >= (IW+1)'(cfg_tiles_c_i);
    nr   = wrap ? IW'(rr - (IW+1)'(cfg_tiles_c_i)) : IW'(rr);
    nq   = sel_q + q_s + IW'(wrap);

    // ---- response side
    a_len        = used_bytes(cfg_row_bytes_i, a_chunk_q);
    a_last_chunk = (((GW+7)'(a_chunk_q) + (GW+7)'(1)) << 6) >= (GW+7)'(cfg_row_bytes_i);
    a_last       = a_last_chunk && (a_row_q == cfg_rows_i - GW'(1));
    // The response's used bytes land at the byte offset (one barrel shift).
    rsh          = (W+DW)'(r_data) << {a_ofs_q, 3'b000};
    merged       = a_acc_q;
    for (int t = 0; t < TB; t++) begin
      if (((GW+1)'(t) >= (GW+1)'(a_ofs_q)) && ((GW+1)'(t) < (GW+1)'(a_ofs_q) + (GW+1)'(a_len))) begin
        merged[8*t +: 8] = rsh[8*t +: 8];
      end
    end
    ended  = 4'd0;
    run_on = 1'b1;
    for (int d = MR - 1; d >= 0; d--) begin
      if (4'(d) < cfg_rank_i) begin
        run_on = run_on & (a_idx_q[d] == n[d] - IW'(1));
        if (run_on) begin
          ended = ended + 4'd1;
        end
      end
    end
    consume_r = 1'b0;
    emit      = 1'b0;
    o_data    = '0;
    o_elem    = 1'b0;
    o_stop    = 4'd0;
    o_done    = 1'b0;
    st_sent_d = st_sent_q;
    if (cfg_write_i) begin
      consume_r = r_valid;  // write acknowledgements
      if (st_in_done_q && (ocnt_q == '0) && !st_sent_q && ofree) begin
        emit      = 1'b1;
        o_done    = 1'b1;
        st_sent_d = 1'b1;
      end
    end else if (r_valid && (!a_last || ofree)) begin
      consume_r = 1'b1;
      if (a_last) begin
        emit   = 1'b1;
        o_elem = 1'b1;
        o_data = merged;
        o_stop = ended;
        o_done = ended == cfg_rank_i;
      end
    end

    // ---- next state: request side
    for (int d = 0; d < MR; d++) begin
      g_idx_d[d] = g_idx_q[d];
      g_q_d[d]   = cq[d];
      g_r_d[d]   = cr[d];
    end
    g_row_d     = g_row_q;
    g_chunk_d   = g_chunk_q;
    g_ofs_d     = g_ofs_q;
    g_rowaddr_d = g_rowaddr_q;
    g_active_d  = g_active_q;
    rq_valid_d  = rq_valid_q & !req_ready_i;
    rq_addr_d   = rq_addr_q;
    rq_write_d  = rq_write_q;
    rq_len_d    = rq_len_q;
    rq_wdata_d  = rq_wdata_q;
    if (issue) begin
      rq_valid_d = 1'b1;
      rq_addr_d  = addr;
      rq_write_d = cfg_write_i;
      rq_len_d   = len;
      rq_wdata_d = wdata;
      if (last_chunk) begin
        g_chunk_d   = '0;
        g_row_d     = g_row_q + GW'(1);
        g_rowaddr_d = row_start + cfg_pitch_i;
      end else begin
        g_chunk_d   = g_chunk_q + GW'(1);
        g_rowaddr_d = row_start;
      end
      g_ofs_d = g_ofs_q + GW'(len);
      if (last_req) begin
        g_row_d = '0;
        g_ofs_d = '0;
        if (!has_step) begin
          g_active_d = 1'b0;
        end else begin
          // (q, r) + (sq, sr) with one carry; the inner levels restart from the new position.
          for (int d = 0; d < MR; d++) begin
            if (4'(d) == step_d) begin
              g_idx_d[d] = g_idx_q[d] + IW'(1);
            end
            if (4'(d) > step_d) begin
              g_idx_d[d] = '0;
            end
            if (4'(d) >= step_d) begin
              g_q_d[d] = nq;
              g_r_d[d] = nr;
            end
          end
        end
      end
    end
    st_in_done_d = st_in_done_q | (consume_in & h_done);

    // ---- next state: response side
    for (int d = 0; d < MR; d++) begin
      a_idx_d[d] = a_idx_q[d];
    end
    a_row_d   = a_row_q;
    a_chunk_d = a_chunk_q;
    a_ofs_d   = a_ofs_q;
    a_acc_d   = a_acc_q;
    c2        = 1'b1;
    if (consume_r && !cfg_write_i) begin
      if (a_last) begin
        a_row_d   = '0;
        a_chunk_d = '0;
        a_ofs_d   = '0;
        a_acc_d   = '0;
        for (int d = MR - 1; d >= 0; d--) begin
          if ((4'(d) < cfg_rank_i) && c2) begin
            if (a_idx_q[d] == n[d] - IW'(1)) begin
              a_idx_d[d] = '0;
            end else begin
              a_idx_d[d] = a_idx_q[d] + IW'(1);
              c2 = 1'b0;
            end
          end
        end
      end else begin
        a_acc_d = merged;
        a_ofs_d = a_ofs_q + GW'(a_len);
        if (a_last_chunk) begin
          a_chunk_d = '0;
          a_row_d   = a_row_q + GW'(1);
        end else begin
          a_chunk_d = a_chunk_q + GW'(1);
        end
      end
    end
    ocnt_d = ocnt_q + OW'(issue) - OW'(consume_r);
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int d = 0; d < MR; d++) begin
        g_idx_q[d] <= '0;
        g_q_q[d]   <= '0;
        g_r_q[d]   <= '0;
        a_idx_q[d] <= '0;
      end
      g_row_q      <= '0;
      g_chunk_q    <= '0;
      g_ofs_q      <= '0;
      g_rowaddr_q  <= '0;
      g_active_q   <= 1'b1;
      g_init_q     <= 1'b1;
      a_row_q      <= '0;
      a_chunk_q    <= '0;
      a_ofs_q      <= '0;
      a_acc_q      <= '0;
      ocnt_q       <= '0;
      st_in_done_q <= 1'b0;
      st_sent_q    <= 1'b0;
      err_q        <= 1'b0;
      rq_valid_q   <= 1'b0;
      rq_write_q   <= 1'b0;
      rq_addr_q    <= '0;
      rq_len_q     <= '0;
      rq_wdata_q   <= '0;
    end else begin
      for (int d = 0; d < MR; d++) begin
        g_idx_q[d] <= g_idx_d[d];
        g_q_q[d]   <= g_q_d[d];
        g_r_q[d]   <= g_r_d[d];
        a_idx_q[d] <= a_idx_d[d];
      end
      g_row_q      <= g_row_d;
      g_chunk_q    <= g_chunk_d;
      g_ofs_q      <= g_ofs_d;
      g_rowaddr_q  <= g_rowaddr_d;
      g_active_q   <= g_active_d;
      g_init_q     <= 1'b0;
      a_row_q      <= a_row_d;
      a_chunk_q    <= a_chunk_d;
      a_ofs_q      <= a_ofs_d;
      a_acc_q      <= a_acc_d;
      ocnt_q       <= ocnt_d;
      st_in_done_q <= st_in_done_d;
      st_sent_q    <= st_sent_d;
      err_q        <= err_d;
      rq_valid_q   <= rq_valid_d;
      rq_write_q   <= rq_write_d;
      rq_addr_q    <= rq_addr_d;
      rq_len_q     <= rq_len_d;
      rq_wdata_q   <= rq_wdata_d;
    end
  end

  assign req_valid_o = rq_valid_q;
  assign req_addr_o  = rq_addr_q;
  assign req_write_o = rq_write_q;
  assign req_len_o   = rq_len_q;
  assign req_wdata_o = rq_wdata_q;
  assign err_o       = err_q;

  `STREAM_OUT_REG(out, 1, W, emit, 1'b1, o_data, o_elem, o_stop, o_done, ofree);
endmodule
