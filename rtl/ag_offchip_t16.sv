// ag_offchip at T = 16 with P = 4 request lanes (par_dispatch 4: 256 bytes per cycle) for the
// Verilated T = 16 library (rtl/CMakeLists.txt, STEPSIM_RTL_T16): the pins of ag_offchip with
// these parameters (tile payload 4096 + 5 bits: the lanes and the tile header). A wrapper, as
// pcu_tile_map_t16, so the library needs no -G options.
`include "stream_macros.svh"
module ag_offchip_t16 #(
  parameter int T    = 16,
  parameter int P    = 4,
  parameter int MR   = 4,
  parameter int IW   = 16,
  parameter int AW   = 32,
  parameter int MAXO = 64,
  parameter int RW   = $clog2(T + 1),
  parameter int W    = 16 * T * T + RW,
  parameter int GW   = $clog2(2 * T * T + 1),
  parameter int DW   = 512,
  parameter int LW   = 7
) (
  input  logic            clk_i,
  input  logic            rst_ni,
  input  logic            cfg_write_i,
  input  logic [3:0]      cfg_rank_i,
  input  logic [MR*IW-1:0] cfg_shape_i,
  input  logic [MR*IW-1:0] cfg_stride_q_i,
  input  logic [MR*IW-1:0] cfg_stride_r_i,
  input  logic [IW-1:0]   cfg_offset_q_i,
  input  logic [IW-1:0]   cfg_offset_r_i,
  input  logic [IW-1:0]   cfg_tiles_c_i,
  input  logic [AW-1:0]   cfg_base_i,
  input  logic [AW-1:0]   cfg_a_i,
  input  logic [AW-1:0]   cfg_b_i,
  input  logic [GW-1:0]   cfg_rows_i,
  input  logic [GW-1:0]   cfg_row_bytes_i,
  input  logic [AW-1:0]   cfg_pitch_i,
  input  logic [RW-1:0]   cfg_tile_rows_i,
  input  logic            cfg_ref_i,
  input  logic            cfg_random_i,
  input  logic [IW-1:0]   cfg_tiles_i,
  `STREAM_IN_PORTS(in, W),
  `STREAM_IN_PORTS(ref, IW),
  `STREAM_OUT_PORTS(out, 1, W),
  output logic [P-1:0]    req_valid_o,
  input  logic            req_ready_i,
  output logic [P*AW-1:0] req_addr_o,
  output logic            req_write_o,
  output logic [P*LW-1:0] req_len_o,
  output logic [P*DW-1:0] req_wdata_o,
  input  logic            rsp_valid_i,
  output logic            rsp_ready_o,
  input  logic [P*DW-1:0] rsp_data_i,
  output logic            err_o
);
  ag_offchip #(.T(T), .MR(MR), .IW(IW), .AW(AW), .MAXO(MAXO), .P(P)) u_unit (
    .clk_i, .rst_ni, .cfg_write_i, .cfg_rank_i, .cfg_shape_i, .cfg_stride_q_i, .cfg_stride_r_i,
    .cfg_offset_q_i, .cfg_offset_r_i, .cfg_tiles_c_i, .cfg_base_i, .cfg_a_i, .cfg_b_i,
    .cfg_rows_i, .cfg_row_bytes_i, .cfg_pitch_i, .cfg_tile_rows_i, .cfg_ref_i,
    .cfg_random_i, .cfg_tiles_i,
    .in_valid_i, .in_ready_o, .in_data_i, .in_elem_i, .in_stop_i, .in_done_i,
    .ref_valid_i, .ref_ready_o, .ref_data_i, .ref_elem_i, .ref_stop_i, .ref_done_i,
    .out_valid_o, .out_ready_i, .out_data_o, .out_elem_o, .out_stop_o, .out_done_o,
    .req_valid_o, .req_ready_i, .req_addr_o, .req_write_o, .req_len_o, .req_wdata_o,
    .rsp_valid_i, .rsp_ready_o, .rsp_data_i, .err_o
  );
endmodule
