#include "sim/graph/host_limits.h"

#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "hw/channel/context.h"
#include "hw/stream/number_text.h"
#include "sim/graph/node_index.h"
#include "sim/graph/ports.h"

namespace stepsim {

namespace {

constexpr uint64_t kDefaultHostMemoryLimit = uint64_t(16) << 30;
// A channel slot holds a beat and three timestamps (hw/channel/channel.h, Channel::Slot).
constexpr uint64_t kChannelSlotBytes = sizeof(Beat) + 3 * sizeof(uint64_t);
// Functional mode keeps a tensor's values (4 bytes per element, TileData: a file's values, or
// what a store wrote, read back for its .npy) and its bytes in the off-chip memory's backing
// store (at most 4 bytes per element).
constexpr uint64_t kTensorBytesPerElement = 8;

// A node's objects besides its fiber stack: the operator with its SystemC module, context,
// port vectors, parameters and names, and the graph's and the plan's copies of its NodeSpec.
// Measured (docs/performance.md, "Big graphs"): a run of a chain of 3·10^4 Maps peaks 5 to 6 KiB
// a node above its analysis, the stack pages it touches included; counted with room to spare.
constexpr uint64_t kNodeObjectBytes = 8 << 10;
// A channel's own object (its name, log and bookkeeping), besides its slots: counted with the
// nodes' objects.
constexpr uint64_t kChannelObjectBytes = 1 << 10;

// The tensors whose values a functional run holds in memory: a file's values, or what a store
// writes. A random or zero tensor that no store writes costs nothing: its values are made when
// a tile reads them (OffChipMemory::set_initial_values).
std::set<std::string> tensors_held_in_memory(const Graph& g) {
  std::set<std::string> held;
  for (const TensorSpec& t : g.tensors)
    if (t.init == "file") held.insert(t.name);
  for (const NodeSpec& n : g.nodes) {
    const auto tensor = n.params.find("tensor");
    if ((n.is(OpKind::kLinearOffChipStore) || n.is(OpKind::kRandomOffChipStore)) && tensor != n.params.end())
      held.insert(tensor->second);
  }
  return held;
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
  return saturating_add(saturating_add(saturating_add(channel_bytes, stream_bytes), node_bytes), tensor_bytes);
}

std::string HostMemoryEstimate::text() const {
  return "channels " + bytes_text(channel_bytes) + " + streams " + bytes_text(stream_bytes) + " + nodes " +
         bytes_text(node_bytes) + " (" + std::to_string(fibers) + " fibers) + tensors " + bytes_text(tensor_bytes);
}

uint64_t node_reservation_bytes() { return fiber_reservation_bytes() + kNodeObjectBytes; }

HostMemoryEstimate estimate_host_memory(const Graph& g, const HardwareParams& hw, bool functional) {
  HostMemoryEstimate e;
  const NodeIndex index(g);
  // Every input of a node is one channel, as deep as its own `input_depth:`, its producer's
  // `depth:` or the preset's FIFO depth; a load's output may be as deep as its memory unit's
  // buffer (load_buffer_tiles). A port read more than once feeds a Broadcast (sim/engine/plan.h): one
  // node and one channel more.
  const uint64_t default_depth = std::max<uint64_t>(hw.fifo_depth, hw.load_buffer_tiles);
  std::map<std::string, uint64_t> reads;  // "node.port" -> channels reading it
  uint64_t channels = 0;
  for (const NodeSpec& n : g.nodes)
    for (const auto& [port, ref] : n.inputs) {
      const auto [src, sport] = split_ref(ref);
      const NodeSpec* producer = index.find(src);
      const auto own = n.input_depth.find(port);
      const uint64_t producer_depth =
          producer && producer->depth ? std::max<uint64_t>(*producer->depth, default_depth) : default_depth;
      const uint64_t depth =
          own != n.input_depth.end() ? std::max<uint64_t>(own->second, default_depth) : producer_depth;
      e.channel_bytes = saturating_add(e.channel_bytes, saturating_mul(depth, kChannelSlotBytes));
      ++channels;
      if (++reads[src + "." + sport] == 2) {  // (a port read as "a" and as "a.out" counts apart: rare)
        ++e.fibers;
        e.channel_bytes = saturating_add(e.channel_bytes, producer_depth * kChannelSlotBytes);
        ++channels;
      }
    }
  e.fibers += g.nodes.size();  // every node counted as a fiber (all but Flatten are)
  e.node_bytes = e.fibers * node_reservation_bytes() + channels * kChannelObjectBytes;  // (< 2^40 nodes)
  for (const auto& s : g.streams) e.stream_bytes = saturating_add(e.stream_bytes, s.second.size() * sizeof(Beat));
  if (functional) {
    const std::set<std::string> held = tensors_held_in_memory(g);
    for (const TensorSpec& t : g.tensors)
      if (held.count(t.name))
        e.tensor_bytes =
            saturating_add(e.tensor_bytes, saturating_mul(saturating_mul(t.rows, t.cols), kTensorBytesPerElement));
  }
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
