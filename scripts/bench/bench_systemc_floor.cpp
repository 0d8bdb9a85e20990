// The floor under bench_token_hop: what one SystemC thread per operator costs on this machine
// before any simulator code runs (docs/performance.md, "The SystemC floor").
//
//   BM_FloorChain        Source -> 255 pass-through stages -> Sink, each a SystemC thread, linked
//                        by minimal timestamped bounded FIFOs with the DAM rules of
//                        hw/channel/channel.h (visible at send + 1, slot reusable at dequeue + 1,
//                        block only when empty/full, one notification per wait, static
//                        sensitivity, per-thread stack offset) and a 48-byte beat. No statistics,
//                        no operator logic: the cheapest a hop can be with this architecture.
//   BM_FloorActivation   two threads waking each other: the cost of one thread activation
//                        (immediate notify, static wait, QuickThreads switch) with hot caches.
//
// Counters: ns_per_hop / ns_per_activation (wall), sim_cycles (the sink's clock + 1: the same
// model time as bench_token_hop, 65 792 cycles for 65 536 tokens at depth >= 2; the Source sends
// one beat per cycle).
#include <alloca.h>
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include <systemc>

#include "sim/engine/sc_kernel.h"

namespace {

using namespace sc_core;

// A fresh kernel per run, as simulate() has (sim/engine/sc_kernel.h).
using Kernel = stepsim::ScKernel;

struct Beat {
  uint64_t w[6];  // the size of stepsim::Beat
};

struct Stage;

struct Fifo {
  struct Slot {
    Beat beat;
    uint64_t ready = 0, freed = 0;
  };
  explicit Fifo(uint32_t d) : ring(d), depth(d) {}
  std::vector<Slot> ring;
  uint32_t head = 0, tail = 0, size = 0, depth;
  Stage* producer = nullptr;
  Stage* consumer = nullptr;
};

struct Stage {
  enum Kind { kSource, kPass, kSink };
  Stage(Kind k, Fifo* i, Fifo* o, int64_t n, int index) : kind(k), in(i), out(o), tokens(n) {
    sc_spawn_options opts;
    opts.set_stack_size(0x10000);
    opts.set_sensitivity(&wake_event);
    sc_spawn(
        [this, index] {
          volatile char* pad = static_cast<char*>(alloca(64 + 64 * ((index * 37) % 64)));
          pad[0] = 0;
          run();
        },
        sc_gen_unique_name("stage"), &opts);
  }
  void block() {
    blocked = true;
    wait();
  }
  void wake() {
    if (blocked) {
      blocked = false;
      wake_event.notify();
    }
  }
  void send(const Beat& b) {
    while (out->size == out->depth) block();
    Fifo::Slot& s = out->ring[out->tail];
    if (s.freed > now) now = s.freed;
    s.beat = b;
    s.ready = now + 1;
    if (++out->tail == out->depth) out->tail = 0;
    ++out->size;
    out->consumer->wake();
  }
  Beat recv() {
    while (in->size == 0) block();
    Fifo::Slot& s = in->ring[in->head];
    if (s.ready > now) now = s.ready;
    Beat b = s.beat;
    s.freed = now + 1;
    if (++in->head == in->depth) in->head = 0;
    --in->size;
    in->producer->wake();
    return b;
  }
  void run() {
    Beat b{};
    for (int64_t i = 0; i < tokens; ++i) {
      if (kind == kSource) {
        if (i > 0) ++now;  // one beat per cycle, as the Source operator (interval 1)
        b.w[0] = uint64_t(i);
      } else {
        b = recv();
      }
      if (kind != kSink) send(b);
    }
  }

  Kind kind;
  Fifo* in;
  Fifo* out;
  int64_t tokens;
  uint64_t now = 0;
  bool blocked = false;
  sc_event wake_event;
};

constexpr int kHops = 256;

// args: tokens, depth
void BM_FloorChain(benchmark::State& state) {
  const int64_t tokens = state.range(0);
  const uint32_t depth = uint32_t(state.range(1));
  uint64_t end = 0;
  for (auto _ : state) {
    Kernel k;
    std::vector<std::unique_ptr<Fifo>> fifos;
    std::vector<std::unique_ptr<Stage>> stages;
    for (int i = 0; i < kHops; ++i) fifos.push_back(std::make_unique<Fifo>(depth));
    for (int i = 0; i <= kHops; ++i) {
      const Stage::Kind kind = i == 0 ? Stage::kSource : i == kHops ? Stage::kSink : Stage::kPass;
      stages.push_back(std::make_unique<Stage>(kind, i ? fifos[size_t(i) - 1].get() : nullptr,
                                               i < kHops ? fifos[size_t(i)].get() : nullptr, tokens, i));
    }
    for (int i = 0; i < kHops; ++i) {
      fifos[size_t(i)]->producer = stages[size_t(i)].get();
      fifos[size_t(i)]->consumer = stages[size_t(i) + 1].get();
    }
    auto t0 = std::chrono::steady_clock::now();
    sc_start();
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    end = stages.back()->now;
  }
  state.counters["ns_per_hop"] = benchmark::Counter(double(tokens) * kHops * double(state.iterations()),
                                                    benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["sim_cycles"] = double(end + 1);
  state.counters["hops"] = kHops;
  state.counters["tokens"] = double(tokens);
}

void BM_FloorActivation(benchmark::State& state) {
  const int64_t n = state.range(0);
  for (auto _ : state) {
    Kernel k;
    sc_event ev[2];
    for (int i = 0; i < 2; ++i) {
      sc_spawn_options opts;
      opts.set_sensitivity(&ev[i]);
      sc_spawn(
          [&ev, i, n] {
            if (i == 0) wait(SC_ZERO_TIME);  // thread 1 waits first
            for (int64_t k = 0; k < n; ++k) {
              if (i == 1) wait();
              ev[1 - i].notify();
              if (i == 0) wait();
            }
          },
          sc_gen_unique_name("pingpong"), &opts);
    }
    auto t0 = std::chrono::steady_clock::now();
    sc_start();
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  state.counters["ns_per_activation"] = benchmark::Counter(2.0 * double(n) * double(state.iterations()),
                                                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

}  // namespace

BENCHMARK(BM_FloorChain)
    ->ArgNames({"tokens", "depth"})
    ->Args({65536, 1})
    ->Args({65536, 2})
    ->Args({65536, 8})
    ->Args({65536, 32})
    ->Args({1024, 2})
    ->Args({4096, 2})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK(BM_FloorActivation)->Arg(1 << 22)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1);

BENCHMARK_MAIN();
