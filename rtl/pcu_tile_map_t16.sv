// pcu_tile_map at T = 16, NS = 2 for the Verilated T = 16 library (rtl/CMakeLists.txt,
// STEPSIM_RTL_T16): the same pins as pcu_tile_map. A wrapper, as pcu_retile_t16, so the library
// needs no -G options.
`include "stream_macros.svh"
module pcu_tile_map_t16 #(
  parameter int T = 16,
  parameter int W = 16 * T * T + $clog2(T + 1)
) (
  input  logic       clk_i,
  input  logic       rst_ni,
  input  logic [2:0] cfg_op_i,
  `STREAM_IN_PORTS(a, W),
  `STREAM_IN_PORTS(b, W),
  `STREAM_OUT_PORTS(out, 1, W)
);
  pcu_tile_map #(.T(T), .NS(2)) u_unit (
    .clk_i, .rst_ni, .cfg_op_i,
    .a_valid_i, .a_ready_o, .a_data_i, .a_elem_i, .a_stop_i, .a_done_i,
    .b_valid_i, .b_ready_o, .b_data_i, .b_elem_i, .b_stop_i, .b_done_i,
    .out_valid_o, .out_ready_i, .out_data_o, .out_elem_o, .out_stop_o, .out_done_o
  );
endmodule
