#!/usr/bin/env bash
# Sets up (every package + a build of everything: tests, benchmarks, RTL units) and runs every
# test under CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh all
cd build
ctest --output-on-failure -j"$(nproc)"
