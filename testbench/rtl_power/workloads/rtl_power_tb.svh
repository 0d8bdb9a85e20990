// Included inside `module tb` of every workload of scripts/rtl_power.sh (the unit instance is
// `dut`): the 100 MHz clock, the reset, random operands, the measured window and the result line.
logic clk = 0, rst_n = 0;
always #5 clk = ~clk;

// A random bf16 number of magnitude 2^-8..2^8 (exponent 119..135, random sign and mantissa), as
// activations and weights.
function automatic logic [15:0] bf16_value();
  return {1'($urandom), 8'(119 + $urandom % 17), 7'($urandom)};
endfunction

// Stop level 1 on every len-th beat (k counts from 0).
function automatic logic [3:0] stop_every(int k, int len);
  return (k % len == len - 1) ? 4'd1 : 4'd0;
endfunction

// In an always @(posedge clk) block: after a handshake on the testbench's stream p (p_valid,
// p_ready, p_data, p_stop, p_done; `sent` counts its beats), the next of BEATS beats: payload
// `next`, stop level 1 every `len` beats, done on the last.
`define RTL_POWER_SEND(p, sent, next, len) \
  if (p``_valid && p``_ready) begin \
    sent <= sent + 1; \
    p``_valid <= sent + 1 < BEATS; \
    p``_data <= next; \
    p``_stop <= stop_every(sent + 1, len); \
    p``_done <= sent + 1 == BEATS - 1; \
  end

// Two cycles of reset, then the VCD of the unit: the window starts at the first cycle out of reset.
task automatic start_window();
  repeat (2) @(posedge clk);
  rst_n = 1;
  $dumpfile({`RTL_POWER_OUT, ".vcd"});
  $dumpvars(0, dut);
endtask

// The line scripts/rtl_power.sh reads: the window's cycles and the actions done in it.
task automatic report(int cycles, int actions);
  $display("RTLPOWER cycles=%0d actions=%0d period_ns=10", cycles, actions);
  $finish;
endtask
