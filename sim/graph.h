// Graph IR: the STeP program as loaded from YAML (or built in C++), before elaboration.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hw/stream/token.h"

namespace stepsim {

struct NodeSpec {
  std::string name;
  std::string op;
  std::map<std::string, std::string> params;  // name -> value as text
  std::map<std::string, std::string> inputs;  // input port -> "producer.port" (or "producer")
  std::optional<uint64_t> compute_bw;         // FLOPs/cycle override for this node
  std::optional<uint32_t> depth;              // FIFO depth of this node's output channels
  std::optional<size_t> num_outputs;          // for numbered outputs (out0..), if not inferable
};

// A tensor stored off-chip before the run (loads read it) or written by a store.
struct TensorSpec {
  std::string name;
  uint64_t rows = 0, cols = 0;
  DType dtype = DType::BF16;
  std::string init = "zeros";  // zeros | random | file | output
  uint64_t seed = 0;
  std::string file;            // .npy when init == file
};

struct Graph {
  std::string name;
  std::string source;  // file it came from, for messages
  std::vector<NodeSpec> nodes;
  std::map<std::string, std::vector<Beat>> streams;  // named literal/trace streams for Source nodes
  std::vector<TensorSpec> tensors;

  const NodeSpec* find(const std::string& n) const {
    for (const NodeSpec& s : nodes)
      if (s.name == n) return &s;
    return nullptr;
  }
};

}  // namespace stepsim
