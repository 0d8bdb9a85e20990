// Compute unit, row reductions: Map `row_sum` (cfg_op_i = 0) or `row_max` (1) on [1 x L] bf16
// vector tiles -> [1 x 1] bf16 (16-bit payload): s = x_0, then s = s + x_j (fp32, RNE) or
// max_f32(s, x_j) for j = 1..L-1, rounded to bf16 once (docs/units.md).
// SystemC twin: hw/units/pcu_reduce.h. Latency 1 cycle, 1 beat per cycle.
`include "stream_macros.svh"
module pcu_reduce #(
  parameter int L = 8,
  parameter int W = 16 * L
) (
  input  logic clk_i,
  input  logic rst_ni,
  input  logic cfg_op_i,  // 0 = row_sum, 1 = row_max; quasi-static: change only in reset
  `STREAM_IN_PORTS(in, W),
  `STREAM_OUT_PORTS(out, 1, 16)
);
  logic        fire, ofree;
  logic [31:0] s [L];
  logic [15:0] o_data;

  `STREAM_IN_BUF(in, h, W, fire);

  assign s[0] = {h_data[15:0], 16'd0};
  for (genvar j = 1; j < L; j++) begin : g_chain
    logic [31:0] e, sum, mx;
    assign e = {h_data[16*j +: 16], 16'd0};
    fp32_add u_add (.a_i(s[j-1]), .b_i(e), .y_o(sum));
    fp32_max u_max (.a_i(s[j-1]), .b_i(e), .y_o(mx));
    assign s[j] = cfg_op_i ? mx : sum;
  end
  bf16_round u_round (.x_i(s[L-1]), .y_o(o_data));

  assign fire = h_valid & ofree;

  `STREAM_OUT_REG(out, 1, 16, fire, 1'b1, o_data, h_elem, h_stop, h_done, ofree);
endmodule
