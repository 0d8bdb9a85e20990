// Compute unit skeleton, element-wise lane (docs/units.md): Map with the tile functions
// `mul` (cfg_op_i = 0) or `add` (1) on two bf16 vector-tile streams. Each beat carries a
// [1 x L] bf16 tile, lane j in bits [16j+15:16j]; every lane computes the fp32 product or sum
// (round to nearest even, exact for bf16 products) and rounds it to bf16 once
// (hw/functions: map "mul"/"add" on bf16 tiles). The output beat takes a's stops and done
// (both inputs have the same structure). One datapath stage (combinational lanes between the
// input buffers and the output register). SystemC twin: hw/units/pcu_ew.h.
// Latency 1 cycle, 1 beat (L lanes) per cycle.
module pcu_ew #(
  parameter int L = 8,
  parameter int W = 16 * L
) (
  input  logic         clk_i,
  input  logic         rst_ni,
  input  logic         cfg_op_i,  // 0 = mul, 1 = add; quasi-static: change only in reset
  // a
  input  logic         a_valid_i,
  output logic         a_ready_o,
  input  logic [W-1:0] a_data_i,
  input  logic         a_elem_i,
  input  logic [3:0]   a_stop_i,
  input  logic         a_done_i,
  // b
  input  logic         b_valid_i,
  output logic         b_ready_o,
  input  logic [W-1:0] b_data_i,
  input  logic         b_elem_i,
  input  logic [3:0]   b_stop_i,
  input  logic         b_done_i,
  // out
  output logic         out_valid_o,
  input  logic         out_ready_i,
  output logic [W-1:0] out_data_o,
  output logic         out_elem_o,
  output logic [3:0]   out_stop_o,
  output logic         out_done_o
);
  logic         a_hv, a_elem, a_done, b_hv, b_elem, b_done, fire, ofree;
  logic [W-1:0] a_data, b_data, o_data;
  logic [3:0]   a_stop, b_stop;

  stream_in_buf #(.W(W)) u_a (
    .clk_i, .rst_ni,
    .valid_i(a_valid_i), .ready_o(a_ready_o), .data_i(a_data_i), .elem_i(a_elem_i),
    .stop_i(a_stop_i), .done_i(a_done_i),
    .head_valid_o(a_hv), .head_data_o(a_data), .head_elem_o(a_elem), .head_stop_o(a_stop),
    .head_done_o(a_done), .consume_i(fire)
  );

  stream_in_buf #(.W(W)) u_b (
    .clk_i, .rst_ni,
    .valid_i(b_valid_i), .ready_o(b_ready_o), .data_i(b_data_i), .elem_i(b_elem_i),
    .stop_i(b_stop_i), .done_i(b_done_i),
    .head_valid_o(b_hv), .head_data_o(b_data), .head_elem_o(b_elem), .head_stop_o(b_stop),
    .head_done_o(b_done), .consume_i(fire)
  );

  // b's structure equals a's; only its data is used.
  logic unused_b;
  assign unused_b = ^{b_elem, b_stop, b_done};

  for (genvar j = 0; j < L; j++) begin : g_lane
    logic [31:0] xa, xb, prod, sum, r;
    logic [32:0] rounded;
    assign xa = {a_data[16*j +: 16], 16'd0};
    assign xb = {b_data[16*j +: 16], 16'd0};
    fp32_mul u_mul (.a_i(xa), .b_i(xb), .y_o(prod));
    fp32_add u_add (.a_i(xa), .b_i(xb), .y_o(sum));
    assign r = cfg_op_i ? sum : prod;
    // round to bf16, ties to even; NaN keeps sign and upper payload, quiet bit set
    assign rounded = {1'b0, r} + 33'h7FFF + {32'd0, r[16]};
    assign o_data[16*j +: 16] = ((r[30:23] == 8'hFF) && (r[22:0] != 23'd0))
                                ? (r[31:16] | 16'h0040) : rounded[31:16];
    logic unused_rounded;
    assign unused_rounded = ^{rounded[32], rounded[15:0]};
  end

  assign fire = a_hv & b_hv & ofree;

  stream_out_reg #(.N(1), .W(W)) u_out (
    .clk_i, .rst_ni,
    .emit_i(fire), .mask_i(1'b1), .data_i(o_data), .elem_i(a_elem), .stop_i(a_stop),
    .done_i(a_done), .free_o(ofree),
    .valid_o(out_valid_o), .ready_i(out_ready_i), .data_o(out_data_o), .elem_o(out_elem_o),
    .stop_o(out_stop_o), .done_o(out_done_o)
  );
endmodule
