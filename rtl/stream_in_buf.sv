// Input skid buffer of a unit stream port: two entries with a bypass (docs/unit-protocol.md).
// ready_o is a register (fewer than two beats stored); the head is the oldest stored beat,
// or the beat arriving this cycle when none is stored, so a beat can be consumed at the
// edge that accepts it. SystemC twin: InBuf in hw/units/protocol.h.
module stream_in_buf #(
  parameter int W = 32
) (
  input  logic         clk_i,
  input  logic         rst_ni,
  // stream input
  input  logic         valid_i,
  output logic         ready_o,
  input  logic [W-1:0] data_i,
  input  logic         elem_i,
  input  logic [3:0]   stop_i,
  input  logic         done_i,
  // head of the buffer, seen by the unit's core
  output logic         head_valid_o,
  output logic [W-1:0] head_data_o,
  output logic         head_elem_o,
  output logic [3:0]   head_stop_o,
  output logic         head_done_o,
  input  logic         consume_i
);
  localparam int BW = W + 6;

  logic [BW-1:0] in_beat, head;
  logic [BW-1:0] b0_d, b0_q, b1_d, b1_q;
  logic [1:0]    cnt_d, cnt_q, n;
  logic          ready_d, ready_q;
  logic          fire, bypass;

  assign in_beat = {data_i, elem_i, stop_i, done_i};
  assign fire    = valid_i & ready_q;
  assign head    = (cnt_q != 2'd0) ? b0_q : in_beat;
  assign {head_data_o, head_elem_o, head_stop_o, head_done_o} = head;
  assign head_valid_o = (cnt_q != 2'd0) | fire;
  assign ready_o = ready_q;

  always_comb begin
    b0_d   = b0_q;
    b1_d   = b1_q;
    n      = cnt_q;
    bypass = consume_i & (cnt_q == 2'd0);
    if (consume_i && cnt_q != 2'd0) begin
      b0_d = b1_q;
      n    = cnt_q - 2'd1;
    end
    if (fire && !bypass) begin
      if (n == 2'd0) begin
        b0_d = in_beat;
      end else begin
        b1_d = in_beat;
      end
      n = n + 2'd1;
    end
    cnt_d   = n;
    ready_d = (n != 2'd2);
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      b0_q    <= '0;
      b1_q    <= '0;
      cnt_q   <= 2'd0;
      ready_q <= 1'b0;
    end else begin
      b0_q    <= b0_d;
      b1_q    <= b1_d;
      cnt_q   <= cnt_d;
      ready_q <= ready_d;
    end
  end
endmodule
