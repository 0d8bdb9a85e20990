#!/usr/bin/env bash
# Synthesizes every RTL unit (rtl/units.list) with Yosys 0.23 (generic `synth`) and prints
# the cell count. With --area, also maps to the OSU 0.18 um Liberty of Debian's
# qflow-tech-osu018 and prints the chip area (um^2).
# --quick applies the `quick:P=V` parameter overrides of rtl/units.list (e.g. one compute
# lane instead of eight) and skips the modules marked `noquick`, for the CTest run; --reduced applies the `area:P=V` overrides (fewer
# lanes for the large compute units: the fallback of scripts/rtl_area.sh when the default
# configuration exceeds its time limit).
# --timeout S stops a module's Yosys run after S seconds (reported as a failure).
# Every module is tried; one line per module:
#   synth ok   <top> [params]  cells=<n> [osu018_area_um2=<a>]
#   synth FAIL <top> [params]  reason=<why>
# Usage: rtl/synth.sh [--quick] [--reduced] [--area] [--timeout S] [top ...]   (default: all units).
# Non-zero if any module failed.
set -uo pipefail
source "$(dirname "$0")/files.sh"
lib=/usr/share/qflow/tech/osu018/osu018_stdcells.lib
area=0
quick=0
reduced=0
limit=0
while [ $# -gt 0 ]; do
  case "$1" in
    --area) area=1; shift ;;
    --quick) quick=1; shift ;;
    --reduced) reduced=1; shift ;;
    --timeout) limit=$2; shift 2 ;;
    *) break ;;
  esac
done
if [ $# -gt 0 ]; then tops=("$@"); else mapfile -t tops < <(rtl_tops); fi
fail=0
for top in "${tops[@]}"; do
  if [ $quick = 1 ] && rtl_noquick "$top"; then
    echo "synth skip $top  (noquick: synthesized in full runs and inside its users)"
    continue
  fi
  mapfile -t files < <(rtl_files "$top")
  params=""
  shown=""
  overrides=""
  if [ $quick = 1 ]; then overrides=$(rtl_quick "$top"); fi
  if [ $reduced = 1 ]; then overrides="$overrides $(rtl_area_params "$top")"; fi
  for kv in $overrides; do
    params="$params chparam -set ${kv%%=*} ${kv#*=} $top;"
    shown="$shown${shown:+,}$kv"
  done
  synth_opts=""
  if rtl_flag "$top" noshare; then synth_opts=" -noshare"; fi  # Yosys' SAT-based share pass blows up
  # -defer: the modules are elaborated once, by `hierarchy`, with the overrides; otherwise Yosys
  # would first elaborate the defaults (the tile units inline their lanes' fp32 functions, which
  # takes Yosys' frontend minutes at T = 4).
  script="read_verilog -defer -sv -I$rtl_dir ${files[*]};$params hierarchy -top $top; synth -top $top -flatten$synth_opts; stat"
  if [ $area = 1 ]; then
    script="$script; dfflibmap -liberty $lib; abc -liberty $lib; opt_clean; stat -liberty $lib"
  fi
  label="$top${shown:+ ($shown)}"
  if [ "$limit" != 0 ]; then
    out=$(timeout "$limit" yosys -p "$script" 2>&1); rc=$?
  else
    out=$(yosys -p "$script" 2>&1); rc=$?
  fi
  if [ $rc = 0 ]; then
    cells=$(echo "$out" | awk '/Number of cells:/ && !n {n=$4} END {print n}')
    line="synth ok   $label  cells=$cells"
    if [ $area = 1 ]; then
      chip=$(echo "$out" | awk '/Chip area for/ {a=$NF} END {printf "%.0f", a}')
      line="$line  osu018_area_um2=$chip"
    fi
    echo "$line"
  else
    if [ $rc = 124 ]; then
      reason="timed out after ${limit} s"
    else
      reason="yosys exit $rc: $(echo "$out" | grep -m1 -i 'error' | tr -d '|' | cut -c1-120)"
    fi
    echo "synth FAIL $label  reason=$reason"
    echo "$out" | tail -20 >&2
    fail=1
  fi
done
exit $fail
