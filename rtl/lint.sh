#!/usr/bin/env bash
# Lints every RTL unit (rtl/units.list) with `verilator --lint-only -Wall`.
# Usage: rtl/lint.sh [top ...]   (default: all units). Exit status non-zero on any warning.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
common=("$here/stream_in_buf.sv" "$here/stream_out_reg.sv")
if [ $# -gt 0 ]; then tops=("$@"); else mapfile -t tops < <(grep -v '^\s*\(#\|$\)' "$here/units.list" | awk '{print $1}'); fi
fail=0
for top in "${tops[@]}"; do
  files=("${common[@]}")
  for dep in $(awk -v t="$top" '$1 == t {for (i = 2; i <= NF; i++) if ($i != "lib" && $i !~ /:/) print $i}' "$here/units.list"); do
    files+=("$here/$dep.sv")
  done
  case " ${common[*]} " in *" $here/$top.sv "*) ;; *) files+=("$here/$top.sv") ;; esac
  if out=$(verilator --lint-only -Wall --top-module "$top" "${files[@]}" 2>&1); then
    echo "lint ok   $top"
  else
    echo "lint FAIL $top"; echo "$out"; fail=1
  fi
done
exit $fail
