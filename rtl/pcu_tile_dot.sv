// The dot-product chain of one output of the tile compute units (combinational): K products
// p_k = a_i[k] * b_i[k] of bf16 operands (lane k in bits [16k +: 16]) added to s_i left to
// right in fp32: s_o = (((s_i + p_0) + p_1) + ...) + p_{K-1}, or p_0 + p_1 + ... when first_i
// (s_i ignored). Used by pcu_tile_map_lane and pcu_tile_accum_lane.
module pcu_tile_dot #(
  parameter int K = 4
) (
  input  logic [16*K-1:0] a_i,
  input  logic [16*K-1:0] b_i,
  input  logic [31:0]     s_i,
  input  logic            first_i,
  output logic [31:0]     s_o
);
  logic [31:0] chain [K+1];
  assign chain[0] = s_i;
  for (genvar k = 0; k < K; k++) begin : g_k
    logic [31:0] p, s;
    fp32_mul u_mul (.a_i({a_i[16*k +: 16], 16'd0}), .b_i({b_i[16*k +: 16], 16'd0}), .y_o(p));
    fp32_add u_add (.a_i(chain[k]), .b_i(p), .y_o(s));
    if (k == 0) begin : g_first
      assign chain[1] = first_i ? p : s;
    end else begin : g_next
      assign chain[k+1] = s;
    end
  end
  assign s_o = chain[K];
endmodule
