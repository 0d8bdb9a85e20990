// Router, Reassemble<rank>: for each selector element, one chunk from every selected input,
// chunk after chunk (the lowest selected input with a valid head starts the next chunk),
// closing the group with S(rank + 1 + selector stop) (docs/units.md).
// SystemC twin: hw/units/router_reassemble.h. Latency 1 cycle, 1 beat/cycle.
`include "stream_macros.svh"
module router_reassemble #(
  parameter int N = 4,
  parameter int W = 32
) (
  input  logic       clk_i,
  input  logic       rst_ni,
  input  logic [3:0] cfg_rank_i,  // quasi-static: change only in reset
  // in: N data streams, one flat group
  `STREAMS_IN_PORTS(in, N, W),
  // sel: multi-hot selector, bit i = input i
  `STREAM_IN_PORTS(sel, N),
  `STREAM_OUT_PORTS(out, 1, W)
);
  logic [N-1:0] consume, pending, pick;
  logic         consume_s, emit, ofree, o_elem, o_done, chunk_end, last;
  logic [W-1:0] o_data, b_data;
  logic [3:0]   o_stop, b_stop, close;
  logic         b_elem, b_done;
  logic [N-1:0] taken_d, taken_q, cur_d, cur_q, ended_d, ended_q;
  logic         drain_d, drain_q;

  `STREAMS_IN_BUF(in, h, N, W, consume);
  `STREAM_IN_BUF(sel, s, N, consume_s);

  // The input whose chunk goes next: the current one, else the lowest pending with a head.
  assign pending = s_data & ~taken_q;
  assign pick    = (cur_q != '0) ? cur_q : (pending & h_valid) & (~(pending & h_valid) + N'(1));

  stream_pick #(.N(N), .W(W)) u_pick (
    .pick_i(pick), .data_i(h_data), .elem_i(h_elem), .stop_i(h_stop), .done_i(h_done),
    .data_o(b_data), .elem_o(b_elem), .stop_o(b_stop), .done_o(b_done)
  );

  always_comb begin
    close     = cfg_rank_i + 4'd1 + s_stop;
    chunk_end = (cfg_rank_i == 4'd0) ? b_elem : (b_stop >= cfg_rank_i);
    last      = (pending & ~pick) == '0;
    consume   = '0;
    consume_s = 1'b0;
    emit      = 1'b0;
    o_data    = b_data;
    o_elem    = 1'b0;
    o_stop    = 4'd0;
    o_done    = 1'b0;
    taken_d   = taken_q;
    cur_d     = cur_q;
    ended_d   = ended_q;
    drain_d   = drain_q;
    if (drain_q) begin
      if (&ended_q) begin
        drain_d = 1'b0;
        ended_d = '0;
      end else begin
        consume = ~ended_q & h_valid;
        ended_d = ended_q | (~ended_q & h_valid & h_done);
      end
    end else if (s_valid) begin
      if (!s_elem || s_data == '0) begin
        if (ofree) begin
          emit      = 1'b1;
          o_stop    = (s_elem || s_stop != 4'd0) ? close : 4'd0;
          o_done    = s_done;
          consume_s = 1'b1;
          drain_d   = s_done;
        end
      end else if (((pick & h_valid) != '0) && ofree) begin
        emit    = 1'b1;
        o_elem  = b_elem;
        o_stop  = b_stop;
        consume = pick;
        if (b_done) begin
          ended_d = ended_q | pick;
        end
        if (chunk_end) begin
          o_stop  = last ? close : cfg_rank_i;
          o_done  = last & s_done;
          taken_d = taken_q | pick;
          cur_d   = '0;
          if (last) begin
            consume_s = 1'b1;
            taken_d   = '0;
            drain_d   = s_done;
          end
        end else begin
          cur_d = pick;
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      taken_q <= '0;
      cur_q   <= '0;
      ended_q <= '0;
      drain_q <= 1'b0;
    end else begin
      taken_q <= taken_d;
      cur_q   <= cur_d;
      ended_q <= ended_d;
      drain_q <= drain_d;
    end
  end

  `STREAM_OUT_REG(out, 1, W, emit, 1'b1, o_data, o_elem, o_stop, o_done, ofree);
endmodule
