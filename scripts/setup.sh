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
# Packages only the tests use (not the configure, not the compiler): `all` installs them while
# the build runs, since apt is network and disk and the build is CPU (issue 35: the test command
# on a bare machine).
TEST_PACKAGES=()
case "$what" in
  main)
    OPTIONS=(-DSTEPSIM_TESTS=OFF -DSTEPSIM_BENCHMARKS=OFF -DSTEPSIM_RTL=OFF -DSTEPSIM_PYTHON=OFF)
    TARGET=(--target stepsim) ;;
  all)
    # Tests, benchmarks, the RTL units (Verilator), their synthesis (Yosys, found at configure
    # time) and the Python package's extension module (pybind11).
    # STEPSIM_RTL unset: back to its default, on when CMake finds Verilator.
    PACKAGES+=(libgtest-dev libgmock-dev libbenchmark-dev verilator yosys pybind11-dev python3-dev)
    # What the tests run with: plots, the cell library for area, gate-level power (OpenSTA:
    # docs/rtl-power.md), the bounded libFuzzer run (clang;
    # docs/checking.md), the Python package's NumPy, SymPy, pandas, pytest, flake8 and PyTorch;
    # design-space exploration (Optuna) and a single-node Slurm for its scale-out test (slurmctld,
    # slurmd, munge).
    TEST_PACKAGES=(python3-matplotlib qflow-tech-osu018 opensta clang libfuzzer-14-dev libclang-rt-14-dev
                   python3-numpy python3-sympy python3-pandas python3-pytest flake8 python3-torch
                   python3-optuna slurmctld slurmd slurm-client munge)
    OPTIONS=(-DSTEPSIM_TESTS=ON -DSTEPSIM_BENCHMARKS=ON -DSTEPSIM_PYTHON=ON -USTEPSIM_RTL)
    TARGET=() ;;
  *)
    echo "usage: bash scripts/setup.sh main|all [CMAKE ARGS]" >&2
    exit 2 ;;
esac
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
updated=0
# Installs those of the packages named that are missing (apt-get update once).
install_missing() {
  local missing=() p
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ $updated -eq 0 ]; then $SUDO apt-get update && updated=1; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y "${missing[@]}"
}
install_missing "${PACKAGES[@]}"
test_install=""
if [ ${#TEST_PACKAGES[@]} -gt 0 ]; then
  apt_log=$(mktemp)
  install_missing "${TEST_PACKAGES[@]}" >"$apt_log" 2>&1 &
  test_install=$!
fi
# The test packages' install must end (and be reported) however the build ends.
finish_test_install() {
  [ -z "$test_install" ] && return 0
  local rc=0
  wait "$test_install" || rc=$?
  test_install=""
  if [ $rc -ne 0 ]; then
    cat "$apt_log" >&2
    echo "error: installing the test packages failed (apt-get exit $rc)" >&2
  fi
  rm -f "$apt_log"
  return $rc
}
trap finish_test_install EXIT
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${OPTIONS[@]}" "$@"
cmake --build build -j"$(nproc)" "${TARGET[@]}"
trap - EXIT
finish_test_install
