// Workload of fp32_add for scripts/rtl_power.sh: an fp32 accumulation, one addition per cycle.
// The adder's a is the running sum (a register of this testbench), b a bf16 x bf16 product (an
// fp32 number with a 16-bit significand, magnitude 2^-16..2^16, random sign): Accum's `matmul_acc`
// and reductions. One action = one fp32 addition.
`timescale 1ns / 1ps
module tb;
  localparam int OPS = 2000;
  `include "rtl_power_tb.svh"
  logic [31:0] acc = 0, b, sum;
  fp32_add dut (.a_i(acc), .b_i(b), .y_o(sum));
  function automatic logic [31:0] product();
    return {1'($urandom), 8'(111 + $urandom % 33), 15'($urandom), 8'd0};
  endfunction
  initial begin
    void'($urandom(37));
    b = product();
    start_window();
    for (int i = 0; i < OPS; i++) begin
      @(posedge clk);
      acc <= sum;
      b <= product();
    end
    report(OPS, OPS);
  end
endmodule
