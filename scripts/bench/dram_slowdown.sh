#!/usr/bin/env bash
# Issue 38, performance: the timing-mode cost of the DRAM-level HBM model (hbm.model=dram)
# against the fixed-latency model on the MoE and decoder layers (the issue's goal: dram <= 3x
# fixed), and the dram model's requests per second.
#
#   scripts/bench/dram_slowdown.sh STEPSIM [RUNS]        (RUNS: runs per configuration, default 3)
#
# Each layer is built at its defaults (`stepsim build moe`, `stepsim build decoder`) and run
# (`stepsim run G.yaml --report R.json`, default preset) under three configurations:
#   fixed        hbm.model=fixed (the fast path: a tile alone on the memory is timed in closed form)
#   fixed_addr   hbm.model=fixed with hbm.mapping=address_interleave (the fixed model's per-request
#                path: every request placed by its address, no closed form)
#   dram         hbm.model=dram
# For each, the median over RUNS of the whole process's wall time (start to exit: loading the graph,
# simulation, report) and of the report's simulation wall time (`wall_seconds`). Then the ratios
# dram / fixed and dram / fixed_addr of both, and the dram model's requests per second: off-chip
# bytes / hbm.request_bytes over the median simulation wall time. The machine's load (uptime)
# is printed before and after, since the figures depend on it.
set -euo pipefail
if [ $# -lt 1 ]; then
  sed -n '2,17p' "$0"
  exit 2
fi
EXE=$(realpath "$1")
RUNS=${2:-3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

echo "stepsim: $EXE ($("$EXE" --version 2>/dev/null || echo '?')), $RUNS runs per configuration, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "load before: $(uptime)"

# One run: prints "process_wall_s simulation_wall_s cycles offchip_bytes request_bytes".
one_run() {
  local graph=$1 report=$2
  shift 2
  local t0 t1
  t0=$(date +%s.%N)
  "$EXE" run "$graph" --report "$report" "$@" > /dev/null
  t1=$(date +%s.%N)
  /usr/bin/python3 - "$report" "$t0" "$t1" "$@" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
req = 64
for a in sys.argv[4:]:
    if a.startswith("hbm.request_bytes="):
        req = int(a.split("=")[1])
print(float(sys.argv[3]) - float(sys.argv[2]), r["wall_seconds"], r["cycles"],
      r["offchip"]["read_bytes"] + r["offchip"]["write_bytes"], req)
EOF
}

# The median of RUNS runs of a configuration: prints "config process_s simulation_s cycles bytes request_bytes".
median_runs() {
  local name=$1 graph=$2
  shift 2
  for _ in $(seq "$RUNS"); do one_run "$graph" "$WORK/r.json" "$@"; done > "$WORK/$name.runs"
  /usr/bin/python3 - "$name" "$WORK/$name.runs" <<'EOF'
import statistics, sys
rows = [line.split() for line in open(sys.argv[2])]
cycles = {r[2] for r in rows}
assert len(cycles) == 1, "the runs disagree on cycles: %s" % cycles
print(sys.argv[1], statistics.median(float(r[0]) for r in rows), statistics.median(float(r[1]) for r in rows),
      rows[0][2], rows[0][3], rows[0][4])
EOF
}

for layer in moe decoder; do
  graph="$WORK/$layer.yaml"
  "$EXE" build "$layer" -o "$graph" > /dev/null
  {
    median_runs fixed "$graph" --set hbm.model=fixed
    median_runs fixed_addr "$graph" --set hbm.model=fixed --set hbm.mapping=address_interleave
    median_runs dram "$graph" --set hbm.model=dram
  } > "$WORK/$layer.medians"
  /usr/bin/python3 - "$layer" "$WORK/$layer.medians" <<'EOF'
import sys
m = {r[0]: r[1:] for r in (line.split() for line in open(sys.argv[2]))}
print("\n%s (stepsim build %s, defaults):" % (sys.argv[1], sys.argv[1]))
print("  %-11s %14s %14s %14s" % ("config", "cycles", "process [s]", "simulation [s]"))
for name in ("fixed", "fixed_addr", "dram"):
    p, s, c = float(m[name][0]), float(m[name][1]), m[name][2]
    print("  %-11s %14s %14.3f %14.4f" % (name, c, p, s))
for base in ("fixed", "fixed_addr"):
    print("  dram / %-10s process %.1fx, simulation %.1fx" % (
        base, float(m["dram"][0]) / float(m[base][0]), float(m["dram"][1]) / float(m[base][1])))
requests = int(m["dram"][3]) // int(m["dram"][4])
print("  dram: %d requests (%s B / %s B), %.2f M requests/s of simulation wall time" % (
    requests, m["dram"][3], m["dram"][4], requests / float(m["dram"][1]) / 1e6))
EOF
done
echo
echo "load after: $(uptime)"
