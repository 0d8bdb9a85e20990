#!/usr/bin/env bash
# Instructions per token hop (docs/performance.md): callgrind runs of the token-hop chain with
# 1024 and 4096 tiles; per hop = (total(4096) - total(1024)) / (3072 x 256).
#   scripts/bench/callgrind_hop.sh BUILD_DIR [DEPTH...] (default depths: 2 8)
# Keeps the profiles as cg.<depth>.<tokens> in the current directory (callgrind_annotate them).
set -euo pipefail
B=$(realpath "$1")/scripts/bench/bench_token_hop
shift
depths=("$@")
[ ${#depths[@]} -eq 0 ] && depths=(2 8)
for d in "${depths[@]}"; do
  declare -A tot=()
  for n in 1024 4096; do
    valgrind --tool=callgrind --cache-sim=yes --D1=32768,8,64 --LL=1048576,16,64 \
      --callgrind-out-file=cg.$d.$n "$B" --benchmark_filter="Flatten/tokens:$n/tiles:1/depth:$d/" \
      --benchmark_min_time=0.0001 >/dev/null 2>cg.$d.$n.log
    tot[$n]=$(grep -m1 '^summary:' cg.$d.$n | awk '{print $2}')
  done
  python3 -c "import sys; a,b=int(sys.argv[1]),int(sys.argv[2]); print(f'depth $d: {(b-a)/(3072*256):.1f} instructions/hop')" \
    "${tot[1024]}" "${tot[4096]}"
done
