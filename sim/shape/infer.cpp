#include "sim/shape/infer.h"

#include "sim/graph/node_index.h"
#include "sim/graph/ports.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "hw/ops/op.h"
#include "hw/stream/number_text.h"

namespace stepsim::shape {

using namespace GiNaC;

// ---- SymbolTable ---------------------------------------------------------------------------

symbol SymbolTable::get(const std::string& name) {
  auto it = syms_.find(name);
  if (it != syms_.end()) return it->second;
  symbol s(name);
  syms_.emplace(name, s);
  return s;
}

exmap SymbolTable::substitution() const {
  exmap m;
  for (const auto& [name, v] : values_) {
    auto it = syms_.find(name);
    if (it != syms_.end()) m[it->second] = v;
  }
  return m;
}

std::vector<std::string> SymbolTable::names() const {
  std::vector<std::string> v;
  for (const auto& kv : syms_) v.push_back(kv.first);
  return v;
}

namespace {

// GiNaC's message without its position (always line 0, column 0) and its source location.
std::string ginac_reason(const std::string& what) {
  std::string r = what.substr(0, what.find('\n'));
  const std::string prefix = "GiNaC: parse error at ";
  if (r.rfind(prefix, 0) == 0) {
    const size_t colon = r.find(": ", prefix.size());
    if (colon != std::string::npos) r = r.substr(colon + 2);
  }
  return r;
}

// The number of arguments of the call whose '(' is at text[open]: top-level commas + 1, 0 for
// "()"; SIZE_MAX when the parenthesis is not closed (GiNaC then reports it).
size_t call_arguments(const std::string& text, size_t open) {
  size_t depth = 0, commas = 0;
  bool empty = true;
  for (size_t i = open; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '(') ++depth;
    else if (c == ')' && --depth == 0) return empty ? 0 : commas + 1;
    else if (c == ',' && depth == 1) ++commas;
    if (depth >= 1 && i > open && c != ' ') empty = false;
  }
  return SIZE_MAX;
}

// GiNaC's parser calls a function it knows by name with whatever arguments it found (ceil_div()
// would be evaluated on no arguments at all): a call must match a function's arity first.
void check_call(const std::string& text, const std::string& name, size_t open) {
  const size_t args = call_arguments(text, open);
  if (args == SIZE_MAX) return;
  try {
    (void)function::find_function(name, unsigned(args));
  } catch (const std::exception&) {
    refuse_expression(text, "no function " + name + " of " + std::to_string(args) + " argument" +
                                (args == 1 ? "" : "s") + " (ceil_div(a, b) takes 2)");
  }
}

}  // namespace

ex SymbolTable::parse(const std::string& text) {
  check_expression_text(text);
  // Collect identifiers first so that every name maps to this table's symbol.
  symtab table;
  for (size_t i = 0; i < text.size();) {
    if (std::isalpha(static_cast<unsigned char>(text[i])) || text[i] == '_') {
      size_t j = i;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
      const std::string id = text.substr(i, j - i);
      size_t k = j;
      while (k < text.size() && text[k] == ' ') ++k;
      if (k >= text.size() || text[k] != '(')
        table[id] = get(id);
      else
        check_call(text, id, k);  // "f(" is a function (ceil_div)
      i = j;
    } else {
      ++i;
    }
  }
  try {
    parser reader(table);
    reader.strict = true;
    return reader(text);
  } catch (const std::exception& e) {
    refuse_expression(text, ginac_reason(e.what()));
  }
}

// ---- RuleContext ---------------------------------------------------------------------------

namespace {

Params params_of(const RuleContext& c) {
  const OpInfo& info = OpRegistry::instance().find(c.node.op);
  return Params(info.name, c.node.name, &info.params, c.node.params);
}

}  // namespace

