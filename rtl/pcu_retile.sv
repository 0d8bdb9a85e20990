// Compute unit, retiling of dynamic [r x T] tiles (docs/units.md). One beat is one square
// tile with its tile header (docs/unit-protocol.md): lane (i, j) in bits [16(iT+j) +: 16], the
// row count r = 0..T in bits [16T^2 +: RW].
//   cfg_mode_i = 0: Accum<cfg_rank_i> retile_row. The element's rows are appended below the rows
//     held; a beat with stop s >= rank emits the tile (header = rows held, lanes of the other
//     rows 0) with stop s - rank and the beat's done, and clears it (an empty group: a [0 x T]
//     tile). Bare stops below the rank emit nothing; a bare done emits a bare done.
//   cfg_mode_i = 1: FlatMap<1> retile_streamify_row. An element [r x T] with stop s leaves as r
//     beats [1 x T], one per cycle, the last with stop (s ? s + 1 : 1) and the done; r = 0: one
//     bare stop (s ? s + 1 : 1). A bare stop s leaves as s + 1, a bare done as a bare done.
// err_o (sticky): mode 0 rows beyond T (dropped) or a done inside a group that has seen an
// element; mode 1 a header above T (T rows leave) or a stop 15 (S15 leaves).
// Latency 1 cycle from the closing beat (mode 0) or the element (mode 1); mode 0 takes 1 beat
// per cycle, mode 1 emits 1 beat per cycle (max(r, 1) cycles per element).
// SystemC twin: hw/units/pcu_retile.h.
`include "stream_macros.svh"
module pcu_retile #(
  parameter int T  = 4,
  parameter int RW = $clog2(T + 1),   // header width
  parameter int W  = 16 * T * T + RW
) (
  input  logic       clk_i,
  input  logic       rst_ni,
  input  logic       cfg_mode_i,  // 0 retile_row (Accum), 1 retile_streamify_row (FlatMap); quasi-static
  input  logic [3:0] cfg_rank_i,  // mode 0: the Accum rank, 1..15
  // in
  `STREAM_IN_PORTS(in, W),
  // out
  `STREAM_OUT_PORTS(out, 1, W),
  output logic       err_o  // sticky until reset
);
  localparam int DW = 16 * T * T;  // the lanes
  localparam int RB = 16 * T;      // one row
  localparam int CW = RW + 1;      // held + r
  localparam logic [CW-1:0] TC = CW'(T);

  logic          consume, emit, ofree, closes, top, last;
  logic [DW-1:0] acc_d, acc_q, next;
  logic [RW-1:0] held_d, held_q, r_in, rows, rr, k_d, k_q;
  logic [CW-1:0] total;
  logic          acc_v_d, acc_v_q, err_d, err_q;
  logic [RB-1:0] row_k;
  logic [W-1:0]  o_data;
  logic          o_elem, o_done;
  logic [3:0]    o_stop, close;

  `STREAM_IN_BUF(in, h, W, consume);

  assign err_o = err_q;
  assign r_in  = h_data[DW +: RW];
  assign total = {1'b0, held_q} + (h_elem ? {1'b0, r_in} : '0);
  assign rows  = (total > TC) ? RW'(T) : total[RW-1:0];

  // Mode 0: row i of the accumulator after the append is input row i - held for
  // held <= i < held + r; the other rows keep the accumulator (0 from row held on).
  for (genvar i = 0; i < T; i++) begin : g_row
    logic [RB-1:0] src;
    always_comb begin
      src = '0;
      for (int j = 0; j <= i; j++) begin
        if (held_q == RW'(i - j)) src = h_data[RB*j +: RB];
      end
    end
    assign next[RB*i +: RB] = (h_elem && {1'b0, held_q} <= CW'(i) && CW'(i) < total) ? src
                                                                                      : acc_q[RB*i +: RB];
  end

  // Mode 1: row k of the head element.
  always_comb begin
    row_k = '0;
    for (int j = 0; j < T; j++) begin
      if (k_q == RW'(j)) row_k = h_data[RB*j +: RB];
    end
  end
  assign rr    = ({1'b0, r_in} > TC) ? RW'(T) : r_in;
  assign last  = k_q == rr - RW'(1);
  assign top   = h_stop == 4'd15;
  assign close = (h_stop == 4'd0) ? 4'd1 : top ? 4'd15 : h_stop + 4'd1;

  always_comb begin
    closes  = h_stop >= cfg_rank_i;
    consume = 1'b0;
    emit    = 1'b0;
    acc_d   = acc_q;
    held_d  = held_q;
    acc_v_d = acc_v_q;
    k_d     = k_q;
    err_d   = err_q;
    o_elem  = 1'b0;
    o_stop  = 4'd0;
    o_done  = h_done;
    o_data  = {rows, next};
    if (h_valid && !cfg_mode_i) begin
      o_elem = closes;
      o_stop = closes ? h_stop - cfg_rank_i : 4'd0;
      if (closes || h_done) begin
        if (ofree) begin
          emit    = 1'b1;
          consume = 1'b1;
          err_d   = err_q | (h_elem & (total > TC)) | (!closes & (acc_v_q | h_elem));
          acc_d   = '0;
          held_d  = '0;
          acc_v_d = 1'b0;
        end
      end else begin
        consume = 1'b1;
        err_d   = err_q | (h_elem & (total > TC));
        acc_d   = next;
        held_d  = rows;
        acc_v_d = acc_v_q | h_elem;
      end
    end else if (h_valid) begin
      o_data = {RW'(1), {(DW - RB){1'b0}}, row_k};
      if (ofree) begin
        if (!h_elem) begin
          o_stop  = (h_stop == 4'd0) ? 4'd0 : close;
          emit    = (h_stop != 4'd0) | h_done;  // an empty beat is dropped
          consume = 1'b1;
          err_d   = err_q | top;
        end else if (rr == '0) begin
          o_stop  = close;
          emit    = 1'b1;
          consume = 1'b1;
          err_d   = err_q | top;
        end else begin
          o_elem = 1'b1;
          o_stop = last ? close : 4'd0;
          o_done = last & h_done;
          emit   = 1'b1;
          if (last) begin
            consume = 1'b1;
            k_d     = '0;
            err_d   = err_q | top | ({1'b0, r_in} > TC);
          end else begin
            k_d = k_q + RW'(1);
          end
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      acc_q   <= '0;
      held_q  <= '0;
      acc_v_q <= 1'b0;
      k_q     <= '0;
      err_q   <= 1'b0;
    end else begin
      acc_q   <= acc_d;
      held_q  <= held_d;
      acc_v_q <= acc_v_d;
      k_q     <= k_d;
      err_q   <= err_d;
    end
  end

  `STREAM_OUT_REG(out, 1, W, emit, 1'b1, o_data, o_elem, o_stop, o_done, ofree);
endmodule
