// fp32 divider, round to nearest even, combinational (docs/units.md, architecture.md §6).
// A NaN operand gives that NaN quieted (a_i's first); 0/0 and Inf/Inf give 0xFFC00000; x/0 is
// Inf and x/Inf is 0, with the sign of the quotient; subnormal operands and results are exact
// IEEE. The significands (subnormals normalized first) are divided by restoring division: 27
// quotient bits and a sticky remainder. SystemC twin: fp32_div in hw/units/fp32_arith.h.
module fp32_div (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] y_o
);
  localparam logic [31:0] DefaultNaN = 32'hFFC00000;
  localparam logic [31:0] QuietBit = 32'h00400000;

  logic        a_nan, b_nan, a_inf, b_inf, a_zero, b_zero, sign, sticky;
  logic [23:0] ma, mb;
  logic [4:0]  la, lb;
  logic [24:0] rem;
  logic [26:0] q, m;
  logic signed [11:0] e, sh;
  logic [9:0]  e_pack;
  logic [31:0] packed_y;

  function automatic logic [4:0] lzc24(logic [23:0] v);
    lzc24 = 5'd24;
    for (int i = 0; i < 24; i++) begin
      if (v[i]) lzc24 = 5'(23 - i);
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
    ma     = {a_i[30:23] != 8'd0, a_i[22:0]};
    mb     = {b_i[30:23] != 8'd0, b_i[22:0]};
    la     = lzc24(ma);
    lb     = lzc24(mb);
    ma     = ma << la;
    mb     = mb << lb;
    e      = $signed({4'd0, (a_i[30:23] == 8'd0) ? 8'd1 : a_i[30:23]}) - $signed({7'd0, la})
           - $signed({4'd0, (b_i[30:23] == 8'd0) ? 8'd1 : b_i[30:23]}) + $signed({7'd0, lb}) + 12'sd127;
    // q = floor(ma / mb * 2^26); ma / mb is in (1/2, 2)
    rem = {1'b0, ma};
    q   = 27'd0;
    for (int i = 26; i >= 0; i--) begin
      q[i] = rem >= {1'b0, mb};
      if (q[i]) rem = rem - {1'b0, mb};
      rem = rem << 1;
    end
    m = q;
    if (!q[26]) begin  // quotient below 1: one more bit of it is significant
      m = q << 1;
      e = e - 12'sd1;
    end
    m[0] = m[0] | (rem != 25'd0);
    sticky = 1'b0;
    if (e < 12'sd1) begin
      // subnormal: shift right to exponent 1, keeping a sticky bit
      sh = 12'sd1 - e;
      if (sh >= 12'sd27) begin
        sticky = |m;
        m      = 27'd0;
      end else begin
        sticky = |(m & ((27'd1 << sh) - 27'd1));
        m      = m >> sh;
      end
      m[0] = m[0] | sticky;
      e    = 12'sd1;
    end else begin
      sh = 12'sd0;
    end
    e_pack = e[9:0];
  end

  // special operands and the result
  always_comb begin
    if (a_nan) begin
      y_o = a_i | QuietBit;
    end else if (b_nan) begin
      y_o = b_i | QuietBit;
    end else if ((a_zero && b_zero) || (a_inf && b_inf)) begin
      y_o = DefaultNaN;
    end else if (a_inf || b_zero) begin
      y_o = {sign, 8'hFF, 23'd0};
    end else if (a_zero || b_inf) begin
      y_o = {sign, 31'd0};
    end else if (e >= 12'sd255) begin
      y_o = {sign, 8'hFF, 23'd0};
    end else begin
      y_o = packed_y;
    end
  end
endmodule
