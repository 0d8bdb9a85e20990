// Compute unit on 2-D tiles, Accum<rank> on [T x T] bf16 tiles (docs/units.md), bit for bit as
// hw/functions: `add` (cfg_op_i = 0: fp32 accumulator, rounded to bf16 at the close), `max`
// (1, exact), `matmul_acc` (2: s = acc, or p_0 for the group's first update, then s = s + p_k
// for k in order, p_k = a[i][k] * b[k][j]) and `matmul_t_acc` (3: p_k = a[i][k] * b[j][k]).
// add and max use input a only (b is not consumed). A beat with stop >= rank closes the
// group: the result leaves with stop - rank; an empty group leaves a zero payload.
// One datapath stage (the accumulator recurrence: T multipliers and a chain of T fp32 adders
// per output for matmul_acc), T^2 lanes (pcu_tile_accum_lane, a Verilator hierarchical block,
// one per output). SystemC twin: hw/units/pcu_tile_accum.h.
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

  // B as the lanes read it: for matmul_acc its transpose (column j of B is row j), else B.
  logic [W-1:0] hb_t, bsel;
  for (genvar i = 0; i < T; i++) begin : g_tr_row
    for (genvar j = 0; j < T; j++) begin : g_tr_col
      assign hb_t[16*(i*T+j) +: 16] = hb_data[16*(j*T+i) +: 16];
    end
  end
  assign bsel = (cfg_op_i == OpMatmul) ? hb_t : hb_data;

  for (genvar i = 0; i < T; i++) begin : g_row
    for (genvar j = 0; j < T; j++) begin : g_col
      localparam int L = i * T + j;
      pcu_tile_accum_lane #(.T(T)) u_lane (
        .op_i(cfg_op_i),
        .a_i(ha_data[16*T*i +: 16*T]),
        .b_i(bsel[16*T*j +: 16*T]),
        .x_i(ha_data[16*L +: 16]),
        .acc_i(acc_q[32*L +: 32]),
        .acc_v_i(acc_v_q),
        .elem_i(ha_elem),
        .n_o(next[32*L +: 32]),
        .r_o(o_data[16*L +: 16])
      );
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
