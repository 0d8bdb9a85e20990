// Rounds a significand to nearest-even and packs an fp32 value (combinational).
// sig_i: 24-bit significand in [26:3], guard bit in [2], sticky in [1:0]; exp_i: biased
// exponent >= 1 (significand bit 26 clear with exp_i == 1 means subnormal). Exponents that
// reach 255 give Inf. SystemC twin: f32_round_pack in hw/units/fp32_arith.h.
module fp32_round_pack (
  input  logic        sign_i,
  input  logic [9:0]  exp_i,
  input  logic [26:0] sig_i,
  output logic [31:0] y_o
);
  logic        round_up;
  logic [24:0] sig;
  logic [9:0]  e;

  always_comb begin
    round_up = sig_i[2] & (sig_i[1] | sig_i[0] | sig_i[3]);
    sig      = {1'b0, sig_i[26:3]} + {24'd0, round_up};
    e        = exp_i;
    if (sig[24]) begin
      sig = sig >> 1;
      e   = e + 10'd1;
    end
    if (e >= 10'd255) begin
      y_o = {sign_i, 8'hFF, 23'd0};
    end else begin
      y_o = {sign_i, sig[23] ? e[7:0] : 8'd0, sig[22:0]};
    end
  end
endmodule
