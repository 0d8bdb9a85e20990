#include "sim/fifo/fifo_sizing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "hw/presets/hardware.h"
#include "sim/engine/impl_policy.h"
#include "sim/engine/plan.h"
#include "sim/fifo/fifo_lp.h"
#include "sim/report/report.h"

namespace stepsim {

namespace {

constexpr uint32_t kDeepDepth = 64;  // every channel's depth in the first deep run
constexpr uint32_t kDeepGrowth = 8;  // a channel that fills up is this much deeper in the next
constexpr size_t kMaxDeepRuns = 8;   // 64 x 8^6 is beyond kMaxFifoDepth

using Depths = std::vector<uint32_t>;

// A channel of the run and where its depth is written in the graph: the consumer's input_depth,
// or, for the channel into a Broadcast the plan inserted for an output read twice, the producer's
// `depth` (that Broadcast is not in the graph).
struct ChannelSlot {
  std::string name, from, to, to_port;
  bool into_broadcast = false;
};

std::vector<ChannelSlot> channel_slots(const Graph& g, const HardwareParams& hw) {
  std::vector<ChannelSlot> slots;
  for (const Edge& e : plan_graph(g, hw).edges)
    slots.push_back(
        {e.from + "." + e.from_port + "->" + e.to + "." + e.to_port, e.from, e.to, e.to_port, g.find(e.to) == nullptr});
  return slots;
}

// One producer's `depth` serves all its channels into Broadcasts: they get the deepest of them.
void share_broadcast_depths(const std::vector<ChannelSlot>& slots, Depths& d) {
  std::map<std::string, uint32_t> deepest;
  for (size_t k = 0; k < slots.size(); ++k)
    if (slots[k].into_broadcast) deepest[slots[k].from] = std::max(deepest[slots[k].from], d[k]);
  for (size_t k = 0; k < slots.size(); ++k)
    if (slots[k].into_broadcast) d[k] = deepest[slots[k].from];
}

// The graph with every channel at its depth (the node `depth` keys replaced: every other channel
// of a node now has its consumer's input_depth).
Graph with_depths(const Graph& g, const std::vector<ChannelSlot>& slots, Depths d) {
  share_broadcast_depths(slots, d);
  Graph out = g;
  std::map<std::string, NodeSpec*> by_name;
  for (NodeSpec& n : out.nodes) {
    by_name[n.name] = &n;
    n.depth.reset();
    n.input_depth.clear();
  }
  for (size_t k = 0; k < slots.size(); ++k) {
    const ChannelSlot& s = slots[k];
    if (s.into_broadcast)
      by_name.at(s.from)->depth = d[k];
    else
      by_name.at(s.to)->input_depth[s.to_port] = d[k];
  }
  return out;
}

// The run's result of each slot's channel.
std::vector<const ChannelResult*> results_by_slot(const SimResult& r, const std::vector<ChannelSlot>& slots) {
  std::map<std::string, const ChannelResult*> by_name;
  for (const ChannelResult& c : r.channels) by_name[c.name] = &c;
  std::vector<const ChannelResult*> out;
  for (const ChannelSlot& s : slots) {
    auto it = by_name.find(s.name);
    if (it == by_name.end()) throw std::logic_error("size-fifos: the run has no channel '" + s.name + "'");
    out.push_back(it->second);
  }
  return out;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }
bool deadlocked(const SimResult& r) { return !r.ok && r.error.rfind("deadlock", 0) == 0; }
// Beats a channel holds beyond its FIFO slots (a load's tiles in flight) are not its depth.
uint32_t fifo_part(uint64_t held, uint32_t inflight) {
  return uint32_t(std::max<uint64_t>(1, held - std::min<uint64_t>(held, inflight)));
}

// --- the deep run ------------------------------------------------------------------------------

// What the deep run measured of one channel.
struct Measured {
  size_t from = 0, to = 0;  // node indices (SimResult::nodes)
  uint64_t beats = 0, first_send = 0, last_send = 0, beat_bytes = 0;
  // peak: the slots its sends found taken. The channel's peak_occupancy counts the beats not yet
  // dequeued at a send; a slot dequeued in the last response_latency cycles is not free either
  // (never more slots than beats, nor than the deep FIFO has).
  uint32_t depth = 0, peak = 0, inflight = 0;
};

struct DeepRun {
  SimResult result;
  Depths depth;
  std::vector<Measured> channels;
  size_t runs = 0;
};

// Deep FIFOs: every channel at least kDeepDepth and its depth as given, and a channel that filled
// up (or that a deadlock left full) kDeepGrowth times deeper, until none does.
DeepRun deep_run(const Graph& g, const std::vector<ChannelSlot>& slots, const SimResult& given, SimOptions o) {
  o.log_nodes = {"*"};  // every beat's send time and element: the rates, latencies and beat sizes
  DeepRun deep;
  for (const ChannelResult* c : results_by_slot(given, slots))
    deep.depth.push_back(std::max(kDeepDepth, c->params.depth));
  for (deep.runs = 1; deep.runs <= kMaxDeepRuns; ++deep.runs) {
    deep.result = simulate(with_depths(g, slots, deep.depth), o);
    const std::vector<const ChannelResult*> ch = results_by_slot(deep.result, slots);
    bool grew = false;
    for (size_t k = 0; k < slots.size(); ++k) {
      const ChannelResult& c = *ch[k];
      const bool filled =
          deep.result.ok ? c.stats.peak_occupancy >= c.params.depth + c.params.inflight : c.blocked_full;
      if (!filled) continue;
      if (deep.depth[k] >= kMaxFifoDepth)
        throw std::invalid_argument("channel '" + slots[k].name + "' fills even at depth " +
                                    std::to_string(kMaxFifoDepth) + ", the largest FIFO depth");
      deep.depth[k] = uint32_t(std::min<uint64_t>(uint64_t(deep.depth[k]) * kDeepGrowth, kMaxFifoDepth));
      grew = true;
    }
    if (deep.result.ok && !grew) return deep;
    if (!grew) throw std::invalid_argument("the graph fails even with deep FIFOs: " + deep.result.error);
  }
  throw std::invalid_argument("the graph still deadlocks or fills its FIFOs after " + std::to_string(kMaxDeepRuns) +
                              " ever deeper runs: " + first_line(deep.result.error));
}

// Each channel's beats, first and last send time and largest element, from its log.
void measure(DeepRun& deep, const std::vector<ChannelSlot>& slots) {
  std::map<std::string, size_t> node;
  for (size_t v = 0; v < deep.result.nodes.size(); ++v) node[deep.result.nodes[v].name] = v;
  const std::vector<const ChannelResult*> ch = results_by_slot(deep.result, slots);
  for (size_t k = 0; k < slots.size(); ++k) {
    const ChannelResult& c = *ch[k];
    Measured m;
    m.from = node.at(c.producer);
    m.to = node.at(c.consumer);
    m.depth = c.params.depth;
    m.inflight = c.params.inflight;
    const std::vector<LoggedBeat>& log = deep.result.channel_logs[c.name];
    m.beats = log.size();
    TileStat largest;
    for (const LoggedBeat& b : log)
      if (b.beat.has_elem) largest.add(b.beat.elem);
    m.beat_bytes = largest.max_elem_bytes;
    m.peak =
        uint32_t(std::min<uint64_t>({uint64_t(c.stats.peak_occupancy) + c.params.response_latency,
                                     uint64_t(c.params.depth) + c.params.inflight, std::max<uint64_t>(1, m.beats)}));
    if (!log.empty()) {
      m.first_send = log.front().cycle;
      m.last_send = log.back().cycle;
    }
    deep.channels.push_back(m);
  }
  deep.result.channel_logs.clear();  // the logs hold every beat (and keep buffers alive)
}

// --- the linear program ----------------------------------------------------------------------

// A node starts when the first beat of each of its inputs has arrived (0 without inputs).
std::vector<double> node_starts(const DeepRun& deep, uint32_t send_latency) {
  std::vector<double> start(deep.result.nodes.size(), 0.0);
  for (const Measured& m : deep.channels)
    if (m.beats) start[m.to] = std::max(start[m.to], double(m.first_send + send_latency));
  return start;
}

// The program's channel: its latency and rate in the deep run, and its steady-state floor (a FIFO
// of d slots carries at most d beats per round trip: send latency + the consumer's hold of a slot
// while it fires + response latency, docs/timing-model.md). A channel never holds more beats than
// it carries: the beats that wait grow linearly only up to there, so the rate is lowered until the
// deep run's own wait stays within them (a burst of beats into a consumer that waits long, such as
// a Reassemble's input, would otherwise ask for a million slots).
LpChannel lp_channel(const Measured& m, const DeepRun& deep, const std::vector<double>& start,
                     const HardwareParams& hw) {
  const NodeResult& consumer = deep.result.nodes[m.to];
  LpChannel c;
  c.from = m.from;
  c.to = m.to;
  c.timed = m.beats > 0;
  c.cap = std::max<double>(1, m.beats);
  c.weight = double(std::max<uint64_t>(1, m.beat_bytes));
  c.lead = double(m.first_send) + hw.send_latency - start[m.from];
  const double sent = m.beats > 1 ? double(m.beats - 1) / double(std::max<uint64_t>(1, m.last_send - m.first_send)) : 0;
  const double span = std::max(1.0, double(consumer.finish_cycle) - start[m.to]);
  const double steady = std::min(sent > 0 ? sent : 1.0, double(m.beats) / span);
  const double hold = consumer.firings ? double(consumer.busy_cycles) / double(consumer.firings) : 0.0;
  c.floor = std::min(c.cap, std::max(1.0, std::ceil(steady * (hw.send_latency + hw.response_latency + hold))));
  const double deep_wait = start[m.to] - start[m.from] - c.lead;
  c.rate = deep_wait > 0 ? std::min(steady, (c.cap - c.floor) / deep_wait) : steady;
  return c;
}

struct LpDepths {
  Depths depth;
  size_t rows = 0, columns = 0;
};

LpDepths lp_depths(const DeepRun& deep, const HardwareParams& hw, uint64_t cycle_limit) {
  const std::vector<double> start = node_starts(deep, hw.send_latency);
  // A node that starts later than in the deep run ends later by as much: its start may move up
  // to the limit less the time it ran.
  std::vector<double> latest;
  for (size_t v = 0; v < start.size(); ++v)
    latest.push_back(double(cycle_limit) - std::max(0.0, double(deep.result.nodes[v].finish_cycle) - start[v]));
  std::vector<LpChannel> channels;
  for (const Measured& m : deep.channels) channels.push_back(lp_channel(m, deep, start, hw));
  const LpSolution s = solve_fifo_lp(latest, channels);
  LpDepths out{{}, s.rows, s.columns};
  for (size_t k = 0; k < channels.size(); ++k)
    out.depth.push_back(std::min<uint32_t>(kMaxFifoDepth, fifo_part(uint64_t(s.beats[k]), deep.channels[k].inflight)));
  return out;
}

// --- verification ------------------------------------------------------------------------------

// The state of the search: the depths, their run, the runs spent.
struct Search {
  const Graph& graph;
  const std::vector<ChannelSlot>& slots;
  const FifoSizingOptions& options;
  uint64_t limit = 0;
  Depths depth;
  SimResult result;  // the run at `depth`
  size_t runs = 0;

