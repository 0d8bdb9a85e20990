// Shape unit, Flatten<min,max>: merges stop levels min..max into one (docs/units.md).
// SystemC twin: hw/units/shape_flatten.h. Latency 1 cycle, 1 beat/cycle.
`include "stream_macros.svh"
module shape_flatten #(
  parameter int W = 32
) (
  input  logic       clk_i,
  input  logic       rst_ni,
  input  logic [3:0] cfg_min_i,  // quasi-static: change only in reset
  input  logic [3:0] cfg_max_i,
  `STREAM_IN_PORTS(in, W),
  `STREAM_OUT_PORTS(out, 1, W)
);
  logic       consume, keep, ofree, emit;
  logic [3:0] o_stop;

  `STREAM_IN_BUF(in, h, W, consume);

  always_comb begin
    o_stop = h_stop;
    if (h_stop > cfg_min_i && h_stop <= cfg_max_i) begin
      o_stop = cfg_min_i;
    end else if (h_stop > cfg_max_i) begin
      o_stop = h_stop - (cfg_max_i - cfg_min_i);
    end
    keep    = h_elem | (o_stop != 4'd0) | h_done;
    consume = h_valid & (~keep | ofree);
    emit    = h_valid & keep & ofree;
  end

  `STREAM_OUT_REG(out, 1, W, emit, 1'b1, h_data, h_elem, o_stop, h_done, ofree);
endmodule
