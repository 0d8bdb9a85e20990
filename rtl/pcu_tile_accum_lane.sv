// One output lane (i, j) of pcu_tile_accum (combinational), a Verilator hierarchical block:
// Verilated once and instantiated T^2 times, so the generated C++ grows with the number of lanes,
// not with T^3 (docs/units.md, Build cost). From the accumulator acc_i (valid: acc_v_i) and the
// input element x_i = a[i][j]: n_o is the next accumulator for op_i = 0 add (fp32), 1 max, 2/3
// matmul_acc / matmul_t_acc (acc + p_0 + ... + p_{T-1} in order, from p_0 for the group's first
// update, p_k = a_i[k] * b_i[k]: row i of A and the selected column of B), or acc_i when the beat
// carries no element; r_o is n_o as it leaves the unit (rounded to bf16, max exact, 0 for a group
// without element).
// Note on the defaults: Verilator 5.006 does not substitute a hierarchical block instantiated
// with exactly its default parameters (it Verilates the block as <name>_<values> but the parent
// looks for <name>, and the block is silently inlined), so the default is a configuration the
// Verilated units do not use.
module pcu_tile_accum_lane #(
  parameter int T = 1  // see the note on the defaults
) (
  input  logic [1:0]      op_i,  // 0 add, 1 max, 2 matmul_acc, 3 matmul_t_acc
  input  logic [16*T-1:0] a_i,
  input  logic [16*T-1:0] b_i,
  input  logic [15:0]     x_i,
  input  logic [31:0]     acc_i,
  input  logic            acc_v_i,
  input  logic            elem_i,
  output logic [31:0]     n_o,
  output logic [15:0]     r_o
);
  /*verilator hier_block*/
  localparam logic [1:0] OpAdd = 2'd0;
  localparam logic [1:0] OpMax = 2'd1;

  logic [31:0] x, dot, sum, mx, upd;
  logic [15:0] rounded, r;
  assign x = {x_i, 16'd0};

  pcu_tile_dot #(.K(T)) u_dot (.a_i, .b_i, .s_i(acc_i), .first_i(!acc_v_i), .s_o(dot));
  fp32_add u_add (.a_i(acc_i), .b_i(x), .y_o(sum));
  fp32_max u_max (.a_i(acc_i), .b_i(x), .y_o(mx));
  always_comb begin
    unique case (op_i)
      OpAdd:   upd = acc_v_i ? sum : x;
      OpMax:   upd = acc_v_i ? mx : x;
      default: upd = dot;
    endcase
  end
  assign n_o = elem_i ? upd : acc_i;
  bf16_round u_round (.x_i(n_o), .y_o(rounded));
  assign r = (op_i == OpMax) ? n_o[31:16] : rounded;  // max is exact: the accumulator as it is
  assign r_o = (acc_v_i | elem_i) ? r : 16'd0;
endmodule
