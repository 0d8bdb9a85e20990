// The head of one stream of an N-stream group, chosen by a one-hot pick (an AND-OR mux;
// all zeros when pick_i is zero). Used by the routers that merge streams (Reassemble,
// EagerMerge). SystemC twin: InBufs::head_of in hw/units/protocol.h.
module stream_pick #(
  parameter int N = 2,
  parameter int W = 32
) (
  input  logic [N-1:0]   pick_i,
  input  logic [N*W-1:0] data_i,
  input  logic [N-1:0]   elem_i,
  input  logic [4*N-1:0] stop_i,
  input  logic [N-1:0]   done_i,
  output logic [W-1:0]   data_o,
  output logic           elem_o,
  output logic [3:0]     stop_o,
  output logic           done_o
);
  always_comb begin
    data_o = '0;
    stop_o = 4'd0;
    for (int i = 0; i < N; i++) begin
      if (pick_i[i]) begin
        data_o = data_o | data_i[W*i +: W];
        stop_o = stop_o | stop_i[4*i +: 4];
      end
    end
  end
  assign elem_o = |(pick_i & elem_i);
  assign done_o = |(pick_i & done_i);
endmodule
