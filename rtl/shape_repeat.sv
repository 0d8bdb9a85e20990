// Shape unit, Repeat<count>: a new innermost dimension of count copies of every element
// (docs/units.md). SystemC twin: hw/units/shape_repeat.h. Latency 1 cycle, one copy per cycle.
module shape_repeat #(
  parameter int W  = 32,
  parameter int CW = 8
) (
  input  logic          clk_i,
  input  logic          rst_ni,
  input  logic [CW-1:0] cfg_count_i,  // quasi-static: change only in reset
  // in
  input  logic          in_valid_i,
  output logic          in_ready_o,
  input  logic [W-1:0]  in_data_i,
  input  logic          in_elem_i,
  input  logic [3:0]    in_stop_i,
  input  logic          in_done_i,
  // out
  output logic          out_valid_o,
  input  logic          out_ready_i,
  output logic [W-1:0]  out_data_o,
  output logic          out_elem_o,
  output logic [3:0]    out_stop_o,
  output logic          out_done_o
);
  logic          h_valid, h_elem, h_done, consume;
  logic [W-1:0]  h_data;
  logic [3:0]    h_stop, close, o_stop;
  logic          o_elem, o_done, ofree, emit, last;
  logic [CW-1:0] copy_d, copy_q;

  stream_in_buf #(.W(W)) u_in (
    .clk_i, .rst_ni,
    .valid_i(in_valid_i), .ready_o(in_ready_o), .data_i(in_data_i), .elem_i(in_elem_i),
    .stop_i(in_stop_i), .done_i(in_done_i),
    .head_valid_o(h_valid), .head_data_o(h_data), .head_elem_o(h_elem), .head_stop_o(h_stop),
    .head_done_o(h_done), .consume_i(consume)
  );

  always_comb begin
    close   = (h_stop != 4'd0) ? h_stop + 4'd1 : 4'd1;
    last    = (copy_q == cfg_count_i - CW'(1));
    emit    = h_valid & ofree;
    consume = 1'b0;
    copy_d  = copy_q;
    o_elem  = h_elem;
    o_stop  = h_stop;
    o_done  = h_done;
    if (emit) begin
      if (!h_elem) begin
        if (h_stop != 4'd0) begin
          o_stop = h_stop + 4'd1;
        end
        consume = 1'b1;
      end else if (cfg_count_i == '0) begin
        o_elem  = 1'b0;
        o_stop  = close;
        consume = 1'b1;
      end else begin
        o_stop = last ? close : 4'd0;
        o_done = last & h_done;
        if (last) begin
          copy_d  = '0;
          consume = 1'b1;
        end else begin
          copy_d = copy_q + CW'(1);
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      copy_q <= '0;
    end else begin
      copy_q <= copy_d;
    end
  end

  stream_out_reg #(.N(1), .W(W)) u_out (
    .clk_i, .rst_ni,
    .emit_i(emit), .mask_i(1'b1), .data_i(h_data), .elem_i(o_elem), .stop_i(o_stop),
    .done_i(o_done), .free_o(ofree),
    .valid_o(out_valid_o), .ready_i(out_ready_i), .data_o(out_data_o), .elem_o(out_elem_o),
    .stop_o(out_stop_o), .done_o(out_done_o)
  );
endmodule
