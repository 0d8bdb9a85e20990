// Shape unit, Reshape<chunk, rank> with its padding output: splits dimension cfg_rank_i into
// chunks of cfg_chunk_i entries; at rank 0 a partial chunk is padded with cfg_pad_i. The pad
// output flags padding elements (1-bit payload). SystemC twin: hw/units/shape_reshape.h.
// Latency 1 cycle, 1 beat/cycle (padding elements one per cycle).
`include "stream_macros.svh"
module shape_reshape #(
  parameter int W  = 32,
  parameter int CW = 8
) (
  input  logic          clk_i,
  input  logic          rst_ni,
  input  logic [CW-1:0] cfg_chunk_i,  // quasi-static: change only in reset
  input  logic [3:0]    cfg_rank_i,
  input  logic [W-1:0]  cfg_pad_i,
  `STREAM_IN_PORTS(in, W),
  `STREAM_OUT_PORTS(out, 1, W),
  `STREAM_OUT_PORTS(pad, 1, 1)
);
  logic          consume, emit, ofree, pfree, free, full, is_pad, o_elem, o_done;
  logic [W-1:0]  o_data;
  logic [3:0]    up, o_stop;
  logic [CW-1:0] c1, count_d, count_q;
  logic          padding_d, padding_q, pad_done_d, pad_done_q;
  logic [3:0]    pad_level_d, pad_level_q;

  `STREAM_IN_BUF(in, h, W, consume);

  always_comb begin
    free        = ofree & pfree;
    c1          = count_q + CW'(1);
    full        = (c1 == cfg_chunk_i);
    up          = (h_stop != 4'd0) ? h_stop + 4'd1 : 4'd1;
    o_data      = h_data;
    o_elem      = h_elem;
    o_stop      = h_stop;
    o_done      = h_done;
    is_pad      = 1'b0;
    emit        = 1'b0;
    consume     = 1'b0;
    count_d     = count_q;
    padding_d   = padding_q;
    pad_level_d = pad_level_q;
    pad_done_d  = pad_done_q;
    if (padding_q) begin
      if (free) begin
        emit      = 1'b1;
        is_pad    = 1'b1;
        o_elem    = 1'b1;
        o_data    = cfg_pad_i;
        o_stop    = full ? pad_level_q : 4'd0;
        o_done    = full & pad_done_q;
        count_d   = full ? '0 : c1;
        padding_d = ~full;
      end
    end else if (h_valid && free) begin
      consume = 1'b1;
      if (cfg_rank_i == 4'd0) begin
        if (h_elem) begin
          emit        = 1'b1;
          o_stop      = full ? up : 4'd0;
          o_done      = h_done & full;  // a partial chunk at the end: done rides on its padding
          count_d     = full ? '0 : c1;
          padding_d   = ~full & ((h_stop != 4'd0) | h_done);
          pad_level_d = up;
          pad_done_d  = h_done;
        end else if (count_q != '0) begin
          padding_d   = 1'b1;
          pad_level_d = up;
          pad_done_d  = h_done;
        end else begin
          emit   = 1'b1;
          o_stop = (h_stop != 4'd0) ? h_stop + 4'd1 : 4'd0;
        end
      end else begin
        emit = 1'b1;
        if (h_stop == cfg_rank_i) begin
          o_stop  = full ? cfg_rank_i + 4'd1 : cfg_rank_i;
          count_d = full ? '0 : c1;
        end else if (h_stop > cfg_rank_i) begin
          o_stop  = h_stop + 4'd1;
          count_d = '0;
        end
        if (h_done) begin
          count_d = '0;  // the stream may end inside a chunk (its outermost dimension)
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      count_q     <= '0;
      padding_q   <= 1'b0;
      pad_level_q <= 4'd0;
      pad_done_q  <= 1'b0;
    end else begin
      count_q     <= count_d;
      padding_q   <= padding_d;
      pad_level_q <= pad_level_d;
      pad_done_q  <= pad_done_d;
    end
  end

  `STREAM_OUT_REG(out, 1, W, emit, 1'b1, o_data, o_elem, o_stop, o_done, ofree);
  `STREAM_OUT_REG(pad, 1, 1, emit, 1'b1, is_pad, o_elem, o_stop, o_done, pfree);
endmodule
