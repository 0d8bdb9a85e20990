// fp32 multiplier, round to nearest even, combinational: fp32_pkg::mul_f32 (rtl/fp32_pkg.sv, the one definition).
// SystemC twin: fp32_mul in hw/units/fp32_arith.h.
module fp32_mul (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] y_o
);
  assign y_o = fp32_pkg::mul_f32(a_i, b_i);
endmodule