  SimResult run(const Depths& d) {
    ++runs;
    return simulate(with_depths(graph, slots, d), options.sim);
  }
  bool good(const SimResult& r) const { return r.ok && r.cycles <= limit; }
};

// The channels a run blames: a deadlock's full channels; for a run over the limit, the full FIFOs
// of the tier: 0 those on its critical path (sim/report/report.h: a node there waited for space there),
// 1 those out of a node on the path, 2 those whose producers waited at least half the longest
// wait, 3 every one whose producer waited. An empty tier gives the next one's.
std::vector<size_t> blamed(const Search& s, const SimResult& r, int tier) {
  const std::vector<const ChannelResult*> ch = results_by_slot(r, s.slots);
  std::vector<size_t> out;
  auto pick = [&](const std::function<bool(const ChannelResult&)>& blame) {
    for (size_t k = 0; k < ch.size(); ++k)
      if (blame(*ch[k])) out.push_back(k);
    return !out.empty();
  };
  if (!r.ok) {
    pick([](const ChannelResult& c) { return c.blocked_full; });
    return out;
  }
  const std::vector<std::string> path = find_bottleneck(r, s.options.sim.hw).critical_path;
  std::set<std::pair<std::string, std::string>> steps;
  for (size_t i = 0; i + 1 < path.size(); ++i) steps.insert({path[i], path[i + 1]});
  const std::set<std::string> on_path(path.begin(), path.end());
  uint64_t most = 0;
  for (const ChannelResult* c : ch) most = std::max(most, c->stats.producer_stall_cycles);
  auto waited = [](const ChannelResult& c) { return c.stats.producer_stall_cycles > 0; };
  if (tier <= 0 && pick([&](const ChannelResult& c) { return waited(c) && steps.count({c.producer, c.consumer}); }))
    return out;
  if (tier <= 1 && pick([&](const ChannelResult& c) { return waited(c) && on_path.count(c.producer); })) return out;
  if (tier <= 2 && pick([&](const ChannelResult& c) { return waited(c) && 2 * c.stats.producer_stall_cycles >= most; }))
    return out;
  pick(waited);
  return out;
}

// Doubles the blamed channels' depths: first up to what the deep run held, then beyond. Returns
// whether any grew.
bool raise(Search& s, const DeepRun& deep, const std::vector<size_t>& blamed) {
  bool raised = false;
  for (size_t k : blamed) {
    const Measured& m = deep.channels[k];
    const uint32_t held = fifo_part(m.peak, m.inflight);
    const uint32_t cap = s.depth[k] < held ? held : std::max(m.depth, s.depth[k]);
    const uint32_t next = std::min<uint32_t>(cap, std::max<uint32_t>(s.depth[k] + 1, s.depth[k] * 2));
    raised = raised || next > s.depth[k];
    s.depth[k] = std::max(s.depth[k], next);
  }
  return raised;
}

// Raises what each run blames until a run is within the limit; s.result is the run at s.depth. A
// round that did not lower the cycles widens the blame to the next tier. When the rounds run out,
// every channel at what the deep run held (the deep run's timing: no send waits), else the deep
// depths. Returns the rounds that raised a depth.
size_t verify(Search& s, const DeepRun& deep) {
  size_t round = 0;
  int tier = 0;
  uint64_t before = UINT64_MAX;
  for (; !s.good(s.result) && round < s.options.repair_rounds; ++round) {
    if (s.result.ok && s.result.cycles >= before) tier = std::min(tier + 1, 3);
    before = s.result.ok ? s.result.cycles : UINT64_MAX;
    bool raised = raise(s, deep, blamed(s, s.result, tier));
    while (!raised && s.result.ok && tier < 3) raised = raise(s, deep, blamed(s, s.result, ++tier));
    if (!raised) break;
    s.result = s.run(s.depth);
  }
  if (s.good(s.result)) return round;
  for (size_t k = 0; k < s.depth.size(); ++k) s.depth[k] = fifo_part(deep.channels[k].peak, deep.channels[k].inflight);
  s.result = s.run(s.depth);
  if (s.good(s.result)) return round;
  s.depth = deep.depth;
  s.result = deep.result;
  return round;
}

// --- tightening --------------------------------------------------------------------------------

// What the probes of one channel found, by depth.
enum class Probe { kGood, kSlow, kDeadlock, kError };

// The deadlock boundary the probes show: the largest depth that deadlocked, the least depth above it
// that ran, and a depth below it that ran (a run that is not monotone in the depth: arrival-order
// decisions such as EagerMerge's change with the timing).
void note_deadlock(const std::map<uint32_t, Probe>& probes, uint32_t sized, ChannelSizing& out) {
  auto ran = [](Probe p) { return p == Probe::kGood || p == Probe::kSlow; };
  out.deadlocks_at = out.runs_from = out.ran_below = 0;
  for (const auto& [depth, p] : probes)
    if (p == Probe::kDeadlock) out.deadlocks_at = depth;
  if (!out.deadlocks_at) return;
  out.runs_from = sized;
  for (const auto& [depth, p] : probes) {
    if (ran(p) && depth < out.deadlocks_at) out.ran_below = depth;
    if (ran(p) && depth > out.deadlocks_at) out.runs_from = std::min(out.runs_from, depth);
  }
}

// The least depth of channel k whose run stays within the limit (bisection, the others fixed);
// where a probe deadlocked, then the boundary between deadlock and a (slow) run.
void tighten_channel(Search& s, size_t k, size_t budget, ChannelSizing& out) {
  std::map<uint32_t, Probe> probes;
  auto probe = [&](uint32_t depth) {
    Depths d = s.depth;
    d[k] = depth;
    SimResult r = s.run(d);
    const Probe p = s.good(r) ? Probe::kGood : r.ok ? Probe::kSlow : deadlocked(r) ? Probe::kDeadlock : Probe::kError;
    if (p == Probe::kGood) {
      s.depth = std::move(d);
      s.result = std::move(r);
    }
    return probes[depth] = p;
  };
  uint32_t lo = 1, hi = s.depth[k];
  while (lo < hi && s.runs < budget) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (probe(mid) == Probe::kGood)
      hi = mid;
    else
      lo = mid + 1;
  }
  note_deadlock(probes, s.depth[k], out);
  uint32_t a = out.deadlocks_at + 1, b = out.runs_from;
  while (out.deadlocks_at && a < b && s.runs < budget) {
    const uint32_t mid = a + (b - a) / 2;
    const Probe p = probe(mid);
    if (p == Probe::kError) break;  // no boundary to find (depths do not change what operators compute)
    if (p == Probe::kDeadlock)
      a = mid + 1;
    else
      b = mid;
  }
  note_deadlock(probes, s.depth[k], out);
}

// The channels in order of the bytes they could give back, within the run budget.
void tighten(Search& s, std::vector<ChannelSizing>& channels) {
  const size_t budget = s.runs + s.options.probe_runs;
  std::vector<size_t> order;
  for (size_t k = 0; k < s.depth.size(); ++k)
    if (s.depth[k] > 1) order.push_back(k);
  auto saving = [&](size_t k) { return (s.depth[k] - 1) * std::max<uint64_t>(1, channels[k].beat_bytes); };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return saving(a) > saving(b); });
  for (size_t k : order) {
    if (s.runs >= budget) break;
    tighten_channel(s, k, budget, channels[k]);
  }
}

