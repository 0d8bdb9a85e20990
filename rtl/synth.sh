#!/usr/bin/env bash
# Synthesizes every RTL unit (rtl/units.list) with Yosys 0.23 (generic `synth`) and prints
# the cell count. With --area, also maps to the OSU 0.18 um Liberty of Debian's
# qflow-tech-osu018 and prints the chip area (um^2).
# --quick applies the `quick:P=V` parameter overrides of rtl/units.list (e.g. one compute
# lane instead of eight), for the CTest run.
# Usage: rtl/synth.sh [--quick] [--area] [top ...]   (default: all units). Non-zero on any failure.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
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
common=("$here/stream_in_buf.sv" "$here/stream_out_reg.sv")
if [ $# -gt 0 ]; then tops=("$@"); else mapfile -t tops < <(grep -v '^\s*\(#\|$\)' "$here/units.list" | awk '{print $1}'); fi
fail=0
for top in "${tops[@]}"; do
  files=("${common[@]}")
  for dep in $(awk -v t="$top" '$1 == t {for (i = 2; i <= NF; i++) if ($i != "lib" && $i !~ /:/) print $i}' "$here/units.list"); do
    files+=("$here/$dep.sv")
  done
  case " ${common[*]} " in *" $here/$top.sv "*) ;; *) files+=("$here/$top.sv") ;; esac
  params=""
  if [ $quick = 1 ]; then
    for kv in $(awk -v t="$top" '$1 == t {for (i = 2; i <= NF; i++) if ($i ~ /^quick:/) print substr($i, 7)}' "$here/units.list"); do
      params="$params chparam -set ${kv%%=*} ${kv#*=} $top;"
    done
  fi
  script="read_verilog -sv ${files[*]};$params synth -top $top -flatten; stat"
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
