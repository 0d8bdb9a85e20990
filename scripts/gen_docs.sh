#!/usr/bin/env bash
# Regenerates the documentation that is generated from the code, so it cannot drift:
#   docs/operators.md  <- stepsim ops --markdown      (operator registry + tile functions)
#   docs/presets.md    <- stepsim presets --markdown  (every hardware parameter of every preset)
#   docs/layers.md     <- stepsim layers --markdown   (the layer library)
#   docs/metrics.md    <- stepsim metrics             (the metric table, sim/report/metrics.cpp)
# The hand-written docs (user-guide.md, timing-model.md, semantics.md, dse.md) link to these files.
# testbench/docs/docs_test.cpp fails when one differs from what the code generates.
#
# Usage: bash scripts/gen_docs.sh [path/to/stepsim]
#   Without an argument it builds the stepsim target in build/ (configured like scripts/setup.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-}"
if [ -z "$bin" ]; then
  if [ ! -f "$root/build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  fi
  cmake --build "$root/build" --target stepsim -j"$(nproc)" >/dev/null
  bin="$root/build/stepsim"
fi
gen() {  # gen FILE COMMAND...
  local file="$1"
  shift
  "$bin" "$@" > "$root/docs/$file.tmp"
  mv "$root/docs/$file.tmp" "$root/docs/$file"
  echo "wrote docs/$file"
}
gen operators.md ops --markdown
gen presets.md presets --markdown
gen layers.md layers --markdown
gen metrics.md metrics