// The deadlock boundary of each channel a probe saw deadlock, found again with every other channel at
// its final depth (a channel tightened later can move it): a bisection between 1 and its sized
// depth, within the run budget; a channel it does not reach keeps the boundary of its probes.
void recheck_deadlocks(Search& s, std::vector<ChannelSizing>& channels) {
  const size_t budget = s.runs + s.options.probe_runs;
  for (size_t k = 0; k < channels.size() && s.runs < budget; ++k) {
    ChannelSizing& c = channels[k];
    if (!c.deadlocks_at) continue;
    uint32_t lo = 1, hi = s.depth[k], dead = 0;
    while (lo < hi && s.runs < budget) {
      Depths d = s.depth;
      d[k] = lo + (hi - lo) / 2;
      const SimResult r = s.run(d);
      if (deadlocked(r)) {
        dead = d[k];
        lo = d[k] + 1;
      } else if (r.ok) {
        hi = d[k];
      } else {
        break;  // an operator error: no boundary to find (depths do not change what operators compute)
      }
    }
    if (lo < hi) continue;
    c.deadlocks_at = dead;
    c.runs_from = dead ? hi : 0;
    c.ran_below = 0;
    c.final_check = true;
  }
}

// --- figures -----------------------------------------------------------------------------------

SizingRun figures(const SimResult& r, const std::vector<ChannelSlot>& slots, const std::vector<Measured>& m) {
  SizingRun f{r.ok, first_line(r.error), r.cycles, 0};
  const std::vector<const ChannelResult*> ch = results_by_slot(r, slots);
  for (size_t k = 0; k < ch.size(); ++k) f.fifo_bytes += uint64_t(ch[k]->params.depth) * m[k].beat_bytes;
  return f;
}

