// Compute unit, Accum<rank> with `add` (cfg_op_i = 0: fp32 accumulator, RNE, rounded to bf16
// at the close) or `max` (1) over [1 x L] bf16 vector tiles, element-wise (docs/units.md).
// A beat with stop >= rank closes the group: the result leaves with stop - rank; an empty
// group leaves a zero payload. cfg_scan_i = 1: Scan<rank>, every beat leaves with its stop and
// done, an element with the running state; stop >= rank restarts it. SystemC twin:
// hw/units/pcu_accum.h.
// Latency 1 cycle from the closing beat, 1 beat per cycle.
`include "stream_macros.svh"
module pcu_accum #(
  parameter int L = 8,
  parameter int W = 16 * L
) (
  input  logic       clk_i,
  input  logic       rst_ni,
  input  logic       cfg_op_i,    // 0 = add, 1 = max; quasi-static: change only in reset
  input  logic [3:0] cfg_rank_i,  // >= 1
  input  logic       cfg_scan_i,  // 0 = Accum, 1 = Scan; quasi-static
  `STREAM_IN_PORTS(in, W),
  `STREAM_OUT_PORTS(out, 1, W)
);
  logic            consume, emit, ofree, closes, o_elem;
  logic [3:0]      o_stop;
  logic [W-1:0]    o_data;
  logic [32*L-1:0] next, acc_d, acc_q;
  logic            acc_v_d, acc_v_q;

  `STREAM_IN_BUF(in, h, W, consume);

  for (genvar j = 0; j < L; j++) begin : g_lane
    logic [31:0] a, x, sum, mx, n;
    logic [15:0] r, rounded;
    assign a = acc_q[32*j +: 32];
    assign x = {h_data[16*j +: 16], 16'd0};
    fp32_add u_add (.a_i(a), .b_i(x), .y_o(sum));
    fp32_max u_max (.a_i(a), .b_i(x), .y_o(mx));
    assign n = !h_elem ? a : !acc_v_q ? x : cfg_op_i ? mx : sum;
    assign next[32*j +: 32] = n;
    bf16_round u_round (.x_i(n), .y_o(rounded));
    assign r = cfg_op_i ? n[31:16] : rounded;  // max is exact: the accumulator as it is
    assign o_data[16*j +: 16] = (acc_v_q | h_elem) ? r : 16'd0;
  end

  always_comb begin
    closes  = h_stop >= cfg_rank_i;
    consume = 1'b0;
    emit    = 1'b0;
    acc_d   = acc_q;
    acc_v_d = acc_v_q;
    o_elem  = cfg_scan_i ? h_elem : closes;
    o_stop  = cfg_scan_i ? h_stop : closes ? h_stop - cfg_rank_i : 4'd0;
    if (h_valid) begin
      if (cfg_scan_i) begin
        if (ofree) begin  // Scan: every beat leaves, with the state after its element
          emit    = 1'b1;
          consume = 1'b1;
          acc_d   = next;
          acc_v_d = !closes & (acc_v_q | h_elem);
        end
      end else if (closes || h_done) begin
        if (ofree) begin
          emit    = 1'b1;
          consume = 1'b1;
          acc_v_d = 1'b0;
        end
      end else begin
        consume = 1'b1;
        acc_d   = next;
        acc_v_d = acc_v_q | h_elem;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      acc_q   <= '0;
      acc_v_q <= 1'b0;
    end else begin
      acc_q   <= acc_d;
      acc_v_q <= acc_v_d;
    end
  end

  `STREAM_OUT_REG(out, 1, W, emit, 1'b1, o_data, o_elem, o_stop, h_done, ofree);
endmodule
