// Workload of ag_offchip (T = 4, the tests' and bridge's configuration) for scripts/rtl_power.sh:
// LinearOffChipLoad of 250 [4 x 4] bf16 tiles of a row-major [1000 x 4] tensor (rank-1 view, one
// tile column: tile l at 32 l; a burst of 4 rows of 8 bytes, 4 requests per tile), against a
// testbench memory that takes a request every cycle and answers in order 8 cycles later with
// random bf16 data (magnitude 2^-8..2^8); the output always ready. One action = one byte loaded.
`timescale 1ns / 1ps
module tb;
  localparam int T = 4, TILES = 250, LAT = 8, W = 16 * T * T + 3, DW = 512;
  `include "rtl_power_tb.svh"
  logic in_ready, ref_ready, out_valid, out_elem, out_done, req_valid, req_write, rsp_valid, rsp_ready, err;
  logic [W-1:0] out_data;
  logic [3:0] out_stop;
  logic [31:0] req_addr;
  logic [6:0] req_len;
  logic [DW-1:0] req_wdata, rsp_data;
  ag_offchip #(.T(T)) dut (
    .clk_i(clk), .rst_ni(rst_n), .cfg_write_i(1'b0), .cfg_rank_i(4'd1),
    .cfg_shape_i(64'(TILES)), .cfg_stride_q_i(64'd1), .cfg_stride_r_i(64'd0), .cfg_offset_q_i(16'd0),
    .cfg_offset_r_i(16'd0), .cfg_tiles_c_i(16'd1), .cfg_base_i(32'h1000), .cfg_a_i(32'd32), .cfg_b_i(32'd0),
    .cfg_rows_i(6'd4), .cfg_row_bytes_i(6'd8), .cfg_pitch_i(32'd8), .cfg_tile_rows_i(3'd4),
    .cfg_ref_i(1'b0), .cfg_random_i(1'b0), .cfg_tiles_i(16'd0),
    .in_valid_i(1'b0), .in_ready_o(in_ready), .in_data_i('0), .in_elem_i(1'b0), .in_stop_i(4'd0),
    .in_done_i(1'b0),
    .ref_valid_i(1'b0), .ref_ready_o(ref_ready), .ref_data_i(16'd0), .ref_elem_i(1'b0), .ref_stop_i(4'd0),
    .ref_done_i(1'b0),
    .out_valid_o(out_valid), .out_ready_i(1'b1), .out_data_o(out_data), .out_elem_o(out_elem),
    .out_stop_o(out_stop), .out_done_o(out_done),
    .req_valid_o(req_valid), .req_ready_i(1'b1), .req_addr_o(req_addr), .req_write_o(req_write),
    .req_len_o(req_len), .req_wdata_o(req_wdata),
    .rsp_valid_i(rsp_valid), .rsp_ready_o(rsp_ready), .rsp_data_i(rsp_data), .err_o(err));
  // The memory: the cycle each accepted request's answer is due, in order.
  int due[$];
  int cycles = 0, tiles = 0;
  logic finished = 0;
  assign rsp_valid = due.size() > 0 && due[0] <= cycles;
  always @(posedge clk) if (rst_n) begin
    cycles <= cycles + 1;
    if (req_valid) due.push_back(cycles + LAT);
    if (rsp_valid && rsp_ready) begin
      void'(due.pop_front());
      rsp_data <= {448'd0, bf16_value(), bf16_value(), bf16_value(), bf16_value()};
    end
    if (out_valid && out_elem) tiles <= tiles + 1;
    if (out_valid && out_done || cycles == 20 * TILES) finished <= 1;
  end
  initial begin
    void'($urandom(37));
    rsp_data = {448'd0, bf16_value(), bf16_value(), bf16_value(), bf16_value()};
    start_window();
    wait (finished);
    if (!out_done || err || tiles != TILES)
      $fatal(1, "ag_offchip workload: done %0d, err %0d, %0d tiles after %0d cycles", out_done, err, tiles, cycles);
    report(cycles, TILES * 2 * T * T);
  end
endmodule
