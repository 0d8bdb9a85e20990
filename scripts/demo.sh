#!/usr/bin/env bash
# Sets up (packages + build) and runs the default LLM-layer testbench with a readable summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
./build/stepsim run graphs/examples/moe_small.yaml --report build/moe_small.report.json "$@"
echo "JSON report: build/moe_small.report.json"
