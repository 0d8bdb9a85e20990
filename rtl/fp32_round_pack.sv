// Rounds a significand to nearest-even and packs an fp32 value (combinational):
// fp32_pkg::round_pack_f32 (rtl/fp32_pkg.sv, the one definition). sig_i: 24-bit significand in
// [26:3], guard bit in [2], sticky in [1:0]; exp_i: biased exponent >= 1. SystemC twin:
// f32_round_pack in hw/units/fp32_arith.h.
module fp32_round_pack (
  input  logic        sign_i,
  input  logic [9:0]  exp_i,
  input  logic [26:0] sig_i,
  output logic [31:0] y_o
);
  assign y_o = fp32_pkg::round_pack_f32(sign_i, exp_i, sig_i);
endmodule
