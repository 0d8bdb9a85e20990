#include "sim/simulation.h"

#include "sim/graph/host_limits.h"
#include "sim/validate.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "hw/bridge/unit_bridge.h"
#include "hw/fabric/allocation.h"
#include "hw/fabric/onchip_requirement.h"
#include "hw/memory/offchip.h"
#include "sim/graph/output_file.h"
#include "sim/graph/tensors.h"

namespace stepsim {

namespace {

// A reference "node.port" split in two; "node" alone means its single output.
std::pair<std::string, std::string> split_ref(const std::string& ref) {
  size_t dot = ref.rfind('.');
  if (dot == std::string::npos) return {ref, ""};
  return {ref.substr(0, dot), ref.substr(dot + 1)};
}

bool is_numbered(const PortSpec& p) { return !p.name.empty() && p.name.back() == '*'; }
std::string port_base(const PortSpec& p) { return is_numbered(p) ? p.name.substr(0, p.name.size() - 1) : p.name; }

// Index of port `port` among the op's ports, given how many numbered ports exist.
// Returns -1 if the name is not a port of the op.
int port_index(const std::vector<PortSpec>& specs, size_t numbered, const std::string& port) {
  int idx = 0;
  for (const PortSpec& p : specs) {
    if (is_numbered(p)) {
      const std::string base = port_base(p);
      if (port.rfind(base, 0) == 0 && port.size() > base.size()) {
        std::string num = port.substr(base.size());
        if (std::all_of(num.begin(), num.end(), ::isdigit)) {
          size_t k = std::stoul(num);
          if (k < numbered) return idx + int(k);
          return -2;  // a numbered port beyond the count
        }
      }
      idx += int(numbered);
    } else {
      if (p.name == port) return idx;
      ++idx;
    }
  }
  return -1;
}

std::string port_list(const std::vector<PortSpec>& specs) {
  std::string s;
  for (const PortSpec& p : specs) s += (s.empty() ? "" : ", ") + (is_numbered(p) ? port_base(p) + "0.." : p.name);
  return s.empty() ? "none" : s;
}

struct Edge {
  std::string from, from_port, to, to_port;
};

// Resolves references, inserts Broadcast nodes for fanned-out ports, and numbers ports.
struct Plan {
  std::vector<NodeSpec> nodes;
  std::vector<Edge> edges;
};

Plan plan_graph(const Graph& g) {
  Plan plan;
  plan.nodes = g.nodes;
  std::set<std::string> names;
  const OpRegistry& reg = OpRegistry::instance();
  for (const NodeSpec& n : plan.nodes) {
    if (n.name.empty()) throw std::invalid_argument(g.source + ": a node has no name");
    if (!names.insert(n.name).second)
      throw std::invalid_argument(g.source + ": node name '" + n.name + "' is used twice");
    reg.find(n.op);  // unknown operator -> clear error
  }
  // Collect edges with normalised port names.
  std::map<std::string, std::vector<size_t>> by_source;  // "node.port" -> edge indices
  for (const NodeSpec& n : plan.nodes) {
    for (const auto& [port, ref] : n.inputs) {
      auto [src, sport] = split_ref(ref);
      const NodeSpec* p = nullptr;
      for (const NodeSpec& m : plan.nodes)
        if (m.name == src) p = &m;
      if (!p)
        throw std::invalid_argument("node '" + n.name + "' input '" + port + "' refers to unknown node '" + src + "'");
      const OpInfo& pinfo = reg.find(p->op);
      if (sport.empty()) {
        if (pinfo.outputs.empty()) throw std::invalid_argument("node '" + src + "' (" + p->op + ") has no outputs");
        sport = is_numbered(pinfo.outputs[0]) ? port_base(pinfo.outputs[0]) + "0" : pinfo.outputs[0].name;
      }
      by_source[src + "." + sport].push_back(plan.edges.size());
      plan.edges.push_back(Edge{src, sport, n.name, port});
    }
  }
  // Streams are consumed once: a port read by several consumers gets a Broadcast.
  for (auto& [key, idx] : by_source) {
    if (idx.size() < 2) continue;
    const Edge first = plan.edges[idx[0]];
    NodeSpec b;
    b.name = first.from + "." + first.from_port + ".broadcast";
    b.op = "Broadcast";
    b.inputs["in"] = first.from + "." + first.from_port;
    for (size_t k = 0; k < idx.size(); ++k) {
      Edge& e = plan.edges[idx[k]];
      e.from = b.name;
      e.from_port = "out" + std::to_string(k);
    }
    plan.edges.push_back(Edge{first.from, first.from_port, b.name, "in"});
    plan.nodes.push_back(b);
  }
  return plan;
}

std::string state_text(const Context& c) {
  switch (c.state()) {
    case Context::State::kBlockedRecv:
      return "waits for data on '" + c.blocked_on()->name() + "' (empty)";
    case Context::State::kBlockedSend:
      return "waits for space on '" + c.blocked_on()->name() + "' (full, " +
             std::to_string(c.blocked_on()->occupancy()) + "/" +
             std::to_string(c.blocked_on()->params().depth + c.blocked_on()->params().inflight) + ")";
    case Context::State::kArbWait:
      return "waits for an arrival-order decision (inputs empty)";
    case Context::State::kRunnable:
      return "is runnable";
    case Context::State::kFinished:
      return "finished";
  }
  return "?";
}

// Per-node and total fabric units and on-chip bytes (hw/fabric), from the ops after the run.
void fill_fabric_results(SimResult& r, const std::vector<const Op*>& ops, const std::vector<OpLink>& links,
                         const FabricAllocation& alloc, const OnChipRequirementModel& model, const HardwareParams& hw) {
  std::map<std::string, const NodeAllocation*> by_name;
  for (const NodeAllocation& a : alloc.nodes) by_name[a.name] = &a;
  std::vector<NodeObservation> obs = observe_nodes(ops, links);
  r.onchip_model = model.name();
  r.memory_units_static = alloc.memory_units;
  for (size_t i = 0; i < ops.size(); ++i) {
    NodeResult& nr = r.nodes.at(i);  // same order as `ops`
    const NodeAllocation* a = by_name.at(nr.name);
    nr.onchip_requirement_bytes = model.requirement(obs[i]);
    nr.onchip_peak_bytes = ops[i]->onchip_peak_bytes();
    nr.compute_units = a->compute_units;
    nr.memory_units = std::max(a->memory_units, memory_units_for(nr.onchip_peak_bytes, hw));
    r.compute_units += nr.compute_units;
    r.memory_units += nr.memory_units;
    r.onchip_requirement_bytes += nr.onchip_requirement_bytes;
    r.onchip_peak_bytes += nr.onchip_peak_bytes;
  }
}

// Calls SimOptions::progress from a thread of its own while the kernel runs, so that the run
// loop (hw/channel/context.cpp) has nothing to check. It reads the operators' clocks without
// synchronisation: a clock is one aligned 64-bit word (never torn on the hosts we build for),
// the vector of contexts does not change during the run, and a stale value only makes the
// display lag by a moment.
class ProgressWatch {
 public:
  ProgressWatch(const SimOptions& options, const Scheduler& scheduler) {
    if (options.progress) thread_ = std::thread([this, &options, &scheduler] { watch(options, scheduler); });
  }
  ~ProgressWatch() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

