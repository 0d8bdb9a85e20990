// Router, Broadcast: every input beat goes to all N outputs in lock-step over a shared
// payload (docs/units.md). SystemC twin: hw/units/router_broadcast.h.
// Latency 1 cycle, 1 beat/cycle while all outputs are ready.
module router_broadcast #(
  parameter int N = 4,
  parameter int W = 32
) (
  input  logic         clk_i,
  input  logic         rst_ni,
  // in
  input  logic         in_valid_i,
  output logic         in_ready_o,
  input  logic [W-1:0] in_data_i,
  input  logic         in_elem_i,
  input  logic [3:0]   in_stop_i,
  input  logic         in_done_i,
  // out: N consumers, one valid/ready bit each, shared payload
  output logic [N-1:0] out_valid_o,
  input  logic [N-1:0] out_ready_i,
  output logic [W-1:0] out_data_o,
  output logic         out_elem_o,
  output logic [3:0]   out_stop_o,
  output logic         out_done_o
);
  logic         h_valid, h_elem, h_done, emit, ofree;
  logic [W-1:0] h_data;
  logic [3:0]   h_stop;

  stream_in_buf #(.W(W)) u_in (
    .clk_i, .rst_ni,
    .valid_i(in_valid_i), .ready_o(in_ready_o), .data_i(in_data_i), .elem_i(in_elem_i),
    .stop_i(in_stop_i), .done_i(in_done_i),
    .head_valid_o(h_valid), .head_data_o(h_data), .head_elem_o(h_elem), .head_stop_o(h_stop),
    .head_done_o(h_done), .consume_i(emit)
  );

  assign emit = h_valid & ofree;

  stream_out_reg #(.N(N), .W(W)) u_out (
    .clk_i, .rst_ni,
    .emit_i(emit), .mask_i({N{1'b1}}), .data_i(h_data), .elem_i(h_elem), .stop_i(h_stop),
    .done_i(h_done), .free_o(ofree),
    .valid_o(out_valid_o), .ready_i(out_ready_i), .data_o(out_data_o), .elem_o(out_elem_o),
    .stop_o(out_stop_o), .done_o(out_done_o)
  );
endmodule
