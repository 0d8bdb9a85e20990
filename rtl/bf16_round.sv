// Rounds an fp32 value to bf16, ties to even (combinational): fp32_pkg::round_bf16 (rtl/fp32_pkg.sv, the one definition).
// SystemC twin: bf16_round in hw/units/fp32_arith.h.
module bf16_round (
  input  logic [31:0] x_i,
  output logic [15:0] y_o
);
  assign y_o = fp32_pkg::round_bf16(x_i);
endmodule
