#!/usr/bin/env bash
# Instructions per tile of the off-chip stream (docs/performance.md): callgrind runs of
# bench_offchip_stream at rows:256 and rows:512 (32 768 and 65 536 tiles);
# per tile = (total(512) - total(256)) / 32768.
#   scripts/bench/callgrind_offchip.sh BUILD_DIR
# Keeps the profiles as cg.offchip.<rows> in the current directory (callgrind_annotate them).
set -euo pipefail
B=$(realpath "$1")/scripts/bench/bench_offchip_stream
declare -A tot=()
for n in 256 512; do
  valgrind --tool=callgrind --callgrind-out-file=cg.offchip.$n "$B" \
    --benchmark_filter="BM_OffChipStream/rows:$n/" >/dev/null 2>cg.offchip.$n.log
  tot[$n]=$(grep -m1 '^summary:' cg.offchip.$n | awk '{print $2}')
done
python3 -c "import sys; a,b=int(sys.argv[1]),int(sys.argv[2]); print(f'off-chip stream: {(b-a)/32768:.1f} instructions/tile')" \
  "${tot[256]}" "${tot[512]}"
