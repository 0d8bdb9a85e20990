#include "sim/transform/downtile.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "hw/functions/functions.h"
#include "hw/ops/op.h"
#include "hw/ops/params.h"
#include "sim/frontend/builder.h"
#include "sim/graph/validate.h"
#include "sim/shape/infer.h"
#include "sim/shape/metrics.h"

namespace stepsim {

size_t DowntileResult::blocked_nodes() const {
  return size_t(std::count_if(nodes.begin(), nodes.end(), [](const DowntileNode& n) { return n.blocked; }));
}

namespace {

using frontend::int_list;
using shape::ElemType;
using shape::StreamType;

// Why a node stays at its logical tiles (partial mode) or the pass fails (strict mode).
struct Keep : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// How the logical tiles [R x C] of a stream lie in blocks: [br x bc] blocks of [tr x tc].
struct Geo {
  int64_t tr = 0, tc = 0, br = 0, bc = 0;
  int64_t blocks() const { return br * bc; }
  bool operator==(const Geo& o) const { return tr == o.tr && tc == o.tc && br == o.br && bc == o.bc; }
  bool operator!=(const Geo& o) const { return !(*this == o); }
};

// A stream of the input graph as the output graph carries it.
struct Rep {
  enum Kind { kBlocked, kNeutral } kind = kNeutral;  // neutral: no tiles, the same in both forms
  std::string ref;
  Geo geo;
  bool buffer = false;  // buffer references (blocked: buffers of blocks)
};

// The element-wise Map functions: output element (i, j) depends on the operands' elements (i, j)
// only (an operand of one row or column broadcasts), so blocks are independent, bit for bit.
const std::set<std::string>& elementwise_functions() {
  static const std::set<std::string> s = {
      "abs",       "add",     "cast_bf16", "cast_f32", "div", "eq",      "erf",  "exp",         "ge",  "gelu",
      "gelu_tanh", "gt",      "le",        "lt",       "max", "min",     "mul",  "ne",          "neg", "rsqrt",
      "select",    "sigmoid", "silu",      "sqrt",     "sub", "sub_row", "tanh", "rotate_pairs"};
  return s;
}

// Why a Map function is not rewritten onto blocks.
std::string map_function_reason(const std::string& fn) {
  if (fn == "row_sum" || fn == "row_mean" || fn == "row_var")
    return "Map " + fn + " sums a whole row in fp32 left to right; per block, the blocks' partial sums would be " +
           "added in another order (not bit for bit)";
  if (fn == "cat_rows" || fn == "cat_cols")
    return "Map " + fn + " concatenates two tiles (their blocks would have to be merged into one stream)";
  if (fn == "rotate_half") return "Map rotate_half moves columns across blocks";
  if (fn == "mask_cols") return "Map mask_cols depends on the column index within the logical tile";
  return "Map " + fn + " is not rewritten onto blocks";
}

class Downtiler {
 public:
  Downtiler(const Graph& g, int64_t T, const DowntileOptions& o) : g_(g), T_(T), opt_(o) {
    if (T < 1) throw std::invalid_argument("downtile: the physical tile must be >= 1");
    types_ = shape::infer_types(g, syms_);
    for (const NodeSpec& n : g.nodes) {
      used_.insert(n.name);
      index_[n.name] = &n;
    }
    for (const auto& [name, t] : types_.nodes)
      for (const auto& [port, stream] : t.producers) consumers_[stream].push_back({name, port});
    find_cycles();
  }

  DowntileResult run() {
    res_.tile = T_;
    out_ = g_;
    out_.nodes.clear();
    out_.name = g_.name + "_t" + std::to_string(T_);
    std::map<std::string, DowntileNode> recs;
    for (const std::string& name : types_.order) {
      const NodeSpec& n = *index_.at(name);
      DowntileNode rec;
      rec.name = n.name;
      rec.op = n.op;
      if (n.params.count(param::kFn.name)) rec.fn = n.params.at(param::kFn.name);
      const Mark mark = save();
      cur_ = &n;
      sink_ = &rec.nodes;
      node_blocks_ = blocks_of(n);
      try {
        if (cyclic_.count(n.name))
          throw Keep(
              "it is on a cycle of the graph (its back edge typed by declared types): such nodes keep "
              "their logical tiles");
        rewrite(n);
        check_outputs(n);
        rec.blocked = true;
      } catch (const Keep& k) {
        restore(mark);
        rec.nodes.clear();
        if (!opt_.partial) fail(n, k.what());
        rec.reason = k.what();
        try {
          keep_logical(n);
        } catch (const Keep& k2) {
          fail(n, std::string("it can be neither rewritten onto blocks (") + k.what() + ") nor kept at its logical " +
                      "tiles (" + k2.what() + ")");
        }
      }
      recs[name] = std::move(rec);
    }
    for (const NodeSpec& n : g_.nodes) res_.nodes.push_back(std::move(recs.at(n.name)));
    try {  // the result must be a graph the loader takes (derived names grow by their suffixes)
      check_graph(out_);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("downtile: the down-tiled graph would not load: ") + e.what());
    }
    shape::SymbolTable check;
    shape::infer_types(out_, check);  // and type-check it whole
    res_.graph = std::move(out_);
    return std::move(res_);
  }

 private:
  using SymbolTable = shape::SymbolTable;

  [[noreturn]] void fail(const NodeSpec& n, const std::string& msg) const {
    throw std::invalid_argument("downtile: node '" + n.name + "' (" + n.op + "): " + msg);
  }

  // ---- transactions: a node's rewrite is undone whole when it cannot be finished

  struct Mark {
    size_t nodes, conversions;
    std::map<std::string, std::string> logical;
    std::map<std::string, Rep> blocked;
    std::set<std::string> used;
    uint64_t max_blocks;
    std::map<std::string, int64_t> ref_blocks;
  };
  Mark save() const {
    return {out_.nodes.size(), res_.conversions.size(), logical_, blocked_, used_, res_.max_blocks, ref_blocks_};
  }
  void restore(const Mark& m) {
    while (out_.nodes.size() > m.nodes) {
      const std::string name = out_.nodes.back().name;
      out_types_.nodes.erase(name);
      out_index_.erase(name);
      out_.nodes.pop_back();
    }
    out_types_.order.erase(std::remove_if(out_types_.order.begin(), out_types_.order.end(),
                                          [&](const std::string& n) { return !out_index_.count(n); }),
                           out_types_.order.end());
    res_.conversions.resize(m.conversions);
    logical_ = m.logical;
    blocked_ = m.blocked;
    used_ = m.used;
    res_.max_blocks = m.max_blocks;
    ref_blocks_ = m.ref_blocks;
  }

