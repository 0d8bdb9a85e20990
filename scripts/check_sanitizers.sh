#!/usr/bin/env bash
# The whole C++ test suite under AddressSanitizer + UndefinedBehaviorSanitizer (docs/checking.md):
# configures build-asan with -DSTEPSIM_SANITIZE=ON (RTL and benchmarks off), builds every test
# and runs CTest. Any ASan or UBSan report, or a leak, fails its test.
#
#   scripts/check_sanitizers.sh [CTEST ARGS...]     e.g. -R test_channel, or -j1
# Environment: STEPSIM_ASAN_BUILD (default build-asan), JOBS (default 2).
# Cold, on 2 cores, the build takes long (about an hour): ccache is used when installed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${STEPSIM_ASAN_BUILD:-$repo/build-asan}
jobs=${JOBS:-2}

# halt_on_error: the first report ends the test (UBSan checks stay recoverable in the build so
# that ubsan.supp can name one in a system header, see there). Leaks are checked: the only
# suppression is libcln's 26 bytes at start-up (lsan.supp).
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:check_initialization_order=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$repo/testbench/fuzz/ubsan.supp"
export LSAN_OPTIONS="suppressions=$repo/testbench/fuzz/lsan.supp:print_suppressions=0"

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" -DSTEPSIM_SANITIZE=ON \
  -DSTEPSIM_RTL=OFF -DSTEPSIM_BENCHMARKS=OFF -DSTEPSIM_PYTHON=OFF >/dev/null
cmake --build "$build" -j"$jobs"
cd "$build"
# fuzz_smoke builds its own clang targets and runs under the normal build's tests only.
ctest -j"$jobs" --output-on-failure -E '^fuzz_smoke$' "$@"
