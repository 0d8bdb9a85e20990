#!/usr/bin/env bash
# Regenerates the documentation that is generated from the code, so it cannot drift:
#   docs/operators.md  <- stepsim ops --markdown      (operator registry + tile functions)
#   docs/presets.md    <- stepsim presets --markdown  (every hardware parameter of every preset)
# The hand-written docs (user-guide.md, timing-model.md, semantics.md) link to these two files.
# testbench/docs/docs_test.cpp fails when either file differs from what the code generates.
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
gen() {  # gen SUBCOMMAND FILE
  "$bin" "$1" --markdown > "$root/docs/$2.tmp"
  mv "$root/docs/$2.tmp" "$root/docs/$2"
  echo "wrote docs/$2"
}
gen ops operators.md
gen presets presets.md
gen layers layers.md
