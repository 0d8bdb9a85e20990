// Output register of a unit stream port with N consumers sharing one payload
// (docs/unit-protocol.md). emit_i loads the beat for the consumers in mask_i; it may only
// be raised when free_o (every consumer has taken the current beat or takes it now). The
// payload is zero on beats without an element. SystemC twin: OutReg in hw/units/protocol.h.
module stream_out_reg #(
  parameter int N = 1,
  parameter int W = 32
) (
  input  logic         clk_i,
  input  logic         rst_ni,
  input  logic         emit_i,
  input  logic [N-1:0] mask_i,
  input  logic [W-1:0] data_i,
  input  logic         elem_i,
  input  logic [3:0]   stop_i,
  input  logic         done_i,
  output logic         free_o,
  // stream output
  output logic [N-1:0] valid_o,
  input  logic [N-1:0] ready_i,
  output logic [W-1:0] data_o,
  output logic         elem_o,
  output logic [3:0]   stop_o,
  output logic         done_o
);
  logic [N-1:0] valid_d, valid_q;
  logic [W-1:0] data_d, data_q;
  logic         elem_d, elem_q, done_d, done_q;
  logic [3:0]   stop_d, stop_q;

  assign free_o = &(~valid_q | ready_i);

  always_comb begin
    valid_d = valid_q & ~ready_i;
    data_d  = data_q;
    elem_d  = elem_q;
    stop_d  = stop_q;
    done_d  = done_q;
    if (emit_i) begin
      valid_d = mask_i;
      data_d  = elem_i ? data_i : '0;
      elem_d  = elem_i;
      stop_d  = stop_i;
      done_d  = done_i;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      valid_q <= '0;
      data_q  <= '0;
      elem_q  <= 1'b0;
      stop_q  <= 4'd0;
      done_q  <= 1'b0;
    end else begin
      valid_q <= valid_d;
      data_q  <= data_d;
      elem_q  <= elem_d;
      stop_q  <= stop_d;
      done_q  <= done_d;
    end
  end

  assign valid_o = valid_q;
  assign data_o  = data_q;
  assign elem_o  = elem_q;
  assign stop_o  = stop_q;
  assign done_o  = done_q;
endmodule
