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
// Each stage is T^2 lanes (stage_lane: one output's products of the stage, and in stage 0 the
// element-wise functions), evaluated in the clocked block at the edges that load their result
// (docs/units.md, Lanes); the last stage's lanes round. SystemC twin: hw/units/pcu_tile_map.h.
// Latency NS cycles, one tile per cycle.
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
  localparam logic [2:0] OpMul = 3'd2;
  localparam logic [2:0] OpAdd = 3'd3;
  localparam logic [2:0] OpSilu = 3'd4;
  localparam logic [2:0] OpExp = 3'd5;

  logic adv, in_v, consume, consume_b, unary, ofree;
  logic [D-1:0] out_lanes_q;  // the lanes of the output register (its header: u_out_reg)

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

  // The input of every stage: stage 0 the buffer heads, stage s > 0 the registers after stage
  // s - 1. The operand tiles travel with the partial sums.
  logic [NS-1:0]         src_v, src_elem, src_done;
  logic [4*NS-1:0]       src_stop;
  logic [32*N*NS-1:0]    src_s;
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
      assign src_b[W-1:0] = hb_data;
    end else begin : g_reg
      assign src_v[st]    = v_q[st-1];
      assign src_elem[st] = elem_q[st-1];
      assign src_stop[4*st +: 4] = stop_q[4*(st-1) +: 4];
      assign src_done[st] = done_q[st-1];
      assign src_s[32*N*st +: 32*N] = s_q[32*N*(st-1) +: 32*N];
      assign src_a[W*st +: W] = a_q[W*(st-1) +: W];
      assign src_b[W*st +: W] = b_q[W*(st-1) +: W];
    end
  end

  // Output lane l = (i, j) of stage st from its partial sum s: matmul adds the stage's products
  // p_k = a[i][k] * b[k][j] (matmul_t: b[j][k]), k in [st*KS, (st+1)*KS), left to right (the head
  // stage starts from p_0); the element-wise functions of a[i][j] and b[i][j] are computed by
  // the head stage and passed on by the others.
  function automatic logic [31:0] stage_lane(int st, int l, logic [31:0] s_in);
    logic [31:0] s, p, ex, ey;
    logic [15:0] bk;
    if (cfg_op_i >= OpMul) begin
      ex = {src_a[16*l +: 16], 16'd0};
      ey = {hb_data[16*l +: 16], 16'd0};
      if (st != 0) stage_lane = s_in;
      else if (cfg_op_i == OpAdd) stage_lane = fp32_pkg::add_f32(ex, ey);
      else if (cfg_op_i == OpMul) stage_lane = fp32_pkg::mul_f32(ex, ey);
      else if (!XF) stage_lane = 32'd0;  // left out: the unary functions give 0
      else if (cfg_op_i == OpExp) stage_lane = fp32_pkg::xf_f32(fp32_pkg::XfExp, ex);
      else if (cfg_op_i == OpSilu) stage_lane = fp32_pkg::xf_f32(fp32_pkg::XfSilu, ex);
      else stage_lane = fp32_pkg::xf_f32(fp32_pkg::XfSigmoid, ex);
    end else begin
      s = s_in;
      for (int k = st * KS; k < (st + 1) * KS; k++) begin
        bk = (cfg_op_i == OpMatmul) ? src_b[W*st+16*(k*T+l%T) +: 16] : src_b[W*st+16*((l%T)*T+k) +: 16];
        p  = fp32_pkg::mul_f32({src_a[W*st+16*((l/T)*T+k) +: 16], 16'd0}, {bk, 16'd0});
        s  = (st == 0 && k == 0) ? p : fp32_pkg::add_f32(s, p);
      end
      stage_lane = s;
    end
  endfunction

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      v_q    <= '0;
      elem_q <= '0;
      done_q <= '0;
      stop_q <= '0;
      a_q    <= '0;
      b_q    <= '0;
    end else if (adv) begin
      for (int st = 0; st < NS - 1; st++) begin
        v_q[st]    <= src_v[st];
        elem_q[st] <= src_elem[st];
        done_q[st] <= src_done[st];
        stop_q[4*st +: 4] <= src_stop[4*st +: 4];
        a_q[W*st +: W]    <= src_a[W*st +: W];
        b_q[W*st +: W]    <= src_b[W*st +: W];
      end
    end
  end

  // The datapath: the lanes are computed here, at the edges that load their results into the
  // partial sums or the output register, rather than in a combinational block. The hardware is
  // the same; a cycle-based simulator (Verilator) then evaluates a stage's T^2 lanes once per
  // tile it takes instead of on every evaluation of the unit's inputs (docs/units.md, Lanes).
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      s_q         <= '0;
      out_lanes_q <= '0;
    end else if (adv) begin
      for (int st = 0; st < NS - 1; st++) begin
        if (src_v[st] && src_elem[st]) begin
          for (int l = 0; l < N; l++) s_q[32*(N*st+l) +: 32] <= stage_lane(st, l, src_s[32*(N*st+l) +: 32]);
        end
      end
      if (src_v[NS-1]) begin
        if (src_elem[NS-1]) begin
          for (int l = 0; l < N; l++)
            out_lanes_q[16*l +: 16] <= fp32_pkg::round_bf16(stage_lane(NS - 1, l, src_s[32*(N*(NS-1)+l) +: 32]));
        end else begin
          out_lanes_q <= '0;  // a beat without element: no payload
        end
      end
    end
  end

  // The output register holds the control and the header (a's); its lanes are out_lanes_q.
  logic [W-D-1:0] out_rows;
  stream_out_reg #(.N(1), .W(W-D)) u_out_reg (
    .clk_i, .rst_ni,
    .emit_i(adv & src_v[NS-1]), .mask_i(1'b1), .data_i(src_a[W*(NS-1)+D +: W-D]), .elem_i(src_elem[NS-1]),
    .stop_i(src_stop[4*(NS-1) +: 4]), .done_i(src_done[NS-1]), .free_o(ofree),
    .valid_o(out_valid_o), .ready_i(out_ready_i), .data_o(out_rows), .elem_o(out_elem_o),
    .stop_o(out_stop_o), .done_o(out_done_o)
  );
  assign out_data_o = {out_rows, out_lanes_q};
endmodule