 private:
  void watch(const SimOptions& options, const Scheduler& scheduler) {
    const auto start = std::chrono::steady_clock::now();
    const auto interval = std::chrono::duration<double>(options.progress_interval);
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, interval, [this] { return stop_; })) {
      SimProgress p;
      for (const Context* c : scheduler.contexts()) p.cycles = std::max(p.cycles, c->now());
      p.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      options.progress(p);
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

namespace {
// What cannot be torn down: a kernel whose clocked unit threads never end, and the modules of a
// run in it. Kept reachable here and never destroyed (no destructor runs under a suspended
// thread, not even at exit), so that a leak checker does not take them for leaks.
void keep_forever(const void* p) {
  static auto* kept = new std::vector<const void*>;
  if (p) kept->push_back(p);
}
}  // namespace

void new_sc_kernel() {
  keep_forever(sc_core::sc_curr_simcontext);  // a kernel not deleted (delete_sc_kernel) stays
  sc_core::sc_curr_simcontext = new sc_core::sc_simcontext();
  sc_core::sc_default_global_context = sc_core::sc_curr_simcontext;
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
}

void delete_sc_kernel() {
  delete sc_core::sc_curr_simcontext;
  sc_core::sc_curr_simcontext = nullptr;
  sc_core::sc_default_global_context = nullptr;
}

SimResult simulate(const Graph& graph, const SimOptions& options) {
  auto wall0 = std::chrono::steady_clock::now();
  check_host_memory(graph, options.hw, options.functional);  // before anything is allocated
  if (options.static_check) check_before_run(graph);         // what `stepsim analyze` checks
  if (options.functional && !options.output_dir.empty()) prepare_output_dir(options.output_dir);
  Plan plan = plan_graph(graph);
  const OpRegistry& reg = OpRegistry::instance();

  // Fabric allocation: throws before anything is built when the graph does not fit.
  std::vector<AllocationRequest> alloc_requests;
  for (const NodeSpec& n : plan.nodes) {
    const OpInfo& info = reg.find(n.op);
    alloc_requests.push_back({n.name, &info, info.uses_compute ? n.compute_bw.value_or(options.hw.compute_bw) : 0});
  }
  const FabricAllocation alloc = allocate_fabric(alloc_requests, options.hw);
  const OnChipRequirementModel& onchip_model = onchip_requirement_model(options.hw.onchip_requirement_model);

  // Count ports per node from the edges.
  struct PortUse {
    size_t in_numbered = 0, out_numbered = 0;
  };
  std::map<std::string, PortUse> use;
  auto bump = [](size_t& cnt, const std::vector<PortSpec>& specs, const std::string& port) {
    for (const PortSpec& p : specs)
      if (is_numbered(p)) {
        const std::string base = port_base(p);
        if (port.rfind(base, 0) == 0 && port.size() > base.size()) {
          std::string num = port.substr(base.size());
          if (std::all_of(num.begin(), num.end(), ::isdigit)) cnt = std::max(cnt, size_t(std::stoul(num)) + 1);
        }
      }
  };
  std::map<std::string, const NodeSpec*> node_by_name;
  for (const NodeSpec& n : plan.nodes) node_by_name[n.name] = &n;
  for (const Edge& e : plan.edges) {
    bump(use[e.to].in_numbered, reg.find(node_by_name[e.to]->op).inputs, e.to_port);
    bump(use[e.from].out_numbered, reg.find(node_by_name[e.from]->op).outputs, e.from_port);
  }
  for (const NodeSpec& n : plan.nodes)
    if (n.num_outputs) use[n.name].out_numbered = std::max(use[n.name].out_numbered, *n.num_outputs);

  // Operator errors stop the kernel and are reported by the caller (new_sc_kernel).
  new_sc_kernel();

  auto env = std::make_unique<SimEnv>();
  env->hw = options.hw;
  env->functional = options.functional;
  env->tracing = options.trace;
  env->buffer_pmu_limit = alloc.buffer_pmu_limit;
  env->streams = graph.streams;
  env->vcd_dir = options.vcd_dir;
  auto scheduler = std::make_unique<Scheduler>("scheduler");
  env->scheduler = scheduler.get();
  std::vector<OffChipTensorDecl> decls;
  for (const TensorSpec& t : graph.tensors)
    decls.push_back(OffChipTensorDecl{t.name, t.rows, t.cols, t.dtype, t.block_rows, t.block_cols});
  std::unique_ptr<OffChipMemory> memory = std::make_unique<OffChipMemory>("offchip", options.hw, decls);
  env->memory = memory.get();
  if (options.functional)
    for (const TensorSpec& t : graph.tensors)
      if (t.init != "zeros" && t.init != "output") memory->write_values(memory->tensor(t.name), initial_values(t));

  // Elaboration order (shuffled for determinism checks).
  std::vector<size_t> order(plan.nodes.size());
  std::iota(order.begin(), order.end(), 0);
  if (options.shuffle_seed) std::shuffle(order.begin(), order.end(), std::mt19937_64(options.shuffle_seed));

  std::map<std::string, std::unique_ptr<Op>> ops;
  std::vector<std::string> op_order;
  std::map<std::string, std::pair<std::string, std::string>> impl_of;  // node -> impl, note
  const std::string default_impl = !options.default_impl.empty() ? options.default_impl : graph.impl;
  // The memory unit takes a Bufferize -> Streamify pair: a Bufferize whose only consumer is one
  // Streamify, with the same impl on both sides (hw/bridge/pmu_bridge.h). Anything else can't
  // go on the unit: why not, by node.
  // The node's `impl:`, else the default (a default skips nodes without a unit, below).
  auto impl_for = [&](const NodeSpec& n) {
    return !n.impl.empty() ? n.impl : default_impl.empty() ? "approx" : default_impl;
  };
  std::map<std::string, std::string> unpaired;
  {
    std::map<std::string, std::vector<const Edge*>> out_edges, in_edges;
    for (const Edge& e : plan.edges) {
      out_edges[e.from].push_back(&e);
      in_edges[e.to].push_back(&e);
    }
    const std::string rule = "the memory unit takes a Bufferize whose only consumer is a Streamify, both on the unit";
    for (const NodeSpec& n : plan.nodes) {
      const NodeSpec* partner = nullptr;
      if (n.op == "Bufferize") {
        const auto& o = out_edges[n.name];
        if (o.size() == 1 && node_by_name[o[0]->to]->op == "Streamify" && o[0]->to_port == "in")
          partner = node_by_name[o[0]->to];
      } else if (n.op == "Streamify") {
        for (const Edge* e : in_edges[n.name])
          if (e->to_port == "in" && node_by_name[e->from]->op == "Bufferize" && out_edges[e->from].size() == 1)
            partner = node_by_name[e->from];
      } else {
        continue;
      }
      if (!partner) {
        unpaired[n.name] = rule;
      } else if (impl_for(*partner) != impl_for(n)) {
        unpaired[n.name] = rule + " (its partner '" + partner->name + "' runs as " + impl_for(*partner) + ")";
      } else if (const bridge::UnitImpl* unit = bridge::find_unit_impl(impl_for(n))) {
        OpConfig pc;  // enough of the partner's configuration to ask the unit
        pc.name = partner->name;
        pc.info = &reg.find(partner->op);
        pc.params = Params(partner->op, partner->name, &pc.info->params, partner->params);
        const std::string why = unit->unsupported(pc);
        if (!why.empty())
          unpaired[n.name] = "its partner '" + partner->name + "' cannot run on the memory unit: " + why;
        // The pair as a whole (an affine view over a Bufferize rank the unit does not track).
        if (why.empty()) {
          const Params own(n.op, n.name, &reg.find(n.op).params, n.params);
          const std::string pair = n.op == "Bufferize" ? bridge::pmu_pair_unsupported(own, pc.params)
                                                       : bridge::pmu_pair_unsupported(pc.params, own);
          if (!pair.empty()) unpaired[n.name] = pair;
        }
      }
    }
  }
  for (size_t k : order) {
    const NodeSpec& n = plan.nodes[k];
    const OpInfo& info = reg.find(n.op);
    OpConfig cfg;
    cfg.name = n.name;
    cfg.info = &info;
    cfg.params = Params(n.op, n.name, &info.params, n.params);
    cfg.env = env.get();
    size_t nin = 0, nout = 0;
    for (const PortSpec& p : info.inputs) nin += is_numbered(p) ? use[n.name].in_numbered : 1;
    for (const PortSpec& p : info.outputs) nout += is_numbered(p) ? use[n.name].out_numbered : 1;
    cfg.num_inputs = nin;
    cfg.num_outputs = nout;
    cfg.compute_bw = info.uses_compute ? n.compute_bw.value_or(options.hw.compute_bw) : 0;
    if (n.compute_bw && *n.compute_bw == 0)
      throw std::invalid_argument("node '" + n.name + "': compute_bw must be > 0");
    cfg.write_back_mu.assign(nout, false);
    for (const Edge& e : plan.edges)
      if (e.from == n.name && node_by_name[e.to]->op == "Bufferize") {
        int oi = port_index(info.outputs, use[n.name].out_numbered, e.from_port);
        if (oi >= 0) cfg.write_back_mu[size_t(oi)] = true;
      }
    std::string impl = impl_for(n);
    std::string note;
    const bridge::UnitImpl* unit = nullptr;
    if (impl != "approx") {
      unit = bridge::find_unit_impl(impl);
      if (!unit)
        throw std::invalid_argument(
            "node '" + n.name + "': impl " + impl +
            (impl == "rtl" ? " is not built in (needs Verilator: STEPSIM_RTL)" : " is unknown (approx, hls, rtl)"));
      const std::string why = unpaired.count(n.name) ? unpaired.at(n.name) : unit->unsupported(cfg);
      if (!why.empty()) {
        if (!n.impl.empty())
          throw std::invalid_argument("node '" + n.name + "' (" + n.op + "): impl: " + impl + ": " + why);
        note = why;
        impl = "approx";
        unit = nullptr;
      }
    }
    impl_of[n.name] = {impl, note};
    try {
      ops[n.name] = unit ? unit->create(cfg) : info.create(cfg);
    } catch (const std::exception& e) {  // bad parameter values found by the operator itself
      const std::string what = e.what();
      if (what.rfind("node '", 0) == 0) throw std::invalid_argument(what);
      throw std::invalid_argument("node '" + n.name + "' (" + n.op + "): " + what);
    }
    op_order.push_back(n.name);
    // Same-cycle ties between off-chip clients go by the node's place in the graph, not by
    // the (possibly shuffled) elaboration order.
    ops[n.name]->ctx().set_tie_rank(int(k));
  }

  // Channels.
  std::vector<size_t> eorder(plan.edges.size());
  std::iota(eorder.begin(), eorder.end(), 0);
  if (options.shuffle_seed) std::shuffle(eorder.begin(), eorder.end(), std::mt19937_64(options.shuffle_seed + 1));
  std::vector<std::unique_ptr<Channel>> channels;
  std::vector<OpLink> links;  // for the on-chip accounting
  std::map<std::string, std::set<int>> bound_in, bound_out;
  for (size_t k : eorder) {
    const Edge& e = plan.edges[k];
    Op& prod = *ops.at(e.from);
    Op& cons = *ops.at(e.to);
    const OpInfo& pi = *prod.config().info;
    const OpInfo& ci = *cons.config().info;
    int oi = port_index(pi.outputs, use[e.from].out_numbered, e.from_port);
    if (oi < 0)
      throw std::invalid_argument("node '" + e.to + "' reads '" + e.from + "." + e.from_port + "', but " + pi.name +
                                  " has no output '" + e.from_port + "' (outputs: " + port_list(pi.outputs) + ")");
    int ii = port_index(ci.inputs, use[e.to].in_numbered, e.to_port);
    if (ii < 0)
      throw std::invalid_argument("node '" + e.to + "' (" + ci.name + ") has no input '" + e.to_port +
                                  "' (inputs: " + port_list(ci.inputs) + ")");
    if (!bound_in[e.to].insert(ii).second)
      throw std::invalid_argument("node '" + e.to + "' input '" + e.to_port + "' is connected twice");
    bound_out[e.from].insert(oi);
    ChannelParams cp;
    const std::optional<uint32_t>& node_depth = node_by_name[e.from]->depth;
    cp.depth = node_depth ? *node_depth : prod.output_depth(size_t(oi), options.hw.fifo_depth);
    cp.send_latency = options.hw.send_latency;
    cp.response_latency = options.hw.response_latency;
    cp.inflight = prod.output_inflight(size_t(oi));
    if (cp.depth < 1) throw std::invalid_argument("node '" + e.from + "': depth must be >= 1");
    channels.push_back(std::make_unique<Channel>(e.from + "." + e.from_port + "->" + e.to + "." + e.to_port, cp,
                                                 &prod.ctx(), &cons.ctx()));
    if (options.log_nodes.count("*") || options.log_nodes.count(e.from) || options.log_nodes.count(e.to))
      channels.back()->set_log(&env->channel_logs[channels.back()->name()]);
    prod.bind_output(size_t(oi), channels.back().get());
    cons.bind_input(size_t(ii), channels.back().get());
    links.push_back(OpLink{&prod, size_t(oi), &cons, size_t(ii)});
  }
  // Every non-optional input must be connected.
  for (const auto& [name, op] : ops) {
    const OpInfo& info = *op->config().info;
    size_t idx = 0;
    for (const PortSpec& p : info.inputs) {
      size_t cnt = is_numbered(p) ? use[name].in_numbered : 1;
      if (is_numbered(p) && cnt == 0 && !p.optional)
        throw std::invalid_argument("node '" + name + "' (" + info.name + ") needs at least one input " + port_base(p) +
                                    "0");
      for (size_t k = 0; k < cnt; ++k, ++idx)
        if (!p.optional && !bound_in[name].count(int(idx)))
          throw std::invalid_argument("node '" + name + "' (" + info.name + "): input '" +
                                      (is_numbered(p) ? port_base(p) + std::to_string(k) : p.name) +
                                      "' is not connected");
    }
  }

  {
    ProgressWatch watch(options, *scheduler);
    sc_core::sc_start();
  }

  SimResult r;
  r.trace = std::move(env->trace);
  for (const std::string& name : op_order) {
    Op& op = *ops[name];
    NodeResult nr;
    nr.name = name;
    nr.op = op.config().info->name;
    nr.finish_cycle = op.ctx().now();
    nr.busy_cycles = op.ctx().busy_cycles();
    nr.firings = op.firings();
    nr.flops = op.flops_executed();
    nr.compute_bw = op.config().compute_bw;
    nr.impl = impl_of[name].first;
    nr.impl_note = impl_of[name].second;
    if (const auto* ub = dynamic_cast<const bridge::UnitBridge*>(&op)) nr.unit_clocks = ub->clocked_cycles();
    r.cycles = std::max(r.cycles, nr.finish_cycle);
    r.nodes.push_back(nr);
  }
  {
    std::vector<const Op*> in_order;
    for (const std::string& name : op_order) in_order.push_back(ops[name].get());
    fill_fabric_results(r, in_order, links, alloc, onchip_model, options.hw);
  }
  std::sort(r.nodes.begin(), r.nodes.end(), [](const NodeResult& a, const NodeResult& b) { return a.name < b.name; });
  // Timeline events name their node by its position in r.nodes (sorted by name), and come in
  // model-time order: neither may depend on the elaboration or process order.
  {
    std::map<int, int> by_ctx;
    for (size_t k = 0; k < r.nodes.size(); ++k) by_ctx[ops[r.nodes[k].name]->ctx().index()] = int(k);
    for (TraceEvent& e : r.trace) e.op = by_ctx[e.op];
    std::sort(r.trace.begin(), r.trace.end(), [](const TraceEvent& a, const TraceEvent& b) {
      return std::tie(a.start, a.op, a.dur) < std::tie(b.start, b.op, b.dur);
    });
  }
  for (const auto& c : channels) {
    ChannelResult cr{c->name(), c->params(), c->stats(), c->producer()->name(), c->consumer()->name()};
    // A unit waits at its pins, not in the channel's receive and send: its bridge counts those.
    if (auto* ub = dynamic_cast<bridge::UnitBridge*>(ops.at(cr.consumer).get()))
      cr.stats.consumer_starve_cycles += ub->input_wait_cycles(c.get());
    if (auto* ub = dynamic_cast<bridge::UnitBridge*>(ops.at(cr.producer).get()))
      cr.stats.producer_stall_cycles += ub->output_wait_cycles(c.get());
    r.channels.push_back(std::move(cr));
  }
  std::sort(r.channels.begin(), r.channels.end(),
            [](const ChannelResult& a, const ChannelResult& b) { return a.name < b.name; });
  r.recorded = std::move(env->recorded);
  r.channel_logs = std::move(env->channel_logs);
  r.vcd_files = env->vcd_files;
  r.recorded_times = std::move(env->recorded_times);
  r.offchip_read_bytes = memory->bytes_read();
  r.offchip_write_bytes = memory->bytes_written();
  r.offchip_requests = memory->hbm_stats().requests();
  r.offchip_tile_bytes = memory->tile_bytes();
  r.offchip_uncontended = memory->uncontended();

  bool finished = true;
  for (const auto& [name, op] : ops) finished = finished && op->ctx().state() == Context::State::kFinished;
  if (!env->errors.empty()) {
    r.error = env->errors.front();
  } else if (!finished) {
    // The blocked frontier, most telling first: operators stuck on a full channel, then those
    // waiting on an empty channel whose producer is blocked too, then the rest (arbitration
    // waits, producers that finished early). Within a group by node name, so the message does not
    // depend on elaboration order; at most kMaxLines operators are listed.
    constexpr size_t kMaxLines = 20;
    std::vector<std::string> groups[3];
    const Context* start = nullptr;       // where to look for a wait-for cycle
    for (const auto& [name, op] : ops) {  // std::map: sorted by name
      const Context& c = op->ctx();
      if (c.state() == Context::State::kFinished) continue;
      std::string line = "  node '" + name + "' (" + op->config().info->name + ") at cycle " + std::to_string(c.now()) +
                         " " + state_text(c);
      size_t g = 2;
      if (c.state() == Context::State::kBlockedSend) {
        g = 0;
        line += "; consumer '" + c.blocked_on()->consumer()->name() + "' does not dequeue";
      } else if (c.state() == Context::State::kBlockedRecv) {
        const Context* p = c.blocked_on()->producer();
        const bool stuck = p->state() != Context::State::kFinished;
        g = stuck ? 1 : 2;
        line += stuck ? "; producer '" + p->name() + "' is blocked too" : "; producer '" + p->name() + "' has finished";
      }
      if (g < 2 && (!start || (g == 0 && start->state() != Context::State::kBlockedSend))) start = &c;
      groups[g].push_back(std::move(line));
    }
    const size_t blocked = groups[0].size() + groups[1].size() + groups[2].size();
    std::string msg = "deadlock: no operator can make progress; " + std::to_string(blocked) + " of " +
                      std::to_string(ops.size()) + " operators are blocked.";
    // Follow "waits for" edges (full channel -> its consumer, empty channel -> its producer).
    if (start) {
      std::vector<const Context*> path;
      const Context* c = start;
      while (c && std::find(path.begin(), path.end(), c) == path.end()) {
        path.push_back(c);
        if (c->state() == Context::State::kBlockedSend)
          c = c->blocked_on()->consumer();
        else if (c->state() == Context::State::kBlockedRecv)
          c = c->blocked_on()->producer();
        else
          c = nullptr;
      }
      if (c) {
        std::string cyc;
        auto it = std::find(path.begin(), path.end(), c);
        const size_t len = size_t(path.end() - it);
        for (size_t k = 0; it != path.end(); ++it, ++k) {
          if (k == 8 && len > 10) {  // a long cycle: its start and its end
            cyc += "... (" + std::to_string(len - 9) + " more) -> ";
            it = path.end() - 1;
          }
          cyc += "'" + (*it)->name() + "' " +
                 ((*it)->state() == Context::State::kBlockedSend ? "-(full)-> " : "-(empty)-> ");
        }
        msg += "\n  wait-for cycle: " + cyc + "'" + c->name() + "'";
      }
    }
    size_t listed = 0;
    for (const auto& grp : groups)
      for (const std::string& line : grp)
        if (listed < kMaxLines) {
          msg += "\n" + line;
          ++listed;
        }
    if (blocked > listed) msg += "\n  ... and " + std::to_string(blocked - listed) + " more blocked operators";
    r.error = msg;
  } else {
    r.ok = true;
    // Functional mode: every tensor a store wrote (and every declared output) as DIR/NAME.npy.
    if (options.functional && (!options.output_dir.empty() || options.keep_stored)) {
      try {
        for (const TensorSpec& spec : graph.tensors) {
          const OffChipTensor& t = memory->tensor(spec.name);
          if (!t.written && spec.init != "output") continue;
          TileData values = memory->read_values(t);
          if (!options.output_dir.empty())
            r.written_files.push_back(write_tensor_npy(options.output_dir, t.name, t.rows, t.cols, t.dtype, values));
          if (options.keep_stored) r.stored[t.name] = std::move(values);
        }
      } catch (const std::exception& e) {
        // A run whose outputs could not all be written failed: none of them is left behind.
        for (const std::string& f : r.written_files) discard_output_file(f);
        r.written_files.clear();
        r.ok = false;
        r.error = e.what();
      }
    }
  }
  // Units (hw/bridge) keep clocked threads that never end: such a kernel is left behind too.
  bool bridged = false;
  for (const auto& [name, impl] : impl_of) bridged = bridged || impl.first != "approx";
  if (!bridged) {
    // Every SystemC thread has ended (the Scheduler's returns on a deadlock or an error too):
    // the modules and the kernel can go, once the fibers still suspended are unwound.
    scheduler->unwind_suspended();
    ops.clear();
    channels.clear();
    memory.reset();
    scheduler.reset();
    delete_sc_kernel();
  } else {
    // Suspended SystemC threads cannot be torn down safely: leave this (small) kernel behind.
    for (auto& [n, op] : ops) keep_forever(op.release());
    for (auto& c : channels) keep_forever(c.release());
    keep_forever(memory.release());
    keep_forever(scheduler.release());
    keep_forever(env.release());
  }
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return r;
}

}  // namespace stepsim
