// Router, EagerMerge<rank>: forwards whole chunks from whichever input has one first (the
// lowest input whose head is a chunk beat) and emits the source as a one-hot selector on
// sel with the chunk's first beat; outer-structure beats are dropped (docs/units.md).
// SystemC twin: hw/units/router_eager_merge.h. Latency 1 cycle, 1 beat/cycle.
`include "stream_macros.svh"
module router_eager_merge #(
  parameter int N = 4,
  parameter int W = 32
) (
  input  logic       clk_i,
  input  logic       rst_ni,
  input  logic [3:0] cfg_rank_i,  // quasi-static: change only in reset
  // in: N data streams, one flat group
  `STREAMS_IN_PORTS(in, N, W),
  `STREAM_OUT_PORTS(out, 1, W),
  // sel: one-hot source of each chunk
  `STREAM_OUT_PORTS(sel, 1, N)
);
  logic [N-1:0] live, outer, chunky, consume, pick;
  logic         emit, emit_sel, ofree, sfree, free, o_elem, o_done, chunk_end;
  logic [W-1:0] b_data;
  logic [3:0]   o_stop, b_stop;
  logic         b_elem, b_done;
  logic [N-1:0] cur_d, cur_q, ended_d, ended_q;

  `STREAMS_IN_BUF(in, h, N, W, consume);

  // live heads: outer structure (a bare beat without a stop or with one above rank) or chunk
  always_comb begin
    for (int i = 0; i < N; i++) begin
      outer[i] = ~h_elem[i] & ((h_stop[4*i +: 4] == 4'd0) | (h_stop[4*i +: 4] > cfg_rank_i));
    end
  end
  assign live   = h_valid & ~ended_q;
  assign chunky = live & ~outer;
  assign pick   = (cur_q != '0) ? cur_q : chunky & (~chunky + N'(1));

  stream_pick #(.N(N), .W(W)) u_pick (
    .pick_i(pick), .data_i(h_data), .elem_i(h_elem), .stop_i(h_stop), .done_i(h_done),
    .data_o(b_data), .elem_o(b_elem), .stop_o(b_stop), .done_o(b_done)
  );

  always_comb begin
    free      = ofree & sfree;
    chunk_end = (cfg_rank_i == 4'd0) ? b_elem : (b_stop >= cfg_rank_i);
    consume   = live & outer & ~cur_q;
    ended_d   = ended_q | (live & outer & ~cur_q & h_done);
    cur_d     = cur_q;
    emit      = 1'b0;
    emit_sel  = 1'b0;
    o_elem    = 1'b0;
    o_stop    = 4'd0;
    o_done    = 1'b0;
    if (cur_q == '0 && (&ended_q)) begin
      if (free) begin
        emit     = 1'b1;
        emit_sel = 1'b1;
        o_done   = 1'b1;
        ended_d  = '0;
      end
    end else if (((pick & live) != '0) && free) begin
      emit     = 1'b1;
      emit_sel = (cur_q == '0);
      o_elem   = b_elem;
      o_stop   = (cfg_rank_i == 4'd0) ? 4'd0 : (b_stop > cfg_rank_i) ? cfg_rank_i : b_stop;
      consume  = consume | pick;
      if (b_done) begin
        ended_d = ended_d | pick;
      end
      cur_d = (chunk_end || b_done) ? '0 : pick;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      cur_q   <= '0;
      ended_q <= '0;
    end else begin
      cur_q   <= cur_d;
      ended_q <= ended_d;
    end
  end

  `STREAM_OUT_REG(out, 1, W, emit, 1'b1, b_data, o_elem, o_stop, o_done, ofree);
  `STREAM_OUT_REG(sel, 1, N, emit_sel, 1'b1, pick, ~o_done, 4'd0, o_done, sfree);
endmodule
