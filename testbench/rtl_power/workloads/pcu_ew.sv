// Workload of pcu_ew for scripts/rtl_power.sh: element-wise `mul` on two streams of [1 x 8] bf16
// tiles, one beat per cycle (both inputs always valid, the output always ready). The operands are
// random bf16 numbers of magnitude 2^-8..2^8 (exponent 119..135, random sign and mantissa), like
// activations and weights. One action = one lane-beat: the lane computes the fp32 product and the
// fp32 sum of its operands (both datapaths are active, the op selects one) and rounds to bf16.
`timescale 1ns / 1ps
module tb;
  localparam int L = 8, BEATS = 2000;
  `include "rtl_power_tb.svh"
  logic a_valid, a_ready, b_valid, b_ready, a_elem, b_elem, a_done, b_done;
  logic [16*L-1:0] a_data, b_data;
  logic [3:0] a_stop, b_stop;
  logic out_valid, out_elem, out_done;
  logic [16*L-1:0] out_data;
  logic [3:0] out_stop;
  pcu_ew #(.L(L)) dut (
    .clk_i(clk), .rst_ni(rst_n), .cfg_op_i(1'b0),
    .a_valid_i(a_valid), .a_ready_o(a_ready), .a_data_i(a_data), .a_elem_i(a_elem),
    .a_stop_i(a_stop), .a_done_i(a_done),
    .b_valid_i(b_valid), .b_ready_o(b_ready), .b_data_i(b_data), .b_elem_i(b_elem),
    .b_stop_i(b_stop), .b_done_i(b_done),
    .out_valid_o(out_valid), .out_ready_i(1'b1), .out_data_o(out_data), .out_elem_o(out_elem),
    .out_stop_o(out_stop), .out_done_o(out_done));
  function automatic logic [16*L-1:0] tile();
    logic [16*L-1:0] t;
    for (int j = 0; j < L; j++) t[16*j +: 16] = bf16_value();
    return t;
  endfunction
  // The driver and the counters sample on the clock edge (non-blocking), like a unit would.
  int sent_a = 0, sent_b = 0, cycles = 0;
  logic finished = 0;
  always @(posedge clk) if (rst_n) begin
    cycles <= cycles + 1;
    `RTL_POWER_SEND(a, sent_a, tile(), 16)
    `RTL_POWER_SEND(b, sent_b, tile(), 16)
    if (out_valid && out_done || cycles == 4 * BEATS) finished <= 1;
  end
  initial begin
    void'($urandom(37));
    a_valid = 1; b_valid = 1; a_elem = 1; b_elem = 1;
    a_data = tile(); a_stop = stop_every(0, 16); a_done = 0;
    b_data = tile(); b_stop = stop_every(0, 16); b_done = 0;
    start_window();
    wait (finished);
    if (!out_done) $fatal(1, "pcu_ew workload: the output did not end in %0d cycles", cycles);
    report(cycles, BEATS * L);
  end
endmodule
