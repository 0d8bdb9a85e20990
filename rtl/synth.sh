#!/usr/bin/env bash
# Synthesizes every RTL unit (rtl/units.list) with Yosys 0.23 (generic `synth`) and prints
# the cell count. With --area, also maps to the OSU 0.18 um Liberty of Debian's
# qflow-tech-osu018 and prints the chip area (um^2).
# --quick applies the `quick:P=V` parameter overrides of rtl/units.list (e.g. one compute
# lane instead of eight), for the CTest run.
# Usage: rtl/synth.sh [--quick] [--area] [top ...]   (default: all units). Non-zero on any failure.
set -euo pipefail
source "$(dirname "$0")/files.sh"
lib=/usr/share/qflow/tech/osu018/osu018_stdcells.lib
area=0
quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --area) area=1; shift ;;
    --quick) quick=1; shift ;;
    *) break ;;
  esac
done
if [ $# -gt 0 ]; then tops=("$@"); else mapfile -t tops < <(rtl_tops); fi
fail=0
for top in "${tops[@]}"; do
  mapfile -t files < <(rtl_files "$top")
  params=""
  if [ $quick = 1 ]; then
    for kv in $(rtl_quick "$top"); do
      params="$params chparam -set ${kv%%=*} ${kv#*=} $top;"
    done
  fi
  script="read_verilog -sv -I$rtl_dir ${files[*]};$params synth -top $top -flatten; stat"
  if [ $area = 1 ]; then
    script="$script; dfflibmap -liberty $lib; abc -liberty $lib; opt_clean; stat -liberty $lib"
  fi
  if out=$(yosys -p "$script" 2>&1); then
    cells=$(echo "$out" | awk '/Number of cells:/ && !n {n=$4} END {print n}')
    line="synth ok   $top${params:+ (quick)}  cells=$cells"
    if [ $area = 1 ]; then
      chip=$(echo "$out" | awk '/Chip area for/ {a=$NF} END {printf "%.0f", a}')
      line="$line  osu018_area_um2=$chip"
    fi
    echo "$line"
  else
    echo "synth FAIL $top"; echo "$out" | tail -20; fail=1
  fi
done
exit $fail
