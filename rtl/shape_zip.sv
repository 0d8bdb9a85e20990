// Shape unit, Zip: tuples of the elements of N streams with the same structure
// (docs/units.md). The output payload is the tuple, element i in bits [W*i +: W], with
// stream 0's stops and done. SystemC twin: hw/units/shape_zip.h. Latency 1 cycle, 1 beat/cycle.
`include "stream_macros.svh"
module shape_zip #(
  parameter int N = 2,
  parameter int W = 32
) (
  input  logic clk_i,
  input  logic rst_ni,
  `STREAMS_IN_PORTS(in, N, W),
  `STREAM_OUT_PORTS(out, 1, N * W)
);
  logic fire, ofree;

  `STREAMS_IN_BUF(in, h, N, W, {N{fire}});

  // Streams 1..N-1 have stream 0's structure: only their payloads are used.
  logic unused_structure;
  assign unused_structure = ^{h_elem[N-1:1], h_stop[4*N-1:4], h_done[N-1:1]};

  assign fire = (&h_valid) & ofree;

  `STREAM_OUT_REG(out, 1, N * W, fire, 1'b1, h_data, h_elem[0], h_stop[3:0], h_done[0], ofree);
endmodule