  // ---- the output graph

  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int k = 2; used_.count(name); ++k) name = base + "_" + std::to_string(k);
    used_.insert(name);
    return name;
  }
  // Adds a node and types it; a node that does not type undoes the rewrite (Keep).
  // `typed` false: a node on a cycle, copied as it is; it takes its types from the input graph (the
  // whole result is typed at the end, its cycles through their declared types).
  std::string emit(NodeSpec s, bool typed = true) {
    if (cur_ && cur_->depth && node_blocks_ > 1 && s.depth == cur_->depth)
      s.depth = uint32_t(std::min<uint64_t>(uint64_t(*cur_->depth) * uint64_t(node_blocks_), 1u << 20));
    else if (!s.depth && opt_.fifo_depth && node_blocks_ > 1)
      s.depth = uint32_t(std::min<uint64_t>(uint64_t(opt_.fifo_depth) * uint64_t(node_blocks_), 1u << 20));
    if (node_blocks_ > 1)
      for (auto& [port, d] : s.input_depth)
        d = uint32_t(std::min<uint64_t>(uint64_t(d) * uint64_t(node_blocks_), 1u << 20));
    // A channel of blocks out of another node's rewrite (or a Broadcast the run adds for a stream
    // read twice) holds as many blocks as the logical channel held tiles.
    if (opt_.fifo_depth)
      for (const auto& [port, ref] : s.inputs) {
        auto b = ref_blocks_.find(ref);
        if (b != ref_blocks_.end() && b->second > 1 && !s.input_depth.count(port))
          s.input_depth[port] = uint32_t(std::min<uint64_t>(uint64_t(opt_.fifo_depth) * uint64_t(b->second), 1u << 20));
      }
    out_.nodes.push_back(s);
    out_index_[s.name] = out_.nodes.size() - 1;
    if (!typed) {
      out_types_.nodes[s.name] = types_.nodes.at(s.name);
      out_types_.order.push_back(s.name);
      if (sink_) sink_->push_back(s.name);
      return s.name;
    }
    try {
      shape::type_last_node(out_, syms_, out_types_, {}, [this](const std::string& node) -> const NodeSpec* {
        auto at = out_index_.find(node);
        return at == out_index_.end() ? nullptr : &out_.nodes[at->second];
      });
    } catch (const std::invalid_argument& e) {
      throw Keep(std::string("the rewrite does not type: ") + e.what());
    }
    if (sink_) sink_->push_back(s.name);
    return s.name;
  }
  // A new node of `op` reading `in` (ports in0.. or in), named after the node being rewritten.
  std::string add(const std::string& tag, OpKind op, std::map<std::string, std::string> params,
                  std::map<std::string, std::string> inputs, const std::string& name = "") {
    NodeSpec s =
        node_spec(name.empty() ? fresh(cur_name() + "_" + tag) : name, op, std::move(params), std::move(inputs));
    if (cur_ && OpRegistry::instance().find(op).uses_compute) s.compute_bw = cur_->compute_bw;
    if (cur_) s.depth = cur_->depth;
    return emit(std::move(s)) + ".out";
  }
  std::string cur_name() const { return cur_ ? cur_->name : std::string("dt"); }
  std::string flatten(const std::string& in, int64_t lo, int64_t hi, const std::string& tag,
                      const std::string& name = "") {
    return add(tag, OpKind::kFlatten, {{param::kMin.name, std::to_string(lo)}, {param::kMax.name, std::to_string(hi)}},
               {{"in", in}}, name);
  }
  std::string promote(const std::string& in, int64_t rank, const std::string& tag, const std::string& name = "") {
    return add(tag, OpKind::kPromote, {{param::kRank.name, std::to_string(rank)}}, {{"in", in}}, name);
  }
  std::string repeat(const std::string& in, int64_t count, const std::string& tag) {
    return add(tag, OpKind::kRepeat, {{param::kCount.name, std::to_string(count)}}, {{"in", in}});
  }
  std::string reshape(const std::string& in, int64_t chunk, int64_t rank, const std::string& tag) {
    return add(tag, OpKind::kReshape,
               {{param::kChunk.name, std::to_string(chunk)}, {param::kRank.name, std::to_string(rank)}}, {{"in", in}});
  }
  std::string accum(const std::string& in, const std::string& fn, int64_t rank, const std::string& tag,
                    const std::string& name = "") {
    return add(tag, OpKind::kAccum, {{param::kFn.name, fn}, {param::kRank.name, std::to_string(rank)}}, {{"in0", in}},
               name);
  }
  std::string flatmap(const std::string& in, const std::string& fn, const std::string& tag) {
    return add(tag, OpKind::kFlatMap, {{param::kFn.name, fn}, {param::kRank.name, "1"}}, {{"in0", in}});
  }
  // Bufferize(rank) -> Streamify(view or repeat): the Streamify's output.
  std::string replay(const std::string& in, int64_t rank, const std::string& tag,
                     std::map<std::string, std::string> view, const std::string& name = "") {
    const std::string buf =
        add(tag + "_buf", OpKind::kBufferize, {{param::kRank.name, std::to_string(rank)}}, {{"in", in}});
    return add(tag + "_view", OpKind::kStreamify, std::move(view), {{"in", buf}}, name);
  }

  // ---- the input graph's streams

  int64_t as_int(const shape::ex& e, const std::string& what) {
    int64_t v = 0;
    if (!shape::to_int(shape::evaluate(e, syms_), v))
      throw Keep(what + " " + shape::to_string(e) + " is not a known integer");
    return v;
  }
  static std::pair<std::string, std::string> split(const std::string& stream) {
    const size_t dot = stream.rfind('.');
    return {stream.substr(0, dot), stream.substr(dot + 1)};
  }
  const StreamType& type_of(const std::string& stream) const {
    const auto [node, port] = split(stream);
    return types_.nodes.at(node).outputs.at(port);
  }
  const StreamType& input_type(const NodeSpec& n, const std::string& port) const {
    return types_.nodes.at(n.name).inputs.at(port);
  }
  std::string producer(const NodeSpec& n, const std::string& port) const {
    return types_.nodes.at(n.name).producers.at(port);
  }
  bool is_tile(const ElemType& e) const { return e.kind == ElemType::Tile; }

  // One side of a tile in blocks: (block side, count). A side below T stays whole.
  std::pair<int64_t, int64_t> axis(int64_t s) const {
    if (s % T_ == 0) return {T_, s / T_};
    if (s < T_) return {s, 1};
    throw Keep("a tile side of " + std::to_string(s) + " is above " + std::to_string(T_) + " and not a multiple of it");
  }
  std::pair<int64_t, int64_t> tile_size(const ElemType& e, const std::string& what) {
    if (!is_tile(e)) throw Keep(what + " carries " + e.str() + ", not tiles");
    if (e.has_rows_mean) throw Keep(what + " has tiles of varying rows");
    return {as_int(e.rows, what + ": tile rows"), as_int(e.cols, what + ": tile cols")};
  }
  Geo geometry(const ElemType& e, const std::string& what) {
    const auto [r, c] = tile_size(e, what);
    const auto [tr, br] = axis(r);
    const auto [tc, bc] = axis(c);
    return Geo{tr, tc, br, bc};
  }

  // The stream as blocks (converted from its logical tiles if need be), or as it is when it
  // carries no tiles.
  Rep blocks(const std::string& stream) {
    if (auto it = blocked_.find(stream); it != blocked_.end()) return it->second;
    const StreamType& t = type_of(stream);
    if (t.elem.kind == ElemType::Buffer) throw Keep("its input " + stream + " holds buffers of logical tiles");
    if (!is_tile(t.elem)) return Rep{Rep::kNeutral, logical_.at(stream), {}, false};
    const Geo geo = geometry(t.elem, stream);
    Rep r{Rep::kBlocked, to_blocks(stream, logical_.at(stream), geo), geo, false};
    set_blocked(stream, r);
    return r;
  }
  // The stream at its logical tiles (converted from blocks if need be).
  std::string logical(const std::string& stream) {
    if (auto it = logical_.find(stream); it != logical_.end()) return it->second;
    const Rep& r = blocked_.at(stream);
    if (r.buffer) throw Keep("its input " + stream + " holds buffers of blocks");
    const std::string ref = to_logical(stream, r);
    logical_[stream] = ref;
    return ref;
  }
  void set_blocked(const std::string& stream, Rep r) {
    if (r.kind == Rep::kBlocked && !r.buffer) {
      res_.max_blocks = std::max<uint64_t>(res_.max_blocks, uint64_t(r.geo.blocks()));
      ref_blocks_[r.ref] = r.geo.blocks();
    }
    blocked_[stream] = std::move(r);
  }

  // ---- conversions (retiling nodes, in the account under the node that needs them)

  DowntileConversion& begin_conversion(const std::string& stream, bool to_blocks) {
    DowntileConversion c;
    c.stream = stream;
    c.to_blocks = to_blocks;
    c.consumer = cur_name();
    res_.conversions.push_back(c);
    return res_.conversions.back();
  }
  std::string conv_base(const std::string& stream) const {
    const auto [node, port] = split(stream);
    return node + "_" + port;
  }
  // Logical [R x C] -> [.., br, bc] of [tr x tc]: rows first (retile_streamify_row, Reshape,
  // retile_row), then columns (retile_streamify_col, Reshape, retile_col); a single block is
  // Promote twice.
  std::string to_blocks(const std::string& stream, const std::string& ref, const Geo& g) {
    DowntileConversion& c = begin_conversion(stream, true);
    std::vector<std::string>* keep = sink_;
    sink_ = &c.nodes;
    const std::string base = conv_base(stream) + "_bk";
    std::string s = ref;
    // One side: the tiles split into rows (columns), grouped by the block side, joined into blocks.
    auto side = [&](int64_t count, int64_t block, const std::string& split_fn, const std::string& join_fn,
                    const std::string& tag) {
      if (count == 1) {
        s = promote(s, 0, "", fresh(base + "_" + tag));
        return;
      }
      s = add("", OpKind::kFlatMap, {{param::kFn.name, split_fn}, {param::kRank.name, "1"}}, {{"in0", s}},
              fresh(base + "_" + tag + "split"));
      s = add("", OpKind::kReshape, {{param::kChunk.name, std::to_string(block)}, {param::kRank.name, "0"}},
              {{"in", s}}, fresh(base + "_" + tag + "group"));
      s = accum(s, join_fn, 1, "", fresh(base + "_" + tag + "blocks"));
    };
    side(g.br, g.tr, "retile_streamify_row", "retile_row", "r");
    side(g.bc, g.tc, "retile_streamify_col", "retile_col", "c");
    sink_ = keep;
    return s;
  }
  // Blocks -> logical: retile_col over the column blocks, then retile_row over the row blocks; a
  // single block is Flatten twice.
  std::string to_logical(const std::string& stream, const Rep& r) {
    DowntileConversion& c = begin_conversion(stream, false);
    std::vector<std::string>* keep = sink_;
    sink_ = &c.nodes;
    const std::string base = conv_base(stream) + "_lg";
    std::string s;
    if (r.geo.blocks() == 1) {
      s = flatten(flatten(r.ref, 0, 1, "", fresh(base + "_c")), 0, 1, "", fresh(base + "_r"));
    } else {
      s = accum(r.ref, "retile_col", 1, "", fresh(base + "_cols"));
      s = accum(s, "retile_row", 1, "", fresh(base + "_rows"));
    }
    sink_ = keep;
    return s;
  }

  // ---- the rewrites

  void rewrite(const NodeSpec& n) {
    if (!n.dims.empty() || !n.types.empty()) throw Keep("declared output dims/types are not supported");
    const shape::NodeTypes& t = types_.nodes.at(n.name);
    bool tiles = false;  // does the node see tiles (or buffers of them)?
    for (const auto& m : {&t.inputs, &t.outputs})
      for (const auto& [port, s] : *m) tiles = tiles || is_tile(s.elem) || s.elem.kind == ElemType::Buffer;
    if (n.is(OpKind::kLinearOffChipLoad) || n.is(OpKind::kLinearOffChipStore))
      offchip(n);
    else if (n.is(OpKind::kSink))
      sink(n);
    else if (!tiles)
      copy_neutral(n);
    else if (n.is(OpKind::kRepeat))
      repeat_node(n);
    else if (n.is(OpKind::kMap))
      map(n);
    else if (n.is(OpKind::kAccum))
      accum_node(n);
    else if (n.is(OpKind::kFlatMap))
      flatmap_node(n);
    else if (n.is(OpKind::kBufferize))
      bufferize(n);
    else if (n.is(OpKind::kStreamify))
      streamify(n);
    else if (n.is(OpKind::kFlatten) || n.is(OpKind::kPromote) || n.is(OpKind::kReshape) || n.is(OpKind::kBroadcast) ||
             n.is(OpKind::kPartition) || n.is(OpKind::kReassemble))
      shifted(n);
    else
      throw Keep("operator " + n.op +
                 " is not rewritten onto blocks (LinearOffChipLoad/Store, Repeat, Map, Accum, FlatMap "
                 "retile_streamify_row, Bufferize, Streamify, Flatten, Promote, Reshape, Broadcast, Partition, "
                 "Reassemble, Sink)");
  }

  // Tarjan's strongly connected components over producer -> consumer.
  void find_cycles() {
    std::map<std::string, std::vector<std::string>> next;
    for (const auto& [name, t] : types_.nodes)
      for (const auto& [port, stream] : t.producers) next[split(stream).first].push_back(name);
    std::map<std::string, int> index, low;
    std::set<std::string> on;
    std::vector<std::string> stack;
    int counter = 0;
    std::function<void(const std::string&)> visit = [&](const std::string& v) {
      index[v] = low[v] = counter++;
      stack.push_back(v);
      on.insert(v);
      for (const std::string& w : next[v]) {
        if (!index.count(w)) {
          visit(w);
          low[v] = std::min(low[v], low[w]);
        } else if (on.count(w)) {
          low[v] = std::min(low[v], index[w]);
        }
      }
      if (low[v] != index[v]) return;
      std::vector<std::string> scc;
      std::string w;
      do {
        w = stack.back();
        stack.pop_back();
        on.erase(w);
        scc.push_back(w);
      } while (w != v);
      const auto& self = next[v];
      if (scc.size() > 1 || std::find(self.begin(), self.end(), v) != self.end())
        cyclic_.insert(scc.begin(), scc.end());
    };
    for (const auto& [name, t] : types_.nodes)
      if (!index.count(name)) visit(name);
  }

  // The most blocks of a tile the node sees (its FIFO depths are scaled by it).
  int64_t blocks_of(const NodeSpec& n) {
    int64_t most = 1;
    const shape::NodeTypes& t = types_.nodes.at(n.name);
    for (const auto& m : {&t.inputs, &t.outputs})
      for (const auto& [port, s] : *m) {
        const ElemType& e = s.elem.kind == ElemType::Buffer && !s.elem.members.empty() ? s.elem.members[0] : s.elem;
        if (!is_tile(e)) continue;
        try {
          most = std::max(most, geometry(e, port).blocks());
        } catch (const Keep&) {
        }
      }
    return most;
  }

  // Every tile output has the blocks its logical type says: rank + 2, [tr x tc] of the dtype.
  void check_outputs(const NodeSpec& n) {
    for (const auto& [port, want] : types_.nodes.at(n.name).outputs) {
      const std::string stream = n.name + "." + port;
      auto it = blocked_.find(stream);
      if (it == blocked_.end() || it->second.kind != Rep::kBlocked) continue;
      const Rep& r = it->second;
      const auto [node, oport] = split(r.ref);
      const StreamType& got = out_types_.nodes.at(node).outputs.at(oport);
      const ElemType& ge = r.buffer ? got.elem.members.at(0) : got.elem;
      const ElemType& we = r.buffer ? want.elem.members.at(0) : want.elem;
      const size_t grank = r.buffer ? got.elem.buffer_dims.size() : got.dims.size();
      const size_t wrank = r.buffer ? want.elem.buffer_dims.size() : want.dims.size();
      const std::vector<shape::Dim>& gd = r.buffer ? got.elem.buffer_dims : got.dims;
      int64_t rows = 0, cols = 0, a = 0, b = 0;
      const bool ok = is_tile(ge) && ge.dtype == we.dtype && grank == wrank + 2 &&
                      shape::to_int(shape::evaluate(ge.rows, syms_), rows) && rows == r.geo.tr &&
                      shape::to_int(shape::evaluate(ge.cols, syms_), cols) && cols == r.geo.tc &&
                      shape::to_int(shape::evaluate(gd[grank - 2].size, syms_), a) && a == r.geo.br &&
                      shape::to_int(shape::evaluate(gd[grank - 1].size, syms_), b) && b == r.geo.bc &&
                      geometry(we, stream) == r.geo;
      if (!ok)
        throw Keep("internal: output '" + port + "' would be " + got.str() + " for the logical " + want.str() +
                   " (blocks " + std::to_string(r.geo.br) + " x " + std::to_string(r.geo.bc) + " of [" +
                   std::to_string(r.geo.tr) + " x " + std::to_string(r.geo.tc) + "])");
    }
  }

  // A copy of node n keeps its numbered outputs (out0, ..): inference counts them by their readers,
  // which the output graph does not have yet.
  NodeSpec copy_of(const NodeSpec& n) const {
    NodeSpec s = n;
    if (!s.num_outputs) {
      size_t numbered = 0;
      for (const auto& [port, t] : types_.nodes.at(n.name).outputs)
        numbered += port.size() > 3 && port.rfind("out", 0) == 0 &&
                    port.find_first_not_of("0123456789", 3) == std::string::npos;
      if (numbered) s.num_outputs = numbered;
    }
    return s;
  }

  // The node as it is, every tile input at its logical tiles.
  void keep_logical(const NodeSpec& n) {
    NodeSpec s = copy_of(n);
    cur_ = &n;
    node_blocks_ = 1;
    for (auto& [port, ref] : s.inputs) {
      const std::string p = producer(n, port);
      // The back edge of a cycle: its producer, at its logical tiles too, comes later.
      const bool ahead = cyclic_.count(split(p).first) && !logical_.count(p) && !blocked_.count(p);
      ref = ahead ? p : logical(p);
    }
    emit(s, !cyclic_.count(n.name));
    for (const auto& [port, t] : types_.nodes.at(n.name).outputs) {
      const std::string stream = n.name + "." + port;
      logical_[stream] = stream;
      if (!is_tile(t.elem) && t.elem.kind != ElemType::Buffer) blocked_[stream] = Rep{Rep::kNeutral, stream, {}, false};
    }
  }

  // A node that sees no tiles: copied, its streams the same in both forms.
  void copy_neutral(const NodeSpec& n) {
    NodeSpec s = copy_of(n);
    for (auto& [port, ref] : s.inputs) {
      const std::string p = producer(n, port);
      auto it = blocked_.find(p);
      if (it != blocked_.end() && it->second.kind == Rep::kBlocked) throw Keep("reads buffers of blocks");
      ref = it != blocked_.end() ? it->second.ref : logical(p);
    }
    emit(s);
    for (const auto& [port, t] : types_.nodes.at(n.name).outputs) {
      const std::string stream = n.name + "." + port;
      logical_[stream] = stream;
      blocked_[stream] = Rep{Rep::kNeutral, stream, {}, false};
    }
  }

  // A Sink takes whichever form there is (blocks, if both).
  void sink(const NodeSpec& n) {
    NodeSpec s = n;
    for (auto& [port, ref] : s.inputs) {
      const std::string p = producer(n, port);
      auto it = blocked_.find(p);
      ref = it != blocked_.end() ? it->second.ref : logical_.at(p);
    }
    emit(s);
  }

  // The same affine view at block granularity: a logical tile index l = (lr, lc) in the grid of
  // [R x C] tiles starts at block (lr*br, lc*bc); checked over the whole view.
  void offchip(const NodeSpec& n) {
    NodeSpec o = n;
    const std::string tname = param_of(n, param::kTensor);
    const TensorSpec* t = nullptr;
    for (const TensorSpec& x : g_.tensors)
      if (x.name == tname) t = &x;
    if (!t) throw Keep("unknown tensor '" + tname + "'");
    const std::vector<int64_t> tile = param_of(n, param::kTile);
    const std::string tile_text = n.params.count(param::kTile.name) ? n.params.at(param::kTile.name) : "[]";
    if (tile.size() != 2 || tile[0] < 1 || tile[1] < 1 || int64_t(t->rows) % tile[0] || int64_t(t->cols) % tile[1])
      throw Keep("tile " + tile_text + " must divide tensor '" + tname + "'");
    std::pair<int64_t, int64_t> ra, ca;
    try {
      ra = axis(tile[0]);
      ca = axis(tile[1]);
    } catch (const Keep&) {
      throw Keep("tile " + tile_text + " of tensor '" + tname + "': a side above " + std::to_string(T_) +
                 " must be a multiple of " + std::to_string(T_));
    }
    const Geo geo{ra.first, ca.first, ra.second, ca.second};
    const int64_t gc = int64_t(t->cols) / tile[1], pc = int64_t(t->cols) / geo.tc;
    std::vector<int64_t> shape = param_of(n, param::kOutShape), stride = param_of(n, param::kStride);
    if (shape.empty()) shape = {int64_t(t->rows) / tile[0], gc};
    if (stride.empty()) {
      stride.assign(shape.size(), 1);
      for (size_t d = shape.size() - 1; d > 0; --d) stride[d - 1] = stride[d] * shape[d];
    }
    const int64_t offset = param_of(n, param::kOffset);
    auto block = [&](int64_t l) { return (l / gc) * geo.br * pc + (l % gc) * geo.bc; };
    std::vector<int64_t> pstride;
    for (int64_t s : stride) pstride.push_back(block(offset + s) - block(offset));
    // Every tile of the view must land where the block strides put it.
    int64_t count = 1;
    for (int64_t s : shape) count *= s;
    for (int64_t k = 0; k < count; ++k) {
      int64_t l = offset, p = block(offset), rem = k;
      for (size_t d = shape.size(); d-- > 0;) {
        l += (rem % shape[d]) * stride[d];
        p += (rem % shape[d]) * pstride[d];
        rem /= shape[d];
      }
      if (block(l) != p) throw Keep("the view is not affine at block granularity (tile " + std::to_string(l) + ")");
    }
    shape.push_back(geo.br);
    shape.push_back(geo.bc);
    pstride.push_back(pc);
    pstride.push_back(1);
    o.params[param::kTile.name] = int_list({geo.tr, geo.tc});
    o.params[param::kOutShape.name] = int_list(shape);
    o.params[param::kStride.name] = int_list(pstride);
    o.params[param::kOffset.name] = std::to_string(block(offset));
    for (auto& [port, ref] : o.inputs) {
      const std::string p = producer(n, port);
      if (port == "ref") {  // only its shape counts: at its logical tiles
        ref = logical(p);
      } else {
        const Rep r = blocks(p);
        if (r.geo != geo) throw Keep("its input's blocks differ from its view's");
        ref = r.ref;
      }
    }
    emit(o);
    if (n.is(OpKind::kLinearOffChipLoad)) set_blocked(n.name + ".out", Rep{Rep::kBlocked, n.name + ".out", geo, false});
  }

  // Repeat of a tile: the block group is buffered and replayed.
  void repeat_node(const NodeSpec& n) {
    const Rep in = blocks(producer(n, "in"));
    const std::string out =
        replay(in.ref, 2, "rep", {{param::kRepeat.name, "[" + n.params.at(param::kCount.name) + "]"}}, n.name);
    set_blocked(n.name + ".out", Rep{Rep::kBlocked, out, in.geo, false});
  }

  void map(const NodeSpec& n) {
    const std::string fn = param_of(n, param::kFn);
    const MapFunction& f = map_function(fn);
    if (f.matmul) {
      matmul(n, 0, f.signature.transposed_b, f.accum_form);
      return;
    }
    if (fn == "row_max") {
      row_max(n);
      return;
    }
    if (!elementwise_functions().count(fn)) throw Keep(map_function_reason(fn));
    const ElemType& oe = types_.nodes.at(n.name).outputs.at("out").elem;
    const auto [R, C] = tile_size(oe, "output 'out'");
    const Geo og = geometry(oe, "output 'out'");
    if (fn == "rotate_pairs" && og.tc % 2) throw Keep("rotate_pairs on blocks of an odd number of columns");
    NodeSpec m = n;
    for (auto& [port, ref] : m.inputs) {
      const std::string p = producer(n, port);
      const auto [r, c] = tile_size(input_type(n, port).elem, "input '" + port + "'");
      const std::string tag = port;
      if (r == R && c == C) {
        const Rep b = blocks(p);
        if (b.geo != og) throw Keep("input '" + port + "' is in other blocks than the output");
        ref = b.ref;
      } else if (r == 1 && c == 1) {  // a scalar: each element repeated over the blocks
        std::string s;
        if (auto it = logical_.find(p); it != logical_.end()) {
          s = it->second;
        } else {
          const Rep b = blocks(p);
          s = flatten(flatten(b.ref, 0, 1, tag + "_one"), 0, 1, tag + "_scalar");
        }
        ref = repeat(repeat(s, og.br, tag + "_rows"), og.bc, tag + "_cols");
      } else if (c == 1 && r == R) {  // a column: repeated across the column blocks
        const Rep b = blocks(p);
        if (b.geo != Geo{og.tr, 1, og.br, 1}) throw Keep("input '" + port + "' (a column) is in other row blocks");
        ref = flatten(repeat(b.ref, og.bc, tag + "_across"), 0, 1, tag + "_wide");
      } else if (r == 1 && c == C) {  // a row: its blocks replayed for every row block
        const Rep b = blocks(p);
        if (b.geo != Geo{1, og.tc, 1, og.bc}) throw Keep("input '" + port + "' (a row) is in other column blocks");
        ref = replay(b.ref, 2, tag + "_down",
                     {{param::kOutShape.name, int_list({og.br, og.bc})}, {param::kStride.name, int_list({0, 1})}});
      } else {
        throw Keep("input '" + port + "' [" + std::to_string(r) + " x " + std::to_string(c) + "] broadcasts to [" +
                   std::to_string(R) + " x " + std::to_string(C) + "] in a way the pass does not widen");
      }
    }
    emit(m);
    set_blocked(n.name + ".out", Rep{Rep::kBlocked, n.name + ".out", og, false});
  }

  // row_max per block, the max over the column blocks, and a dim of one column block.
  void row_max(const NodeSpec& n) {
    const Rep in = blocks(producer(n, "in0"));
    std::string s = add("blk", OpKind::kMap, {{param::kFn.name, "row_max"}}, {{"in0", in.ref}});
    s = accum(s, "max", 1, "acc");
    s = promote(s, 0, "", n.name);
    set_blocked(n.name + ".out", Rep{Rep::kBlocked, s, Geo{in.geo.tr, 1, in.geo.br, 1}, false});
  }

  void accum_node(const NodeSpec& n) {
    const std::string fn = param_of(n, param::kFn);
    const AccumFunction& f = accum_function(fn);
    const int64_t rank = param_of(n, param::kRank);
    if (n.inputs.size() != size_t(f.arity))
      throw Keep("Accum " + fn + " with " + std::to_string(n.inputs.size()) + " inputs");
    if (f.matmul) {
      matmul(n, rank, f.signature.transposed_b, fn);
    } else if (fn == "add" || fn == "add_f32" || fn == "max") {
      if (param_of(n, param::kBankRank) != 0) throw Keep("Accum " + fn + " with an accumulator bank");
      // Each block accumulates apart: the reduced dims flattened into one, a K dim of 1 below the
      // blocks, and a bank over the blocks (bit-identical to rank 2 over [.., blocks, C, K]).
      const Rep in = blocks(producer(n, "in0"));
      std::string s = in.ref;
      if (rank > 1) s = flatten(s, 2, rank + 1, "red");
      s = promote(s, 0, "k");
      NodeSpec a = n;
      a.params = {{param::kFn.name, fn}, {param::kRank.name, "2"}, {param::kBankRank.name, "2"}};
      a.inputs = {{"in0", s}};
      emit(a);
      set_blocked(n.name + ".out", Rep{Rep::kBlocked, n.name + ".out", in.geo, false});
    } else if (fn == "retile_row") {
      retile_row(n, rank);
    } else if (fn == "retile_col") {
      retile_col(n, rank);
    } else {
      throw Keep("Accum " + fn + " is not rewritten onto blocks");
    }
  }

  // The product of the `rank` inner logical dims of input in0 (static).
  int64_t reduced(const NodeSpec& n, int64_t rank) {
    const StreamType& in = input_type(n, "in0");
    if (int64_t(in.dims.size()) < rank) throw Keep("rank " + std::to_string(rank) + " exceeds the input's dimensions");
    int64_t d = 1;
    for (size_t k = in.dims.size() - size_t(rank); k < in.dims.size(); ++k)
      d *= as_int(in.dims[k].size, "reduced dimension");
    return d;
  }

  // Tiles stacked vertically: whole block rows are a Flatten of the reduced dims with the row
  // blocks; tiles of fewer rows than a block are packed (rank 1: D tiles of r rows -> D r / T blocks).
  void retile_row(const NodeSpec& n, int64_t rank) {
    const Rep in = blocks(producer(n, "in0"));
    const Geo og = geometry(types_.nodes.at(n.name).outputs.at("out").elem, "output 'out'");
    const Geo& g = in.geo;
    if (og.tr == g.tr && og.tc == g.tc && og.bc == g.bc) {
      const std::string s = flatten(in.ref, 1, rank + 1, "", n.name);
      set_blocked(n.name + ".out", Rep{Rep::kBlocked, s, og, false});
      return;
    }
    const int64_t D = rank == 1 ? reduced(n, 1) : 0;
    if (rank != 1 || g.br != 1 || og.tr != T_ || T_ % g.tr || D % (T_ / g.tr))
      throw Keep("retile_row of [" + std::to_string(g.tr) + " x ..] tiles into [" + std::to_string(og.tr) +
                 " x ..] blocks (rank " + std::to_string(rank) + ")");
    const int64_t per = T_ / g.tr;                 // tiles per block row
    std::string s = flatten(in.ref, 1, 2, "one");  // [.., D, bc]
    s = reshape(s, per, 1, "group");               // [.., D/per, per, bc]
    s = replay(s, 2, "tr",
               {{param::kOutShape.name, int_list({g.bc, per})},  // [.., D/per, bc, per]
                {param::kStride.name, int_list({1, g.bc})}});
    s = accum(s, "retile_row", 1, "", n.name);  // [.., D/per, bc] of [T x tc]
    set_blocked(n.name + ".out", Rep{Rep::kBlocked, s, og, false});
  }

  // Tiles side by side: the D tiles' blocks read row block by row block.
  void retile_col(const NodeSpec& n, int64_t rank) {
    const Rep in = blocks(producer(n, "in0"));
    const Geo& g = in.geo;
    if (g.tc != T_)
      throw Keep("retile_col of tiles of " + std::to_string(g.tc) + " columns (below " + std::to_string(T_) + ")");
    const int64_t D = reduced(n, rank);
    std::string s = in.ref;
    if (rank > 1) s = flatten(s, 2, rank + 1, "red");
    s = replay(
        s, 3, "tr",
        {{param::kOutShape.name, int_list({g.br, D, g.bc})}, {param::kStride.name, int_list({g.bc, g.br * g.bc, 1})}});
    s = flatten(s, 0, 1, "", n.name);
    set_blocked(n.name + ".out", Rep{Rep::kBlocked, s, Geo{g.tr, g.tc, g.br, D * g.bc}, false});
  }

  void flatmap_node(const NodeSpec& n) {
    const std::string fn = param_of(n, param::kFn);
    if (fn != "retile_streamify_row" || param_of(n, param::kRank) != 1)
      throw Keep("FlatMap " + fn + " is not rewritten onto blocks");
    const Rep in = blocks(producer(n, "in0"));
    const Geo& g = in.geo;
    std::string s = flatmap(in.ref, fn, "rows");  // [.., br, bc, tr] of [1 x tc]
    s = replay(s, 2, "tr",
               {{param::kOutShape.name, int_list({g.tr, g.bc})}, {param::kStride.name, int_list({1, g.tr})}});
    s = flatten(s, 1, 2, "flat");   // [.., R, bc]
    s = promote(s, 1, "", n.name);  // [.., R, 1, bc]
    set_blocked(n.name + ".out", Rep{Rep::kBlocked, s, Geo{1, g.tc, 1, g.bc}, false});
  }

  // Bufferize of blocks: the two block dims stored too. Only when every reader is a Streamify
  // (they read the blocks through their views); buffers of blocks have no logical form.
  void bufferize(const NodeSpec& n) {
    for (const auto& [node, port] : consumers_[n.name + ".out"])
      if (!index_.at(node)->is(OpKind::kStreamify))
        throw Keep("its buffers are read by '" + node + "' (" + index_.at(node)->op + "), not by a Streamify");
    const Rep in = blocks(producer(n, "in"));
    NodeSpec b = n;
    b.params[param::kRank.name] = std::to_string(param_of(n, param::kRank) + 2);
    b.inputs = {{"in", in.ref}};
    emit(b);
    set_blocked(n.name + ".out", Rep{Rep::kBlocked, n.name + ".out", in.geo, true});
  }

  // Streamify of buffers of blocks: the view's strides in blocks, plus the two block dims.
  void streamify(const NodeSpec& n) {
    const std::string p = producer(n, "in");
    auto it = blocked_.find(p);
    if (it == blocked_.end() || it->second.kind != Rep::kBlocked) throw Keep("its buffers hold logical tiles");
    const Rep in = it->second;
    NodeSpec s = n;
    std::vector<int64_t> shape = param_of(n, param::kOutShape), stride = param_of(n, param::kStride);
    if (!shape.empty()) {
      for (int64_t& x : stride) x *= in.geo.blocks();
      shape.push_back(in.geo.br);
      shape.push_back(in.geo.bc);
      stride.push_back(in.geo.bc);
      stride.push_back(1);
      s.params[param::kOutShape.name] = int_list(shape);
      s.params[param::kStride.name] = int_list(stride);
    }
    for (auto& [port, ref] : s.inputs) ref = port == "in" ? in.ref : logical(producer(n, port));
    emit(s);
    set_blocked(n.name + ".out", Rep{Rep::kBlocked, n.name + ".out", in.geo, false});
  }

  // Shape and routing operators: the same operator, two levels deeper on streams of blocks (the
  // block dims are inside a buffer: no deeper). Selectors pass as they are.
  void shifted(const NodeSpec& n) {
    NodeSpec s = copy_of(n);
    Geo geo;
    bool have = false, buffer = false;
    for (auto& [port, ref] : s.inputs) {
      const std::string p = producer(n, port);
      if (port == "sel") {
        const Rep r = blocks(p);
        if (r.kind != Rep::kNeutral) throw Keep("its selector input carries tiles");
        ref = r.ref;
        continue;
      }
      const Rep r = blocks(p);
      if (r.kind != Rep::kBlocked) throw Keep("input '" + port + "' carries no tiles");
      if (have && (r.geo != geo || r.buffer != buffer)) throw Keep("its inputs are in other blocks");
      geo = r.geo;
      buffer = r.buffer;
      have = true;
      ref = r.ref;
    }
    if (!have) throw Keep("no input carries tiles");
    const int64_t shift = buffer ? 0 : 2;
    if (n.is(OpKind::kFlatten)) {
      s.params[param::kMin.name] = std::to_string(param_of(n, param::kMin) + shift);
      s.params[param::kMax.name] = std::to_string(param_of(n, param::kMax) + shift);
    } else if (n.is(OpKind::kPromote)) {
      const int64_t r = param_of(n, param::kRank);
      if (r >= 0) s.params[param::kRank.name] = std::to_string(r + shift);
    } else if (n.is(OpKind::kReshape)) {
      for (const auto& [node, port] : consumers_[n.name + ".pad"])
        throw Keep("its padding flags are read (by '" + node + "')");
      const int64_t rank = param_of(n, param::kRank), chunk = param_of(n, param::kChunk);
      const StreamType& in = input_type(n, "in");
      if (rank >= int64_t(in.dims.size())) throw Keep("rank beyond the input's dimensions");
      const int64_t d = as_int(in.dim(size_t(rank)).size, "the reshaped dimension");
      if (d % chunk) throw Keep("the reshaped dimension (" + std::to_string(d) + ") is not a multiple of the chunk");
      s.params[param::kRank.name] = std::to_string(rank + shift);
    } else if (n.is(OpKind::kPartition) || n.is(OpKind::kReassemble)) {
      s.params[param::kRank.name] = std::to_string(param_of(n, param::kRank) + shift);
    }
    emit(s);
    for (const auto& [port, t] : types_.nodes.at(n.name).outputs) {
      const std::string stream = n.name + "." + port;
      if (is_tile(t.elem) || t.elem.kind == ElemType::Buffer)
        set_blocked(stream, Rep{Rep::kBlocked, stream, geo, buffer});
      else if (!consumers_[stream].empty())
        throw Keep("output '" + port + "' carries no tiles");
    }
  }

  // A = in0 [M x K], B = in1 [K x N] (transposed: [N x K]); the inner `rank` logical dims are
  // reduced too (Accum). Output blocks (i, j) = sum over the reduced dims and k of A(i,k) B(k,j).
  // rank 1 (one reduced logical dim C) uses an accumulator bank: each logical tile's blocks are
  // buffered alone and walked (i, j, k), and the Accum (bank_rank 2) keeps the partial sum of
  // every output block across C, so the blocks of one C step need not wait for the next. Other
  // ranks buffer the reduced dims too and walk (i, j, reduced.., k).
  // `accum_fn`: the matmul's Accum form (MapFunction::accum_form), which sums the block products.
  void matmul(const NodeSpec& n, int64_t rank, bool transposed, const std::string& accum_fn) {
    const Rep ra = blocks(producer(n, "in0")), rb = blocks(producer(n, "in1"));
    if (ra.kind != Rep::kBlocked || rb.kind != Rep::kBlocked) throw Keep("matmul operands without tiles");
    const int64_t mb = ra.geo.br, kb = ra.geo.bc;
    const int64_t nb = transposed ? rb.geo.br : rb.geo.bc;
    const int64_t tn = transposed ? rb.geo.tr : rb.geo.tc;
    if ((transposed ? rb.geo.bc : rb.geo.br) != kb || (transposed ? rb.geo.tc : rb.geo.tr) != ra.geo.tc)
      throw Keep("the inner dimensions of the matmul operands are in other blocks");
    const StreamType& a = input_type(n, "in0");
    if (int64_t(a.dims.size()) <= rank) throw Keep("rank " + std::to_string(rank) + " exceeds the input's dimensions");
    const bool bank = rank == 1;
    const int64_t view_rank = bank ? 0 : rank;  // reduced logical dims inside the buffers
    std::vector<int64_t> red;                   // the buffered reduced logical dims, outermost first
    for (size_t d = a.dims.size() - size_t(view_rank); d < a.dims.size(); ++d)
      red.push_back(as_int(a.dims[d].size, "reduced dimension"));
    // Buffer element strides of the reduced dims (row-major over [red.., rows, cols] of blocks).
    auto red_strides = [&](int64_t block_elems) {
      std::vector<int64_t> s(red.size());
      int64_t acc = block_elems;
      for (size_t d = red.size(); d-- > 0;) {
        s[d] = acc;
        acc *= red[d];
      }
      return s;
    };
    // Views walk (i, j, reduced.., k).
    std::vector<int64_t> shape = {mb, nb};
    shape.insert(shape.end(), red.begin(), red.end());
    shape.push_back(kb);
    std::vector<int64_t> sa = {kb, 0}, sb;
    for (int64_t s : red_strides(mb * kb)) sa.push_back(s);
    sa.push_back(1);
    sb = transposed ? std::vector<int64_t>{0, kb} : std::vector<int64_t>{0, 1};
    for (int64_t s : red_strides(kb * nb)) sb.push_back(s);
    sb.push_back(transposed ? 1 : nb);
    auto view = [&](const Rep& r, const std::string& tag, const std::vector<int64_t>& stride) {
      return replay(r.ref, view_rank + 2, tag,
                    {{param::kStride.name, int_list(stride)}, {param::kOutShape.name, int_list(shape)}});
    };
    const std::string av = view(ra, "a", sa), bv = view(rb, "b", sb);
    // One Accum over (reduced.., k) of block products: its fp32 accumulator (per output block)
    // takes the products in the logical k order, so the sums are those of the logical matmul,
    // bit for bit.
    NodeSpec acc = n;
    acc.op = op_name(OpKind::kAccum);
    acc.params = {{param::kFn.name, accum_fn}, {param::kRank.name, std::to_string(view_rank + 1)}};
    if (bank) {  // [.., C, i, j, k]: k and C reduced around the (i, j) bank
      acc.params[param::kRank.name] = "2";
      acc.params[param::kBankRank.name] = "2";
    }
    acc.inputs = {{"in0", av}, {"in1", bv}};
    const Geo og{ra.geo.tr, tn, mb, nb};
    emit(acc);
    set_blocked(n.name + ".out", Rep{Rep::kBlocked, n.name + ".out", og, false});
  }

  const Graph& g_;
  int64_t T_;
  DowntileOptions opt_;
  SymbolTable syms_;
  shape::GraphTypes types_;
  std::map<std::string, const NodeSpec*> index_;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> consumers_;  // stream -> (node, port)

  // The nodes on a cycle (a strongly connected component of more than one node, or a node reading
  // itself).
  std::set<std::string> cyclic_;

  Graph out_;  // typed in syms_ too: a node copied keeps its symbols
  shape::GraphTypes out_types_;
  std::map<std::string, size_t> out_index_;
  std::set<std::string> used_;
  // Each stream of the input graph ("node.port") in the output graph: at its logical tiles, in
  // blocks (or, carrying no tiles, the same ref in both).
  std::map<std::string, std::string> logical_;
  std::map<std::string, Rep> blocked_;
  std::map<std::string, int64_t> ref_blocks_;  // a stream of blocks in the output graph: blocks per tile
  DowntileResult res_;

  const NodeSpec* cur_ = nullptr;             // the node being rewritten
  std::vector<std::string>* sink_ = nullptr;  // where emitted node names are recorded
  int64_t node_blocks_ = 1;                   // the blocks of the node's tiles (its FIFO depths)
};

}  // namespace

DowntileResult downtile_graph(const Graph& g, int64_t T, const DowntileOptions& options) {
  return Downtiler(g, T, options).run();
}

Graph downtile(const Graph& g, int64_t T) { return downtile_graph(g, T, DowntileOptions{}).graph; }

}  // namespace stepsim
