#!/bin/bash
# The serving benchmark of docs/serving.md ("Performance"): a model over the first N requests of
# the Azure conversation trace, full prefill and decode in timing mode, timed as whole commands
#   1 local worker, 2 local workers, 2 Slurm workers (a local single-node Slurm, started here),
#   each with an empty task cache of its own; then a second run of the 2-worker command (its cache
#   full), and a check that every run wrote the same per-request results.
#
#   bash scripts/bench/serving_bench.sh [MODEL] [REQUESTS] [OUT]
#     MODEL     graphs/models name (default mixtral-8x7b); REQUESTS: trace rows (default 64)
#     OUT       a folder for the runs, the caches and timings.txt (default /tmp/serving-bench-MODEL)
#     SERVE_ARGS  extra `stepsim serve` options (environment), e.g. "--chunk 512"
#     SKIP_SLURM=1  leaves out the Slurm run (no slurmctld/slurmd/munge here)
# Takes minutes (Mixtral, 64 requests: about 1 + 0.5 + 0.5 min on the 2-core machine); not a test.
set -euo pipefail
cd "$(dirname "$0")/../.."
model=${1:-mixtral-8x7b}
count=${2:-64}
out=${3:-/tmp/serving-bench-$model}
stepsim=$PWD/build/stepsim
trace=shared:traces/azure/AzureLLMInferenceTrace_conv.csv
rm -rf "$out"
mkdir -p "$out"
timings=$out/timings.txt
: >"$timings"

run() {  # NAME WORKERS CACHE: one timed run into $out/NAME
  local name=$1 workers=$2 cache=$3 start end
  start=$(date +%s.%N)
  "$stepsim" serve "$model" --requests "$trace" --count "$count" --workers "$workers" --out "$out/$name" \
    --cache "$cache" --quiet ${SERVE_ARGS:-} >"$out/$name.txt"
  end=$(date +%s.%N)
  local tasks
  tasks=$(grep "^  tasks" "$out/$name.txt" | sed 's/^  tasks *//')
  printf '%-10s %-9s %8.1f s wall   %s\n' "$name" "$workers" "$(echo "$end - $start" | bc)" "$tasks" | tee -a "$timings"
}

run local1 local:1 "$out/cache-local1"
run local2 local:2 "$out/cache-local2"
if [ "${SKIP_SLURM:-0}" != 1 ]; then
  slurm_dir=$(mktemp -d /tmp/ssbench.XXXX)  # short: munge's socket path has a length limit
  trap '/usr/bin/python3 scripts/slurm/local_slurm.py stop "$slurm_dir" >/dev/null 2>&1 || true' EXIT
  eval "$(/usr/bin/python3 scripts/slurm/local_slurm.py start "$slurm_dir")"
  run slurm2 slurm:2 "$out/cache-slurm2"
fi
run cached local:2 "$out/cache-local2"

for name in local2 cached $( [ "${SKIP_SLURM:-0}" != 1 ] && echo slurm2 ); do
  for f in requests.csv iterations.csv breakdown.csv; do
    cmp -s "$out/local1/$f" "$out/$name/$f" || { echo "error: $name/$f differs from local1/$f" >&2; exit 1; }
  done
done
echo "every run wrote the same requests.csv, iterations.csv and breakdown.csv" | tee -a "$timings"
cat "$out/local1.txt"
