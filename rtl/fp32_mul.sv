// fp32 multiplier, round to nearest even, combinational (docs/units.md, architecture.md §6).
// A NaN operand gives that NaN quieted (a_i's first); 0 * Inf gives 0xFFC00000; subnormal
// operands and results are exact IEEE. SystemC twin: fp32_mul in hw/units/fp32_arith.h.
module fp32_mul (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] y_o
);
  localparam logic [31:0] DefaultNaN = 32'hFFC00000;
  localparam logic [31:0] QuietBit = 32'h00400000;

  logic        a_nan, b_nan, a_inf, b_inf, a_zero, b_zero, sign, sticky;
  logic [7:0]  ea, eb;
  logic [23:0] ma, mb;
  logic [47:0] p;
  logic [5:0]  lz;
  logic signed [10:0] e, sh;
  logic [26:0] m;
  logic [9:0]  e_pack;
  logic [31:0] packed_y;

  function automatic logic [5:0] lzc48(logic [47:0] v);
    lzc48 = 6'd48;
    for (int i = 0; i < 48; i++) begin
      if (v[i]) lzc48 = 6'(47 - i);
    end
  endfunction

  fp32_round_pack u_round (.sign_i(sign), .exp_i(e_pack), .sig_i(m), .y_o(packed_y));

  always_comb begin
    a_nan  = (a_i[30:23] == 8'hFF) && (a_i[22:0] != 23'd0);
    b_nan  = (b_i[30:23] == 8'hFF) && (b_i[22:0] != 23'd0);
    a_inf  = (a_i[30:23] == 8'hFF) && (a_i[22:0] == 23'd0);
    b_inf  = (b_i[30:23] == 8'hFF) && (b_i[22:0] == 23'd0);
    a_zero = a_i[30:0] == 31'd0;
    b_zero = b_i[30:0] == 31'd0;
    sign   = a_i[31] ^ b_i[31];
    ea     = (a_i[30:23] == 8'd0) ? 8'd1 : a_i[30:23];
    eb     = (b_i[30:23] == 8'd0) ? 8'd1 : b_i[30:23];
    ma     = {a_i[30:23] != 8'd0, a_i[22:0]};
    mb     = {b_i[30:23] != 8'd0, b_i[22:0]};
    p      = {24'd0, ma} * {24'd0, mb};
    lz     = lzc48(p);
    p      = p << lz;
    e      = $signed({3'd0, ea}) + $signed({3'd0, eb}) - 11'sd126 - $signed({5'd0, lz});
    sticky = 1'b0;
    if (e < 11'sd1) begin
      // subnormal: shift right to exponent 1, keeping a sticky bit
      sh = 11'sd1 - e;
      if (sh >= 11'sd48) begin
        sticky = |p;
        p      = 48'd0;
      end else begin
        sticky = |(p & ((48'd1 << sh) - 48'd1));
        p      = p >> sh;
      end
      p[0] = p[0] | sticky;
      e    = 11'sd1;
    end else begin
      sh = 11'sd0;
    end
    m      = p[47:21] | {26'd0, |p[20:0]};
    e_pack = e[9:0];

  end

  // special operands and the result
  always_comb begin
    if (a_nan) begin
      y_o = a_i | QuietBit;
    end else if (b_nan) begin
      y_o = b_i | QuietBit;
    end else if ((a_inf && b_zero) || (b_inf && a_zero)) begin
      y_o = DefaultNaN;
    end else if (a_inf || b_inf) begin
      y_o = {sign, 8'hFF, 23'd0};
    end else if (a_zero || b_zero) begin
      y_o = {sign, 31'd0};
    end else if (e >= 11'sd255) begin
      y_o = {sign, 8'hFF, 23'd0};
    end else begin
      y_o = packed_y;
    end
  end
endmodule
