// Compute unit on 2-D tiles, Accum<rank> on [T x T] bf16 tiles (docs/units.md), bit for bit as
// hw/functions: `add` (cfg_op_i = 0: fp32 accumulator, rounded to bf16 at the close), `max`
// (1, exact), `matmul_acc` (2: s = acc, or p_0 for the group's first update, then s = s + p_k
// for k in order, p_k = a[i][k] * b[k][j]) and `matmul_t_acc` (3: p_k = a[i][k] * b[j][k]).
// add and max use input a only (b is not consumed). A beat with stop >= rank closes the
// group: the result leaves with stop - rank; an empty group leaves a zero payload. The tile
// header (row count, after the T^2 lanes) of the result is that of the group's last element.
// One datapath stage (the accumulator recurrence: T multipliers and a chain of T fp32 adders
// per output for matmul_acc), T^2 lanes (lane_next, one per output), evaluated in the clocked
// blocks at the edges that load their result (docs/units.md, Lanes). SystemC twin:
// hw/units/pcu_tile_accum.h.
// Latency 1 cycle from the closing beat, 1 input beat per cycle.
// Accumulator bank (cfg_bank_i = q >= 1, rank 2; docs/units.md, PcuTileAccum): the input is
// [O.., C, B1..Bq, K]; stops 1..q end entry m's K-run (bank[m] = acc, the next entry's start is
// read), q + 1 ends a chunk, >= q + 2 the last chunk, after which the NB-entry bank's M entries
// leave one per cycle. bank_q is the paired memory unit: one read and one write per cycle, no
// reset. err_o (sticky): bank overflow, a chunk unlike the first, a bare stop, a stream ending
// inside a group, q > 0 with rank != 2.
// Scan<rank> (cfg_scan_i = 1, the bank unused): every beat leaves with its stop and done, an
// element with the running state (header: the element's); stop >= rank restarts it.
`include "stream_macros.svh"
module pcu_tile_accum #(
  parameter int T = 4,
  parameter int NB = 16,  // bank entries
  parameter int W = 16 * T * T + $clog2(T + 1)  // lanes, then the tile header
) (
  input  logic       clk_i,
  input  logic       rst_ni,
  input  logic [1:0] cfg_op_i,    // 0 add, 1 max, 2 matmul_acc, 3 matmul_t_acc; quasi-static
  input  logic [3:0] cfg_rank_i,  // >= 1
  input  logic [3:0] cfg_bank_i,  // q: bank dimensions (0 = no bank); quasi-static
  input  logic       cfg_scan_i,  // 0 = Accum, 1 = Scan (no bank); quasi-static
  // a
  `STREAM_IN_PORTS(a, W),
  // b
  `STREAM_IN_PORTS(b, W),
  // out
  `STREAM_OUT_PORTS(out, 1, W),
  output logic       err_o  // sticky until reset
);
  localparam int N = T * T;
  localparam int D = 16 * N;  // lane bits; [W-1:D] is the tile header
  localparam int MW = $clog2(NB);
  localparam logic [1:0] OpAdd = 2'd0;
  localparam logic [1:0] OpMax = 2'd1;
  localparam logic [1:0] OpMatmul = 2'd2;
  localparam logic [MW-1:0] LastIdx = MW'(NB - 1);
  // Where the accumulators are loaded from at the edge.
  localparam logic [1:0] AccKeep = 2'd0;
  localparam logic [1:0] AccNext = 2'd1;  // the lanes' results
  localparam logic [1:0] AccBank = 2'd2;  // the bank entry read this cycle

  logic              consume, consume_b, emit, ofree, closes, two, hv, ha_v;
  logic [32*N-1:0]   acc_q, lane_acc;
  logic [1:0]        acc_sel;
  logic              acc_v_d, acc_v_q, lane_acc_v, lane_elem;
  logic              o_elem, o_done;
  logic [W-D-1:0]    rows_d, rows_q;  // the header of the last element taken
  logic [W-D-1:0]    o_rows;
  logic [3:0]        o_stop;
  logic [D-1:0]      out_lanes_q;  // the lanes of the output register (its header: u_out_reg)

  // Bank mode state: entry m, M entries (after chunk 0), emission of entry e.
  logic              bank, chunk0_d, chunk0_q, emit_d, emit_q, cdone_d, cdone_q, err_d, err_q;
  logic [MW-1:0]     m_d, m_q, e_d, e_q, mn, rd_idx;
  logic [MW:0]       nent_d, nent_q;
  logic [3:0]        cstop_d, cstop_q;
  logic              we, last, full, next_chunk;
  logic [32*N-1:0]   bank_q [NB];
  logic [3:0]        bstop_q [NB];
  logic [32*N-1:0]   bank_rd;

  `STREAM_IN_BUF(a, ha, W, consume);
  `STREAM_IN_BUF(b, hb, W, consume_b);

  // b's structure equals a's; only its data is used.
  logic unused_b;
  assign unused_b = ^{hb_elem, hb_stop, hb_done, hb_data[W-1:D]};

  assign two       = cfg_op_i[1];
  assign ha_v      = ha_valid & (~two | hb_valid);
  assign hv        = ha_v & ~emit_q;
  assign consume_b = consume & two;
  assign bank      = cfg_bank_i != 4'd0;
  assign err_o     = err_q;

  // While emitting, the lanes round bank entry e (no element: the lane's result is acc, rounded).
  assign bank_rd    = bank_q[rd_idx];
  assign lane_acc   = emit_q ? bank_rd : acc_q;
  assign lane_acc_v = emit_q | acc_v_q;
  assign lane_elem  = ha_elem & ~emit_q;

  // Output lane (i, j) of the beat: the next accumulator from acc (valid: acc_v) and the
  // element x = a[i][j] (none: acc itself); matmul: acc + p_0 + ... + p_{T-1} in order (from
  // p_0 for the group's first update), p_k = a_row[k] * b_col[k] (row i of A, column j of B).
  function automatic logic [31:0] lane_next(logic [1:0] op, logic [16*T-1:0] a_row, logic [16*T-1:0] b_col,
                                            logic [15:0] x, logic [31:0] acc, logic acc_v, logic elem);
    logic [31:0] s, p, xf;
    xf = {x, 16'd0};
    if (!elem) begin
      lane_next = acc;
    end else if (op == OpAdd) begin
      lane_next = acc_v ? fp32_pkg::add_f32(acc, xf) : xf;
    end else if (op == OpMax) begin
      lane_next = acc_v ? fp32_pkg::max_f32(acc, xf) : xf;
    end else begin
      s = acc;
      for (int k = 0; k < T; k++) begin
        p = fp32_pkg::mul_f32({a_row[16*k +: 16], 16'd0}, {b_col[16*k +: 16], 16'd0});
        s = (k == 0 && !acc_v) ? p : fp32_pkg::add_f32(s, p);
      end
      lane_next = s;
    end
  endfunction

  // Lane l's result as it leaves the unit: rounded to bf16 (max is exact: the accumulator as it
  // is); 0 for a group without element.
  function automatic logic [15:0] lane_out(logic [1:0] op, logic [31:0] n, logic acc_v, logic elem);
    if (!(acc_v | elem)) lane_out = 16'd0;
    else if (op == OpMax) lane_out = n[31:16];
    else lane_out = fp32_pkg::round_bf16(n);
  endfunction

  // Lane l's next accumulator this cycle (B read as column j: for matmul_acc b[k][j], for
  // matmul_t_acc b[j][k]; add and max do not read B).
  function automatic logic [31:0] lane(int l);
    logic [16*T-1:0] b_col;
    b_col = '0;
    if (two) begin
      for (int k = 0; k < T; k++)
        b_col[16*k +: 16] = (cfg_op_i == OpMatmul) ? hb_data[16*(k*T+l%T) +: 16] : hb_data[16*((l%T)*T+k) +: 16];
    end
    lane = lane_next(cfg_op_i, ha_data[16*T*(l/T) +: 16*T], b_col, ha_data[16*l +: 16], lane_acc[32*l +: 32],
                     lane_acc_v, lane_elem);
  endfunction

  // The last entry of a later chunk (its structure must repeat chunk 0's); the bank full.
  assign last = !chunk0_q && {1'b0, m_q} == nent_q - 1'b1;
  assign full = chunk0_q ? m_q == LastIdx : last;
  assign mn   = full ? m_q : m_q + 1'b1;
  // The one bank read of a cycle: the entry being emitted, or the next entry's start.
  assign next_chunk = {1'b0, ha_stop} == {1'b0, cfg_bank_i} + 5'd1;
  assign rd_idx     = emit_q ? e_q : next_chunk ? '0 : mn;

  always_comb begin
    closes   = ha_stop >= cfg_rank_i;
    consume  = 1'b0;
    emit     = 1'b0;
    acc_sel  = AccKeep;
    acc_v_d  = acc_v_q;
    o_elem   = closes;
    o_stop   = closes ? ha_stop - cfg_rank_i : 4'd0;
    o_done   = ha_done;
    m_d      = m_q;
    e_d      = e_q;
    nent_d   = nent_q;
    chunk0_d = chunk0_q;
    emit_d   = emit_q;
    cstop_d  = cstop_q;
    cdone_d  = cdone_q;
    err_d    = err_q | (bank & cfg_rank_i != 4'd2);
    we       = 1'b0;
    if (emit_q) begin
      // Entry e leaves; the last one with the closing beat's stop and done.
      o_elem = 1'b1;
      o_stop = ({1'b0, e_q} == nent_q - 1'b1) ? cstop_q - 4'd2 : bstop_q[e_q];
      o_done = ({1'b0, e_q} == nent_q - 1'b1) & cdone_q;
      if (ofree) begin
        emit = 1'b1;
        if ({1'b0, e_q} == nent_q - 1'b1) begin
          emit_d   = 1'b0;
          m_d      = '0;
          chunk0_d = 1'b1;
          acc_v_d  = 1'b0;
        end else begin
          e_d = e_q + 1'b1;
        end
      end
    end else if (hv && cfg_scan_i) begin
      o_elem = ha_elem;
      o_stop = ha_stop;
      if (ofree) begin  // Scan: every beat leaves, with the state after its element
        emit    = 1'b1;
        consume = 1'b1;
        acc_sel = AccNext;
        acc_v_d = !closes & (acc_v_q | ha_elem);
      end
    end else if (hv && bank) begin
      if (ha_done && !(ha_elem && {1'b0, ha_stop} >= {1'b0, cfg_bank_i} + 5'd2)) begin
        // A bare done, or a stream ending inside a group: a bare done; the group is lost.
        o_elem = 1'b0;
        o_stop = 4'd0;
        if (ofree) begin
          emit     = 1'b1;
          consume  = 1'b1;
          err_d    = err_d | ha_elem | (ha_stop != 4'd0) | (m_q != '0) | !chunk0_q | acc_v_q;
          m_d      = '0;
          chunk0_d = 1'b1;
          acc_v_d  = 1'b0;
        end
      end else if (!ha_elem) begin
        consume = 1'b1;  // a bare stop has no place in the bank: dropped
        err_d   = 1'b1;
      end else if (ha_stop == 4'd0) begin
        consume = 1'b1;
        acc_sel = AccNext;
        acc_v_d = 1'b1;
      end else begin
        // The K-run of entry m ends: one bank write; the next entry's start is one bank read.
        consume = 1'b1;
        we      = 1'b1;
        if (ha_stop <= cfg_bank_i) begin
          err_d   = err_d | full;
          acc_sel = (mn == m_q) ? AccNext : AccBank;
          acc_v_d = !chunk0_q;
          m_d     = mn;
        end else begin
          if (chunk0_q) nent_d = {1'b0, m_q} + 1'b1;
          else if (!last) err_d = 1'b1;
          if (next_chunk) begin
            acc_sel  = (m_q == '0) ? AccNext : AccBank;
            acc_v_d  = 1'b1;
            chunk0_d = 1'b0;
            m_d      = '0;
          end else begin  // the last chunk: emit the bank
            emit_d  = 1'b1;
            e_d     = '0;
            cstop_d = ha_stop;
            cdone_d = ha_done;
          end
        end
      end
    end else if (hv) begin
      if (closes || ha_done) begin
        if (ofree) begin
          emit    = 1'b1;
          consume = 1'b1;
          acc_v_d = 1'b0;
        end
      end else begin
        consume = 1'b1;
        acc_sel = AccNext;
        acc_v_d = acc_v_q | ha_elem;
      end
    end
  end

  // The result's header: the closing element's, else the last element's; none for an empty group.
  assign rows_d = (consume & ha_elem) ? ha_data[W-1:D] : rows_q;
  assign o_rows = emit_q ? rows_q : ha_elem ? ha_data[W-1:D] : acc_v_q ? rows_q : '0;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      acc_v_q  <= 1'b0;
      rows_q   <= '0;
      m_q      <= '0;
      e_q      <= '0;
      nent_q   <= '0;
      chunk0_q <= 1'b1;
      emit_q   <= 1'b0;
      cstop_q  <= '0;
      cdone_q  <= 1'b0;
      err_q    <= 1'b0;
    end else begin
      acc_v_q  <= acc_v_d;
      rows_q   <= rows_d;
      m_q      <= m_d;
      e_q      <= e_d;
      nent_q   <= nent_d;
      chunk0_q <= chunk0_d;
      emit_q   <= emit_d;
      cstop_q  <= cstop_d;
      cdone_q  <= cdone_d;
      err_q    <= err_d;
    end
  end

  // The datapath: the lanes are computed here, at the edges that load their results into the
  // accumulators or the output register, rather than in a combinational block. The hardware is
  // the same; a cycle-based simulator (Verilator) then evaluates the T^2 lanes once per such
  // edge instead of on every evaluation of the unit's inputs (docs/units.md, Lanes).
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      acc_q       <= '0;
      out_lanes_q <= '0;
    end else begin
      if (acc_sel == AccBank) acc_q <= bank_rd;
      if (acc_sel == AccNext || (emit && o_elem)) begin
        for (int l = 0; l < N; l++) begin
          logic [31:0] n;
          n = lane(l);
          if (acc_sel == AccNext) acc_q[32*l +: 32] <= n;
          if (emit) out_lanes_q[16*l +: 16] <= o_elem ? lane_out(cfg_op_i, n, lane_acc_v, lane_elem) : 16'd0;
        end
      end else if (emit) begin
        out_lanes_q <= '0;  // a beat without element: no payload
      end
    end
  end

  // The bank: written at the end of an entry's K-run (chunk 0 also keeps the entry's stop).
  always_ff @(posedge clk_i) begin
    if (we) begin
      logic [32*N-1:0] entry;
      for (int l = 0; l < N; l++) entry[32*l +: 32] = lane(l);
      bank_q[m_q] <= entry;
      if (chunk0_q && ha_stop <= cfg_bank_i) bstop_q[m_q] <= ha_stop - 4'd1;
    end
  end

  // The output register holds the control and the header; its lanes are out_lanes_q.
  logic [W-D-1:0] out_rows;
  stream_out_reg #(.N(1), .W(W-D)) u_out_reg (
    .clk_i, .rst_ni,
    .emit_i(emit), .mask_i(1'b1), .data_i(o_rows), .elem_i(o_elem), .stop_i(o_stop),
    .done_i(o_done), .free_o(ofree),
    .valid_o(out_valid_o), .ready_i(out_ready_i), .data_o(out_rows), .elem_o(out_elem_o),
    .stop_o(out_stop_o), .done_o(out_done_o)
  );
  assign out_data_o = {out_rows, out_lanes_q};
endmodule
