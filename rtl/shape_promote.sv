// Shape unit, Promote: adds a dimension of size 1 (0 for an empty stream) (docs/units.md).
// cfg_outer_i = 1: new outermost dimension (holds one beat); 0: above cfg_rank_i inner ones.
// SystemC twin: hw/units/shape_promote.h. Latency 1 cycle, 1 beat/cycle.
`include "stream_macros.svh"
module shape_promote #(
  parameter int W = 32
) (
  input  logic         clk_i,
  input  logic         rst_ni,
  input  logic         cfg_outer_i,  // quasi-static: change only in reset
  input  logic [3:0]   cfg_rank_i,
  // in
  `STREAM_IN_PORTS(in, W),
  // out
  `STREAM_OUT_PORTS(out, 1, W)
);
  logic         consume, ofree, emit;
  logic [W-1:0] o_data;
  logic         o_elem, o_done;
  logic [3:0]   o_stop;
  // the held beat (outer form)
  logic         hold_v_d, hold_v_q, hold_elem_d, hold_elem_q, hold_done_d, hold_done_q;
  logic [W-1:0] hold_data_d, hold_data_q;
  logic [3:0]   hold_stop_d, hold_stop_q;

  `STREAM_IN_BUF(in, h, W, consume);

  always_comb begin
    o_data      = h_data;
    o_elem      = h_elem;
    o_stop      = h_stop;
    o_done      = h_done;
    consume     = 1'b0;
    emit        = 1'b0;
    hold_v_d    = hold_v_q;
    hold_data_d = hold_data_q;
    hold_elem_d = hold_elem_q;
    hold_stop_d = hold_stop_q;
    hold_done_d = hold_done_q;
    if (!cfg_outer_i) begin
      if (h_stop >= cfg_rank_i && (h_stop != 4'd0 || (cfg_rank_i == 4'd0 && h_elem))) begin
        o_stop = h_stop + 4'd1;
      end
      emit    = h_valid & ofree;
      consume = h_valid & ofree;
    end else if (h_valid) begin
      if (!h_done) begin
        if (!hold_v_q || ofree) begin
          if (hold_v_q) begin
            {o_data, o_elem, o_stop, o_done} = {hold_data_q, hold_elem_q, hold_stop_q, hold_done_q};
            emit = 1'b1;
          end
          {hold_data_d, hold_elem_d, hold_stop_d, hold_done_d} = {h_data, h_elem, h_stop, h_done};
          hold_v_d = 1'b1;
          consume  = 1'b1;
        end
      end else if (h_elem || h_stop != 4'd0) begin
        if (ofree) begin
          emit = 1'b1;
          if (hold_v_q) begin
            {o_data, o_elem, o_stop, o_done} = {hold_data_q, hold_elem_q, hold_stop_q, hold_done_q};
            hold_v_d = 1'b0;
          end else begin
            o_stop  = h_stop + 4'd1;
            consume = 1'b1;
          end
        end
      end else if (ofree) begin  // a bare done beat
        if (hold_v_q) begin
          {o_data, o_elem} = {hold_data_q, hold_elem_q};
          o_stop   = hold_stop_q + 4'd1;
          o_done   = 1'b1;
          hold_v_d = 1'b0;
        end
        emit    = 1'b1;
        consume = 1'b1;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      hold_v_q    <= 1'b0;
      hold_data_q <= '0;
      hold_elem_q <= 1'b0;
      hold_stop_q <= 4'd0;
      hold_done_q <= 1'b0;
    end else begin
      hold_v_q    <= hold_v_d;
      hold_data_q <= hold_data_d;
      hold_elem_q <= hold_elem_d;
      hold_stop_q <= hold_stop_d;
      hold_done_q <= hold_done_d;
    end
  end

  `STREAM_OUT_REG(out, 1, W, emit, 1'b1, o_data, o_elem, o_stop, o_done, ofree);
endmodule
