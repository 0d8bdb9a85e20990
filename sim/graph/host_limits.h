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

// The memory a run of `g` needs before it starts: channel slots (every edge, at its depth), the
// graph's streams and, in functional mode, the values of the tensors read from files or written
// by a store (a random tensor is made as it is read). Saturates instead of overflowing.
struct HostMemoryEstimate {
  uint64_t channel_bytes = 0, stream_bytes = 0, tensor_bytes = 0;
  uint64_t total() const;
  std::string text() const;  // "channels 1.0 GiB + streams 0 B + tensors 64.0 GiB"
};
HostMemoryEstimate estimate_host_memory(const Graph& g, const HardwareParams& hw, bool functional);

// Throws std::invalid_argument naming the graph, the estimate and the limit when it exceeds it.
void check_host_memory(const Graph& g, const HardwareParams& hw, bool functional);

}  // namespace stepsim
