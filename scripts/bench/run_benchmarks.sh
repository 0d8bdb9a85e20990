#!/usr/bin/env bash
# Builds (if needed) and runs the simulator-speed benchmarks; prints the figures with units.
# docs/performance.md explains them and records measured values.
#
#   scripts/bench/run_benchmarks.sh [--build-dir DIR] [--repetitions N] [--quick]
#
#   --build-dir DIR   build tree to use/create (default: build-bench next to this repository's root)
#   --repetitions N   runs of every benchmark; medians are reported (default 5)
#   --quick           skip the 1 GiB run and the long token-hop variants
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$root/build-bench"
reps=5
quick=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --repetitions) reps="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSTEPSIM_BENCHMARKS=ON >/dev/null
fi
cmake --build "$build" -j"$(nproc)" --target bench_token_hop bench_offchip_stream bench_systemc_floor >/dev/null

hop_filter='BM_TokenHop'
off_filter='BM_OffChipStream'
floor_filter='BM_FloorChain/tokens:65536/'
if [[ $quick -eq 1 ]]; then
  hop_filter='BM_TokenHop_Flatten/tokens:65536/tiles:1/depth:(2|8)/'
  off_filter='BM_OffChipStream/rows:(256|1024)/'
  floor_filter='BM_FloorChain/tokens:65536/depth:(2|8)/'
fi

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg); medians of $reps runs (wall = real time, cpu = process CPU time)"

run() {  # binary filter -> JSON
  "$build/scripts/bench/$1" --benchmark_filter="$2" --benchmark_repetitions="$reps" \
    --benchmark_report_aggregates_only=false --benchmark_format=json 2>/dev/null
}

summarise() {  # JSON on stdin, kind (hop|offchip)
  python3 <(cat <<'PY'
import json, statistics, sys
kind = sys.argv[1]
runs = {}
for b in json.load(sys.stdin)["benchmarks"]:
    if b.get("run_type") != "iteration":
        continue
    runs.setdefault(b["run_name"], []).append(b)
med = statistics.median
for name, rs in runs.items():
    wall_ms = med([r["real_time"] for r in rs])  # milliseconds (the benchmarks' unit)
    cpu_ms = med([r["cpu_time"] for r in rs])
    short = name.replace("/manual_time", "").replace("/iterations:1", "")
    cycles = int(rs[0]["sim_cycles"])
    if kind == "hop":
        n = rs[0]["tokens"] * rs[0]["hops"]
        print(f"{short:50s} wall {wall_ms * 1e6 / n:6.1f} ns/hop  cpu {cpu_ms * 1e6 / n:6.1f} ns/hop  "
              f"({wall_ms:7.1f} ms, {cycles} cycles simulated, {len(rs)} runs)")
    else:
        t = rs[0]["tiles"]
        print(f"{short:50s} wall {wall_ms / 1e3:6.3f} s  cpu {cpu_ms / 1e3:6.3f} s  {wall_ms * 1e6 / t:6.0f} ns/tile  "
              f"({rs[0]['GiB']:.4g} GiB, {int(t)} tiles, {cycles} cycles simulated, {len(rs)} runs)")
PY
) "$1"
}

echo "## token hop: Source -> 255 x Flatten -> Sink (256 hops); target <= 20 ns/hop"
run bench_token_hop "$hop_filter" | summarise hop
echo "## floor: the same chain with minimal SystemC threads and channels (no simulator code)"
run bench_systemc_floor "$floor_filter" | summarise hop
echo "## LinearOffChipLoad -> Map(exp) -> LinearOffChipStore, 16x16 bf16 tiles; target: 1 GiB in < 1 s"
run bench_offchip_stream "$off_filter" | summarise offchip
