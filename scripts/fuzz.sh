#!/usr/bin/env bash
# Fuzzes the parsers with libFuzzer (docs/checking.md): the graph YAML loader, the token text,
# the .npy reader, the trace CSV reader, the preset YAML loader and the symbolic expression
# parser (testbench/fuzz).
#
#   scripts/fuzz.sh MINUTES     every target for MINUTES minutes (in turn; --parallel N for N at a
#                               time); a finding does not stop the run (libFuzzer's fork mode)
#   scripts/fuzz.sh --smoke     the default tests' bounded run: replays the saved findings and the
#                               seeds, then fuzzes each target for 25 s (fixed seed), stopping at
#                               its first finding
#
# Beside the libFuzzer targets, MINUTES mode runs three seeded campaigns of the surfaces libFuzzer
# does not reach, for the same time each (their own pytest versions are in the default tests):
#   python   the Python API (scripts/fuzz/python_api.py: mutated calls of stepsim's functions)
#   space    DSE space files (scripts/dse/fuzz_space.py: mutated spaces run by stepsim dse)
#   cli      the command line's edges (scripts/fuzz/cli_edges.py: aliases, nesting, expressions,
#            names as file names, input files of the wrong kind)
# They use the package and binary of --core's build (default build/), with --seed (default 1).
# Options: --build-dir DIR (default build-fuzz), --core BUILD (a build folder whose layer
# libraries are linked: only the parsers are compiled here; without it every layer is built
# instrumented), --targets "graph tokens npy csv preset tech expr python space cli", --parallel N,
# --seconds S (per target), --seed S (the campaigns').
#
# Needs clang++ and libFuzzer (Debian clang, libfuzzer-14-dev, libclang-rt-14-dev). Findings are
# grouped by what went wrong (the report's first line); one input per kind not seen before is
# saved as testbench/fuzz/regressions/<target>/<kind>-<sha1> (crash, oom, timeout, leak), where
# test_fuzz and the next --smoke run replay it. Exit status: 0 nothing found and every saved
# finding passes, 1 otherwise, 77 (--smoke) clang or libFuzzer missing.
set -euo pipefail
# The whole script is one block: bash reads it all before running it, so editing this file
# during an hour-long run cannot break the run's summary.
{
repo=$(cd "$(dirname "$0")/.." && pwd)

build="$repo/build-fuzz"
core=""
targets="graph tokens npy csv preset tech expr python space cli"
campaign_seed=1
parallel=1
seconds=""
smoke=0
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) smoke=1 ;;
    --build-dir) build=$2; shift ;;
    --core) core=$(realpath "$2"); shift ;;
    --targets) targets=$2; shift ;;
    --parallel) parallel=$2; shift ;;
    --seconds) seconds=$2; shift ;;
    --seed) campaign_seed=$2; shift ;;
    [0-9]*) seconds=$(( $1 * 60 )) ;;
    *) echo "fuzz.sh: unknown argument '$1' (see the header of $0)" >&2; exit 1 ;;
  esac
  shift
done
if [ "$smoke" = 1 ]; then
  seconds=${seconds:-25}
elif [ -z "$seconds" ]; then
  echo "usage: scripts/fuzz.sh MINUTES | --smoke [options] (see the header of $0)" >&2
  exit 1
fi
# The libFuzzer targets and the campaigns (none in --smoke: the default tests run their own).
campaigns=""
fuzzers=""
for t in $targets; do
  case "$t" in
    python|space|cli) [ "$smoke" = 1 ] || campaigns="$campaigns $t" ;;
    *) fuzzers="$fuzzers $t" ;;
  esac
done
targets=$fuzzers
regressions="$repo/testbench/fuzz/regressions"
seeds="$repo/testbench/fuzz/corpus"

# Is clang's libFuzzer there? (A compile and link of an empty target, about a second.)
clangxx=$(command -v clang++ || command -v clang++-14 || true)
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
if [ -z "$clangxx" ] || ! echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' |
    "$clangxx" -fsanitize=fuzzer -x c++ - -o "$probe/probe" 2>/dev/null; then
  echo "fuzz.sh: clang++ with libFuzzer is not installed (apt-get install clang libfuzzer-14-dev libclang-rt-14-dev)" >&2
  [ "$smoke" = 1 ] && exit 77
  exit 1
