#!/usr/bin/env bash
# Sets up (packages + build) and runs every test under CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cd build
ctest --output-on-failure -j"$(nproc)"
