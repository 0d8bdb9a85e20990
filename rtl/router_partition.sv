// Router, Partition<rank> by a multi-hot selector of N bits (docs/units.md): each selector
// element routes one chunk of the data stream to every output whose bit is set, in
// lock-step over a shared payload. SystemC twin: hw/units/router_partition.h.
// Latency 1 cycle, 1 data beat/cycle.
`include "stream_macros.svh"
module router_partition #(
  parameter int N = 4,
  parameter int W = 32
) (
  input  logic         clk_i,
  input  logic         rst_ni,
  input  logic [3:0]   cfg_rank_i,  // quasi-static: change only in reset
  // in (data)
  `STREAM_IN_PORTS(in, W),
  // sel (multi-hot selector, bit i = output i)
  `STREAM_IN_PORTS(sel, N),
  // out: N consumers, one valid/ready bit each, shared payload
  `STREAM_OUT_PORTS(out, N, W)
);
  logic         consume_d, consume_s;
  logic         ofree, emit, o_elem, o_done, chunk_end;
  logic [3:0]   o_stop;
  logic [N-1:0] mask;
  logic         drain_d, drain_q, data_done_d, data_done_q;

  `STREAM_IN_BUF(in, d, W, consume_d);
  `STREAM_IN_BUF(sel, s, N, consume_s);

  // The selector's stops do not matter: each selector element routes one chunk.
  logic unused_sel_stop;
  assign unused_sel_stop = ^s_stop;

  always_comb begin
    consume_d   = 1'b0;
    consume_s   = 1'b0;
    emit        = 1'b0;
    mask        = {N{1'b1}};
    o_elem      = 1'b0;
    o_stop      = 4'd0;
    o_done      = 1'b0;
    drain_d     = drain_q;
    data_done_d = data_done_q;
    chunk_end   = (cfg_rank_i == 4'd0) ? d_elem : (d_stop >= cfg_rank_i);
    if (drain_q) begin
      if (!data_done_q) begin
        if (d_valid) begin
          consume_d   = 1'b1;
          data_done_d = d_done;
        end
      end else if (ofree) begin
        emit        = 1'b1;
        o_done      = 1'b1;
        drain_d     = 1'b0;
        data_done_d = 1'b0;
      end
    end else if (s_valid) begin
      if (!s_elem) begin
        consume_s = 1'b1;
        drain_d   = s_done;
      end else if (d_valid) begin
        if (!d_elem && (cfg_rank_i == 4'd0 || d_stop == 4'd0)) begin
          consume_d = 1'b1;
        end else if (ofree) begin
          emit        = 1'b1;
          mask        = s_data;
          o_elem      = d_elem;
          o_stop      = (cfg_rank_i == 4'd0) ? 4'd0 : (d_stop > cfg_rank_i) ? cfg_rank_i : d_stop;
          consume_d   = 1'b1;
          data_done_d = d_done;
          if (chunk_end) begin
            consume_s = 1'b1;
            drain_d   = s_done;
          end
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      drain_q     <= 1'b0;
      data_done_q <= 1'b0;
    end else begin
      drain_q     <= drain_d;
      data_done_q <= data_done_d;
    end
  end

  `STREAM_OUT_REG(out, N, W, emit, mask, d_data, o_elem, o_stop, o_done, ofree);
endmodule
