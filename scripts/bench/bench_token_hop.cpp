// Token-hop cost of the core simulator: Source -> 255 pass-through operators -> Sink, i.e.
// 256 channel hops, streaming N tiles (16x16 bf16, timing mode: shapes only) or N scalars.
//
// The pass-through operator is Flatten<min=0,max=0> (a real shape operator that leaves every
// stop level unchanged; 0 cycles per beat in the step-artifact preset). Every operator is a
// fiber with its own local clock (hw/channel/context.h); a hop is one send + one receive on a
// bounded timestamped channel.
//
// Counters:
//   ns_per_hop  wall time of the whole simulate() call / (N x 256 hops)  -- target <= 20 ns
//   sim_cycles  simulated cycles (checks the model: N + 256 + small constant for depth 2)
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>

#include "hw/presets/hardware.h"
#include "sim/engine/simulation.h"
#include "sim/graph/graph.h"

namespace {

using namespace stepsim;

constexpr int kHops = 256;  // channels between Source and Sink (the chain)

Graph chain_graph(int64_t tokens, bool tiles, const std::string& op, uint32_t depth, int hops) {
  Graph g;
  g.name = "token_hop";
  g.source = "bench_token_hop";
  std::vector<Beat>& s = g.streams["in"];
  s.reserve(size_t(tokens) + 1);
  for (int64_t i = 0; i < tokens; ++i)
    s.push_back(Beat::data(tiles ? Element(shape_tile(16, 16)) : Element(Scalar{i})));
  s.push_back(Beat::done_beat());

  auto node = [&](const std::string& name, const std::string& o) {
    NodeSpec n;
    n.name = name;
    n.op = o;
    n.depth = depth;
    return n;
  };
  NodeSpec src = node("src", "Source");
  src.params["stream"] = "in";
  g.nodes.push_back(src);
  std::string prev = "src";
  for (int i = 1; i < hops; ++i) {
    NodeSpec n = node("p" + std::to_string(i), op);
    if (op == "Flatten") {
      n.params["min"] = "0";
      n.params["max"] = "0";
    }
    n.inputs["in"] = prev;
    prev = n.name;
    g.nodes.push_back(n);
  }
  NodeSpec sink = node("sink", "Sink");
  sink.inputs["in"] = prev;
  g.nodes.push_back(sink);
  return g;
}

// args: tokens, tiles (1) or scalars (0), channel depth; `op` is the pass-through operator,
// `hops` the channels of the chain.
void run_chain(benchmark::State& state, const std::string& op, int hops = kHops) {
  const int64_t tokens = state.range(0);
  const bool tiles = state.range(1) != 0;
  const uint32_t depth = uint32_t(state.range(2));
  const Graph g = chain_graph(tokens, tiles, op, depth, hops);
  SimOptions opt;
  opt.hw = load_preset("step-artifact");
  uint64_t cycles = 0;
  double ns_per_hop = 0;
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
    ns_per_hop += secs * 1e9 / (double(tokens) * hops);
  }
  state.counters["ns_per_hop"] = benchmark::Counter(ns_per_hop, benchmark::Counter::kAvgIterations);
  state.counters["sim_cycles"] = double(cycles);
  state.counters["hops"] = hops;
  state.counters["tokens"] = double(tokens);
}

void BM_TokenHop_Flatten(benchmark::State& s) { run_chain(s, "Flatten"); }
void BM_TokenHop_Broadcast(benchmark::State& s) { run_chain(s, "Broadcast"); }
// args as above, then the chain's hops.
void BM_TokenHop_ChainLength(benchmark::State& s) { run_chain(s, "Flatten", int(s.range(3))); }

}  // namespace

// The headline figure: 65536 tiles through depth-2 channels (the step-artifact default); deeper
// channels let every activation move more beats. The 1024/4096-token runs separate the
// fixed elaboration cost from the per-hop cost (and are the ones profiled with callgrind).
BENCHMARK(BM_TokenHop_Flatten)
    ->ArgNames({"tokens", "tiles", "depth"})
    ->Args({65536, 1, 2})
    ->Args({65536, 0, 2})
    ->Args({65536, 1, 1})
    ->Args({65536, 1, 8})
    ->Args({65536, 1, 32})
    ->Args({1024, 1, 2})
    ->Args({4096, 1, 2})
    ->Args({1024, 1, 8})
    ->Args({4096, 1, 8})
    ->Args({1024, 1, 1})
    ->Args({4096, 1, 1})
    ->Args({1024, 1, 32})
    ->Args({4096, 1, 32})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TokenHop_Broadcast)
    ->ArgNames({"tokens", "tiles", "depth"})
    ->Args({65536, 1, 2})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
// Shorter chains: whether the per-hop cost depends on how many operators (and so how much
// state that was last touched long ago) a pass of the wavefront goes through.
BENCHMARK(BM_TokenHop_ChainLength)
    ->ArgNames({"tokens", "tiles", "depth", "hops"})
    ->Args({65536, 1, 2, 16})
    ->Args({65536, 1, 32, 16})
    ->Args({65536, 1, 2, 64})
    ->Args({65536, 1, 32, 64})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
