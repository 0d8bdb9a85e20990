// exp_f32 of hw/functions/numerics.h, combinational: the same fp32 RNE operations in the same
// order (range clamps, z = x * 64/ln2, n = round(z) by the 1.5*2^23 trick, Cody-Waite
// r = (x - n*L_HI) - n*L_LO, q = r + (r*r) * (0.5 + r*C3), m = T[j] + T[j]*q with the 64-entry
// table of 2^(j/64), and the scaling by 2^k as one or two exact power-of-two multiplications).
// SystemC twin: fp32_exp in hw/units/fp32_arith.h.
module fp32_exp (
  input  logic [31:0] x_i,
  output logic [31:0] y_o
);
  localparam logic [31:0] QuietBit = 32'h00400000;
  localparam logic [31:0] Magic = 32'h4B400000;     // 0x1.8p23
  localparam logic [31:0] NegMagic = 32'hCB400000;
  localparam logic [31:0] InvLn2x64 = 32'h42B8AA3B;
  localparam logic [31:0] Ln2Hi = 32'h3C314000;
  localparam logic [31:0] Ln2Lo = 32'h37485FDF;
  localparam logic [31:0] C3 = 32'h3E2AAAAB;
  localparam logic [31:0] Half = 32'h3F000000;

  logic [31:0] z, zm, n, nhi, nlo, r1, r, t1, t2, rr, t3, q, tj, tq, m, s1, s2, p1, p2, y_scaled;
  logic [23:0] nm;
  logic [14:0] nabs;
  logic signed [15:0] nn, k;
  logic [5:0]  j;
  logic        nan, huge, tiny;

  function automatic logic [31:0] exp2_table(logic [5:0] idx);
    unique case (idx)
      6'd0:  exp2_table = 32'h3f800000;  6'd1:  exp2_table = 32'h3f8164d2;
      6'd2:  exp2_table = 32'h3f82cd87;  6'd3:  exp2_table = 32'h3f843a29;
      6'd4:  exp2_table = 32'h3f85aac3;  6'd5:  exp2_table = 32'h3f871f62;
      6'd6:  exp2_table = 32'h3f88980f;  6'd7:  exp2_table = 32'h3f8a14d5;
      6'd8:  exp2_table = 32'h3f8b95c2;  6'd9:  exp2_table = 32'h3f8d1adf;
      6'd10: exp2_table = 32'h3f8ea43a;  6'd11: exp2_table = 32'h3f9031dc;
      6'd12: exp2_table = 32'h3f91c3d3;  6'd13: exp2_table = 32'h3f935a2b;
      6'd14: exp2_table = 32'h3f94f4f0;  6'd15: exp2_table = 32'h3f96942d;
      6'd16: exp2_table = 32'h3f9837f0;  6'd17: exp2_table = 32'h3f99e046;
      6'd18: exp2_table = 32'h3f9b8d3a;  6'd19: exp2_table = 32'h3f9d3eda;
      6'd20: exp2_table = 32'h3f9ef532;  6'd21: exp2_table = 32'h3fa0b051;
      6'd22: exp2_table = 32'h3fa27043;  6'd23: exp2_table = 32'h3fa43516;
      6'd24: exp2_table = 32'h3fa5fed7;  6'd25: exp2_table = 32'h3fa7cd94;
      6'd26: exp2_table = 32'h3fa9a15b;  6'd27: exp2_table = 32'h3fab7a3a;
      6'd28: exp2_table = 32'h3fad583f;  6'd29: exp2_table = 32'h3faf3b79;
      6'd30: exp2_table = 32'h3fb123f6;  6'd31: exp2_table = 32'h3fb311c4;
      6'd32: exp2_table = 32'h3fb504f3;  6'd33: exp2_table = 32'h3fb6fd92;
      6'd34: exp2_table = 32'h3fb8fbaf;  6'd35: exp2_table = 32'h3fbaff5b;
      6'd36: exp2_table = 32'h3fbd08a4;  6'd37: exp2_table = 32'h3fbf179a;
      6'd38: exp2_table = 32'h3fc12c4d;  6'd39: exp2_table = 32'h3fc346cd;
      6'd40: exp2_table = 32'h3fc5672a;  6'd41: exp2_table = 32'h3fc78d75;
      6'd42: exp2_table = 32'h3fc9b9be;  6'd43: exp2_table = 32'h3fcbec15;
      6'd44: exp2_table = 32'h3fce248c;  6'd45: exp2_table = 32'h3fd06334;
      6'd46: exp2_table = 32'h3fd2a81e;  6'd47: exp2_table = 32'h3fd4f35b;
      6'd48: exp2_table = 32'h3fd744fd;  6'd49: exp2_table = 32'h3fd99d16;
      6'd50: exp2_table = 32'h3fdbfbb8;  6'd51: exp2_table = 32'h3fde60f5;
      6'd52: exp2_table = 32'h3fe0ccdf;  6'd53: exp2_table = 32'h3fe33f89;
      6'd54: exp2_table = 32'h3fe5b907;  6'd55: exp2_table = 32'h3fe8396a;
      6'd56: exp2_table = 32'h3feac0c7;  6'd57: exp2_table = 32'h3fed4f30;
      6'd58: exp2_table = 32'h3fefe4ba;  6'd59: exp2_table = 32'h3ff28177;
      6'd60: exp2_table = 32'h3ff5257d;  6'd61: exp2_table = 32'h3ff7d0df;
      6'd62: exp2_table = 32'h3ffa83b3;  default: exp2_table = 32'h3ffd3e0c;
    endcase
  endfunction

  // 2^e as fp32, -126 <= e <= 127
  function automatic logic [31:0] pow2(logic signed [15:0] e);
    logic [7:0] b;
    b    = 8'(e + 16'sd127);
    pow2 = {1'b0, b, 23'd0};
  endfunction

  fp32_mul u_z (.a_i(x_i), .b_i(InvLn2x64), .y_o(z));
  fp32_add u_zm (.a_i(z), .b_i(Magic), .y_o(zm));
  fp32_add u_n (.a_i(zm), .b_i(NegMagic), .y_o(n));
  fp32_mul u_nhi (.a_i(n), .b_i(Ln2Hi), .y_o(nhi));
  fp32_mul u_nlo (.a_i(n), .b_i(Ln2Lo), .y_o(nlo));
  fp32_add u_r1 (.a_i(x_i), .b_i({~nhi[31], nhi[30:0]}), .y_o(r1));
  fp32_add u_r (.a_i(r1), .b_i({~nlo[31], nlo[30:0]}), .y_o(r));
  fp32_mul u_t1 (.a_i(r), .b_i(C3), .y_o(t1));
  fp32_add u_t2 (.a_i(Half), .b_i(t1), .y_o(t2));
  fp32_mul u_rr (.a_i(r), .b_i(r), .y_o(rr));
  fp32_mul u_t3 (.a_i(rr), .b_i(t2), .y_o(t3));
  fp32_add u_q (.a_i(r), .b_i(t3), .y_o(q));
  fp32_mul u_tq (.a_i(tj), .b_i(q), .y_o(tq));
  fp32_add u_m (.a_i(tj), .b_i(tq), .y_o(m));
  fp32_mul u_p1 (.a_i(m), .b_i(s1), .y_o(p1));
  fp32_mul u_p2 (.a_i(p1), .b_i(s2), .y_o(p2));

  always_comb begin
    // N = (int32) n: n holds an integer of magnitude < 2^14 here
    nm   = {1'b1, n[22:0]};
    nabs = (n[30:23] < 8'd127) ? 15'd0 : 15'(nm >> (8'd150 - n[30:23]));
    nn   = n[31] ? -$signed({1'b0, nabs}) : $signed({1'b0, nabs});
    j    = nn[5:0];
    k    = nn >>> 6;
    tj   = exp2_table(j);
    if (k > 16'sd127) begin
      s1 = pow2(16'sd127);
      s2 = pow2(k - 16'sd127);
    end else if (k < -16'sd126) begin
      s1 = pow2(k + 16'sd64);
      s2 = pow2(-16'sd64);
    end else begin
      s1 = pow2(k);
      s2 = 32'h3F800000;  // 1.0: exact
    end
    nan   = (x_i[30:23] == 8'hFF) && (x_i[22:0] != 23'd0);
    // x > 89 and x < -104 (not NaN)
    huge   = !x_i[31] && (x_i[30:0] > 31'h42B20000);
    tiny = x_i[31] && (x_i[30:0] > 31'h42D00000);
    y_scaled = p2;
    if (nan) begin
      y_o = x_i | QuietBit;
    end else if (huge) begin
      y_o = 32'h7F800000;
    end else if (tiny) begin
      y_o = 32'd0;
    end else begin
      y_o = y_scaled;
    end
  end
endmodule
