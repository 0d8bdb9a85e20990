// fp32 adder, round to nearest even, combinational (docs/units.md, architecture.md §6).
// A NaN operand gives that NaN quieted (a_i's first); Inf - Inf gives 0xFFC00000; an exact
// zero sum is +0 unless both operands are -0. SystemC twin: fp32_add in hw/units/fp32_arith.h.
module fp32_add (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] y_o
);
  localparam logic [31:0] DefaultNaN = 32'hFFC00000;
  localparam logic [31:0] QuietBit = 32'h00400000;

  logic        a_nan, b_nan, a_inf, b_inf, swap, sign, sticky;
  logic [31:0] x, y, packed_y;
  logic [7:0]  ex, ey, d;
  logic [23:0] mx, my;
  logic [27:0] mxs, mys, sum, diff;
  logic [26:0] m;
  logic [4:0]  lz;
  logic [9:0]  e;

  function automatic logic [4:0] lzc27(logic [26:0] v);
    lzc27 = 5'd27;
    for (int i = 0; i < 27; i++) begin
      if (v[i]) lzc27 = 5'(26 - i);
    end
  endfunction

  fp32_round_pack u_round (.sign_i(sign), .exp_i(e), .sig_i(m), .y_o(packed_y));

  always_comb begin
    a_nan = (a_i[30:23] == 8'hFF) && (a_i[22:0] != 23'd0);
    b_nan = (b_i[30:23] == 8'hFF) && (b_i[22:0] != 23'd0);
    a_inf = (a_i[30:23] == 8'hFF) && (a_i[22:0] == 23'd0);
    b_inf = (b_i[30:23] == 8'hFF) && (b_i[22:0] == 23'd0);
    swap  = b_i[30:0] > a_i[30:0];
    x     = swap ? b_i : a_i;
    y     = swap ? a_i : b_i;
    ex    = (x[30:23] == 8'd0) ? 8'd1 : x[30:23];
    ey    = (y[30:23] == 8'd0) ? 8'd1 : y[30:23];
    mx    = {x[30:23] != 8'd0, x[22:0]};
    my    = {y[30:23] != 8'd0, y[22:0]};
    d     = ex - ey;
    mxs   = {1'b0, mx, 3'd0};
    mys   = {1'b0, my, 3'd0};
    sticky = 1'b0;
    // align the smaller operand, keeping a sticky bit
    if (d >= 8'd27) begin
      mys = {27'd0, my != 24'd0};
    end else begin
      sticky = |(mys & ((28'd1 << d) - 28'd1));
      mys    = (mys >> d) | {27'd0, sticky};
    end
    sign = x[31];
    e    = {2'd0, ex};
    sum  = mxs + mys;
    diff = mxs - mys;
    lz   = 5'd0;
    if (x[31] == y[31]) begin
      if (sum[27]) begin
        m = sum[27:1] | {26'd0, sum[0]};
        e = e + 10'd1;
      end else begin
        m = sum[26:0];
      end
    end else begin
      m  = diff[26:0];
      lz = lzc27(m);
      if ({5'd0, lz} > e - 10'd1) lz = 5'(e - 10'd1);
      m  = m << lz;
      e  = e - {5'd0, lz};
    end

  end

  // special operands and the result
  always_comb begin
    if (a_nan) begin
      y_o = a_i | QuietBit;
    end else if (b_nan) begin
      y_o = b_i | QuietBit;
    end else if (a_inf && b_inf && (a_i[31] != b_i[31])) begin
      y_o = DefaultNaN;
    end else if (a_inf) begin
      y_o = a_i;
    end else if (b_inf) begin
      y_o = b_i;
    end else if ((x[31] != y[31]) && (diff == 28'd0)) begin
      y_o = 32'd0;
    end else if (e >= 10'd255) begin
      y_o = {sign, 8'hFF, 23'd0};
    end else begin
      y_o = packed_y;
    end
  end
endmodule
