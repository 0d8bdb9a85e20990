// Compute unit on 2-D tiles, Accum<rank> on [T x T] bf16 tiles (docs/units.md), bit for bit as
// hw/functions: `add` (cfg_op_i = 0: fp32 accumulator, rounded to bf16 at the close), `max`
// (1, exact), `matmul_acc` (2: s = acc, or p_0 for the group's first update, then s = s + p_k
// for k in order, p_k = a[i][k] * b[k][j]) and `matmul_t_acc` (3: p_k = a[i][k] * b[j][k]).
// add and max use input a only (b is not consumed). A beat with stop >= rank closes the
// group: the result leaves with stop - rank; an empty group leaves a zero payload.
// One datapath stage (the accumulator recurrence: T multipliers and a chain of T fp32 adders
// per output for matmul_acc). SystemC twin: hw/units/pcu_tile_accum.h.
// Latency 1 cycle from the closing beat, 1 input beat per cycle.
`include "stream_macros.svh"
module pcu_tile_accum #(
  parameter int T = 4,
  parameter int W = 16 * T * T
) (
  input  logic       clk_i,
  input  logic       rst_ni,
  input  logic [1:0] cfg_op_i,    // 0 add, 1 max, 2 matmul_acc, 3 matmul_t_acc; quasi-static
  input  logic [3:0] cfg_rank_i,  // >= 1
  // a
  `STREAM_IN_PORTS(a, W),
  // b
  `STREAM_IN_PORTS(b, W),
  // out
  `STREAM_OUT_PORTS(out, 1, W)
);
  localparam int N = T * T;
  localparam logic [1:0] OpAdd = 2'd0;
  localparam logic [1:0] OpMax = 2'd1;
  localparam logic [1:0] OpMatmul = 2'd2;

  logic              consume, consume_b, emit, ofree, closes, two, hv;
  logic [W-1:0]      o_data;
  logic [32*N-1:0]   next, acc_d, acc_q;
  logic              acc_v_d, acc_v_q;

  `STREAM_IN_BUF(a, ha, W, consume);
  `STREAM_IN_BUF(b, hb, W, consume_b);

  // b's structure equals a's; only its data is used.
  logic unused_b;
  assign unused_b = ^{hb_elem, hb_stop, hb_done};

  assign two       = cfg_op_i[1];
  assign hv        = ha_valid & (~two | hb_valid);
  assign consume_b = consume & two;

  for (genvar i = 0; i < T; i++) begin : g_row
    for (genvar j = 0; j < T; j++) begin : g_col
      localparam int L = i * T + j;
      logic [31:0] acc, x, sum, mx, upd, n;
      logic [31:0] chain [T+1];
      logic [15:0] rounded, r;
      assign acc = acc_q[32*L +: 32];
      assign x   = {ha_data[16*L +: 16], 16'd0};
      assign chain[0] = acc;
      for (genvar k = 0; k < T; k++) begin : g_k
        logic [31:0] xa, yb, p, s;
        assign xa = {ha_data[16*(i*T+k) +: 16], 16'd0};
        assign yb = (cfg_op_i == OpMatmul) ? {hb_data[16*(k*T+j) +: 16], 16'd0}
                                           : {hb_data[16*(j*T+k) +: 16], 16'd0};
        fp32_mul u_mul (.a_i(xa), .b_i(yb), .y_o(p));
        fp32_add u_add (.a_i(chain[k]), .b_i(p), .y_o(s));
        if (k == 0) begin : g_first
          assign chain[1] = acc_v_q ? s : p;  // the group's first update starts from p_0
        end else begin : g_next
          assign chain[k+1] = s;
        end
      end
      fp32_add u_add (.a_i(acc), .b_i(x), .y_o(sum));
      fp32_max u_max (.a_i(acc), .b_i(x), .y_o(mx));
      always_comb begin
        unique case (cfg_op_i)
          OpAdd:   upd = acc_v_q ? sum : x;
          OpMax:   upd = acc_v_q ? mx : x;
          default: upd = chain[T];
        endcase
      end
      assign n = ha_elem ? upd : acc;
      assign next[32*L +: 32] = n;
      bf16_round u_round (.x_i(n), .y_o(rounded));
      assign r = (cfg_op_i == OpMax) ? n[31:16] : rounded;  // max is exact: the accumulator as it is
      assign o_data[16*L +: 16] = (acc_v_q | ha_elem) ? r : 16'd0;
    end
  end

  always_comb begin
    closes  = ha_stop >= cfg_rank_i;
    consume = 1'b0;
    emit    = 1'b0;
    acc_d   = acc_q;
    acc_v_d = acc_v_q;
    if (hv) begin
      if (closes || ha_done) begin
        if (ofree) begin
          emit    = 1'b1;
          consume = 1'b1;
          acc_v_d = 1'b0;
        end
      end else begin
        consume = 1'b1;
        acc_d   = next;
        acc_v_d = acc_v_q | ha_elem;
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

  `STREAM_OUT_REG(out, 1, W, emit, 1'b1, o_data, closes, closes ? ha_stop - cfg_rank_i : 4'd0, ha_done,
                  ofree);
endmodule
