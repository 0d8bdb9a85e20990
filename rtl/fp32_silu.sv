// sigmoid_f32 and silu_f32 of hw/functions/numerics.h (and exp_f32 through the same exp unit),
// combinational, the same fp32 RNE operations in the same order:
//   x >= 0: e = exp(-x), d = 1 + e, sigmoid = 1 / d;  x < 0: e = exp(x), d = 1 + e, sigmoid = e / d;
//   a NaN x gives x quieted; silu = x * sigmoid.
// direct_i = 1 feeds x itself to the exp unit: exp_o is then exp_f32(x) (sigmoid_o and silu_o
// are not meaningful). SystemC twins: fp32_exp, fp32_sigmoid, fp32_silu in
// hw/units/fp32_arith.h.
module fp32_silu (
  input  logic [31:0] x_i,
  input  logic        direct_i,
  output logic [31:0] exp_o,
  output logic [31:0] sigmoid_o,
  output logic [31:0] silu_o
);
  localparam logic [31:0] QuietBit = 32'h00400000;
  localparam logic [31:0] One = 32'h3F800000;

  logic        nan, neg;
  logic [31:0] ex, d, q;

  assign nan = (x_i[30:23] == 8'hFF) && (x_i[22:0] != 23'd0);
  assign neg = x_i[31] && (x_i[30:0] != 31'd0);  // x < 0 (-0 counts as >= 0)
  assign ex  = (direct_i || neg) ? x_i : {~x_i[31], x_i[30:0]};

  fp32_exp u_exp (.x_i(ex), .y_o(exp_o));
  fp32_add u_d (.a_i(One), .b_i(exp_o), .y_o(d));
  fp32_div u_div (.a_i(neg ? exp_o : One), .b_i(d), .y_o(q));

  assign sigmoid_o = nan ? (x_i | QuietBit) : q;
  fp32_mul u_silu (.a_i(x_i), .b_i(sigmoid_o), .y_o(silu_o));
endmodule
