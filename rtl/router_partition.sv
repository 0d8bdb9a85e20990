// Router, Partition<rank> by a multi-hot selector of N bits (docs/units.md): each selector
// element routes one chunk of the data stream to every output whose bit is set, in
// lock-step over a shared payload. SystemC twin: hw/units/router_partition.h.
// Latency 1 cycle, 1 data beat/cycle.
module router_partition #(
  parameter int N = 4,
  parameter int W = 32
) (
  input  logic         clk_i,
  input  logic         rst_ni,
  input  logic [3:0]   cfg_rank_i,  // quasi-static: change only in reset
  // in (data)
  input  logic         in_valid_i,
  output logic         in_ready_o,
  input  logic [W-1:0] in_data_i,
  input  logic         in_elem_i,
  input  logic [3:0]   in_stop_i,
  input  logic         in_done_i,
  // sel (multi-hot selector, bit i = output i)
  input  logic         sel_valid_i,
  output logic         sel_ready_o,
  input  logic [N-1:0] sel_data_i,
  input  logic         sel_elem_i,
  input  logic [3:0]   sel_stop_i,
  input  logic         sel_done_i,
  // out: N consumers, one valid/ready bit each, shared payload
  output logic [N-1:0] out_valid_o,
  input  logic [N-1:0] out_ready_i,
  output logic [W-1:0] out_data_o,
  output logic         out_elem_o,
  output logic [3:0]   out_stop_o,
  output logic         out_done_o
);
  logic         d_valid, d_elem, d_done, consume_d;
  logic [W-1:0] d_data;
  logic [3:0]   d_stop;
  logic         s_valid, s_elem, s_done, consume_s;
  logic [N-1:0] s_data;
  logic [3:0]   s_stop;
  logic         ofree, emit, o_elem, o_done, chunk_end;
  logic [3:0]   o_stop;
  logic [N-1:0] mask;
  logic         drain_d, drain_q, data_done_d, data_done_q;

  stream_in_buf #(.W(W)) u_in (
    .clk_i, .rst_ni,
    .valid_i(in_valid_i), .ready_o(in_ready_o), .data_i(in_data_i), .elem_i(in_elem_i),
    .stop_i(in_stop_i), .done_i(in_done_i),
    .head_valid_o(d_valid), .head_data_o(d_data), .head_elem_o(d_elem), .head_stop_o(d_stop),
    .head_done_o(d_done), .consume_i(consume_d)
  );

  stream_in_buf #(.W(N)) u_sel (
    .clk_i, .rst_ni,
    .valid_i(sel_valid_i), .ready_o(sel_ready_o), .data_i(sel_data_i), .elem_i(sel_elem_i),
    .stop_i(sel_stop_i), .done_i(sel_done_i),
    .head_valid_o(s_valid), .head_data_o(s_data), .head_elem_o(s_elem), .head_stop_o(s_stop),
    .head_done_o(s_done), .consume_i(consume_s)
  );

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

  stream_out_reg #(.N(N), .W(W)) u_out (
    .clk_i, .rst_ni,
    .emit_i(emit), .mask_i(mask), .data_i(d_data), .elem_i(o_elem), .stop_i(o_stop),
    .done_i(o_done), .free_o(ofree),
    .valid_o(out_valid_o), .ready_i(out_ready_i), .data_o(out_data_o), .elem_o(out_elem_o),
    .stop_o(out_stop_o), .done_o(out_done_o)
  );
endmodule
