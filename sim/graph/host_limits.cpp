#include "sim/graph/host_limits.h"

#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "hw/stream/number_text.h"

namespace stepsim {

namespace {

constexpr uint64_t kDefaultHostMemoryLimit = uint64_t(16) << 30;
// A channel slot holds a beat and three timestamps (hw/channel/channel.h, Channel::Slot).
constexpr uint64_t kChannelSlotBytes = sizeof(Beat) + 3 * sizeof(uint64_t);
// Functional mode keeps a tensor's values (4 bytes per element, TileData: a file's values, or
// what a store wrote, read back for its .npy) and its bytes in the off-chip memory's backing
// store (at most 4 bytes per element).
constexpr uint64_t kTensorBytesPerElement = 8;

// Whether a functional run holds the tensor's values in memory: its file's values, or what a
// store writes into it. A random or zero tensor that no store writes costs nothing: its values
// are made when a tile reads them (OffChipMemory::set_initial_values).
bool held_in_memory(const Graph& g, const TensorSpec& t) {
  if (t.init == "file") return true;
  for (const NodeSpec& n : g.nodes) {
    const auto tensor = n.params.find("tensor");
    if ((n.is(OpKind::kLinearOffChipStore) || n.is(OpKind::kRandomOffChipStore)) && tensor != n.params.end() &&
        tensor->second == t.name)
      return true;
  }
  return false;
}

uint64_t saturating_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
uint64_t saturating_add(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

std::string bytes_text(uint64_t b) {
  std::ostringstream s;
  s.precision(3);
  if (b >= (uint64_t(1) << 30))
    s << double(b) / double(uint64_t(1) << 30) << " GiB";
  else if (b >= (uint64_t(1) << 20))
    s << double(b) / double(uint64_t(1) << 20) << " MiB";
  else
    s << b << " B";
  return s.str();
}

}  // namespace

uint64_t host_memory_limit() {
  const char* env = std::getenv("STEPSIM_HOST_MEMORY_LIMIT");
  if (!env || !*env) return kDefaultHostMemoryLimit;
  std::string text = env;
  unsigned shift = 0;
  const std::string suffixes = "KMGT";
  if (const size_t k = suffixes.find(char(std::toupper(uint8_t(text.back())))); k != std::string::npos) {
    shift = 10 * unsigned(k + 1);
    text.pop_back();
  }
  int64_t v = 0;
  if (!parse_int64(text, v) || v < 1 || uint64_t(v) > (UINT64_MAX >> shift))
    throw std::invalid_argument(std::string("STEPSIM_HOST_MEMORY_LIMIT must be a number of bytes (optionally with K, "
                                            "M, G or T), got '") +
                                env + "'");
  return uint64_t(v) << shift;
}

uint64_t HostMemoryEstimate::total() const {
  return saturating_add(saturating_add(channel_bytes, stream_bytes), tensor_bytes);
}

std::string HostMemoryEstimate::text() const {
  return "channels " + bytes_text(channel_bytes) + " + streams " + bytes_text(stream_bytes) + " + tensors " +
         bytes_text(tensor_bytes);
}

HostMemoryEstimate estimate_host_memory(const Graph& g, const HardwareParams& hw, bool functional) {
  HostMemoryEstimate e;
  // Every input of a node is one channel, as deep as its own `input_depth:`, its producer's
  // `depth:` or the preset's FIFO depth; a load's output may be as deep as its memory unit's
  // buffer (load_buffer_tiles).
  const uint64_t default_depth = std::max<uint64_t>(hw.fifo_depth, hw.load_buffer_tiles);
  for (const NodeSpec& n : g.nodes)
    for (const auto& input : n.inputs) {
      const NodeSpec* producer = g.find(input.second.substr(0, input.second.find('.')));
      const auto own = n.input_depth.find(input.first);
      const uint64_t depth = own != n.input_depth.end()    ? std::max<uint64_t>(own->second, default_depth)
                             : producer && producer->depth ? std::max<uint64_t>(*producer->depth, default_depth)
                                                           : default_depth;
      e.channel_bytes = saturating_add(e.channel_bytes, saturating_mul(depth, kChannelSlotBytes));
    }
  for (const auto& s : g.streams) e.stream_bytes = saturating_add(e.stream_bytes, s.second.size() * sizeof(Beat));
  if (functional)
    for (const TensorSpec& t : g.tensors)
      if (held_in_memory(g, t))
        e.tensor_bytes =
            saturating_add(e.tensor_bytes, saturating_mul(saturating_mul(t.rows, t.cols), kTensorBytesPerElement));
  return e;
}

void check_host_memory(const Graph& g, const HardwareParams& hw, bool functional) {
  const HostMemoryEstimate e = estimate_host_memory(g, hw, functional);
  const uint64_t limit = host_memory_limit();
  if (e.total() > limit)
    throw std::invalid_argument((g.source.empty() ? "graph '" + g.name + "'" : g.source) + ": the run would need " +
                                bytes_text(e.total()) + " of host memory (" + e.text() + "), more than the limit of " +
                                bytes_text(limit) + " (set STEPSIM_HOST_MEMORY_LIMIT to change it)");
}

}  // namespace stepsim
