// The input skid buffers of N streams packed into one flat port group (stream i in slice i
// of every pin and head signal): N stream_in_buf instances. Used by the units with a
// parametric number of inputs (Zip, Reassemble, EagerMerge). SystemC twin: an array of InBuf
// (hw/units/protocol.h).
module stream_in_bufs #(
  parameter int N = 2,
  parameter int W = 32
) (
  input  logic           clk_i,
  input  logic           rst_ni,
  // N streams in
  input  logic [N-1:0]   valid_i,
  output logic [N-1:0]   ready_o,
  input  logic [N*W-1:0] data_i,
  input  logic [N-1:0]   elem_i,
  input  logic [4*N-1:0] stop_i,
  input  logic [N-1:0]   done_i,
  // their heads, seen by the unit's core
  output logic [N-1:0]   head_valid_o,
  output logic [N*W-1:0] head_data_o,
  output logic [N-1:0]   head_elem_o,
  output logic [4*N-1:0] head_stop_o,
  output logic [N-1:0]   head_done_o,
  input  logic [N-1:0]   consume_i
);
  for (genvar i = 0; i < N; i++) begin : g_buf
    stream_in_buf #(.W(W)) u_buf (
      .clk_i, .rst_ni,
      .valid_i(valid_i[i]), .ready_o(ready_o[i]), .data_i(data_i[W*i +: W]),
      .elem_i(elem_i[i]), .stop_i(stop_i[4*i +: 4]), .done_i(done_i[i]),
      .head_valid_o(head_valid_o[i]), .head_data_o(head_data_o[W*i +: W]),
      .head_elem_o(head_elem_o[i]), .head_stop_o(head_stop_o[4*i +: 4]),
      .head_done_o(head_done_o[i]), .consume_i(consume_i[i])
    );
  end
endmodule
