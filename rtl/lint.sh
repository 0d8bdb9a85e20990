#!/usr/bin/env bash
# Lints every RTL unit (rtl/units.list) with `verilator --lint-only -Wall`.
# Usage: rtl/lint.sh [top ...]   (default: all units). Exit status non-zero on any warning.
set -euo pipefail
source "$(dirname "$0")/files.sh"
if [ $# -gt 0 ]; then tops=("$@"); else mapfile -t tops < <(rtl_tops); fi
fail=0
for top in "${tops[@]}"; do
  mapfile -t files < <(rtl_files "$top")
  if out=$(verilator --lint-only -Wall -I"$rtl_dir" --top-module "$top" "${files[@]}" 2>&1); then
    echo "lint ok   $top"
  else
    echo "lint FAIL $top"; echo "$out"; fail=1
  fi
done
exit $fail
