#!/usr/bin/env bash
# Longer randomized run of the unit equivalence tests: every HLS unit (hw/units) against its
# Verilated RTL (rtl/) in lock-step, and against the approximate operators, with more cases
# and several seeds (the default tests run 2000 cases per unit with seed 1).
# Usage: scripts/units_long.sh [build-dir] [cases-per-unit] [seeds]   (default: build 50000 5)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cases=${2:-50000}
seeds=${3:-5}
bin="$build/testbench/units/rtl/test_units_rtl"
if [ ! -x "$bin" ]; then
  echo "no $bin: build it first (cmake --build $build --target test_units_rtl; needs Verilator)" >&2
  exit 1
fi
start=$(date +%s)
for s in $(seq 1 "$seeds"); do
  echo "== seed $s: $cases cases per unit"
  STEPSIM_UNIT_CASES=$cases STEPSIM_UNIT_SEED=$s "$bin" --gtest_brief=1
done
echo "all seeds passed in $(( $(date +%s) - start )) s"
