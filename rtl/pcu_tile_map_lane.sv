// One output lane of one pipeline stage of pcu_tile_map (combinational), a Verilator
// hierarchical block: Verilated once per parameter set and instantiated T^2 times per stage,
// so the generated C++ grows with the number of lanes, not with T^3 (docs/units.md, Build cost).
// Matmul: res_o = s_i + p_0 + ... + p_{K-1} in fp32 (the products of this stage; the head stage
// starts from p_0), p_k = a_i[k] * b_i[k] (a row slice of A, a slice of the selected column of
// B). Element-wise functions (op_i >= 2): computed by the head stage from ea_i, eb_i (element
// (i, j) of A and B) and passed through (s_i) by the other stages. y_o: res_o rounded to bf16.
// Note on the defaults: Verilator 5.006 does not substitute a hierarchical block instantiated
// with exactly its default parameters (it Verilates the block as <name>_<values> but the parent
// looks for <name>, and the block is silently inlined), so the default is a configuration the
// Verilated units do not use.
module pcu_tile_map_lane #(
  parameter int K = 1,        // products per stage (see the note on the defaults)
  parameter bit HEAD = 1'b1,  // stage 0: starts the sum, computes the element-wise functions
  parameter bit XF = 1'b1     // the silu/exp/sigmoid lane (head stage only)
) (
  input  logic [2:0]      op_i,  // 0 matmul, 1 matmul_t, 2 mul, 3 add, 4 silu, 5 exp, 6 sigmoid
  input  logic [16*K-1:0] a_i,
  input  logic [16*K-1:0] b_i,
  input  logic [31:0]     s_i,
  input  logic [15:0]     ea_i,
  input  logic [15:0]     eb_i,
  output logic [31:0]     res_o,
  output logic [15:0]     y_o
);
  /*verilator hier_block*/
  localparam logic [2:0] OpMul = 3'd2;
  localparam logic [2:0] OpAdd = 3'd3;
  localparam logic [2:0] OpSilu = 3'd4;
  localparam logic [2:0] OpExp = 3'd5;

  logic        ew;
  logic [31:0] dot;
  assign ew = op_i >= OpMul;

  pcu_tile_dot #(.K(K)) u_dot (.a_i, .b_i, .s_i, .first_i(HEAD), .s_o(dot));

  if (HEAD) begin : g_ew
    logic [31:0] ex, ey, prod, sum, expo, sig, silu;
    assign ex = {ea_i, 16'd0};
    assign ey = {eb_i, 16'd0};
    fp32_mul u_mul (.a_i(ex), .b_i(ey), .y_o(prod));
    fp32_add u_add (.a_i(ex), .b_i(ey), .y_o(sum));
    if (XF) begin : g_xf
      fp32_silu u_silu (.x_i(ex), .direct_i(op_i == OpExp), .exp_o(expo), .sigmoid_o(sig), .silu_o(silu));
    end else begin : g_no_xf  // left out: the unary functions give 0
      assign expo = '0;
      assign sig  = '0;
      assign silu = '0;
    end
    always_comb begin
      if (!ew) res_o = dot;
      else if (op_i == OpAdd) res_o = sum;
      else if (op_i == OpMul) res_o = prod;
      else if (op_i == OpExp) res_o = expo;
      else if (op_i == OpSilu) res_o = silu;
      else res_o = sig;
    end
  end else begin : g_pass
    logic unused_e;
    assign unused_e = ^{ea_i, eb_i};
    assign res_o = ew ? s_i : dot;
  end

  bf16_round u_round (.x_i(res_o), .y_o(y_o));
endmodule
