// The write half of a Bufferize -> Streamify pair on the memory unit (pmu_bridge.h).
#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "hw/bridge/unit_bridges.h"

namespace stepsim::bridge {

namespace {
std::map<const Context*, PmuWritePort*>& writers() {
  static std::map<const Context*, PmuWritePort*> m;
  return m;
}
std::set<const Context*>& readers() {
  static std::set<const Context*> s;
  return s;
}
}  // namespace

bool is_pmu_reader(const Context* c) { return readers().count(c) > 0; }
void register_pmu_reader(const Context* c, bool on) {
  if (on)
    readers().insert(c);
  else
    readers().erase(c);
}

PmuWritePort::PmuWritePort(const OpConfig& cfg, std::string impl) : Op(cfg), impl_(std::move(impl)) {
  rank_ = int(cfg.params.get(param::kRank));
  writers()[&ctx()] = this;
}

PmuWritePort::~PmuWritePort() { writers().erase(&ctx()); }

PmuWritePort* PmuWritePort::of(const Context* producer) {
  auto it = writers().find(producer);
  return it == writers().end() ? nullptr : it->second;
}

void PmuWritePort::run() {
  if (!has_out(0) || !is_pmu_reader(out(0).consumer()))
    fail("impl: " + impl_ +
         ": the memory unit runs a Bufferize -> Streamify pair; this Bufferize's output must go "
         "straight to a Streamify node on the unit too (give both nodes the same impl, or neither)");
  Channel& link = out(0);
  // The link is the unit's write path: its log shows the buffer references the write side forms
  // (the approximate Bufferize's output), not the write beats.
  link.stop_log();
  std::vector<LoggedBeat> refs;
  // The buffer being formed, as hw/ops/onchip.cpp's Bufferize forms it.
  Buffer buf;
  std::vector<int64_t> cur(size_t(rank_) + 1, 0), size(size_t(rank_), -2);
  uint64_t elems = 0;
  for (;;) {
    const Beat b = in(0).recv();
    emit(0, b);
    if (b.has_elem) {
      ++elems;
      buf.bytes += b.elem.bytes();
      ++cur[0];
    }
    const int s = b.stop;
    for (int j = 0; j < std::min(s, rank_); ++j) {
      int64_t& z = size[size_t(j)];
      z = z == -2 ? cur[size_t(j)] : z == cur[size_t(j)] ? z : -1;
      cur[size_t(j)] = 0;
      ++cur[size_t(j) + 1];
    }
    const bool closes = s >= rank_;
    if (b.has_elem || (s && !closes) || (closes && !buf.beats.empty())) {
      Beat w = b;
      w.done = false;
      w.stop = uint8_t(std::min(s, rank_));
      buf.beats.push_back(std::move(w));
    }
    if (closes) {
      buf.rank = uint32_t(rank_);
      for (int j = rank_ - 1; j >= 0; --j) buf.shape.push_back(size[size_t(j)] == -2 ? 0 : size[size_t(j)]);
      note_buffer(elems, buf.bytes);
      Beat r = Beat::data(Element(BufferRef(std::make_shared<Buffer>(std::move(buf)))), uint8_t(s - rank_));
      r.done = b.done;
      refs.push_back(LoggedBeat{ctx().now(), std::move(r)});
      buf = Buffer();
      elems = 0;
      std::fill(cur.begin(), cur.end(), 0);
      std::fill(size.begin(), size.end(), -2);
    } else if (b.done) {
      refs.push_back(LoggedBeat{ctx().now(), Beat::done_beat()});
    }
    if (b.done) break;
  }
  if (link.logged()) link.replace_log(std::move(refs));
}

namespace {
std::string pmu_rank(int64_t rank) {
  if (rank < 1 || rank > 15) return "rank = " + std::to_string(rank) + " is outside the unit's range 1..15";
  return "";
}
}  // namespace

// The Bufferize of a pair: the write port.
std::string kinds::PmuWrite::unsupported(const OpConfig& cfg, OpMode) { return pmu_rank(cfg.params.get(param::kRank)); }

// The Streamify of a pair: the unit.
std::string kinds::Pmu::unsupported(const OpConfig& cfg, OpMode) {
  const Params& p = cfg.params;
  const int64_t rank = p.get(param::kRank);
  const std::vector<int64_t> shape = p.get(param::kOutShape), stride = p.get(param::kStride);
  if (shape.size() > size_t(kPmuNA))
    return "the memory unit's affine view has up to " + std::to_string(kPmuNA) + " dimensions, out_shape has " +
           std::to_string(shape.size());
  const int64_t vmax = (int64_t(1) << kPmuVW) - 1;
  for (size_t k = 0; k < shape.size(); ++k)
    if (shape[k] < 0 || shape[k] > vmax || k >= stride.size() || stride[k] < 0 || stride[k] > vmax)
      return "affine view entries (out_shape, stride) must be in 0.." + std::to_string(vmax) + " on the memory unit";
  const std::vector<int64_t> rep = p.get(param::kRepeat);
  if (rep.size() > size_t(kPmuR))
    return "the memory unit has " + std::to_string(kPmuR) + " static repeat factors, the node has " +
           std::to_string(rep.size());
  for (int64_t f : rep)
    if (f < 0 || f > 255) return "repeat factor " + std::to_string(f) + " does not fit the unit's 8-bit counters";
  return pmu_rank(rank);
}

std::string pmu_pair_unsupported(const Params& bufferize, const Params& streamify) {
  const int64_t rank = bufferize.get(param::kRank);
  if (!streamify.get(param::kOutShape).empty() && rank > kPmuNA)
    return "an affine view needs Bufferize rank <= " + std::to_string(kPmuNA) + " on the memory unit (rank " +
           std::to_string(rank) + ")";
  return "";
}

}  // namespace stepsim::bridge
