#include "sim/frontend/builder.h"

#include "hw/ops/op.h"
#include "sim/graph/loader.h"
#include "sim/graph/validate.h"
#include "sim/shape/metrics.h"

namespace stepsim::frontend {

std::string int_list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

const shape::StreamType& Stream::type() const {
  if (!b_) throw std::logic_error("an unset Stream has no type");
  return b_->type_of(node_, port_);
}

Stream& Stream::set_dim(size_t dim, const std::string& expr) {
  const shape::StreamType& t = type();
  if (dim >= t.dims.size())
    throw shape::ShapeError("set_dim on '" + ref() + "' " + t.str() + ": no dimension " + std::to_string(dim));
  try {
    b_->syms_.parse(expr);  // bounded (sim/shape/infer.h): refused at once, naming the stream
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("set_dim on '" + ref() + "' dimension " + std::to_string(dim) + ": " + e.what());
  }
  for (const NodeSpec& n : b_->g_.nodes)
    for (const auto& [port, r] : n.inputs)
      if (r == ref() || r == node_)
        throw shape::ShapeError("set_dim on '" + ref() + "': node '" + n.name + "' already reads it; name dims first");
  NodeSpec* spec = nullptr;
  for (NodeSpec& n : b_->g_.nodes)
    if (n.name == node_) spec = &n;
  std::vector<std::string>& d = spec->dims[port_];
  d.resize(t.dims.size());
  d[dim] = expr;
  b_->retype(node_);
  return *this;
}

GraphBuilder::GraphBuilder(std::string name, std::string description) {
  check_name("graph", name, "");
  g_.name = std::move(name);
  g_.source = "builder '" + g_.name + "'";
  g_.description = std::move(description);
}

GraphBuilder GraphBuilder::from_graph(Graph g) {
  GraphBuilder b(g.name, g.description);
  b.g_ = std::move(g);
  for (size_t k = 0; k < b.g_.nodes.size(); ++k) b.node_position_.emplace(b.g_.nodes[k].name, k);
  try {
    b.types_ = shape::infer_types(b.g_, b.syms_);
  } catch (const shape::UntypableGraph& e) {
    b.untyped_ = e.what();
    b.types_ = {};
  }
  return b;
}

void GraphBuilder::declare_tensor(const TensorSpec& t) {
  check_tensor(t, g_.source);  // the loader's rules (sim/graph/validate.h)
  for (const TensorSpec& d : g_.tensors)
    if (d.name == t.name) throw std::invalid_argument(g_.source + ": tensor '" + t.name + "' is declared twice");
  g_.tensors.push_back(t);
}

Stream GraphBuilder::stream(const std::string& node, const std::string& port) {
  if (!has_node(node) && !forward_.count(node)) throw shape::ShapeError("no node '" + node + "' in the graph");
  if (!untyped_.empty())
    throw shape::ShapeError("stream '" + node + "." + port + "': the graph has no types (" + untyped_ + ")");
  type_of(node, port);  // throws naming the stream when the node has no such output
  return Stream(this, node, port);
}

void GraphBuilder::tensor(const std::string& name, uint64_t rows, uint64_t cols, DType dtype, uint64_t seed) {
  TensorSpec t;
  t.name = name;
  t.rows = rows;
  t.cols = cols;
  t.dtype = dtype;
  t.init = "random";
  t.seed = seed;
  t.block_rows = block_rows_;
  t.block_cols = block_cols_;
  declare_tensor(t);
}

void GraphBuilder::output_tensor(const std::string& name, uint64_t rows, uint64_t cols, DType dtype) {
  TensorSpec t;
  t.name = name;
  t.rows = rows;
  t.cols = cols;
  t.dtype = dtype;
  t.init = "output";
  t.block_rows = block_rows_;
  t.block_cols = block_cols_;
  declare_tensor(t);
}

void GraphBuilder::new_stream(const std::string& name) const {
  check_name("stream", name, g_.source);
  if (g_.streams.count(name)) throw std::invalid_argument(g_.source + ": stream '" + name + "' is defined twice");
}

void GraphBuilder::literal_stream(const std::string& local, const std::string& tokens) {
  const std::string name = prefix_ + local;
  new_stream(name);
  std::vector<Beat> beats;
  try {
    beats = to_beats(parse_tokens(tokens));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(g_.source + ": stream '" + name + "': " + e.what());
  }
  check_stream(name, beats.size(), g_.source);
  g_.streams[name] = std::move(beats);
}

void GraphBuilder::trace_stream(const std::string& local, const std::string& yaml_spec, const std::string& base_dir) {
  const std::string name = prefix_ + local;
  new_stream(name);
  // The loader reads trace files; reuse it on a one-stream graph.
  Graph one = parse_graph("streams: {" + name + ": " + yaml_spec + "}\nnodes: []\n", g_.source, base_dir, {});
  g_.streams[name] = one.streams.at(name);
  g_.stream_specs[name] = one.stream_specs.at(name);
}

void GraphBuilder::symbol(const std::string& name, const std::string& value) {
  check_name("symbol", name, g_.source);
  if (g_.symbols.count(name))  // as a file's symbols: a key given twice
    throw std::invalid_argument(g_.source + ": symbol '" + name + "' is given twice");
  shape::ex v;
  try {
    v = syms_.parse(value);
  } catch (const std::exception& e) {
    throw std::invalid_argument(g_.source + ": symbol '" + name + "': " + e.what());
  }
  g_.symbols[name] = value;
  syms_.set_value(name, v);
}

std::map<std::string, Stream> GraphBuilder::add(const std::string& local, const std::string& op, const ParamMap& params,
                                                const Inputs& inputs, const NodeOptions& opt) {
  const std::string name = prefix_ + local;
  if (has_node(name)) throw shape::ShapeError("node '" + name + "' is defined twice");
  if (!untyped_.empty()) throw shape::ShapeError("node '" + name + "': the graph has no types (" + untyped_ + ")");
  auto declared = forward_.find(name);
  NodeSpec n;
  n.name = name;
  n.op = op;
  n.params = params;
  for (const auto& [port, s] : inputs) {
    if (s.b_ != this) throw shape::ShapeError("node '" + name + "' input '" + port + "': stream from another builder");
    n.inputs[port] = s.ref();
  }
  if (declared != forward_.end())  // written to YAML, so that analysis can type the cycle again
    for (const auto& [port, t] : declared->second) n.types[port] = t.str();
  n.compute_bw = opt.compute_bw;
  n.depth = opt.depth;
  n.num_outputs = opt.num_outputs;
  n.impl = opt.impl;
  check_node(n, g_.source);  // the loader's rules, before anything is sized by them
  g_.nodes.push_back(n);
  node_position_.emplace(name, g_.nodes.size() - 1);
  const std::set<std::string> ahead = declared_ahead(name);
  try {
    shape::type_last_node(g_, syms_, types_, ahead, [this](const std::string& node) -> const NodeSpec* {
      auto at = node_position_.find(node);
      return at == node_position_.end() ? nullptr : &g_.nodes[at->second];
    });
    if (declared != forward_.end()) {
      for (const auto& [port, want] : declared->second) {
        const shape::StreamType& got = types_.nodes.at(name).outputs.at(port);
        shape::StreamType a = got, b = want;
        for (auto* t : {&a, &b})
          for (shape::Dim& d : t->dims) d.size = shape::evaluate(d.size, syms_);
        const std::string diff = shape::difference(a, b);
        if (!diff.empty())
          throw shape::ShapeError("node '" + name + "' (" + op + ") output '" + port + "' is " + got.str() +
                                  ", but it was declared ahead as " + want.str() + " (" + diff + ")");
      }
      forward_.erase(declared);
    }
  } catch (...) {
    g_.nodes.pop_back();
    node_position_.erase(name);
    throw;
  }
  std::map<std::string, Stream> out;
  for (const auto& [port, t] : types_.nodes.at(name).outputs) out.emplace(port, Stream(this, name, port));
  return out;
}

Stream GraphBuilder::add1(const std::string& local, const std::string& op, const ParamMap& params, const Inputs& inputs,
                          const NodeOptions& opt) {
  auto outs = add(local, op, params, inputs, opt);
  if (outs.count("out")) return outs.at("out");
  if (outs.count("out0")) return outs.at("out0");
  throw shape::ShapeError("node '" + prefix_ + local + "' (" + op + ") has no single output");
}

std::set<std::string> GraphBuilder::declared_ahead(const std::string& except) const {
  std::set<std::string> v;
  for (const auto& kv : forward_)
    if (kv.first != except) v.insert(kv.first);
  return v;
}

Stream GraphBuilder::forward(const std::string& local, const std::string& port, const shape::StreamType& type) {
  const std::string node = prefix_ + local;
  check_name("node", node, g_.source);
  if (has_node(node)) throw shape::ShapeError("forward: node '" + node + "' exists already");
  forward_[node][port] = type;
  types_.nodes[node].outputs[port] = type;
  return Stream(this, node, port);
}

const Graph& GraphBuilder::graph() const {
  if (!forward_.empty())
    throw shape::ShapeError("node '" + forward_.begin()->first + "' was declared ahead (forward) but never added");
  return g_;
}

const shape::StreamType& GraphBuilder::type_of(const std::string& node, const std::string& port) const {
  auto it = types_.nodes.find(node);
  if (it == types_.nodes.end() || !it->second.outputs.count(port))
    throw shape::ShapeError("no stream '" + node + "." + port + "'");
  return it->second.outputs.at(port);
}

void GraphBuilder::retype(const std::string& node) {
  // Move the node to the end (its consumers do not exist yet), type it again, restore the order.
  auto it = std::find_if(g_.nodes.begin(), g_.nodes.end(), [&](const NodeSpec& n) { return n.name == node; });
  const size_t pos = size_t(it - g_.nodes.begin());
  NodeSpec spec = *it;
  g_.nodes.erase(it);
  g_.nodes.push_back(spec);
  types_.order.erase(std::find(types_.order.begin(), types_.order.end(), node));
  try {  // (inputs found by a scan: node_position_ is off by one for the nodes after pos until the end)
    shape::type_last_node(g_, syms_, types_, declared_ahead(node));
  } catch (...) {
    g_.nodes.pop_back();
    g_.nodes.insert(g_.nodes.begin() + long(pos), spec);
    throw;
  }
  g_.nodes.pop_back();
  g_.nodes.insert(g_.nodes.begin() + long(pos), spec);
  types_.order.pop_back();
  types_.order.insert(types_.order.begin() + long(std::min(pos, types_.order.size())), node);
}

NodeSpec& GraphBuilder::node(const std::string& name) {
  auto at = node_position_.find(name);
  if (at != node_position_.end()) return g_.nodes[at->second];
  throw std::invalid_argument(g_.source + ": no node " + stepsim::quoted(name) + " in the graph");
}

// Set on a copy, checked as a new node would be, then kept.
void GraphBuilder::set_node(const std::string& local, const std::function<void(NodeSpec&)>& set) {
  NodeSpec& n = node(prefix_ + local);
  NodeSpec changed = n;
  set(changed);
  check_node(changed, g_.source);
  n = std::move(changed);
}

void GraphBuilder::set_depth(const std::string& local, uint32_t depth) {
  set_node(local, [&](NodeSpec& n) { n.depth = depth; });
}
void GraphBuilder::set_impl(std::string impl) {
  if (impl != "approx" && impl != "hls" && impl != "rtl")
    throw std::invalid_argument(g_.source + ": impl must be approx, hls or rtl, got " + stepsim::quoted(impl));
  g_.impl = std::move(impl);
}

void GraphBuilder::set_prefix_depth(uint32_t depth) {
  for (NodeSpec& n : g_.nodes)
    if (n.name.rfind(prefix_, 0) == 0 && !n.depth) n.depth = depth;
}
void GraphBuilder::set_compute_bw(const std::string& local, uint64_t f) {
  set_node(local, [&](NodeSpec& n) { n.compute_bw = f; });
}

// ---- Typed helpers.

namespace {
Inputs numbered(const std::vector<Stream>& in, const std::string& base = "in") {
  Inputs v;
  for (size_t i = 0; i < in.size(); ++i) v.push_back({base + std::to_string(i), in[i]});
  return v;
}
NodeOptions bw(uint64_t compute_bw) {
  NodeOptions o;
  if (compute_bw) o.compute_bw = compute_bw;
  return o;
}
}  // namespace

Stream GraphBuilder::source(const std::string& name, const std::string& stream, uint32_t depth,
                            const std::vector<Stream>& after) {
  NodeOptions o;
  if (depth) o.depth = depth;
  return add1(name, OpKind::kSource, {{param::kStream.name, prefix_ + stream}}, numbered(after, "after"), o);
}

Stream GraphBuilder::load(const std::string& name, const std::string& tensor, const std::vector<int64_t>& tile,
                          const std::vector<int64_t>& out_shape, const std::vector<int64_t>& stride,
                          const std::optional<Stream>& ref) {
  ParamMap p{{param::kTensor.name, tensor}, {param::kTile.name, int_list(tile)}};
  if (!out_shape.empty()) p[param::kOutShape.name] = int_list(out_shape);
  if (!stride.empty()) p[param::kStride.name] = int_list(stride);
  Inputs in;
  if (ref) in.push_back({"ref", *ref});
  return add1(name, OpKind::kLinearOffChipLoad, p, in);
}

void GraphBuilder::store(const std::string& name, const std::string& tensor, const std::vector<int64_t>& tile,
                         const Stream& in, const std::vector<int64_t>& out_shape, const std::vector<int64_t>& stride) {
  ParamMap p{{param::kTensor.name, tensor}, {param::kTile.name, int_list(tile)}};
  if (!out_shape.empty()) p[param::kOutShape.name] = int_list(out_shape);
  if (!stride.empty()) p[param::kStride.name] = int_list(stride);
  add(name, OpKind::kLinearOffChipStore, p, {{"in", in}});
}

Stream GraphBuilder::random_load(const std::string& name, const std::string& tensor, const std::vector<int64_t>& tile,
                                 const Stream& raddr) {
  return add1(name, OpKind::kRandomOffChipLoad, {{param::kTensor.name, tensor}, {param::kTile.name, int_list(tile)}},
              {{"raddr", raddr}});
}

Stream GraphBuilder::map(const std::string& name, const std::string& fn, const std::vector<Stream>& in,
                         uint64_t compute_bw) {
  return add1(name, OpKind::kMap, {{param::kFn.name, fn}}, numbered(in), bw(compute_bw));
}

Stream GraphBuilder::accum(const std::string& name, const std::string& fn, int rank, const std::vector<Stream>& in,
                           uint64_t compute_bw) {
  return add1(name, OpKind::kAccum, {{param::kFn.name, fn}, {param::kRank.name, std::to_string(rank)}}, numbered(in),
              bw(compute_bw));
}

Stream GraphBuilder::flatmap(const std::string& name, const std::string& fn, int rank, const std::vector<Stream>& in) {
  return add1(name, OpKind::kFlatMap, {{param::kFn.name, fn}, {param::kRank.name, std::to_string(rank)}}, numbered(in));
}

Stream GraphBuilder::flatten(const std::string& name, const Stream& in, int min, int max) {
  return add1(name, OpKind::kFlatten,
              {{param::kMin.name, std::to_string(min)}, {param::kMax.name, std::to_string(max)}}, {{"in", in}});
}

std::pair<Stream, Stream> GraphBuilder::reshape(const std::string& name, const Stream& in, int64_t chunk, int rank) {
  auto o = add(name, OpKind::kReshape,
               {{param::kChunk.name, std::to_string(chunk)}, {param::kRank.name, std::to_string(rank)}}, {{"in", in}});
  return {o.at("out"), o.at("pad")};
}

Stream GraphBuilder::promote(const std::string& name, const Stream& in, int rank) {
  return add1(name, OpKind::kPromote, {{param::kRank.name, std::to_string(rank)}}, {{"in", in}});
}

Stream GraphBuilder::repeat(const std::string& name, const Stream& in, int64_t count) {
  return add1(name, OpKind::kRepeat, {{param::kCount.name, std::to_string(count)}}, {{"in", in}});
}

Stream GraphBuilder::expand(const std::string& name, const Stream& in, const Stream& ref, int rank) {
  return add1(name, OpKind::kExpand, {{param::kRank.name, std::to_string(rank)}}, {{"in", in}, {"ref", ref}});
}

Stream GraphBuilder::zip(const std::string& name, const std::vector<Stream>& in) {
  return add1(name, OpKind::kZip, {}, numbered(in));
}

Stream GraphBuilder::bufferize(const std::string& name, const Stream& in, int rank) {
  return add1(name, OpKind::kBufferize, {{param::kRank.name, std::to_string(rank)}}, {{"in", in}});
}

Stream GraphBuilder::streamify(const std::string& name, const Stream& buffers, const std::vector<int64_t>& repeat) {
  return add1(name, OpKind::kStreamify, {{param::kRepeat.name, int_list(repeat)}}, {{"in", buffers}});
}

Stream GraphBuilder::streamify_ref(const std::string& name, const Stream& buffers, const Stream& ref, int rank) {
  return add1(name, OpKind::kStreamify, {{param::kRank.name, std::to_string(rank)}}, {{"in", buffers}, {"ref", ref}});
}

std::vector<Stream> GraphBuilder::partition(const std::string& name, const Stream& in, const Stream& sel,
                                            size_t outputs, int rank) {
  NodeOptions o;
  o.num_outputs = outputs;
  auto m = add(name, OpKind::kPartition, {{param::kRank.name, std::to_string(rank)}}, {{"in", in}, {"sel", sel}}, o);
  std::vector<Stream> v;
  for (size_t i = 0; i < outputs; ++i) v.push_back(m.at("out" + std::to_string(i)));
  return v;
}

Stream GraphBuilder::reassemble(const std::string& name, const std::vector<Stream>& in, const Stream& sel, int rank) {
  Inputs v = numbered(in);
  v.push_back({"sel", sel});
  return add1(name, OpKind::kReassemble, {{param::kRank.name, std::to_string(rank)}}, v);
}

std::pair<Stream, Stream> GraphBuilder::eager_merge(const std::string& name, const std::vector<Stream>& in, int rank) {
  auto m = add(name, OpKind::kEagerMerge, {{param::kRank.name, std::to_string(rank)}}, numbered(in));
  return {m.at("out"), m.at("sel")};
}

std::vector<Stream> GraphBuilder::broadcast(const std::string& name, const Stream& in, size_t outputs) {
  NodeOptions o;
  o.num_outputs = outputs;
  auto m = add(name, OpKind::kBroadcast, {}, {{"in", in}}, o);
  std::vector<Stream> v;
  for (size_t i = 0; i < outputs; ++i) v.push_back(m.at("out" + std::to_string(i)));
  return v;
}

void GraphBuilder::sink(const std::string& name, const Stream& in) { add(name, OpKind::kSink, {}, {{"in", in}}); }

}  // namespace stepsim::frontend
