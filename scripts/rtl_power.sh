#!/usr/bin/env bash
# Energy per action, leakage and area of the RTL units at the OSU 0.18 um cells, from their own
# switching activity (issue 37 item 2 b; docs/rtl-power.md). Per unit:
#   1. synthesis: rtl/synth.sh --area (the flow of scripts/rtl_area.sh: Yosys synth, dfflibmap,
#      abc to /usr/share/qflow/tech/osu018/osu018_stdcells.lib), with the mapped netlist written
#      too (a `yosys` shim on PATH appends `write_verilog` to its script: the flow stays one);
#   2. workload: testbench/rtl_power/workloads/<unit>.sv in Verilator (--binary --timing
#      --trace), a VCD of every signal of the unit; the testbench prints its cycles and actions;
#   3. toggles per bit (scripts/rtl_power.py toggles), then the activities OpenSTA 2.0.17 can
#      take: input ports only (`set_power_activity -pins` is broken in 2.0.17 and a pin activity
#      is ignored), so every flip-flop whose RTL name survived synthesis is fed from a new input
#      port with its Q's measured toggle rate (OpenSTA copies a register's D activity to its Q),
#      and OpenSTA propagates the rest through the combinational cells;
#   4. report_power at the workload's clock (10 ns): energy per action = dynamic power x time /
#      actions (scripts/rtl_power.py energy).
# Then scripts/rtl_power.py tables writes hw/presets/tech/tech-180nm-rtl.yaml, tech-7nm-rtl.yaml
# and docs/rtl-power.md.
#
# Usage: scripts/rtl_power.sh                          every unit, the tables and the doc
#        scripts/rtl_power.sh --energy UNIT TOGGLES    synthesize UNIT, apply a saved toggle file
#                                                      (the test), print its energy line
# RTL_POWER_WORK=DIR keeps the intermediate files (netlists, VCDs, reports) in DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
source rtl/files.sh
lib=/usr/share/qflow/tech/osu018/osu018_stdcells.lib
period_ns=10
limit=300  # s per synthesis, a few minutes (docs/rtl-power.md names a unit that exceeds it)
work=${RTL_POWER_WORK:-$(mktemp -d)}
mkdir -p "$work/bin"
helper=scripts/rtl_power.py

# The units: name, synthesis (default, or `reduced` for rtl/units.list's area: overrides), and
# whether a workload runs (leakage and area only without one).
units=(
  "pcu_ew default workload"
  "pcu_ew reduced none"
  "fp32_add default workload"
  "fp32_exp default workload"
  "stream_in_buf default workload"
  "router_broadcast default workload"
  "pmu_buffer default workload"
  "ag_offchip default workload"
)

# The shim: rtl/synth.sh calls `yosys -p SCRIPT`; the netlist write goes after its last command.
cat > "$work/bin/yosys" <<'EOF'
#!/usr/bin/env bash
if [ "$1" != -p ]; then exec /usr/bin/yosys "$@"; fi
exec /usr/bin/yosys -p "$2; write_verilog -noattr $RTL_POWER_NETLIST"
EOF
chmod +x "$work/bin/yosys"

# synthesize TOP MODE NETLIST: prints rtl/synth.sh's line (cells, area).
synthesize() {
  local flags=(--area --timeout "$limit")
  [ "$2" = reduced ] && flags+=(--reduced)
  RTL_POWER_NETLIST=$3 PATH="$work/bin:$PATH" rtl/synth.sh "${flags[@]}" "$1" 2>/dev/null
}

# simulate UNIT OUT: runs the unit's workload into OUT.vcd; prints the testbench's RTLPOWER line.
simulate() {
  local files
  mapfile -t files < <(rtl_files "$1")
  # Every signal, however wide or long an array (Verilator's defaults skip the wide and long ones).
  verilator --binary --timing --trace --trace-max-width 65536 --trace-max-array 65536 -Wno-fatal \
    -Wno-lint -Wno-style -I"$rtl_dir" -Itestbench/rtl_power/workloads \
    +define+RTL_POWER_OUT=\""$2"\" --top-module tb -Mdir "$2.obj" \
    "testbench/rtl_power/workloads/$1.sv" "${files[@]}" > "$2.build.log" 2>&1 ||
    { tail -20 "$2.build.log" >&2; echo "rtl_power: Verilator failed on the $1 workload" >&2; return 1; }
  "$2.obj/Vtb" | grep '^RTLPOWER'
}

