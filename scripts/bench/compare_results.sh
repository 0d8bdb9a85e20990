#!/usr/bin/env bash
# Checks that two stepsim binaries give the same simulation results (docs/performance.md,
# "Checks"): every graph of graphs/examples/ plus graphs built from the layer library, in
# timing and functional mode, without and with shuffled elaboration, with both presets. The
# JSON reports are compared without their wall-time fields; functional runs also compare the
# .npy outputs byte for byte, and every run the exit status and the printed error.
#
#   scripts/bench/compare_results.sh BEFORE/stepsim AFTER/stepsim [--quick] [--keep DIR]
#                                    [--new KEYS --new-lines REGEX]
#
# --quick: examples only, no shuffles. --new: report keys the AFTER binary adds (comma list, any
# depth) and --new-lines: summary lines it adds (an extended regex of their labels), both left out
# of the comparison; graph-file keys in KEYS are also removed from the built graphs (which BEFORE
# would refuse). Exit status 0 iff everything else is identical.
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ $# -lt 2 ]; then
  sed -n '2,11p' "$0"
  exit 2
fi
BEFORE=$(realpath "$1")
AFTER=$(realpath "$2")
shift 2
QUICK=0
WORK=""
NEW=""
NEW_LINES='^$'
export NEW
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --keep) WORK="$2"; shift ;;
    --new) NEW="$2"; shift ;;
    --new-lines) NEW_LINES="$2"; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ -z "$WORK" ] && WORK=$(mktemp -d) && CLEAN_WORK=1
mkdir -p "$WORK/graphs"

graphs=(graphs/examples/*.yaml)
if [ $QUICK -eq 0 ]; then
  # Layers from the library (built with the "after" binary; both run the same file), small
  # enough to run functionally; the full-size ones in timing mode only (functional MoE at the
  # model's size needs minutes and GiBs).
  b() { local out="$WORK/graphs/$1.yaml"; shift; "$AFTER" build "$@" -o "$out" >/dev/null || exit 2; }
  b moe moe --param batch=32 --param hidden=256 --param inter=512
  b moe_dyn moe --param batch=32 --param tile_n=0 --param hidden=256 --param inter=512
  b moe_tm moe_tm --param batch=32 --param regions=8 --param hidden=256 --param inter=768
  b moe_tm_mixtral_dyn moe_tm --param model=mixtral --param regions=4 --param batch=16 --param hidden=256 \
    --param inter=480 --param tile_n=0
  b attention attention --param batch=32
  b attention_coarse attention --param batch=32 --param parallel=coarse --param per_region=8
  b attention_interleaved attention --param batch=32 --param parallel=interleaved
  b swiglu swiglu
  graphs+=("$WORK"/graphs/*.yaml)
  mkdir -p "$WORK/graphs-timing"
  "$AFTER" build moe -o "$WORK/graphs-timing/moe_full.yaml" >/dev/null || exit 2
  "$AFTER" build moe --param model=qwen -o "$WORK/graphs-timing/moe_qwen_full.yaml" >/dev/null || exit 2
  "$AFTER" build moe_tm -o "$WORK/graphs-timing/moe_tm_full.yaml" >/dev/null || exit 2
  "$AFTER" build attention -o "$WORK/graphs-timing/attention_full.yaml" >/dev/null || exit 2
  graphs+=("$WORK"/graphs-timing/*.yaml)
  shuffles=(0 1 5)
else
  shuffles=(0)
fi

# The graph BEFORE runs: without the keys it does not know (--new); built graphs lose them, an
# example file gets a stripped copy beside it (its relative paths stay valid), removed at the end.
copies=()
trap 'rm -f "${copies[@]}"; [ -n "${CLEAN_WORK:-}" ] && rm -rf "$WORK"' EXIT
before_graph() {
  local g="$1" pattern=""
  for key in ${NEW//,/ }; do pattern+="${pattern:+|}^$key: "; done
  if [ -z "$pattern" ] || ! grep -Eq "$pattern" "$g"; then echo "$g"; return; fi
  case "$g" in
    "$WORK"/*) sed -Ei "/$pattern/d" "$g"; echo "$g" ;;
    *) local copy
       copy="$(dirname "$g")/.compare-$$-$(basename "$g")"
       grep -Ev "$pattern" "$g" >"$copy"
       echo "$copy" ;;
  esac
}

# Drops wall-time fields (any key containing "wall") and the --new keys recursively, prints
# canonical JSON.
canon() {
  python3 - "$1" <<'EOF'
import json, os, sys
NEW = set(filter(None, os.environ.get("NEW", "").split(",")))
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if "wall" not in k and k not in NEW}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x
print(json.dumps(strip(json.load(open(sys.argv[1]))), indent=1, sort_keys=True))
EOF
}

fail=0
runs=0
for g in "${graphs[@]}"; do
  name=$(basename "$g" .yaml)
  gb=$(before_graph "$g")
  case "$gb" in */.compare-$$-*) copies+=("$gb") ;; esac
  for preset in step-artifact hdl-validation; do
    modes=(timing functional)
    case "$g" in */graphs-timing/*) modes=(timing) ;; esac
    for mode in "${modes[@]}"; do
      for sh in "${shuffles[@]}"; do
        tag="$name.$preset.$mode.s$sh"
        for side in before after; do
          bin=$BEFORE
          graph=$gb
          [ $side = after ] && bin=$AFTER && graph=$g
          d="$WORK/$side/$tag"
          mkdir -p "$d/out"
          args=(run "$graph" --preset "$preset" --mode "$mode" --report "$d/report.json")
          [ "$sh" != 0 ] && args+=(--shuffle "$sh")
          [ "$mode" = functional ] && args+=(--out "$d/out")
          "$bin" "${args[@]}" >"$d/stdout" 2>"$d/stderr"
          echo $? >"$d/status"
          # The printed summary minus its wall-time line, and errors.
          grep -v "wall time" "$d/stdout" | grep -Ev "^  ($NEW_LINES) " >"$d/summary"
        done
        runs=$((runs + 1))
        b="$WORK/before/$tag"
        a="$WORK/after/$tag"
        msg=""
        cmp -s "$b/status" "$a/status" || msg+=" exit-status"
        cmp -s "$b/stderr" "$a/stderr" || msg+=" stderr"
        cmp -s "$b/summary" "$a/summary" || msg+=" summary"
        if [ -s "$b/report.json" ] || [ -s "$a/report.json" ]; then
          if ! diff -q <(canon "$b/report.json" 2>&1) <(canon "$a/report.json" 2>&1) >/dev/null; then
            msg+=" report"
          fi
        fi
        if ! diff -rq "$b/out" "$a/out" >/dev/null; then msg+=" npy"; fi
        if [ -n "$msg" ]; then
          echo "DIFFERENT $tag:$msg"
          fail=1
        else
          echo "same      $tag (exit $(cat "$a/status"))"
        fi
      done
    done
  done
done
echo "$runs runs compared"
if [ $fail -ne 0 ]; then
  echo "RESULTS DIFFER (outputs in $WORK)"
  exit 1
fi
echo "all identical"
