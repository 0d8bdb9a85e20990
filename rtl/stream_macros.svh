// Port groups and port logic of the unit protocol (docs/unit-protocol.md), written once.
//
// A stream port <p> has the flat pins <p>_valid, _ready, _data [W-1:0], _elem, _stop [3:0]
// and _done (lowRISC names, _i / _o by direction). These macros declare the pins of a port,
// and instantiate its standard logic: the input skid buffer (stream_in_buf) whose head the
// unit's core sees as <h>_valid, <h>_data, <h>_elem, <h>_stop, <h>_done, and the output
// register (stream_out_reg). Every unit includes this file; it only defines macros.
`ifndef STREAM_MACROS_SVH
`define STREAM_MACROS_SVH

// Input pins of stream port p (no trailing comma).
`define STREAM_IN_PORTS(p, wd) \
  input  logic         p``_valid_i, \
  output logic         p``_ready_o, \
  input  logic [wd-1:0] p``_data_i, \
  input  logic         p``_elem_i, \
  input  logic [3:0]   p``_stop_i, \
  input  logic         p``_done_i

// Input pins of N streams packed into one flat group (stream i in slice i of every pin).
`define STREAMS_IN_PORTS(p, nc, wd) \
  input  logic [nc-1:0]    p``_valid_i, \
  output logic [nc-1:0]    p``_ready_o, \
  input  logic [nc*wd-1:0] p``_data_i, \
  input  logic [nc-1:0]    p``_elem_i, \
  input  logic [4*nc-1:0]  p``_stop_i, \
  input  logic [nc-1:0]    p``_done_i

// Output pins of stream port p with N consumers sharing one payload (no trailing comma).
`define STREAM_OUT_PORTS(p, nc, wd) \
  output logic [nc-1:0] p``_valid_o, \
  input  logic [nc-1:0] p``_ready_i, \
  output logic [wd-1:0] p``_data_o, \
  output logic         p``_elem_o, \
  output logic [3:0]   p``_stop_o, \
  output logic         p``_done_o

// The skid buffer of input port p; declares its head h_valid, h_data, h_elem, h_stop, h_done.
// `consume` is the unit's consume signal for this buffer (declared by the unit).
`define STREAM_IN_BUF(p, h, wd, consume) \
  logic         h``_valid, h``_elem, h``_done; \
  logic [wd-1:0] h``_data; \
  logic [3:0]   h``_stop; \
  stream_in_buf #(.W(wd)) u_``p``_buf ( \
    .clk_i, .rst_ni, \
    .valid_i(p``_valid_i), .ready_o(p``_ready_o), .data_i(p``_data_i), .elem_i(p``_elem_i), \
    .stop_i(p``_stop_i), .done_i(p``_done_i), \
    .head_valid_o(h``_valid), .head_data_o(h``_data), .head_elem_o(h``_elem), \
    .head_stop_o(h``_stop), .head_done_o(h``_done), .consume_i(consume) \
  )

// The skid buffers of an N-stream input group p (stream_in_bufs); declares the packed heads
// h_valid [N-1:0], h_data [N*W-1:0], h_elem, h_stop [4N-1:0], h_done.
`define STREAMS_IN_BUF(p, h, nc, wd, consume) \
  logic [nc-1:0]   h``_valid, h``_elem, h``_done; \
  logic [nc*wd-1:0] h``_data; \
  logic [4*nc-1:0] h``_stop; \
  stream_in_bufs #(.N(nc), .W(wd)) u_``p``_bufs ( \
    .clk_i, .rst_ni, \
    .valid_i(p``_valid_i), .ready_o(p``_ready_o), .data_i(p``_data_i), .elem_i(p``_elem_i), \
    .stop_i(p``_stop_i), .done_i(p``_done_i), \
    .head_valid_o(h``_valid), .head_data_o(h``_data), .head_elem_o(h``_elem), \
    .head_stop_o(h``_stop), .head_done_o(h``_done), .consume_i(consume) \
  )

// The output register of port p (N consumers); `free` is declared by the unit.
`define STREAM_OUT_REG(p, nc, wd, emit, mask, data, elem, stop, done, free) \
  stream_out_reg #(.N(nc), .W(wd)) u_``p``_reg ( \
    .clk_i, .rst_ni, \
    .emit_i(emit), .mask_i(mask), .data_i(data), .elem_i(elem), .stop_i(stop), \
    .done_i(done), .free_o(free), \
    .valid_o(p``_valid_o), .ready_i(p``_ready_i), .data_o(p``_data_o), .elem_o(p``_elem_o), \
    .stop_o(p``_stop_o), .done_o(p``_done_o) \
  )

`endif  // STREAM_MACROS_SVH
