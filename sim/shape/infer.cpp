#include "sim/shape/infer.h"

#include "sim/graph/ports.h"

#include <algorithm>
#include <set>

#include "hw/ops/op.h"

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

ex SymbolTable::parse(const std::string& text) {
  // Collect identifiers first so that every name maps to this table's symbol.
  symtab table;
  for (size_t i = 0; i < text.size();) {
    if (std::isalpha(static_cast<unsigned char>(text[i])) || text[i] == '_') {
      size_t j = i;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
      const std::string id = text.substr(i, j - i);
      size_t k = j;
      while (k < text.size() && text[k] == ' ') ++k;
      if (k >= text.size() || text[k] != '(') table[id] = get(id);  // "f(" is a function (ceil_div)
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
    throw std::invalid_argument("cannot parse expression '" + text + "': " + e.what());
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

// "node" -> "node.<its first output>", numbered as "<base>0".
std::string normalise_ref(const Graph& g, const std::string& ref, const std::string& where) {
  const size_t dot = ref.find('.');
  const std::string node = ref.substr(0, dot);
  const NodeSpec* n = g.find(node);
  if (!n) throw ShapeError(where + " reads unknown node '" + node + "'");
  if (dot != std::string::npos) return ref;
  const OpInfo& info = OpRegistry::instance().find(n->op);
  if (info.outputs.empty()) throw ShapeError(where + " reads '" + node + "', which has no outputs");
  return node + "." + (is_numbered(info.outputs[0]) ? port_base(info.outputs[0]) + "0" : info.outputs[0].name);
}

}  // namespace

namespace {

struct Topology {
  std::map<std::string, std::map<std::string, std::string>> producers;  // node -> port -> "src.port"
  std::map<std::string, size_t> numbered_outs;
};

Topology topology(const Graph& g) {
  const OpRegistry& reg = OpRegistry::instance();
  Topology t;
  for (const NodeSpec& n : g.nodes) {
    const std::string where = "node '" + n.name + "' (" + n.op + ") input";
    for (const auto& [port, ref] : n.inputs) {
      const std::string r = normalise_ref(g, ref, where + " '" + port + "'");
      t.producers[n.name][port] = r;
      const std::string src = r.substr(0, r.find('.')), sport = r.substr(r.find('.') + 1);
      const OpInfo& si = reg.find(g.find(src)->op);
      for (const PortSpec& p : si.outputs)
        if (is_numbered(p) && sport.rfind(port_base(p), 0) == 0 && sport.size() > port_base(p).size() &&
            std::all_of(sport.begin() + long(port_base(p).size()), sport.end(), ::isdigit)) {
          const size_t idx = std::stoul(sport.substr(port_base(p).size()));  // < 256: the loader checked
          t.numbered_outs[src] = std::max(t.numbered_outs[src], idx + 1);
        }
    }
    if (n.num_outputs) t.numbered_outs[n.name] = std::max(t.numbered_outs[n.name], *n.num_outputs);
  }
  return t;
}

// Producers of node `n`'s inputs: port -> "src.port".
// A ref to a node in `forward` (declared, not built yet) is taken as given ("node.port").
std::map<std::string, std::string> producers_of(const Graph& g, const NodeSpec& n,
                                                const std::set<std::string>& forward) {
  std::map<std::string, std::string> m;
  for (const auto& [port, ref] : n.inputs)
    m[port] = forward.count(ref.substr(0, ref.find('.')))
                  ? ref
                  : normalise_ref(g, ref, "node '" + n.name + "' (" + n.op + ") input '" + port + "'");
  return m;
}

// Literal beats reaching `ref` through Sources and Broadcasts, or nullptr.
const std::vector<Beat>* literal_of(const Graph& g, const std::string& ref) {
  const NodeSpec* n = g.find(ref.substr(0, ref.find('.')));
  if (!n) return nullptr;  // a node declared ahead (a cycle)
  if (n->is(OpKind::kSource)) {
    auto it = g.streams.find(n->params.count("stream") ? n->params.at("stream") : "");
    return it == g.streams.end() ? nullptr : &it->second;
  }
  if (n->is(OpKind::kBroadcast) && n->inputs.count("in"))
    return literal_of(g, normalise_ref(g, n->inputs.at("in"), n->name));
  return nullptr;
}

// Types node `n`, whose producers are all typed in `out`; `numbered` = its numbered outputs.
void type_node(const Graph& g, const std::map<std::string, std::string>& prods, size_t numbered, const NodeSpec& n,
               SymbolTable& syms, GraphTypes& out) {
  RuleContext c{n, g, syms, {}, prods, std::max<size_t>(numbered, 1), nullptr};
  c.literal_input = [&](const std::string& port) -> const std::vector<Beat>* {
    auto it = c.producers.find(port);
    return it == c.producers.end() ? nullptr : literal_of(g, it->second);
  };
  for (const auto& [port, ref] : prods) {
    const std::string src = ref.substr(0, ref.find('.')), sport = ref.substr(ref.find('.') + 1);
    const auto& outs = out.nodes[src].outputs;
    auto it = outs.find(sport);
    if (it == outs.end())
      throw ShapeError("node '" + n.name + "' (" + n.op + ") input '" + port + "' reads '" + ref + "', but " +
                       g.find(src)->op + " '" + src + "' has no output '" + sport + "'");
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
    for (size_t i = 0; i < sizes.size(); ++i)
      if (!sizes[i].empty()) t.dims[i].size = syms.parse(sizes[i]);
  }
  NodeTypes& nt = out.nodes[n.name];
  nt.inputs = c.in;
  nt.outputs = res.outputs;
  nt.producers = c.producers;
  nt.flops = res.flops;
  out.order.push_back(n.name);
}

}  // namespace

void type_last_node(const Graph& g, SymbolTable& syms, GraphTypes& types, const std::set<std::string>& forward) {
  if (g.nodes.empty()) return;
  const NodeSpec& n = g.nodes.back();  // nothing reads it yet: its numbered outputs are declared
  type_node(g, producers_of(g, n, forward), n.num_outputs.value_or(1), n, syms, types);
}

GraphTypes infer_types(const Graph& g, SymbolTable& syms) {
  for (const auto& [name, value] : g.symbols) syms.set_value(name, syms.parse(value));
  const Topology topo = topology(g);
  GraphTypes out;
  std::set<std::string> done;
  std::set<std::string> seeded;  // nodes typed ahead from their declared types (a cycle's back edge)
  while (done.size() < g.nodes.size()) {
    bool progressed = false;
    for (const NodeSpec& n : g.nodes) {
      if (done.count(n.name)) continue;
      bool ready = true;
      auto pit = topo.producers.find(n.name);
      if (pit != topo.producers.end())
        for (const auto& [port, ref] : pit->second) {
          const std::string src = ref.substr(0, ref.find('.'));
          if (!done.count(src) && !seeded.count(src)) ready = false;
        }
      if (!ready) continue;
      std::map<std::string, StreamType> declared;
      if (seeded.count(n.name)) declared = out.nodes[n.name].outputs;
      static const std::map<std::string, std::string> none;
      auto nit = topo.numbered_outs.find(n.name);
      type_node(g, pit == topo.producers.end() ? none : pit->second, nit == topo.numbered_outs.end() ? 0 : nit->second,
                n, syms, out);
      for (const auto& [port, want] : declared) {  // the real type must be the declared one
        StreamType a = out.nodes[n.name].outputs.at(port), b = want;
        for (StreamType* t : {&a, &b})
          for (Dim& d : t->dims) d.size = d.size.subs(syms.substitution()).expand();
        const std::string diff = difference(a, b);
        if (!diff.empty())
          throw ShapeError("node '" + n.name + "' (" + n.op + ") output '" + port + "' is " +
                           out.nodes[n.name].outputs.at(port).str() + ", but its types: declares " + want.str() + " (" +
                           diff + ")");
      }
      done.insert(n.name);
      progressed = true;
    }
    if (!progressed) {
      // A cycle: type ahead the first waiting node that declares its output types.
      for (const NodeSpec& n : g.nodes)
        if (!done.count(n.name) && !seeded.count(n.name) && !n.types.empty()) {
          for (const auto& [port, text] : n.types) {
            try {
              out.nodes[n.name].outputs[port] = parse_stream_type(text, syms);
            } catch (const std::invalid_argument& e) {
              throw ShapeError("node '" + n.name + "' (" + n.op + ") types." + port + ": " + e.what());
            }
          }
          seeded.insert(n.name);
          progressed = true;
          break;
        }
      if (progressed) continue;
      std::string names;
      size_t left = 0;
      for (const NodeSpec& n : g.nodes)
        if (!done.count(n.name) && left++ < 8) names += (names.empty() ? "" : ", ") + n.name;
      if (left > 8) names += " and " + std::to_string(left - 8) + " more";
      throw UntypableGraph("shape inference cannot order the nodes " + names +
                           ": they form a cycle (or read one); cyclic graphs are typed only by the simulator");
    }
  }
  return out;
}

}  // namespace stepsim::shape
