#!/usr/bin/env bash
# Sets up (packages + build of the simulator alone) and runs the default LLM-layer testbench with
# a readable summary. scripts/test.sh builds and runs everything else.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "installing the packages stepsim needs and building it (the first time takes a few minutes)..." >&2
bash scripts/setup.sh main >/dev/null
./build/stepsim run graphs/examples/moe_small.yaml --report build/moe_small.report.json "$@"
echo "JSON report: build/moe_small.report.json"
