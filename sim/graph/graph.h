// Graph IR: the STeP program as loaded from YAML (or built in C++), before elaboration.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hw/ops/op.h"
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
  // FIFO depth of the channel into each named input port; wins over the producer's `depth`. Keyed
  // by the consumer because every channel has exactly one consumer port, while an output read
  // twice feeds several channels (through a Broadcast; stepsim size-fifos sizes them apart).
  // YAML: `input_depth: {in1: 64}`.
  std::map<std::string, uint32_t> input_depth;
  // Known sizes of output dims, outermost first, as expressions in the graph's symbols ("" keeps
  // the inferred size): names a new dynamic dimension (paper §6, e.g. Reassemble's) and types
  // the back edge of a cycle. YAML: `dims: {out: [n_route_out0, ""]}`.
  std::map<std::string, std::vector<std::string>> dims;
  // Declared output types ("[1, 64] of selector"): the back edge of a cycle, which shape
  // inference cannot order, is typed from these (the C++ frontend's forward()). YAML:
  // `types: {out: "[1, 64] of selector"}`.
  std::map<std::string, std::string> types;
  std::string impl;  // approx (default) | hls | rtl

  // Whether the node is an operator of `kind` (by its descriptor's name; an unknown op is none).
  bool is(OpKind kind) const { return op == op_name(kind); }
};

// A node from its essentials; the other fields keep their defaults.
inline NodeSpec node_spec(std::string name, std::string op, std::map<std::string, std::string> params = {},
                          std::map<std::string, std::string> inputs = {}, std::optional<uint64_t> compute_bw = {}) {
  NodeSpec n;
  n.name = std::move(name);
  n.op = std::move(op);
  n.params = std::move(params);
  n.inputs = std::move(inputs);
  n.compute_bw = compute_bw;
  return n;
}
inline NodeSpec node_spec(std::string name, OpKind op, std::map<std::string, std::string> params = {},
                          std::map<std::string, std::string> inputs = {}, std::optional<uint64_t> compute_bw = {}) {
  return node_spec(std::move(name), op_name(op), std::move(params), std::move(inputs), compute_bw);
}

// The value of node `n`'s parameter `key` (its default when absent), read and checked through
// the operator's descriptor.
template <class T>
T param_of(const NodeSpec& n, ParamKey<T> key) {
  return Params(n.op, n.name, &OpRegistry::instance().find(n.op).params, n.params).get(key);
}

// A tensor stored off-chip before the run (loads read it) or written by a store.
struct TensorSpec {
  std::string name;
  uint64_t rows = 0, cols = 0;
  DType dtype = DType::BF16;
  std::string init = "zeros";  // zeros | random | file | output
  uint64_t seed = 0;
  std::string file;  // .npy when init == file
  // Storage layout: 0 x 0 is row-major; otherwise [block_rows x block_cols] blocks, each
  // contiguous and row-major inside, stored in row-major block order (OffChipTensor).
  uint64_t block_rows = 0, block_cols = 0;
};

struct Graph {
  std::string name;
  std::string source;  // file it came from, for messages
  std::vector<NodeSpec> nodes;
  std::map<std::string, std::vector<Beat>> streams;  // named literal/trace streams for Source nodes
  std::vector<TensorSpec> tensors;
  // How each named stream was given in the file ("{trace: ..., kind: selector}" as YAML flow
  // text), so a graph written back to YAML refers to the trace instead of inlining it.
  std::map<std::string, std::string> stream_specs;
  // Values of graph symbols (dynamic dims), e.g. expert bin counts from a routing trace.
  std::map<std::string, std::string> symbols;
  std::string description;
  // The tokens one run of the graph processes (a decode step's batch, a prefill chunk's length),
  // for the report's energy per token; 0 = not known. A layer sets it; a file may give `tokens:`.
  uint64_t tokens = 0;
  // Default implementation of the nodes without `impl:` (docs/cosim.md): "" or approx, hls, rtl.
  // Under a default, a node whose operator or parameters have no unit stays approximate.
  std::string impl;

  const NodeSpec* find(const std::string& n) const {
    for (const NodeSpec& s : nodes)
      if (s.name == n) return &s;
    return nullptr;
  }
};

}  // namespace stepsim
