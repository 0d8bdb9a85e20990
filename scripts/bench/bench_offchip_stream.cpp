// 1 GiB streamed through the fabric: LinearOffChipLoad -> Map(exp) -> LinearOffChipStore,
// 2 Mi tiles of 16x16 bf16 in timing mode (step-artifact preset, fast HBM path).
// Requirement (docs/performance.md): the whole simulation in under 1 s of wall time.
//
// The graph is the YAML a user would write (parse_graph), so the benchmark measures the same path
// as `stepsim run`. Smaller sizes (1/64, 1/16) show how the cost scales per tile.
//
// Counters:
//   sim_cycles   simulated cycles
//   tiles        tiles loaded (= stored)
//   ns_per_tile  wall time of simulate() / tiles
//   GiB          bytes streamed (read side)
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>

#include "hw/presets/hardware.h"
#include "sim/engine/simulation.h"
#include "sim/graph/loader.h"

namespace {

using namespace stepsim;

// rows x 32768 bf16 = rows * 64 KiB; 16384 rows = 1 GiB = 2 Mi tiles of 16x16.
Graph stream_graph(int64_t rows) {
  const std::string shape = "[" + std::to_string(rows) + ", 32768]";
  const std::string yaml =
      "name: offchip_stream\n"
      "tensors:\n"
      "  x: {shape: " +
      shape +
      ", dtype: bf16, init: zeros}\n"
      "  y: {shape: " +
      shape +
      ", dtype: bf16, init: output}\n"
      "nodes:\n"
      "  - {name: load, op: LinearOffChipLoad, params: {tensor: x, tile: [16, 16]}}\n"
      "  - {name: f, op: Map, params: {fn: exp}, inputs: {in0: load}}\n"
      "  - {name: store, op: LinearOffChipStore, params: {tensor: y, tile: [16, 16]}, inputs: {in: f}}\n";
  return parse_graph(yaml, "bench_offchip_stream", ".", {});
}

void BM_OffChipStream(benchmark::State& state) {
  const int64_t rows = state.range(0);
  const Graph g = stream_graph(rows);
  SimOptions opt;
  opt.hw = load_preset("step-artifact");
  const double tiles = double(rows / 16) * (32768 / 16);
  uint64_t cycles = 0;
  double ns_per_tile = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    SimResult r = simulate(g, opt);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok) {
      state.SkipWithError(r.error.c_str());
      break;
    }
    state.SetIterationTime(secs);
    cycles = r.cycles;
    ns_per_tile += secs * 1e9 / tiles;
  }
  state.counters["sim_cycles"] = double(cycles);
  state.counters["tiles"] = tiles;
  state.counters["GiB"] = tiles * 512 / double(1ull << 30);
  state.counters["ns_per_tile"] = benchmark::Counter(ns_per_tile, benchmark::Counter::kAvgIterations);
}

}  // namespace

BENCHMARK(BM_OffChipStream)
    ->ArgName("rows")
    ->Arg(256)    // 16 MiB, 32 Ki tiles
    ->Arg(512)    // 32 MiB, 64 Ki tiles (with 256: the marginal cost per tile under callgrind)
    ->Arg(1024)   // 64 MiB, 128 Ki tiles
    ->Arg(16384)  // 1 GiB, 2 Mi tiles: the requirement
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

BENCHMARK_MAIN();