std::vector<ChannelSizing> channel_table(const std::vector<ChannelSlot>& slots, const DeepRun& deep,
                                         const SimResult& given, const Depths& lp) {
  const std::vector<const ChannelResult*> g = results_by_slot(given, slots);
  std::vector<ChannelSizing> out;
  for (size_t k = 0; k < slots.size(); ++k) {
    const Measured& m = deep.channels[k];
    ChannelSizing c;
    c.name = slots[k].name;
    c.beat_bytes = m.beat_bytes;
    c.given = g[k]->params.depth;
    c.deep = m.depth;
    c.deep_peak = fifo_part(m.peak, m.inflight);
    c.lp = lp[k];
    out.push_back(c);
  }
  return out;
}

}  // namespace

FifoSizingResult size_fifos(const Graph& input, const FifoSizingOptions& options) {
  const auto wall0 = std::chrono::steady_clock::now();
  require_lp_solver();  // before any run
  if (options.sim.functional) throw std::invalid_argument("size-fifos sizes timing runs (no functional mode)");
  const Graph g = all_approximate(input);  // the approximate model's timing (docs/fifo-sizing.md)
  const std::vector<ChannelSlot> slots = channel_slots(g, options.sim.hw);
  FifoSizingResult res;
  res.tolerance = options.tolerance;
  const SimResult given = simulate(g, options.sim);
  DeepRun deep = deep_run(g, slots, given, options.sim);
  measure(deep, slots);
  res.cycle_limit = uint64_t(std::floor(double(deep.result.cycles) * (1.0 + options.tolerance)));
  const LpDepths lp = lp_depths(deep, options.sim.hw, res.cycle_limit);
  Search s{g, slots, options, res.cycle_limit, lp.depth, {}, 0};
  s.result = s.run(s.depth);
  res.lp = figures(s.result, slots, deep.channels);
  res.repair_rounds = verify(s, deep);
  const size_t verify_runs = s.runs;
  res.channels = channel_table(slots, deep, given, lp.depth);
  tighten(s, res.channels);
  const size_t tighten_runs = s.runs - verify_runs;
  recheck_deadlocks(s, res.channels);
  share_broadcast_depths(slots, s.depth);
  for (size_t k = 0; k < slots.size(); ++k) res.channels[k].depth = s.depth[k];
  res.graph = with_depths(input, slots, s.depth);
  res.given = figures(given, slots, deep.channels);
  res.deep = figures(deep.result, slots, deep.channels);
  res.sized = figures(s.result, slots, deep.channels);
  res.deep_runs = deep.runs;
  res.probe_runs = tighten_runs;
  res.deadlock_runs = s.runs - verify_runs - tighten_runs;
  res.lp_rows = lp.rows;
  res.lp_columns = lp.columns;
  res.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return res;
}

