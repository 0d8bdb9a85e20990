// Workload of stream_in_buf (a unit's input FIFO, two entries) for scripts/rtl_power.sh: 32-bit
// payloads (bf16 pairs, magnitude 2^-8..2^8) offered on 3 cycles of 4 and consumed on 3 cycles
// of 4 (independent random choices), so the entries fill and drain. One action = one byte
// pushed and popped (4 per beat).
`timescale 1ns / 1ps
module tb;
  localparam int BEATS = 2000;
  `include "rtl_power_tb.svh"
  logic valid, ready, elem = 1, done = 0, head_valid, head_elem, head_done, consume;
  logic [31:0] data, head_data;
  logic [3:0] stop = 0, head_stop;
  stream_in_buf #(.W(32)) dut (
    .clk_i(clk), .rst_ni(rst_n), .valid_i(valid), .ready_o(ready), .data_i(data), .elem_i(elem),
    .stop_i(stop), .done_i(done), .head_valid_o(head_valid), .head_data_o(head_data),
    .head_elem_o(head_elem), .head_stop_o(head_stop), .head_done_o(head_done), .consume_i(consume));
  // The driver and the counters sample on the clock edge (non-blocking), like a unit would.
  logic want;
  assign consume = head_valid & want;
  int pushed = 0, popped = 0, cycles = 0;
  always @(posedge clk) if (rst_n) begin
    cycles <= cycles + 1;
    if (consume) popped <= popped + 1;
    if (valid && ready) begin pushed <= pushed + 1; data <= {bf16_value(), bf16_value()}; end
    valid <= pushed + 32'(valid && ready) < BEATS && $urandom % 4 != 0;
    want <= $urandom % 4 != 0;
  end
  initial begin
    void'($urandom(37));
    valid = 1; want = 1; data = {bf16_value(), bf16_value()};
    start_window();
    wait (popped == BEATS || cycles == 4 * BEATS);
    if (popped != BEATS) $fatal(1, "stream_in_buf workload: %0d of %0d beats popped", popped, BEATS);
    report(cycles, 4 * BEATS);
  end
endmodule