Params RuleContext::params() const { return params_of(*this); }
int64_t RuleContext::get_int(const std::string& k) const { return params_of(*this).get_int(k); }
std::vector<int64_t> RuleContext::get_ints(const std::string& k) const { return params_of(*this).get_ints(k); }
std::string RuleContext::get_string(const std::string& k) const { return params_of(*this).get_string(k); }

const StreamType& RuleContext::input(const std::string& port) const {
  auto it = in.find(port);
  if (it == in.end()) fail("input '" + port + "' is not connected");
  return it->second;
}

std::vector<const StreamType*> RuleContext::numbered(const std::string& base) const {
  std::vector<const StreamType*> v;
  for (size_t i = 0;; ++i) {
    auto it = in.find(base + std::to_string(i));
    if (it == in.end()) break;
    v.push_back(&it->second);
  }
  return v;
}

ex RuleContext::fresh(const std::string& port, const std::string& suffix) const {
  std::string n = "n_" + node.name + "_" + port + (suffix.empty() ? "" : "_" + suffix);
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return syms.get(n);
}

void RuleContext::fail(const std::string& msg) const {
  throw ShapeError("node '" + node.name + "' (" + node.op + "): " + msg);
}

// ---- Declared types ------------------------------------------------------------------------

StreamType parse_stream_type(const std::string& text, SymbolTable& syms) {
  const std::string bad = "cannot read stream type '" + text + "' (expected e.g. \"[1, 64] of selector\")";
  const size_t open = text.find('['), close = text.find(']'), of = text.find(" of ");
  if (open != 0 || close == std::string::npos || of == std::string::npos || of < close)
    throw std::invalid_argument(bad);
  StreamType t;
  std::string dims = text.substr(1, close - 1);
  for (size_t start = 0; start <= dims.size();) {
    size_t comma = dims.find(',', start);
    if (comma == std::string::npos) comma = dims.size();
    std::string d = dims.substr(start, comma - start);
    d.erase(0, d.find_first_not_of(' '));
    d.erase(d.find_last_not_of(' ') + 1);
    if (d.empty()) throw std::invalid_argument(bad);
    const bool ragged = d.back() == '~';
    if (ragged) d.pop_back();
    const ex size = syms.parse(d);
    t.dims.push_back(Dim{size, ragged ? DimKind::Ragged : is_a<numeric>(size) ? DimKind::Static : DimKind::Dynamic});
    start = comma + 1;
  }
  const std::string e = text.substr(of + 4);
  if (e == "selector")
    t.elem = ElemType::selector();
  else if (e == "scalar")
    t.elem = ElemType::scalar();
  else if (e.rfind("T[", 0) == 0 && e.back() == ']') {
    const size_t x = e.find('x'), colon = e.find(':');
    if (x == std::string::npos || colon == std::string::npos) throw std::invalid_argument(bad);
    t.elem = ElemType::tile(syms.parse(e.substr(2, x - 2)), syms.parse(e.substr(x + 1, colon - x - 1)),
                            parse_dtype(e.substr(colon + 1, e.size() - colon - 2)));
  } else {
    throw std::invalid_argument(bad);
  }
  return t;
}

// ---- Literal streams -----------------------------------------------------------------------

ElemType elem_type_of(const Element& e) {
  if (e.is_tile()) return ElemType::tile(int64_t(e.tile().rows), int64_t(e.tile().cols), e.tile().dtype);
  if (e.is_selector()) return ElemType::selector();
  if (e.is_tuple()) {
    ElemType t;
    t.kind = ElemType::Tuple;
    for (const Element& m : *e.tuple()) t.members.push_back(elem_type_of(m));
    return t;
  }
  if (e.is_buffer()) {
    ElemType t;
    t.kind = ElemType::Buffer;
    for (int64_t d : e.buffer()->shape) t.buffer_dims.push_back(Dim::fixed(std::max<int64_t>(d, 0)));
    t.members.push_back(ElemType::scalar());
    for (const Beat& b : e.buffer()->beats)
      if (b.has_elem) {
        t.members[0] = elem_type_of(b.elem);
        break;
      }
    return t;
  }
  return ElemType::scalar();
}