# power NETLIST TOP ACTIVITY_TCL REPORT: OpenSTA's report_power with the measured activities
# (none: only the clock toggles, for the leakage).
power() {
  local clock="create_clock -name clk -period $period_ns"
  grep -q '^\s*input clk_i;' "$1" && clock="$clock [get_ports clk_i]"
  cat > "$4.tcl" <<EOF
read_liberty $lib
read_verilog $1
link_design $2
$clock
set_input_delay 0 -clock clk [delete_from_list [all_inputs] [get_ports -quiet clk_i]]
set_power_activity -input -activity 0 -duty 0
if {[llength [get_ports -quiet rst_ni]]} { sta::set_power_input_port_activity [get_ports rst_ni] 0 1 }
${3:+source $3}
report_power -digits 6
EOF
  (cd "$work" && sta -no_init -no_splash -exit "$4.tcl") > "$4" 2>&1  # its command history stays in $work
  if grep -q '^Error' "$4"; then grep '^Error' "$4" | head -3 >&2; return 1; fi
}

# energy_of UNIT NETLIST TOGGLES ACTIONS: the energy line of a unit from a toggle file.
energy_of() {
  local base="$work/$1"
  python3 $helper activity "$2" "$3" "$base.act.v" "$base.act.tcl" >&2
  power "$base.act.v" "$1" "$base.act.tcl" "$base.power"
  local cycles
  cycles=$(awk 'NR == 1 {print $6}' "$3")
  python3 $helper energy "$base.power" "$cycles" "$period_ns" "$4"
}

usage() { echo "usage: scripts/rtl_power.sh [--energy UNIT TOGGLES]" >&2; exit 2; }
if [ $# -gt 0 ] && { [ "$1" != --energy ] || [ $# -ne 3 ]; }; then usage; fi
if [ $# -gt 0 ]; then
  unit=$2 toggles=$3
  if ! rtl_tops | grep -qx "$unit"; then echo "rtl_power: no RTL module '$unit' (rtl/units.list)" >&2; exit 2; fi
  if [ ! -r "$toggles" ]; then echo "rtl_power: cannot read the toggle file '$toggles'" >&2; exit 2; fi
  if ! line=$(synthesize "$unit" default "$work/$unit.v"); then echo "rtl_power: $line" >&2; exit 1; fi
  actions=$(awk 'NR == 2 && $1 == "#" {for (i = 2; i <= NF; i++) if ($i ~ /^actions=/) print substr($i, 9)}' "$toggles")
  energy_of "$unit" "$work/$unit.v" "$toggles" "$actions"
  exit 0
fi

results="$work/results.txt"
: > "$results"
start=$(date +%s)
for spec in "${units[@]}"; do
  read -r unit mode load <<< "$spec"
  t0=$(date +%s)
  tag=$unit; [ "$mode" = reduced ] && tag="$unit.reduced"
  netlist="$work/$tag.v"
  if ! line=$(synthesize "$unit" "$mode" "$netlist"); then
    # Not measured (the tables take its entries from the literature table and say why).
    echo "$line" >&2
    echo "unit=$tag failed=\"${line#*reason=}\" synth_s=$(( $(date +%s) - t0 ))" | tee -a "$results" >&2
    continue
  fi
  echo "$line" >&2
  params=$(echo "$line" | awk '$4 ~ /^\(/ {p = $4; gsub(/[()]/, "", p); print p}')
  area=$(echo "$line" | sed 's/.*osu018_area_um2=//')
  t1=$(date +%s)
  if [ "$load" = workload ]; then
    run=$(simulate "$unit" "$work/$unit")
    cycles=$(echo "$run" | sed 's/.*cycles=\([0-9]*\).*/\1/')
    actions=$(echo "$run" | sed 's/.*actions=\([0-9]*\).*/\1/')
    python3 $helper toggles "$work/$unit.vcd" TOP.tb.dut "$cycles" "$period_ns" "$work/$unit.toggles" >&2
    # The action count travels with the toggles (the test replays them).
    sed -i "1a # actions=$actions unit=$unit workload=testbench/rtl_power/workloads/$unit.sv" "$work/$unit.toggles"
    t2=$(date +%s)
    e=$(energy_of "$unit" "$netlist" "$work/$unit.toggles" "$actions")
    ffs=$(head -1 "$work/$unit.act.tcl" | sed 's/# measured activities: //')
  else
    t2=$t1
    power "$netlist" "$unit" "" "$work/$tag.power"
    e=$(python3 $helper energy "$work/$tag.power" 1 "$period_ns" 1)
    cycles=0 actions=0 ffs="no workload"
  fi
  t3=$(date +%s)
  echo "unit=$tag params=${params:-default} area_um2=$area cycles=$cycles actions=$actions $e" \
       "synth_s=$((t1 - t0)) sim_s=$((t2 - t1)) sta_s=$((t3 - t2)) measured=\"$ffs\"" | tee -a "$results" >&2
done
secs=$(( $(date +%s) - start ))
cp "$work/router_broadcast.toggles" testbench/rtl_power/router_broadcast.toggles
python3 $helper tables "$results" "$secs" hw/presets/tech/tech-7nm-literature.yaml \
  hw/presets/tech/tech-180nm-rtl.yaml hw/presets/tech/tech-7nm-rtl.yaml docs/rtl-power.md
echo "rtl_power: done in ${secs} s (intermediate files in $work)"
