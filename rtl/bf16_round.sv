// Rounds an fp32 value to bf16, ties to even (combinational); NaN keeps its sign and upper
// payload with the quiet bit set. SystemC twin: bf16_round in hw/units/fp32_arith.h
// (= hw/stream/bf16.h bf16_bits_from_f32).
module bf16_round (
  input  logic [31:0] x_i,
  output logic [15:0] y_o
);
  logic [32:0] rounded;
  logic        unused_rounded;

  assign rounded = {1'b0, x_i} + 33'h7FFF + {32'd0, x_i[16]};
  assign y_o = ((x_i[30:23] == 8'hFF) && (x_i[22:0] != 23'd0)) ? (x_i[31:16] | 16'h0040)
                                                               : rounded[31:16];
  assign unused_rounded = ^{rounded[32], rounded[15:0]};
endmodule
