// Small C++ graph builder for the timing, determinism and deadlock tests: real simulator, no
// mocks. Every expected cycle count in these tests is computed from the timing rule it checks
// (reference-simulator-notes.md §3 and the operator's `timing` string), with the arithmetic
// written out.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hw/presets/hardware.h"
#include "sim/engine/simulation.h"

namespace stepsim::test {

inline HardwareParams artifact() { return load_preset("step-artifact"); }

constexpr uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Bytes of a bf16 tile and the step-artifact constants the rules use.
constexpr uint64_t bf16_bytes(uint64_t rows, uint64_t cols) { return rows * cols * 2; }
constexpr uint64_t kOnchipBw = 64;     // step-artifact onchip_bw, B/cycle
constexpr uint64_t kComputeBw = 4096;  // step-artifact compute_bw, FLOPs/cycle
constexpr uint64_t kSend = 1;          // step-artifact send_latency
constexpr uint64_t kResponse = 1;      // step-artifact response_latency
constexpr uint64_t kSwitch = 1;        // step-artifact routing_switch_cycles

struct GraphBuilder {
  Graph g;

  GraphBuilder() {
    g.name = "test";
    g.source = "test";
  }
  // A Source node emitting `text` (one beat every `interval` cycles).
  GraphBuilder& source(const std::string& name, const std::string& text, uint64_t interval = 1,
                       std::optional<uint32_t> depth = std::nullopt) {
    g.streams[name] = to_beats(parse_tokens(text));
    NodeSpec n;
    n.name = name;
    n.op = "Source";
    n.params = {{"stream", name}, {"interval", std::to_string(interval)}};
    n.depth = depth;
    g.nodes.push_back(n);
    return *this;
  }
  GraphBuilder& node(const std::string& name, const std::string& op, std::map<std::string, std::string> params,
                     std::map<std::string, std::string> inputs, std::optional<uint32_t> depth = std::nullopt,
                     std::optional<uint64_t> compute_bw = std::nullopt) {
    NodeSpec n;
    n.name = name;
    n.op = op;
    n.params = std::move(params);
    n.inputs = std::move(inputs);
    n.depth = depth;
    n.compute_bw = compute_bw;
    g.nodes.push_back(n);
    return *this;
  }
  GraphBuilder& sink(const std::string& name, const std::string& from) {
    return node(name, "Sink", {}, {{"in", from}});
  }
  SimResult run(const HardwareParams& hw = artifact(), uint64_t shuffle_seed = 0) const {
    SimOptions opt;
    opt.hw = hw;
    opt.shuffle_seed = shuffle_seed;
    opt.static_check = static_check;
    return simulate(g, opt);
  }
  // Off for graphs that the static check rejects on purpose (streams of two element types, empty
  // literal streams of no known rank): their timing is what the test is about.
  bool static_check = true;
};

inline uint64_t finish_of(const SimResult& r, const std::string& node) {
  for (const NodeResult& n : r.nodes)
    if (n.name == node) return n.finish_cycle;
  ADD_FAILURE() << "no node " << node;
  return 0;
}

// Arrival times of the beats that carry an element (stops riding on them included).
inline std::vector<uint64_t> element_times(const SimResult& r, const std::string& sink) {
  std::vector<uint64_t> t;
  const auto& beats = r.recorded.at(sink);
  const auto& times = r.recorded_times.at(sink);
  for (size_t i = 0; i < beats.size(); ++i)
    if (beats[i].has_elem) t.push_back(times[i]);
  return t;
}

inline HardwareParams with(HardwareParams hw, const std::string& key, const std::string& value) {
  hw.set(key, value);
  return hw;
}

}  // namespace stepsim::test
