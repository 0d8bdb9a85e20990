#include "sim/engine/elaborate.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>

#include "sim/graph/tensors.h"

namespace stepsim {

Elaboration::~Elaboration() {
  if (has_units) {
    // Suspended SystemC threads cannot be torn down safely: leave this (small) kernel behind.
    kernel.leave_behind();
    for (auto& [name, op] : ops) kernel.keep(std::move(op));
    for (auto& c : channels) kernel.keep(std::move(c));
    kernel.keep(std::move(memory));
    kernel.keep(std::move(scheduler));
    kernel.keep(std::move(env));
    return;
  }
  // Every SystemC thread has ended (the Scheduler's returns on a deadlock or an error too): the
  // modules can go, once the fibers still suspended are unwound; then the kernel (ScKernel).
  if (ran) scheduler->unwind_suspended();
  ops.clear();
  channels.clear();
  memory.reset();
  scheduler.reset();
}

void elaborate_environment(Elaboration& e, const Graph& graph, const Plan& plan, const SimOptions& options) {
  e.env = std::make_unique<SimEnv>();
  SimEnv& env = *e.env;
  env.hw = options.hw;
  env.functional = options.functional;
  env.tracing = options.trace;
  env.buffer_pmu_limit = plan.alloc.buffer_pmu_limit;
  env.streams = graph.streams;
  env.vcd_dir = options.vcd_dir;
  e.scheduler = std::make_unique<Scheduler>("scheduler");
  env.scheduler = e.scheduler.get();
  std::vector<OffChipTensorDecl> decls;
  for (const TensorSpec& t : graph.tensors) decls.push_back(offchip_decl(t));
  e.memory = std::make_unique<OffChipMemory>("offchip", options.hw, decls);
  env.memory = e.memory.get();
  if (!options.functional) return;
  check_given_values(graph, options.tensor_values);
  for (const TensorSpec& t : graph.tensors) {
    auto given = options.tensor_values.find(t.name);
    if (given != options.tensor_values.end())
      e.memory->write_values(e.memory->tensor(t.name), given->second);
    else if (t.init == "random")  // made as tiles read them
      e.memory->set_initial_values(e.memory->tensor(t.name), random_values(t));
    else if (t.init == "file")
      e.memory->write_values(e.memory->tensor(t.name), initial_values(t));
    // zeros and output: the memory reads unwritten bytes as zero
  }
}

namespace {

// 0, 1, ..., n - 1; shuffled when SimOptions::shuffle_seed is set (by the seed plus `salt`, so
// that nodes and edges are not shuffled alike).
std::vector<size_t> order_of(size_t n, const SimOptions& options, uint64_t salt) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  if (options.shuffle_seed) std::shuffle(order.begin(), order.end(), std::mt19937_64(options.shuffle_seed + salt));
  return order;
}

class Elaborator {
 public:
  Elaborator(Elaboration& e, const Plan& plan, const SimOptions& options) : e_(e), plan_(plan), options_(options) {
    for (const Edge& edge : plan.edges) out_edges_[edge.from].push_back(&edge);
  }

  void add_node(const NodeSpec& n, int rank, const ImplPolicy& policy);
  void connect(const Edge& edge);
  void check_inputs_connected() const;

 private:
  OpConfig configure(const NodeSpec& n) const;
  std::unique_ptr<Op> create(const NodeSpec& n, const OpConfig& cfg, const ImplChoice& impl) const;
  ChannelParams channel_params(const Edge& edge, const Op& producer, size_t output) const;