fi

# Build (ccache when there is one; docs/checking.md has the times).
start=$(date +%s)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
mkdir -p "$build"
if [ -n "$targets" ]; then
  cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$clangxx" "${launcher[@]}" \
    -DSTEPSIM_FUZZ=ON -DSTEPSIM_FUZZ_CORE="$core" -DSTEPSIM_RTL=OFF -DSTEPSIM_BENCHMARKS=OFF -DSTEPSIM_PYTHON=OFF >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log"; exit 1; }
  cmake --build "$build" -j"${STEPSIM_FUZZ_JOBS:-2}" $(for t in $targets; do echo "--target fuzz_$t"; done) \
    >"$build/build.log" 2>&1 || { tail -50 "$build/build.log"; exit 1; }
fi
echo "fuzz.sh: built $(for t in $targets; do echo -n "fuzz_$t "; done)in $(( $(date +%s) - start )) s"

# A UBSan report is a finding like an ASan one; leaks are checked, but for libcln's (lsan.supp).
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$repo/testbench/fuzz/ubsan.supp"
export LSAN_OPTIONS="suppressions=$repo/testbench/fuzz/lsan.supp:print_suppressions=0"
# An input that needs more than 2 GiB, or one allocation of more, or 10 s, is a finding.
limits=(-rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10)
logs="$build/logs"
mkdir -p "$logs"

# What one input does wrong, as one line (the grouping key): the report's first line without
# numbers or addresses, and for a sanitizer report the first frame in our code (sim/, hw/).
# Empty when the input passes.
kind_of() {
  local t=$1 input=$2 out first frame=""
  out=$("$build/testbench/fuzz/fuzz_$t" "${limits[@]}" "$input" </dev/null 2>&1) && return 0
  first=$(grep -m1 -E 'stepsim fuzz finding|SUMMARY: [A-Za-z]+Sanitizer|ERROR: libFuzzer: (out-of-memory|timeout)|ERROR: LeakSanitizer' <<<"$out" ||
          grep -m1 -E 'ERROR|error' <<<"$out" || echo "exit status only")
  grep -q 'stepsim fuzz finding' <<<"$first" ||
    frame=$(grep -m1 -oE '/(sim|hw)/[A-Za-z0-9_/]+\.(cpp|h):[0-9]+' <<<"$out" || true)
  echo "$(sed -E 's/0x[0-9a-f]+//g; s/[0-9]+/N/g; s/==N==//g; s/ +/ /g' <<<"$first" | cut -c1-300)${frame:+ at $frame}"
}

