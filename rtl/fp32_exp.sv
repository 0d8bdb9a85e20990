// exp_f32 of hw/functions/numerics.h, combinational: fp32_pkg::exp_f32 (rtl/fp32_pkg.sv, the one definition).
// SystemC twin: fp32_exp in hw/units/fp32_arith.h.
module fp32_exp (
  input  logic [31:0] x_i,
  output logic [31:0] y_o
);
  assign y_o = fp32_pkg::exp_f32(x_i);
endmodule
