// pcu_retile at T = 16 for the Verilated T = 16 library (rtl/CMakeLists.txt, STEPSIM_RTL_T16):
// the same pins as pcu_retile with [16 x 16] tiles and a 5-bit tile header (W = 4096 + 5).
// A wrapper, as pcu_tile_map_t16, so the library needs no -G options.
`include "stream_macros.svh"
module pcu_retile_t16 #(
  parameter int T  = 16,
  parameter int RW = $clog2(T + 1),
  parameter int W  = 16 * T * T + RW
) (
  input  logic       clk_i,
  input  logic       rst_ni,
  input  logic       cfg_mode_i,
  input  logic [3:0] cfg_rank_i,
  `STREAM_IN_PORTS(in, W),
  `STREAM_OUT_PORTS(out, 1, W),
  output logic       err_o
);
  pcu_retile #(.T(T)) u_unit (
    .clk_i, .rst_ni, .cfg_mode_i, .cfg_rank_i,
    .in_valid_i, .in_ready_o, .in_data_i, .in_elem_i, .in_stop_i, .in_done_i,
    .out_valid_o, .out_ready_i, .out_data_o, .out_elem_o, .out_stop_o, .out_done_o,
    .err_o
  );
endmodule
