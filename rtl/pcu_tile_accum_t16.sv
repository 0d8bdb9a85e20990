// pcu_tile_accum at T = 16 for the Verilated T = 16 library (rtl/CMakeLists.txt,
// STEPSIM_RTL_T16): the same pins as pcu_tile_accum, with a 64-entry bank (tiles (64, 256, *) of
// the SwiGLU have 4 x 16 output blocks). A wrapper, as pcu_retile_t16, so the library needs no
// -G options.
`include "stream_macros.svh"
module pcu_tile_accum_t16 #(
  parameter int T = 16,
  parameter int NB = 64,
  parameter int W = 16 * T * T + $clog2(T + 1)
) (
  input  logic       clk_i,
  input  logic       rst_ni,
  input  logic [1:0] cfg_op_i,
  input  logic [3:0] cfg_rank_i,
  input  logic [3:0] cfg_bank_i,
  input  logic       cfg_scan_i,
  `STREAM_IN_PORTS(a, W),
  `STREAM_IN_PORTS(b, W),
  `STREAM_OUT_PORTS(out, 1, W),
  output logic       err_o
);
  pcu_tile_accum #(.T(T), .NB(NB)) u_unit (
    .clk_i, .rst_ni, .cfg_op_i, .cfg_rank_i, .cfg_bank_i, .cfg_scan_i,
    .a_valid_i, .a_ready_o, .a_data_i, .a_elem_i, .a_stop_i, .a_done_i,
    .b_valid_i, .b_ready_o, .b_data_i, .b_elem_i, .b_stop_i, .b_done_i,
    .out_valid_o, .out_ready_i, .out_data_o, .out_elem_o, .out_stop_o, .out_done_o, .err_o
  );
endmodule
