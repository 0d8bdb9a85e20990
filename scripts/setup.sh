#!/usr/bin/env bash
# Installs the Debian packages stepsim needs and builds it with CMake (Release) into build/.
#
#   bash scripts/setup.sh main [CMAKE ARGS]   the simulator alone: the packages it needs and the
#                                             stepsim target (scripts/demo.sh)
#   bash scripts/setup.sh all [CMAKE ARGS]    every package and target: tests, benchmarks, the
#                                             Verilated RTL units (scripts/test.sh)
#
# Both use the same build/ folder and set every optional part explicitly (CMake would otherwise
# keep what the previous configure chose), so `all` after `main` builds everything again.
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-all}"
shift || true
# The simulator's own libraries (GLPK: FIFO sizing's linear program), and the compiler.
PACKAGES=(g++ cmake make pkg-config libsystemc-dev libboost-context-dev libboost-program-options-dev libginac-dev
          libyaml-cpp-dev nlohmann-json3-dev libglpk-dev)
case "$what" in
  main)
    OPTIONS=(-DSTEPSIM_TESTS=OFF -DSTEPSIM_BENCHMARKS=OFF -DSTEPSIM_RTL=OFF -DSTEPSIM_PYTHON=OFF)
    TARGET=(--target stepsim) ;;
  all)
    # Tests, benchmarks, plots, the RTL units (Verilator), their lint/synthesis and area, and the
    # bounded libFuzzer run of the default tests (clang; docs/checking.md), and the Python package
    # (sim/python: pybind11, with Debian's NumPy, SymPy, pandas, pytest and PyTorch); design-space
    # exploration (Optuna) and a single-node Slurm for its scale-out test (slurmctld, slurmd, munge).
    # STEPSIM_RTL unset: back to its default, on when CMake finds Verilator.
    PACKAGES+=(libgtest-dev libgmock-dev libbenchmark-dev python3-matplotlib verilator yosys qflow-tech-osu018
               clang libfuzzer-14-dev libclang-rt-14-dev
               pybind11-dev python3-dev python3-numpy python3-sympy python3-pandas python3-pytest flake8 python3-torch
               python3-optuna slurmctld slurmd slurm-client munge)
    OPTIONS=(-DSTEPSIM_TESTS=ON -DSTEPSIM_BENCHMARKS=ON -DSTEPSIM_PYTHON=ON -USTEPSIM_RTL)
    TARGET=() ;;
  *)
    echo "usage: bash scripts/setup.sh main|all [CMAKE ARGS]" >&2
    exit 2 ;;
esac
missing=()
for p in "${PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y "${missing[@]}"
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${OPTIONS[@]}" "$@"
cmake --build build -j"$(nproc)" "${TARGET[@]}"