# Replays every saved finding (one by one: each failing one is named) and the seeds (at once).
replay() {
  local t=$1 f k failed=0
  mkdir -p "$regressions/$t"
  for f in "$regressions/$t"/*; do
    [ -f "$f" ] || continue
    k=$(kind_of "$t" "$f")
    if [ -n "$k" ]; then
      echo "fuzz.sh: $t: saved finding $(basename "$f") still fails: $k"
      failed=1
    fi
  done
  if ! "$build/testbench/fuzz/fuzz_$t" -runs=0 "${limits[@]}" -artifact_prefix="$logs/seed-$t-" "$seeds/$t" \
      </dev/null >"$logs/seeds-$t.log" 2>&1; then
    echo "fuzz.sh: $t: a seed fails ($logs/seeds-$t.log): $(grep -m1 -E 'stepsim fuzz finding|SUMMARY|ERROR' "$logs/seeds-$t.log")"
    failed=1
  fi
  return $failed
}

# Fuzzes one target. Its corpus grows in $build/corpus/<target> (the seeds stay as they are);
# findings land in $build/findings/<target>.
fuzz() {
  local t=$1 mode=()
  local work="$build/corpus/$t" found="$build/findings/$t"
  if [ "$smoke" = 1 ]; then
    rm -rf "$work"
    mode=(-seed=1)
  else
    mode=(-fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1)
  fi
  rm -rf "$found"
  mkdir -p "$work" "$found"
  "$build/testbench/fuzz/fuzz_$t" "${mode[@]}" -max_total_time="$seconds" "${limits[@]}" -print_final_stats=1 \
    -artifact_prefix="$found/" "$work" "$seeds/$t" </dev/null >"$logs/fuzz-$t.log" 2>&1 || true
}

# Groups a target's findings by kind; saves one input of each kind not saved before.
sort_findings() {
  local t=$1 f k saved
  declare -A known=()
  for f in "$regressions/$t"/*; do
    [ -f "$f" ] || continue
    k=$(kind_of "$t" "$f")
    [ -n "$k" ] && known["$k"]=$(basename "$f")
  done
  declare -A count=()
  for f in $(ls -Sr "$build/findings/$t" 2>/dev/null); do  # smallest first
    k=$(kind_of "$t" "$build/findings/$t/$f")
    [ -n "$k" ] || k="not reproducible alone"
    count["$k"]=$(( ${count["$k"]:-0} + 1 ))
    if [ -z "${known["$k"]:-}" ] && [ "$k" != "not reproducible alone" ]; then
      cp "$build/findings/$t/$f" "$regressions/$t/$f"
      known["$k"]=$f
      echo "  $t: NEW $f: $k"
    fi
  done
  for k in "${!count[@]}"; do
    echo "  $t: ${count[$k]} input(s): $k (saved: ${known[$k]:-none})"
  done
}

# The last progress line of a run: executions, coverage (cov: edges, ft: features).
summary() {
  local t=$1 log="$logs/fuzz-$1.log" line execs cov ft crashes
  line=$(grep -E '^#[0-9]+:?[[:space:]].*cov: ' "$log" | tail -1 || true)
  execs=$(sed -E 's/^#([0-9]+).*/\1/' <<<"$line")
  cov=$(grep -oE 'cov: [0-9]+' <<<"$line" | cut -d' ' -f2 || true)
  ft=$(grep -oE 'ft: [0-9]+' <<<"$line" | cut -d' ' -f2 || true)
  crashes=$(ls "$build/findings/$t" 2>/dev/null | wc -l)
  printf '%-7s %10s execs in %ss  cov %5s  ft %6s  finding inputs %s\n' "$t" "${execs:-?}" "$seconds" \
    "${cov:-?}" "${ft:-?}" "$crashes"
}

# One seeded campaign for $seconds; its counts are the last lines of its log.
campaign() {
  local t=$1 built=${core:-$repo/build} log="$logs/campaign-$1.log" minutes
  minutes=$(awk "BEGIN { print $seconds / 60 }")
  case "$t" in
    python) PYTHONPATH="$built/python" /usr/bin/python3 "$repo/scripts/fuzz/python_api.py" --minutes "$minutes" \
              --seed "$campaign_seed" ;;
    space) PYTHONPATH="$built/python" /usr/bin/python3 "$repo/scripts/dse/fuzz_space.py" --binary "$built/stepsim" \
             --minutes "$minutes" --seed "$campaign_seed" ;;
    cli) /usr/bin/python3 "$repo/scripts/fuzz/cli_edges.py" --stepsim "$built/stepsim" --minutes "$minutes" \
           --seed "$campaign_seed" ;;
  esac >"$log" 2>&1 && echo "campaign $t: no finding" >>"$log" || echo "campaign $t: FINDINGS (above)" >>"$log"
}

status=0
for t in $targets; do replay "$t" || status=1; done

running=0
for t in $targets $campaigns; do
  case "$t" in python|space|cli) campaign "$t" & ;; *) fuzz "$t" & ;; esac
  running=$((running + 1))
  if [ "$running" -ge "$parallel" ]; then
    wait -n
    running=$((running - 1))
  fi
done
while [ "$running" -gt 0 ]; do
  wait -n
  running=$((running - 1))
done

echo "fuzz.sh: per target (logs in $logs):"
for t in $targets; do summary "$t"; done
for t in $campaigns; do
  echo "campaign $t ($seconds s):"
  tail -n 12 "$logs/campaign-$t.log" | sed 's/^/  /'
  grep -q "campaign $t: no finding" "$logs/campaign-$t.log" || status=1
done
for t in $targets; do
  if [ -n "$(ls "$build/findings/$t" 2>/dev/null)" ]; then
    status=1
    sort_findings "$t"
  fi
done
echo "fuzz.sh: $(( $(date +%s) - start )) s in all"
exit $status
}
