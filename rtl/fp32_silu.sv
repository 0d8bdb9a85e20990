// The exp unit of the tile Map's head lanes, combinational: fp32_pkg::xf_f32 (rtl/fp32_pkg.sv,
// the one definition), exp_f32 (fn_i = XfExp), sigmoid_f32 (XfSigmoid) or silu_f32 (XfSilu) of
// hw/functions/numerics.h on one exp_f32. SystemC twins: fp32_exp, fp32_sigmoid, fp32_silu in
// hw/units/fp32_arith.h.
module fp32_silu (
  input  logic [1:0]  fn_i,
  input  logic [31:0] x_i,
  output logic [31:0] y_o
);
  assign y_o = fp32_pkg::xf_f32(fn_i, x_i);
endmodule
