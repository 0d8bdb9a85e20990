"""scripts/rtl_power.py and scripts/rtl_power.sh (docs/rtl-power.md): the toggle counter on a
hand-written VCD, the flip-flop feeding of a hand-written netlist, the energy formula, and the RTL-derived
energy of one unit (router_broadcast, the on-chip network's byte) reproduced from its committed toggle
counts: synthesis, OpenSTA and the formula give the value of tech-180nm-rtl.yaml to its written digits.
Run by CTest (`rtl_power`, labels rtl and quick) with Debian's /usr/bin/python3 and pytest."""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.dont_write_bytecode = True  # no cache in the source tree
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import rtl_power  # noqa: E402

# Timescale 1 ps, clock period 10 ns = 10000 ps, 3 cycles measured from the first time stamp (#0).
# dut.v (2 bits, alias dut.w): bit 0 goes 0 -> 1 at 10000, 1 -> 0 at 25000: 2 toggles, high 15000 ps;
# bit 1 starts 1, falls at 20000: 1 toggle, high 20000 ps. dut.s: 1 -> 0 -> 1 at 5000 and 7000: 2
# toggles, high 30000 - 2000 = 28000 ps; the change at 40000 is after the window. tb.x is outside the
# scope.
HAND_VCD = """$timescale 1ps $end
$scope module TOP $end
 $scope module tb $end
  $var wire 1 ! x $end
  $scope module dut $end
   $var wire 2 # v [1:0] $end
   $var wire 2 # w [1:0] $end
   $var wire 1 $ s $end
   $scope module u_sub $end
    $var wire 4 % m[2] [3:0] $end
   $upscope $end
  $upscope $end
 $upscope $end
$upscope $end
$enddefinitions $end
#0
$dumpvars
b10 #
1$
0!
b0000 %
$end
#5000
0$
1!
#7000
1$
#10000
b11 #
b0101 %
#20000
b01 #
#25000
b00 #
#40000
0$
"""


def test_toggles_of_a_hand_written_vcd(tmp_path):
    vcd = tmp_path / "hand.vcd"
    vcd.write_text(HAND_VCD)
    stats = rtl_power.count_toggles(str(vcd), "TOP.tb.dut", 3, 10)
    assert stats == {
        "v[0]": [2, 15000], "v[1]": [1, 20000], "w[0]": [2, 15000], "w[1]": [1, 20000], "s": [2, 28000],
        "u_sub.m[2][0]": [1, 20000], "u_sub.m[2][1]": [0, 0], "u_sub.m[2][2]": [1, 20000],
        "u_sub.m[2][3]": [0, 0]}
    out = tmp_path / "hand.toggles"
    rtl_power.write_toggles(stats, str(out), 3, 10)
    back, cycles, period = rtl_power.read_toggles(str(out))
    assert (cycles, period) == (3, 10.0)
    assert back["s"] == (2, 28000)
    assert rtl_power.activity(back, "s", cycles, period) == (2 / 3, 28000 / 30000)


HAND_NETLIST = """module u(clk_i, rst_ni, d_i, q_o);
  input clk_i;
  input rst_ni;
  input [1:0] d_i;
  output q_o;
  wire _0_;
  DFFPOSX1 _5_ (
    .CLK(clk_i),
    .D(_0_),
    .Q(\\u_r.q [1])
  );
  DFFPOSX1 _6_ (
    .CLK(clk_i),
    .D(d_i[1]),
    .Q(other)
  );
  AND2X1 _7_ (
    .A(d_i[0]),
    .B(\\u_r.q [1]),
    .Y(q_o)
  );
endmodule
"""


def test_flip_flops_fed_from_their_measured_activity():
    stats = {"u_r.q[1]": (5, 40000), "d_i[0]": (8, 50000)}
    text, tcl, matched, total = rtl_power.feed_flip_flops(HAND_NETLIST, stats, 10, 10)
    assert (matched, total) == (1, 2)
    assert tcl == ["sta::set_power_input_port_activity [get_ports rtlpower_q0] 0.5 0.4 ;# u_r.q[1]"]
    assert "module u(clk_i, rst_ni, d_i, q_o, rtlpower_q0);\n  input rtlpower_q0;\n" in text
    assert ".D(rtlpower_q0)" in text and ".D(d_i[1])" in text and ".D(_0_)" not in text
    inputs, n = rtl_power.input_port_tcl(text, stats, 10, 10)
    assert (inputs, n) == (["sta::set_power_input_port_activity [get_ports {d_i[0]}] 0.8 0.5"], 1)


REPORT = """Group                    Internal    Switching      Leakage        Total
Total                1.500000e-03 5.000000e-04 2.000000e-08 2.000020e-03 100.0%
"""


def test_energy_per_action_formula():
    # (1.5 + 0.5) mW x 100 cycles x 10 ns = 2000 pJ; / 50 actions = 40 pJ; leakage 2e-8 W = 2e-5 mW.
    pj, dynamic_mw, leakage_mw = rtl_power.energy(REPORT, 100, 10, 50)
    assert abs(pj - 40.0) < 1e-12 and abs(dynamic_mw - 2.0) < 1e-12 and abs(leakage_mw - 2e-5) < 1e-15


def yaml_value(path, section, key):
    text = open(path).read()
    m = re.search(rf"^{section}:\n(?:  .*\n)*?  {key}:\n    value: (\S+)\n", text, re.M)
    assert m, f"{section}.{key} not in {path}"
    return m.group(1)


def test_router_energy_reproduced_from_its_toggle_counts(tmp_path):
    toggles = os.path.join(ROOT, "testbench", "rtl_power", "router_broadcast.toggles")
    p = subprocess.run([os.path.join(ROOT, "scripts", "rtl_power.sh"), "--energy", "router_broadcast", toggles],
                       capture_output=True, text=True, env=dict(os.environ, RTL_POWER_WORK=str(tmp_path)))
    assert p.returncode == 0, p.stderr
    pj = float(re.search(r"energy_pj_per_action=(\S+)", p.stdout).group(1))
    table = os.path.join(ROOT, "hw", "presets", "tech", "tech-180nm-rtl.yaml")
    assert rtl_power.fmt(pj) == yaml_value(table, "energy_pj", "noc_byte_hop")
    assert "input pins" in p.stderr and "121 of 121 flip-flops measured" in p.stderr


def test_bad_input_gets_a_clear_error(tmp_path):
    vcd = tmp_path / "hand.vcd"
    vcd.write_text(HAND_VCD)
    try:
        rtl_power.count_toggles(str(vcd), "TOP.tb.nope", 3, 10)
        raise AssertionError("no error for a missing scope")
    except SystemExit as e:
        assert str(e) == f"rtl_power: no signals under scope TOP.tb.nope in {vcd}"
    script = os.path.join(ROOT, "scripts", "rtl_power.sh")
    env = dict(os.environ, RTL_POWER_WORK=str(tmp_path))
    for args, message in ((["--energy", "nope", str(vcd)], "rtl_power: no RTL module 'nope' (rtl/units.list)\n"),
                          (["--energy", "router_broadcast", str(tmp_path / "none")],
                           f"rtl_power: cannot read the toggle file '{tmp_path / 'none'}'\n"),
                          (["--energy"], "usage: scripts/rtl_power.sh [--energy UNIT TOGGLES]\n")):
        p = subprocess.run([script, *args], capture_output=True, text=True, env=env)
        assert (p.returncode, p.stderr) == (2, message)