StreamType literal_type(const std::vector<Beat>& beats) {
  int rank = 0;
  for (const Beat& b : beats) rank = std::max(rank, int(b.stop));
  const std::vector<Token> toks = to_tokens(beats);
  ObservedShape obs = observe_shape(toks, rank);
  // Totals per dimension: elements (dim 0), and units closed by a stop >= k (dim k).
  std::vector<int64_t> total(size_t(rank) + 1, 0);
  for (const Beat& b : beats) {
    if (b.has_elem) ++total[0];
    for (int k = 1; k <= std::min(int(b.stop), rank); ++k) ++total[size_t(k)];
  }
  StreamType t;
  for (size_t i = 0; i < obs.dims.size(); ++i) {
    const size_t k = obs.dims.size() - 1 - i;
    if (obs.dims[i] >= 0)
      t.dims.push_back(Dim::fixed(obs.dims[i]));
    else
      t.dims.push_back(Dim{ex(total[k]), DimKind::Ragged});
  }
  t.elem = ElemType::scalar();
  for (const Beat& b : beats)
    if (b.has_elem) {
      t.elem = elem_type_of(b.elem);
      break;
    }
  return t;
}

// ---- Inference -----------------------------------------------------------------------------

namespace {

// Nodes by name: through the index of the whole graph, through the caller's lookup where one
// node's inputs are looked up (type_last_node: the C++ frontend adds the nodes one at a time and
// keeps its own index; one built per node would cost n), or by a scan.
struct Nodes {
  const Graph& g;
  const NodeIndex* index = nullptr;
  const NodeLookup* lookup = nullptr;
  const NodeSpec* find(std::string_view name) const {
    if (index) return index->find(name);
    if (lookup && *lookup) {
      ++graph_pass_steps;
      return (*lookup)(std::string(name));
    }
    graph_pass_steps += g.nodes.size();  // the scan's cost, for the tests of big graphs
    return g.find(std::string(name));
  }
};

// "node" -> "node.<its first output>", numbered as "<base>0".
std::string normalise_ref(const Nodes& nodes, const std::string& ref, const std::string& where) {
  const size_t dot = ref.find('.');
  const std::string node = ref.substr(0, dot);
  const NodeSpec* n = nodes.find(node);
  if (!n) throw ShapeError(where + " reads unknown node '" + node + "'");
  if (dot != std::string::npos) return ref;
  const OpInfo& info = OpRegistry::instance().find(n->op);
  if (info.outputs.empty()) throw ShapeError(where + " reads '" + node + "', which has no outputs");
  return node + "." + (is_numbered(info.outputs[0]) ? port_base(info.outputs[0]) + "0" : info.outputs[0].name);
}

// The producers of every node and the numbered outputs read, by node position (g.nodes).
struct Topology {
  std::vector<std::map<std::string, std::string>> producers;  // port -> "src.port"
  std::vector<std::vector<size_t>> sources;                   // positions of the producers, one per input
  std::vector<size_t> numbered_outs;
};

// One more than the number k of numbered output "<base>k" of `info` that `sport` names (0 if none).
size_t numbered_output_count(const OpInfo& info, const std::string& sport) {
  for (const PortSpec& p : info.outputs)
    if (is_numbered(p) && sport.rfind(port_base(p), 0) == 0 && sport.size() > port_base(p).size() &&
        std::all_of(sport.begin() + long(port_base(p).size()), sport.end(), ::isdigit))
      return std::stoul(sport.substr(port_base(p).size())) + 1;  // < 256: the loader checked
  return 0;
}

Topology topology(const Graph& g, const NodeIndex& index) {
  const OpRegistry& reg = OpRegistry::instance();
  Topology t;
  t.producers.resize(g.nodes.size());
  t.sources.resize(g.nodes.size());
  t.numbered_outs.assign(g.nodes.size(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const NodeSpec& n = g.nodes[k];
    const std::string where = "node '" + n.name + "' (" + n.op + ") input";
    for (const auto& [port, ref] : n.inputs) {
      const std::string r = normalise_ref(Nodes{g, &index}, ref, where + " '" + port + "'");
      t.producers[k][port] = r;
      const size_t src = index.position(std::string_view(r).substr(0, r.find('.')));
      t.sources[k].push_back(src);
      t.numbered_outs[src] =
          std::max(t.numbered_outs[src], numbered_output_count(reg.find(g.nodes[src].op), r.substr(r.find('.') + 1)));
    }
    if (n.num_outputs) t.numbered_outs[k] = std::max(t.numbered_outs[k], *n.num_outputs);
  }
  return t;
}

// Producers of node `n`'s inputs: port -> "src.port".
// A ref to a node in `forward` (declared, not built yet) is taken as given ("node.port").
std::map<std::string, std::string> producers_of(const Nodes& nodes, const NodeSpec& n,
                                                const std::set<std::string>& forward) {
  std::map<std::string, std::string> m;
  for (const auto& [port, ref] : n.inputs)
    m[port] = forward.count(ref.substr(0, ref.find('.')))
                  ? ref
                  : normalise_ref(nodes, ref, "node '" + n.name + "' (" + n.op + ") input '" + port + "'");
  return m;
}

// Literal beats reaching `ref` through Sources and Broadcasts, or nullptr.
const std::vector<Beat>* literal_of(const Nodes& nodes, const std::string& ref) {
  const NodeSpec* n = nodes.find(std::string_view(ref).substr(0, ref.find('.')));
  if (!n) return nullptr;  // a node declared ahead (a cycle)
  if (n->is(OpKind::kSource)) {
    auto it = nodes.g.streams.find(n->params.count(param::kStream.name) ? n->params.at(param::kStream.name) : "");
    return it == nodes.g.streams.end() ? nullptr : &it->second;
  }
  if (n->is(OpKind::kBroadcast) && n->inputs.count("in"))
    return literal_of(nodes, normalise_ref(nodes, n->inputs.at("in"), n->name));
  return nullptr;
}

// Types node `n`, whose producers are all typed in `out`; `numbered` = its numbered outputs.
// How deep tuples and buffers nest in an element (0: a tile, scalar or selector). An operator
// copies and prints its elements recursively on a small fiber stack, so a chain of Zips must not
// nest them without bound (the parser holds literals to the same limit).
int element_depth(const ElemType& e) {
  int deepest = 0;
  for (const ElemType& m : e.members) deepest = std::max(deepest, element_depth(m));
  return e.members.empty() && e.kind != ElemType::Tuple && e.kind != ElemType::Buffer ? 0 : deepest + 1;
}

void type_node(const Nodes& nodes, const std::map<std::string, std::string>& prods, size_t numbered, const NodeSpec& n,
               SymbolTable& syms, GraphTypes& out) {
  const Graph& g = nodes.g;
  RuleContext c{n, g, syms, {}, prods, std::max<size_t>(numbered, 1), nullptr};
  c.literal_input = [&](const std::string& port) -> const std::vector<Beat>* {
    auto it = c.producers.find(port);
    return it == c.producers.end() ? nullptr : literal_of(nodes, it->second);
  };
  for (const auto& [port, ref] : prods) {
    const std::string src = ref.substr(0, ref.find('.')), sport = ref.substr(ref.find('.') + 1);
    const auto& outs = out.nodes[src].outputs;
    auto it = outs.find(sport);
    if (it == outs.end())
      throw ShapeError("node '" + n.name + "' (" + n.op + ") input '" + port + "' reads '" + ref + "', but " +
                       nodes.find(src)->op + " '" + src + "' has no output '" + sport + "'");
    c.in[port] = it->second;
  }
  const ShapeRule* rule = find_shape_rule(n.op);
  if (!rule) throw ShapeError("node '" + n.name + "': no shape rule for operator " + n.op);
  RuleResult res;
  try {
    res = (*rule)(c);
  } catch (const ShapeError&) {
    throw;
  } catch (const std::invalid_argument& e) {  // parameter errors from Params
    throw ShapeError(std::string(e.what()));
  }
  // Declared sizes.
  for (const auto& [port, sizes] : n.dims) {
    auto it = res.outputs.find(port);
    if (it == res.outputs.end()) c.fail("dims: no output '" + port + "'");
    StreamType& t = it->second;
    if (sizes.size() != t.dims.size())
      c.fail("dims: output '" + port + "' is " + t.str() + " (" + std::to_string(t.dims.size()) + " dims), " +
             std::to_string(sizes.size()) + " sizes given");
    for (size_t i = 0; i < sizes.size(); ++i) {
      try {
        if (!sizes[i].empty()) t.dims[i].size = syms.parse(sizes[i]);
      } catch (const std::invalid_argument& e) {
        c.fail("dims: output '" + port + "' size " + std::to_string(i) + ": " + e.what());
      }
    }
  }
  for (const auto& [port, t] : res.outputs)
    if (element_depth(t.elem) > kMaxElementDepth)
      c.fail("output '" + port + "' has elements nested " + std::to_string(element_depth(t.elem)) +
             " deep (tuples and buffers nest at most " + std::to_string(kMaxElementDepth) + " deep)");
  NodeTypes& nt = out.nodes[n.name];
  nt.inputs = c.in;
  nt.outputs = res.outputs;
  nt.producers = c.producers;
  nt.flops = res.flops;
  out.order.push_back(n.name);
}

// The order nodes are typed in: passes over the file order, each typing every node whose
// producers are typed (or typed ahead) by the time the pass comes to it; after a pass that types
// nothing, the first waiting node that declares its output types is typed ahead. This order is
// kept exactly (the rules make symbols as they go, and their order shows in printed
// expressions), but a node is looked at when its last producer is done, not once per pass: a
// chain listed consumers first would otherwise take as many passes as it has nodes.
class TypingOrder {
 public:
  explicit TypingOrder(const Topology& topo) : pending_(topo.sources.size(), 0), consumers_(topo.sources.size()) {
    for (size_t k = 0; k < topo.sources.size(); ++k)
      for (size_t src : topo.sources[k]) {
        consumers_[src].push_back(k);
        ++pending_[k];
      }
    for (size_t k = 0; k < pending_.size(); ++k)
      if (pending_[k] == 0) this_pass_.insert(k);
  }
  // The next node to type, or npos when none is ready (a cycle: type one ahead, or give up).
  size_t next() {
    if (this_pass_.empty()) this_pass_.swap(next_pass_);
    if (this_pass_.empty()) return NodeIndex::npos;
    ++graph_pass_steps;
    cursor_ = *this_pass_.begin();
    this_pass_.erase(this_pass_.begin());
    return cursor_;
  }
  // Node k is typed, or typed ahead: its consumers may be ready (once per node). A consumer
  // after the cursor comes in this pass, one before it in the next.
  void release(size_t k) {
    for (size_t c : consumers_[k])
      if (--pending_[c] == 0) (c > cursor_ || cursor_ == NodeIndex::npos ? this_pass_ : next_pass_).insert(c);
  }
  // A node typed ahead starts a new pass (from the first node).
  void start_pass() { cursor_ = NodeIndex::npos; }

 private:
  std::vector<size_t> pending_;                 // inputs whose producer is not typed yet, per node
  std::vector<std::vector<size_t>> consumers_;  // per node: the nodes reading it, once per input
  std::set<size_t> this_pass_, next_pass_;      // nodes ready, by position
  size_t cursor_ = NodeIndex::npos;             // the node being typed
};

// The output types node `n` declares (`types:`), for typing it ahead.
void type_ahead(const NodeSpec& n, SymbolTable& syms, GraphTypes& out) {
  for (const auto& [port, text] : n.types) {
    try {
      out.nodes[n.name].outputs[port] = parse_stream_type(text, syms);
    } catch (const std::invalid_argument& e) {
      throw ShapeError("node '" + n.name + "' (" + n.op + ") types." + port + ": " + e.what());
    }
  }
}

// The real type of a node typed ahead must be the declared one.
void check_declared(const NodeSpec& n, const std::map<std::string, StreamType>& declared, SymbolTable& syms,
                    const GraphTypes& out) {
  for (const auto& [port, want] : declared) {
    StreamType a = out.nodes.at(n.name).outputs.at(port), b = want;
    for (StreamType* t : {&a, &b})
      for (Dim& d : t->dims) d.size = d.size.subs(syms.substitution()).expand();
    const std::string diff = difference(a, b);
    if (!diff.empty())
      throw ShapeError("node '" + n.name + "' (" + n.op + ") output '" + port + "' is " +
                       out.nodes.at(n.name).outputs.at(port).str() + ", but its types: declares " + want.str() + " (" +
                       diff + ")");
  }
}

[[noreturn]] void throw_untypable(const Graph& g, const std::vector<bool>& done) {
  std::string names;
  size_t left = 0;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (!done[k] && left++ < 8) names += (names.empty() ? "" : ", ") + g.nodes[k].name;
  if (left > 8) names += " and " + std::to_string(left - 8) + " more";
  throw UntypableGraph("shape inference cannot order the nodes " + names +
                       ": they form a cycle (or read one); cyclic graphs are typed only by the simulator");
}

}  // namespace

void type_last_node(const Graph& g, SymbolTable& syms, GraphTypes& types, const std::set<std::string>& forward,
                    const NodeLookup& find) {
  if (g.nodes.empty()) return;
  const NodeSpec& n = g.nodes.back();  // nothing reads it yet: its numbered outputs are declared
  const Nodes nodes{g, nullptr, &find};
  type_node(nodes, producers_of(nodes, n, forward), n.num_outputs.value_or(1), n, syms, types);
}

GraphTypes infer_types(const Graph& g, SymbolTable& syms) {
  for (const auto& [name, value] : g.symbols) {
    try {
      syms.set_value(name, syms.parse(value));
    } catch (const std::invalid_argument& e) {
      throw ShapeError((g.source.empty() ? "" : g.source + ": ") + "symbol '" + name + "': " + e.what());
    }
  }
  const NodeIndex index(g);
  if (index.duplicate()) throw ShapeError("node name '" + *index.duplicate() + "' is used twice");
  const Topology topo = topology(g, index);
  GraphTypes out;
  std::vector<bool> done(g.nodes.size(), false), seeded(g.nodes.size(), false);
  TypingOrder order(topo);
  size_t typed = 0, next_seed = 0;  // nodes before next_seed are done or typed ahead, or declare no types
  while (typed < g.nodes.size()) {
    const size_t k = order.next();
    if (k == NodeIndex::npos) {  // a cycle: type ahead the first waiting node that declares its types
      while (next_seed < g.nodes.size() && (done[next_seed] || seeded[next_seed] || g.nodes[next_seed].types.empty()))
        ++next_seed;
      if (next_seed == g.nodes.size()) throw_untypable(g, done);
      type_ahead(g.nodes[next_seed], syms, out);
      seeded[next_seed] = true;
      order.start_pass();
      order.release(next_seed);
      continue;
    }
    const NodeSpec& n = g.nodes[k];
    std::map<std::string, StreamType> declared;
    if (seeded[k]) declared = out.nodes[n.name].outputs;
    type_node(Nodes{g, &index}, topo.producers[k], topo.numbered_outs[k], n, syms, out);
    check_declared(n, declared, syms, out);
    done[k] = true;
    ++typed;
    if (!seeded[k]) order.release(k);
  }
  return out;
}

}  // namespace stepsim::shape
