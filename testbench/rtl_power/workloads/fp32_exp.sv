// Workload of fp32_exp for scripts/rtl_power.sh: exp of softmax arguments (x - max <= 0), one per
// cycle: random negative fp32 numbers of magnitude 2^-4..2^4 with a random 16-bit significand.
// One action = one exponential.
`timescale 1ns / 1ps
module tb;
  localparam int OPS = 2000;
  `include "rtl_power_tb.svh"
  logic [31:0] x, y;
  fp32_exp dut (.x_i(x), .y_o(y));
  function automatic logic [31:0] argument();
    return {1'b1, 8'(123 + $urandom % 9), 7'($urandom), 16'($urandom)};
  endfunction
  initial begin
    void'($urandom(37));
    x = argument();
    start_window();
    for (int i = 0; i < OPS; i++) begin
      @(posedge clk);
      x <= argument();
    end
    report(OPS, OPS);
  end
endmodule
