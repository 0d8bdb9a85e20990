// Shape unit, Repeat<count>: a new innermost dimension of count copies of every element
// (docs/units.md). SystemC twin: hw/units/shape_repeat.h. Latency 1 cycle, one copy per cycle.
`include "stream_macros.svh"
module shape_repeat #(
  parameter int W  = 32,
  parameter int CW = 8
) (
  input  logic          clk_i,
  input  logic          rst_ni,
  input  logic [CW-1:0] cfg_count_i,  // quasi-static: change only in reset
  // in
  `STREAM_IN_PORTS(in, W),
  // out
  `STREAM_OUT_PORTS(out, 1, W)
);
  logic [3:0]    close, o_stop;
  logic          consume, o_elem, o_done, ofree, emit, last;
  logic [CW-1:0] copy_d, copy_q;

  `STREAM_IN_BUF(in, h, W, consume);

  always_comb begin
    close   = (h_stop != 4'd0) ? h_stop + 4'd1 : 4'd1;
    last    = (copy_q == cfg_count_i - CW'(1));
    emit    = h_valid & ofree;
    consume = 1'b0;
    copy_d  = copy_q;
    o_elem  = h_elem;
    o_stop  = h_stop;
    o_done  = h_done;
    if (emit) begin
      if (!h_elem) begin
        if (h_stop != 4'd0) begin
          o_stop = h_stop + 4'd1;
        end
        consume = 1'b1;
      end else if (cfg_count_i == '0) begin
        o_elem  = 1'b0;
        o_stop  = close;
        consume = 1'b1;
      end else begin
        o_stop = last ? close : 4'd0;
        o_done = last & h_done;
        if (last) begin
          copy_d  = '0;
          consume = 1'b1;
        end else begin
          copy_d = copy_q + CW'(1);
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      copy_q <= '0;
    end else begin
      copy_q <= copy_d;
    end
  end

  `STREAM_OUT_REG(out, 1, W, emit, 1'b1, h_data, o_elem, o_stop, o_done, ofree);
endmodule
