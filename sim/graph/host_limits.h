// What one run may ask of the host, checked before anything is allocated (docs/user-guide.md,
// "Host limits"): a graph whose declared sizes would need more memory than the limit is rejected
// up front with the sizes that make it up, instead of growing until the system kills it.
#pragma once

#include <cstdint>
#include <string>

#include "hw/presets/hardware.h"
#include "sim/graph/graph.h"

namespace stepsim {

// Beats of one stream held in memory: kMaxStreamBeats (hw/stream/token.h).
// Elements of one stored tensor (rows x cols): 2^40, far above any HBM.
constexpr uint64_t kMaxTensorElements = uint64_t(1) << 40;
// Numbered ports of one node (in0.., out0..): selectors address at most this many.
constexpr uint64_t kMaxNumberedPorts = 256;

// Bytes the simulator may plan to hold: the environment variable STEPSIM_HOST_MEMORY_LIMIT
// (bytes, with an optional K, M, G or T suffix for powers of 1024), else 16 GiB. Throws
// std::invalid_argument for a malformed value.
uint64_t host_memory_limit();

// The memory a run of `g` reserves before it starts: channel slots (every edge, at its depth),
// the graph's streams, every node's fiber stack and objects (the Broadcasts the plan adds for a
// port read twice included) and, in functional mode, the values of the tensors read from files
// or written by a store (a random tensor is made as it is read). Saturates instead of
// overflowing.
struct HostMemoryEstimate {
  uint64_t channel_bytes = 0, stream_bytes = 0, tensor_bytes = 0, node_bytes = 0;
  uint64_t fibers = 0;  // of the nodes: one each (all operators but Flatten have one)
  uint64_t total() const;
  // "channels 1.0 GiB + streams 0 B + nodes 6.6 GiB (100000 fibers) + tensors 64.0 GiB"
  std::string text() const;
};
HostMemoryEstimate estimate_host_memory(const Graph& g, const HardwareParams& hw, bool functional);

// Bytes a node reserves apart from its channels: its fiber's stack with the guard page, and its
// objects (the operator, its SystemC module and context, names and parameters).
uint64_t node_reservation_bytes();

// Throws std::invalid_argument naming the graph, the estimate and the limit when it exceeds it.
void check_host_memory(const Graph& g, const HardwareParams& hw, bool functional);

}  // namespace stepsim
