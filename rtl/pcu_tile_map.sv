// Compute unit on 2-D tiles, Map: `matmul` (cfg_op_i = 0), `matmul_t` (1), `mul` (2), `add`
// (3), `silu` (4), `exp` (5) or `sigmoid` (6) on [T x T] bf16 tiles, bit for bit as
// hw/functions (docs/units.md). The unary functions (4..7) do not consume input b. Lane (r, c) of a
// tile is in bits [16(rT+c) +: 16], then the tile header (its row count, RW bits; a dynamic
// [r x T] tile is computed on all T rows and the result takes a's header). matmul: out[i][j] = p_0 + ... + p_{T-1} left to right in
// fp32, p_k = a[i][k] * b[k][j] (matmul_t: b[j][k]); mul/add element-wise; rounded to bf16.
// Pipeline of NS stages (T % NS == 0): stage s adds the products k in [s*T/NS, (s+1)*T/NS)
// to the partial sums (output-stationary; the operand tiles travel with the sums); the
// element-wise ops compute in stage 0; the last stage rounds into the output register. All
// registers advance together when the output register is free (global stall).
// Each stage is T^2 lanes (pcu_tile_map_lane, a Verilator hierarchical block: one output's
// products of the stage, and in stage 0 the element-wise functions; the last stage's lanes
// round). SystemC twin: hw/units/pcu_tile_map.h. Latency NS cycles, one tile per cycle.
`include "stream_macros.svh"
module pcu_tile_map #(
  parameter int T = 4,
  parameter int NS = 2,
  parameter bit XF = 1'b1,  // the silu/exp/sigmoid lanes; 0 only for the quick synthesis check
  parameter int W = 16 * T * T + $clog2(T + 1)  // lanes, then the tile header
) (
  input  logic       clk_i,
  input  logic       rst_ni,
  input  logic [2:0] cfg_op_i,  // 0 matmul, 1 matmul_t, 2 mul, 3 add, 4 silu, 5 exp, 6 sigmoid
  // a
  `STREAM_IN_PORTS(a, W),
  // b
  `STREAM_IN_PORTS(b, W),
  // out
  `STREAM_OUT_PORTS(out, 1, W)
);
  localparam int N = T * T;
  localparam int D = 16 * N;                    // lane bits; [W-1:D] is the tile header
  localparam int KS = T / NS;                   // products per output and stage
  localparam int NR = (NS > 1) ? NS - 1 : 1;    // registers between the stages
  localparam logic [2:0] OpMatmul = 3'd0;

  logic adv, in_v, consume, consume_b, unary, ofree, mm_plain;
  logic [W-1:0] o_data;

  `STREAM_IN_BUF(a, ha, W, consume);
  `STREAM_IN_BUF(b, hb, W, consume_b);

  // b's structure equals a's; only its data is used.
  logic unused_b;
  assign unused_b = ^{hb_elem, hb_stop, hb_done};

  assign unary     = cfg_op_i[2];
  assign in_v      = ha_valid & (unary | hb_valid);
  assign adv       = ofree;
  assign consume   = adv & in_v;
  assign consume_b = consume & ~unary;
  assign mm_plain = cfg_op_i == OpMatmul;

  // B as the lanes read it: for matmul its transpose, so that column j of B is the contiguous
  // row j; for matmul_t (b[j][k]) and the element-wise functions B itself. The stage registers
  // carry this selected tile.
  logic [W-1:0] hb_t;
  for (genvar i = 0; i < T; i++) begin : g_tr_row
    for (genvar j = 0; j < T; j++) begin : g_tr_col
      assign hb_t[16*(i*T+j) +: 16] = hb_data[16*(j*T+i) +: 16];
    end
  end
  assign hb_t[W-1:D] = hb_data[W-1:D];

  // The input and the result of every stage (combinational).
  logic [NS-1:0]         src_v, src_elem, src_done;
  logic [4*NS-1:0]       src_stop;
  logic [32*N*NS-1:0]    src_s;
  logic [32*N*NR-1:0]    dst_s;  // the results of the stages before the last
  logic [W*NS-1:0]       src_a, src_b;
  // The registers between the stages (flat: stage s in slice s).
  logic [NR-1:0]         v_q, elem_q, done_q;
  logic [4*NR-1:0]       stop_q;
  logic [32*N*NR-1:0]    s_q;
  logic [W*NR-1:0]       a_q, b_q;

  for (genvar st = 0; st < NS; st++) begin : g_stage
    if (st == 0) begin : g_head
      assign src_v[0]    = in_v;
      assign src_elem[0] = ha_elem;
      assign src_stop[3:0] = ha_stop;
      assign src_done[0] = ha_done;
      assign src_s[32*N-1:0] = '0;
      assign src_a[W-1:0] = ha_data;
      assign src_b[W-1:0] = mm_plain ? hb_t : hb_data;
    end else begin : g_reg
      assign src_v[st]    = v_q[st-1];
      assign src_elem[st] = elem_q[st-1];
      assign src_stop[4*st +: 4] = stop_q[4*(st-1) +: 4];
      assign src_done[st] = done_q[st-1];
      assign src_s[32*N*st +: 32*N] = s_q[32*N*(st-1) +: 32*N];
      assign src_a[W*st +: W] = a_q[W*(st-1) +: W];
      assign src_b[W*st +: W] = b_q[W*(st-1) +: W];
    end

    // b's header is not used (the result takes a's).
    logic unused_bh;
    assign unused_bh = ^src_b[W*st+D +: W-D];

    for (genvar i = 0; i < T; i++) begin : g_row
      for (genvar j = 0; j < T; j++) begin : g_col
        localparam int L = i * T + j;
        logic [31:0] res;
        logic [15:0] y;
        pcu_tile_map_lane #(.K(KS), .HEAD(st == 0), .XF(XF)) u_lane (
          .op_i(cfg_op_i),
          .a_i(src_a[W*st+16*(i*T+st*KS) +: 16*KS]),
          .b_i(src_b[W*st+16*(j*T+st*KS) +: 16*KS]),
          .s_i(src_s[32*(N*st+L) +: 32]),
          .ea_i(src_a[W*st+16*L +: 16]),
          .eb_i((st == 0) ? hb_data[16*L +: 16] : 16'd0),
          .res_o(res),
          .y_o(y)
        );
        if (st == NS - 1) begin : g_round
          logic unused_res;
          assign unused_res = ^res;
          assign o_data[16*L +: 16] = y;
        end else begin : g_next
          logic unused_y;
          assign unused_y = ^y;
          assign dst_s[32*(N*st+L) +: 32] = res;
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      v_q    <= '0;
      elem_q <= '0;
      done_q <= '0;
      stop_q <= '0;
      s_q    <= '0;
      a_q    <= '0;
      b_q    <= '0;
    end else if (adv) begin
      for (int st = 0; st < NS - 1; st++) begin
        v_q[st]    <= src_v[st];
        elem_q[st] <= src_elem[st];
        done_q[st] <= src_done[st];
        stop_q[4*st +: 4]        <= src_stop[4*st +: 4];
        s_q[32*N*st +: 32*N]     <= dst_s[32*N*st +: 32*N];
        a_q[W*st +: W]           <= src_a[W*st +: W];
        b_q[W*st +: W]           <= src_b[W*st +: W];
      end
    end
  end

  assign o_data[W-1:D] = src_a[W*(NS-1)+D +: W-D];

  `STREAM_OUT_REG(out, 1, W, adv & src_v[NS-1], 1'b1, o_data, src_elem[NS-1], src_stop[4*(NS-1) +: 4],
                  src_done[NS-1], ofree);
endmodule
