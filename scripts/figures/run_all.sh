#!/usr/bin/env bash
# Reproduces every paper figure stepsim covers (docs/validation.md): builds stepsim if needed,
# runs each figure script, and prints the total wall time.
#
#   scripts/figures/run_all.sh [--out DIR]     (default DIR: docs/figures)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
start=$(date +%s)
for f in fig8_swiglu fig9_10_dynamic_tiling fig12_13_time_multiplexing fig14_15_dynamic_parallelization fig17_end_to_end energy_claims; do
  echo "== $f"
  /usr/bin/python3 "$root/scripts/figures/$f.py" "$@" | sed -n '1,/^All /p'
done
echo "all figures: $(( $(date +%s) - start )) s wall"