  Elaboration& e_;
  const Plan& plan_;
  const SimOptions& options_;
  std::map<std::string, std::set<int>> bound_in_;  // connected inputs, by node
  // The edges out of each node, in plan order (configure() would scan every edge per node).
  std::map<std::string, std::vector<const Edge*>> out_edges_;
};

OpConfig Elaborator::configure(const NodeSpec& n) const {
  const OpInfo& info = OpRegistry::instance().find(n.op);
  OpConfig cfg;
  cfg.name = n.name;
  cfg.info = &info;
  cfg.params = Params(n.op, n.name, &info.params, n.params);
  cfg.env = e_.env.get();
  cfg.num_inputs = plan_.num_inputs(n);
  cfg.num_outputs = plan_.num_outputs(n);
  cfg.compute_bw = info.uses_compute ? n.compute_bw.value_or(options_.hw.compute_bw) : 0;
  if (n.compute_bw && *n.compute_bw == 0) throw std::invalid_argument("node '" + n.name + "': compute_bw must be > 0");
  // Which outputs are read, and which by a Bufferize (they write back into a memory unit).
  cfg.write_back_mu.assign(cfg.num_outputs, false);
  cfg.output_read.assign(cfg.num_outputs, false);
  static const std::vector<const Edge*> none;
  const auto out = out_edges_.find(n.name);
  for (const Edge* edge : out == out_edges_.end() ? none : out->second) {
    const Edge& e = *edge;
    const int oi = port_index(info.outputs, plan_.ports.at(n.name).out_numbered, e.from_port);
    if (oi < 0) continue;
    cfg.output_read[size_t(oi)] = true;
    if (plan_.node(e.to).is(OpKind::kBufferize)) cfg.write_back_mu[size_t(oi)] = true;
  }
  return cfg;
}

std::unique_ptr<Op> Elaborator::create(const NodeSpec& n, const OpConfig& cfg, const ImplChoice& impl) const {
  try {
    return impl.unit ? impl.unit->create(cfg) : cfg.info->create(cfg);
  } catch (const std::exception& ex) {  // bad parameter values found by the operator itself
    const std::string what = ex.what();
    if (what.rfind("node '", 0) == 0) throw std::invalid_argument(what);
    throw std::invalid_argument("node '" + n.name + "' (" + n.op + "): " + what);
  }
}

void Elaborator::add_node(const NodeSpec& n, int rank, const ImplPolicy& policy) {
  const OpConfig cfg = configure(n);
  const ImplChoice impl = policy.choose(n, cfg);
  e_.impls[n.name] = impl;
  e_.has_units = e_.has_units || impl.unit;
  std::unique_ptr<Op>& op = e_.ops[n.name];
  op = create(n, cfg, impl);
  e_.order.push_back(op.get());
  // Same-cycle ties between off-chip clients go by the node's place in the graph, not by the
  // (possibly shuffled) elaboration order.
  op->ctx().set_tie_rank(rank);
}

ChannelParams Elaborator::channel_params(const Edge& edge, const Op& producer, size_t output) const {
  ChannelParams cp;
  // The consumer's depth for this input wins, then the producer's for its outputs, then the
  // operator's own (a load's memory-unit buffer) or the preset's.
  const std::map<std::string, uint32_t>& input_depth = plan_.node(edge.to).input_depth;
  const auto own = input_depth.find(edge.to_port);
  const std::optional<uint32_t>& node_depth = plan_.node(edge.from).depth;
  cp.depth = own != input_depth.end() ? own->second
             : node_depth             ? *node_depth
                                      : producer.output_depth(output, options_.hw.fifo_depth);
  cp.send_latency = options_.hw.send_latency;
  cp.response_latency = options_.hw.response_latency;
  cp.inflight = producer.output_inflight(output);
  if (cp.depth < 1) throw std::invalid_argument("node '" + edge.from + "': depth must be >= 1");
  return cp;
}

void Elaborator::connect(const Edge& edge) {
  Op& prod = *e_.ops.at(edge.from);
  Op& cons = *e_.ops.at(edge.to);
  const OpInfo& pi = *prod.config().info;
  const OpInfo& ci = *cons.config().info;
  int oi = port_index(pi.outputs, plan_.ports.at(edge.from).out_numbered, edge.from_port);
  if (oi < 0)
    throw std::invalid_argument("node '" + edge.to + "' reads '" + edge.from + "." + edge.from_port + "', but " +
                                pi.name + " has no output '" + edge.from_port + "' (outputs: " + port_list(pi.outputs) +
                                ")");
  int ii = port_index(ci.inputs, plan_.ports.at(edge.to).in_numbered, edge.to_port);
  if (ii < 0)
    throw std::invalid_argument("node '" + edge.to + "' (" + ci.name + ") has no input '" + edge.to_port +
                                "' (inputs: " + port_list(ci.inputs) + ")");
  if (!bound_in_[edge.to].insert(ii).second)
    throw std::invalid_argument("node '" + edge.to + "' input '" + edge.to_port + "' is connected twice");
  const ChannelParams cp = channel_params(edge, prod, size_t(oi));
  e_.channels.push_back(std::make_unique<Channel>(
      edge.from + "." + edge.from_port + "->" + edge.to + "." + edge.to_port, cp, &prod.ctx(), &cons.ctx()));
  Channel* c = e_.channels.back().get();
  const std::set<std::string>& logged = options_.log_nodes;
  if (logged.count("*") || logged.count(edge.from) || logged.count(edge.to))
    c->enable_log();
  prod.bind_output(size_t(oi), c);
  cons.bind_input(size_t(ii), c);
  e_.links.push_back(OpLink{&prod, size_t(oi), &cons, size_t(ii)});
}

// Every input but the optional ones must be connected.
void Elaborator::check_inputs_connected() const {
  static const std::set<int> none;
  for (const auto& [name, op] : e_.ops) {
    const OpInfo& info = *op->config().info;
    const auto bound = bound_in_.find(name);
    const std::set<int>& inputs = bound == bound_in_.end() ? none : bound->second;
    size_t idx = 0;
    for (const PortSpec& p : info.inputs) {
      const size_t cnt = is_numbered(p) ? plan_.ports.at(name).in_numbered : 1;
      if (is_numbered(p) && cnt == 0 && !p.optional)
        throw std::invalid_argument("node '" + name + "' (" + info.name + ") needs at least one input " + port_base(p) +
                                    "0");
      for (size_t k = 0; k < cnt; ++k, ++idx)
        if (!p.optional && !inputs.count(int(idx)))
          throw std::invalid_argument("node '" + name + "' (" + info.name + "): input '" +
                                      (is_numbered(p) ? port_base(p) + std::to_string(k) : p.name) +
                                      "' is not connected");
    }
  }
}

}  // namespace

void elaborate_graph(Elaboration& e, const Plan& plan, const ImplPolicy& policy, const SimOptions& options) {
  Elaborator elaborator(e, plan, options);
  for (size_t k : order_of(plan.nodes.size(), options, 0)) elaborator.add_node(plan.nodes[k], int(k), policy);
  for (size_t k : order_of(plan.edges.size(), options, 1)) elaborator.connect(plan.edges[k]);
  elaborator.check_inputs_connected();
}

}  // namespace stepsim
