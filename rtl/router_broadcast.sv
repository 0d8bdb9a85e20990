// Router, Broadcast: every input beat goes to all N outputs in lock-step over a shared
// payload (docs/units.md). SystemC twin: hw/units/router_broadcast.h.
// Latency 1 cycle, 1 beat/cycle while all outputs are ready.
`include "stream_macros.svh"
module router_broadcast #(
  parameter int N = 4,
  parameter int W = 32
) (
  input  logic         clk_i,
  input  logic         rst_ni,
  // in
  `STREAM_IN_PORTS(in, W),
  // out: N consumers, one valid/ready bit each, shared payload
  `STREAM_OUT_PORTS(out, N, W)
);
  logic emit, ofree;

  `STREAM_IN_BUF(in, h, W, emit);

  assign emit = h_valid & ofree;

  `STREAM_OUT_REG(out, N, W, emit, {N{1'b1}}, h_data, h_elem, h_stop, h_done, ofree);
endmodule
