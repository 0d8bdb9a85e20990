// Workload of pmu_buffer (the RTL defaults: 4 banks x 16 words of 32 bits, flip-flop storage) for
// scripts/rtl_power.sh: Bufferize<1> -> Streamify, linear, each buffer replayed once: 125 buffers of
// 16 elements (32-bit payloads, bf16 pairs of magnitude 2^-8..2^8), one beat per cycle offered,
// the output always ready. One action = one byte written or read (4 per element written, 4 per
// element replayed).
`timescale 1ns / 1ps
module tb;
  localparam int LEN = 16, BUFS = 125, BEATS = LEN * BUFS;
  `include "rtl_power_tb.svh"
  logic in_valid, in_ready, in_elem = 1, in_done, ref_ready, out_valid, out_elem, out_done, err;
  logic [31:0] in_data, out_data;
  logic [3:0] in_stop, out_stop;
  pmu_buffer dut (
    .clk_i(clk), .rst_ni(rst_n), .cfg_rank_i(4'd1), .cfg_ref_i(1'b0), .cfg_ref_rank_i(4'd1),
    .cfg_nrep_i(4'd0), .cfg_repeat_i('0), .cfg_view_rank_i(4'd0), .cfg_shape_i('0), .cfg_stride_i('0),
    .in_valid_i(in_valid), .in_ready_o(in_ready), .in_data_i(in_data), .in_elem_i(in_elem),
    .in_stop_i(in_stop), .in_done_i(in_done),
    .ref_valid_i(1'b0), .ref_ready_o(ref_ready), .ref_data_i('0), .ref_elem_i(1'b0), .ref_stop_i(4'd0),
    .ref_done_i(1'b0),
    .out_valid_o(out_valid), .out_ready_i(1'b1), .out_data_o(out_data), .out_elem_o(out_elem),
    .out_stop_o(out_stop), .out_done_o(out_done), .err_o(err));
  // The driver and the counters sample on the clock edge (non-blocking), like a unit would.
  int sent = 0, got = 0, cycles = 0;
  logic finished = 0;
  always @(posedge clk) if (rst_n) begin
    cycles <= cycles + 1;
    `RTL_POWER_SEND(in, sent, {bf16_value(), bf16_value()}, LEN)
    if (out_valid && out_elem) got <= got + 1;
    if (out_valid && out_done || cycles == 8 * BEATS) finished <= 1;
  end
  initial begin
    void'($urandom(37));
    in_valid = 1; in_data = {bf16_value(), bf16_value()}; in_stop = stop_every(0, LEN); in_done = 0;
    start_window();
    wait (finished);
    if (!out_done || err || got != BEATS)
      $fatal(1, "pmu_buffer workload: done %0d, err %0d, %0d replayed after %0d cycles", out_done, err, got, cycles);
    report(cycles, 8 * BEATS);
  end
endmodule
