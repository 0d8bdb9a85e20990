// Workload of router_broadcast for scripts/rtl_power.sh: a stream of 32-bit payloads (bf16
// pairs of random numbers, magnitude 2^-8..2^8) copied to 4 consumers, one beat per cycle (input
// always valid, consumers always ready), stop level 1 every 16 beats. One action = one byte of
// payload forwarded (4 per beat; the copies share one payload register).
`timescale 1ns / 1ps
module tb;
  localparam int N = 4, BEATS = 2000;
  `include "rtl_power_tb.svh"
  logic in_valid, in_ready, in_elem = 1, in_done;
  logic [31:0] in_data;
  logic [3:0] in_stop;
  logic [N-1:0] out_valid;
  logic [31:0] out_data;
  logic out_elem, out_done;
  logic [3:0] out_stop;
  router_broadcast #(.N(N), .W(32)) dut (
    .clk_i(clk), .rst_ni(rst_n),
    .in_valid_i(in_valid), .in_ready_o(in_ready), .in_data_i(in_data), .in_elem_i(in_elem),
    .in_stop_i(in_stop), .in_done_i(in_done),
    .out_valid_o(out_valid), .out_ready_i({N{1'b1}}), .out_data_o(out_data), .out_elem_o(out_elem),
    .out_stop_o(out_stop), .out_done_o(out_done));
  // The driver and the counters sample on the clock edge (non-blocking), like a unit would.
  int sent = 0, cycles = 0;
  logic finished = 0;
  always @(posedge clk) if (rst_n) begin
    cycles <= cycles + 1;
    `RTL_POWER_SEND(in, sent, {bf16_value(), bf16_value()}, 16)
    if (out_valid[0] && out_done || cycles == 4 * BEATS) finished <= 1;
  end
  initial begin
    void'($urandom(37));
    in_valid = 1; in_data = {bf16_value(), bf16_value()}; in_stop = stop_every(0, 16); in_done = 0;
    start_window();
    wait (finished);
    if (!out_done) $fatal(1, "router_broadcast workload: the output did not end in %0d cycles", cycles);
    report(cycles, 4 * BEATS);
  end
endmodule
