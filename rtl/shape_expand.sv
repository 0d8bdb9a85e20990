// Shape unit, Expand<rank>: repeats each data element over the matching group of the
// reference stream, one output beat per ref beat (docs/units.md).
// SystemC twin: hw/units/shape_expand.h. Latency 1 cycle, 1 beat/cycle.
module shape_expand #(
  parameter int W = 32
) (
  input  logic         clk_i,
  input  logic         rst_ni,
  input  logic [3:0]   cfg_rank_i,  // quasi-static: change only in reset
  // in (data)
  input  logic         in_valid_i,
  output logic         in_ready_o,
  input  logic [W-1:0] in_data_i,
  input  logic         in_elem_i,
  input  logic [3:0]   in_stop_i,
  input  logic         in_done_i,
  // ref
  input  logic         ref_valid_i,
  output logic         ref_ready_o,
  input  logic [W-1:0] ref_data_i,
  input  logic         ref_elem_i,
  input  logic [3:0]   ref_stop_i,
  input  logic         ref_done_i,
  // out
  output logic         out_valid_o,
  input  logic         out_ready_i,
  output logic [W-1:0] out_data_o,
  output logic         out_elem_o,
  output logic [3:0]   out_stop_o,
  output logic         out_done_o
);
  logic         d_valid, d_elem, d_done, consume_d;
  logic [W-1:0] d_data;
  logic [3:0]   d_stop;
  logic         r_valid, r_elem, r_done, consume_r;
  logic [W-1:0] r_data;
  logic [3:0]   r_stop;
  logic         ofree, emit, o_elem, o_done, closes, dd, rd;
  logic [3:0]   o_stop;
  logic         data_done_d, data_done_q, ref_done_d, ref_done_q;

  stream_in_buf #(.W(W)) u_in (
    .clk_i, .rst_ni,
    .valid_i(in_valid_i), .ready_o(in_ready_o), .data_i(in_data_i), .elem_i(in_elem_i),
    .stop_i(in_stop_i), .done_i(in_done_i),
    .head_valid_o(d_valid), .head_data_o(d_data), .head_elem_o(d_elem), .head_stop_o(d_stop),
    .head_done_o(d_done), .consume_i(consume_d)
  );

  stream_in_buf #(.W(W)) u_ref (
    .clk_i, .rst_ni,
    .valid_i(ref_valid_i), .ready_o(ref_ready_o), .data_i(ref_data_i), .elem_i(ref_elem_i),
    .stop_i(ref_stop_i), .done_i(ref_done_i),
    .head_valid_o(r_valid), .head_data_o(r_data), .head_elem_o(r_elem), .head_stop_o(r_stop),
    .head_done_o(r_done), .consume_i(consume_r)
  );

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

  stream_out_reg #(.N(1), .W(W)) u_out (
    .clk_i, .rst_ni,
    .emit_i(emit), .mask_i(1'b1), .data_i(d_data), .elem_i(o_elem), .stop_i(o_stop),
    .done_i(o_done), .free_o(ofree),
    .valid_o(out_valid_o), .ready_i(out_ready_i), .data_o(out_data_o), .elem_o(out_elem_o),
    .stop_o(out_stop_o), .done_o(out_done_o)
  );
endmodule