// --- the report --------------------------------------------------------------------------------

namespace {

std::string run_text(const SizingRun& r) {
  return r.ok ? std::to_string(r.cycles) : (r.error.rfind("deadlock", 0) == 0 ? "deadlock" : "error");
}

std::string percent_text(double v) {
  std::ostringstream s;
  s << std::showpos << std::fixed << std::setprecision(2) << v * 100 << " %";
  return s.str();
}

void print_totals(const FifoSizingResult& r, std::ostream& out) {
  out << "  " << std::left << std::setw(40) << "" << std::right << std::setw(12) << "cycles" << std::setw(16)
      << "FIFO bytes"
      << "\n";
  auto row = [&](const std::string& what, const SizingRun& x) {
    out << "  " << std::left << std::setw(40) << what << std::right << std::setw(12) << run_text(x) << std::setw(16)
        << x.fifo_bytes << "\n";
  };
  row("as given", r.given);
  row("deep FIFOs", r.deep);
  row("LP depths (before verification)", r.lp);
  row("sized", r.sized);
  const double over = r.deep.cycles ? double(r.sized.cycles) / double(r.deep.cycles) - 1.0 : 0.0;
  out << "  sized cycles " << percent_text(over) << " of the deep run's (limit " << r.cycle_limit << ", tolerance "
      << r.tolerance * 100 << " %)\n";
  out << "  runs: " << r.deep_runs << " deep, " << r.repair_rounds << " verification rounds, " << r.probe_runs
      << " tightening, " << r.deadlock_runs << " deadlock checks; LP " << r.lp_rows << " rows x " << r.lp_columns
      << " columns; " << std::fixed << std::setprecision(1) << r.wall_seconds << " s\n"
      << std::defaultfloat;
}

void print_deadlocks(const FifoSizingResult& r, std::ostream& out) {
  std::vector<const ChannelSizing*> dead;
  for (const ChannelSizing& c : r.channels)
    if (c.deadlocks_at) dead.push_back(&c);
  if (dead.empty()) return;
  out << "\ndeadlock below a depth (the other channels at their sized depths; *: at their depths when probed):\n";
  for (const ChannelSizing* c : dead)
    out << "  " << c->name << ": deadlocks at depth " << c->deadlocks_at << ", runs at " << c->runs_from
        << (c->ran_below ? "; also ran at " + std::to_string(c->ran_below) + " (not monotone)" : "")
        << (c->final_check ? "" : " *") << "\n";
}

void print_channels(const FifoSizingResult& r, std::ostream& out) {
  size_t width = 7;
  for (const ChannelSizing& c : r.channels) width = std::max(width, c.name.size());
  out << "\nchannels (depths in beats; FIFO bytes = sized depth x the largest element it carried):\n";
  out << "  " << std::left << std::setw(int(width)) << "channel" << std::right << std::setw(8) << "given"
      << std::setw(8) << "deep" << std::setw(8) << "peak" << std::setw(8) << "LP" << std::setw(8) << "sized"
      << std::setw(10) << "B/beat" << std::setw(12) << "FIFO B"
      << "\n";
  for (const ChannelSizing& c : r.channels)
    out << "  " << std::left << std::setw(int(width)) << c.name << std::right << std::setw(8) << c.given << std::setw(8)
        << c.deep << std::setw(8) << c.deep_peak << std::setw(8) << c.lp << std::setw(8) << c.depth << std::setw(10)
        << c.beat_bytes << std::setw(12) << c.fifo_bytes() << "\n";
}

}  // namespace

void print_fifo_sizing(const FifoSizingResult& r, std::ostream& out) {
  out << "FIFO sizing of graph " << r.graph.name << "\n";
  print_totals(r, out);
  print_deadlocks(r, out);
  print_channels(r, out);
}

}  // namespace stepsim
