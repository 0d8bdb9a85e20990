#!/usr/bin/env bash
# Installs the Debian packages stepsim needs and builds it with CMake (Release) into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGES=(g++ cmake make pkg-config libsystemc-dev libboost-context-dev libginac-dev libyaml-cpp-dev nlohmann-json3-dev
          libgtest-dev libgmock-dev libbenchmark-dev python3-matplotlib
          verilator yosys qflow-tech-osu018)
missing=()
for p in "${PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y "${missing[@]}"
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j"$(nproc)"
