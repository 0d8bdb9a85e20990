// fp32 maximum, combinational (hw/functions/numerics.h max_f32): a NaN operand gives that NaN
// quieted (a_i's first); equal values (+0 and -0 too) give a_i unless a_i is negative, which
// prefers +0 over -0; otherwise the larger value. SystemC twin: fp32_max in
// hw/units/fp32_arith.h.
module fp32_max (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] y_o
);
  localparam logic [31:0] QuietBit = 32'h00400000;

  logic a_nan, b_nan, a_gt;

  always_comb begin
    a_nan = (a_i[30:23] == 8'hFF) && (a_i[22:0] != 23'd0);
    b_nan = (b_i[30:23] == 8'hFF) && (b_i[22:0] != 23'd0);
    if (a_i[31] != b_i[31]) begin
      a_gt = ~a_i[31];
    end else if (!a_i[31]) begin
      a_gt = a_i[30:0] > b_i[30:0];
    end else begin
      a_gt = a_i[30:0] < b_i[30:0];
    end
    if (a_nan) begin
      y_o = a_i | QuietBit;
    end else if (b_nan) begin
      y_o = b_i | QuietBit;
    end else if ((a_i == b_i) || (a_i[30:0] == 31'd0 && b_i[30:0] == 31'd0)) begin
      y_o = a_i[31] ? b_i : a_i;
    end else begin
      y_o = a_gt ? a_i : b_i;
    end
  end
endmodule
