// Shape unit, Expand<rank>: repeats each data element over the matching group of the
// reference stream, one output beat per ref beat (docs/units.md).
// SystemC twin: hw/units/shape_expand.h. Latency 1 cycle, 1 beat/cycle.
`include "stream_macros.svh"
module shape_expand #(
  parameter int W = 32
) (
  input  logic         clk_i,
  input  logic         rst_ni,
  input  logic [3:0]   cfg_rank_i,  // quasi-static: change only in reset
  // in (data)
  `STREAM_IN_PORTS(in, W),
  // ref
  `STREAM_IN_PORTS(ref, W),
  // out
  `STREAM_OUT_PORTS(out, 1, W)
);
  logic         consume_d, consume_r;
  logic         ofree, emit, o_elem, o_done, closes, dd, rd;
  logic [3:0]   o_stop;
  logic         data_done_d, data_done_q, ref_done_d, ref_done_q;

  `STREAM_IN_BUF(in, d, W, consume_d);
  `STREAM_IN_BUF(ref, r, W, consume_r);

  // The ref payload is not used: the output carries the data element.
  logic unused_ref_data;
  assign unused_ref_data = ^r_data;

  always_comb begin
    consume_d = 1'b0;
    consume_r = 1'b0;
    emit      = 1'b0;
    o_elem    = 1'b0;
    o_stop    = 4'd0;
    o_done    = 1'b0;
    dd        = data_done_q;
    rd        = ref_done_q;
    closes    = (cfg_rank_i == 4'd0) ? r_elem : (r_stop >= cfg_rank_i);
    if (data_done_q) begin
      if (r_valid && ofree) begin
        consume_r = 1'b1;
        emit      = 1'b1;
        o_done    = 1'b1;
        rd        = 1'b1;
      end
    end else if (d_valid) begin
      if (!d_elem && d_stop != 4'd0) begin
        if (r_valid && ofree) begin
          consume_d = 1'b1;
          consume_r = 1'b1;
          emit      = 1'b1;
          o_stop    = d_stop;
          o_done    = r_done;
          dd        = d_done;
          rd        = r_done;
        end
      end else if (!d_elem) begin
        consume_d = 1'b1;
        dd        = 1'b1;
      end else if (r_valid && ofree) begin
        consume_r = 1'b1;
        emit      = 1'b1;
        o_elem    = r_elem;
        o_stop    = r_stop;
        o_done    = r_done;
        if (closes || r_done) begin
          consume_d = 1'b1;
          dd        = d_done;
          rd        = r_done;
        end
      end
    end
    data_done_d = dd & ~rd;
    ref_done_d  = rd & ~dd;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      data_done_q <= 1'b0;
      ref_done_q  <= 1'b0;
    end else begin
      data_done_q <= data_done_d;
      ref_done_q  <= ref_done_d;
    end
  end

  `STREAM_OUT_REG(out, 1, W, emit, 1'b1, d_data, o_elem, o_stop, o_done, ofree);
endmodule
