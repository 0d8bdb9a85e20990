// Compute unit skeleton, element-wise lane (docs/units.md): Map with the tile functions
// `mul` (cfg_op_i = 0) or `add` (1) on two bf16 vector-tile streams. Each beat carries a
// [1 x L] bf16 tile, lane j in bits [16j+15:16j]; every lane computes the fp32 product or sum
// (round to nearest even, exact for bf16 products) and rounds it to bf16 once
// (hw/functions: map "mul"/"add" on bf16 tiles). The output beat takes a's stops and done
// (both inputs have the same structure). One datapath stage (combinational lanes between the
// input buffers and the output register). SystemC twin: hw/units/pcu_ew.h.
// Latency 1 cycle, 1 beat (L lanes) per cycle.
`include "stream_macros.svh"
module pcu_ew #(
  parameter int L = 8,
  parameter int W = 16 * L
) (
  input  logic         clk_i,
  input  logic         rst_ni,
  input  logic         cfg_op_i,  // 0 = mul, 1 = add; quasi-static: change only in reset
  // a
  `STREAM_IN_PORTS(a, W),
  // b
  `STREAM_IN_PORTS(b, W),
  // out
  `STREAM_OUT_PORTS(out, 1, W)
);
  logic         fire, ofree;
  logic [W-1:0] o_data;

  `STREAM_IN_BUF(a, a, W, fire);
  `STREAM_IN_BUF(b, b, W, fire);

  // b's structure equals a's; only its data is used.
  logic unused_b;
  assign unused_b = ^{b_elem, b_stop, b_done};

  for (genvar j = 0; j < L; j++) begin : g_lane
    logic [31:0] xa, xb, prod, sum, r;
    assign xa = {a_data[16*j +: 16], 16'd0};
    assign xb = {b_data[16*j +: 16], 16'd0};
    fp32_mul u_mul (.a_i(xa), .b_i(xb), .y_o(prod));
    fp32_add u_add (.a_i(xa), .b_i(xb), .y_o(sum));
    assign r = cfg_op_i ? sum : prod;
    bf16_round u_round (.x_i(r), .y_o(o_data[16*j +: 16]));
  end

  assign fire = a_valid & b_valid & ofree;

  `STREAM_OUT_REG(out, 1, W, fire, 1'b1, o_data, a_elem, a_stop, a_done, ofree);
endmodule
