// Shape inference over a graph (paper §6: the frontend checks that producer and consumer shapes
// align): every node's output stream types from its inputs and parameters, by one rule per
// operator (sim/shape/rules.cpp), in the graph's symbols. Used by the C++ frontend
// (sim/frontend) while a graph is built, and by `stepsim analyze` / `stepsim run` on YAML files.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/graph/graph.h"
#include "sim/shape/stream_type.h"

namespace stepsim::shape {

// The graph's symbols: fresh ones for dynamic and ragged dimensions, by name, and the values
// known for some of them (from traces, the graph's `symbols:` section or --sym).
class SymbolTable {
 public:
  // The symbol called `name` (created on first use; one object per name).
  GiNaC::symbol get(const std::string& name);
  bool has(const std::string& name) const { return syms_.count(name) > 0; }
  void set_value(const std::string& name, const ex& v) { values_[name] = v; }
  // Known values as a substitution map (symbols without a value stay symbolic).
  GiNaC::exmap substitution() const;
  const std::map<std::string, ex>& values() const { return values_; }
  std::vector<std::string> names() const;
  // Parses an expression in the table's symbols ("2*n_route_out0 + 1"); unknown names become
  // new symbols. Throws std::invalid_argument on a syntax error.
  ex parse(const std::string& text);

 private:
  std::map<std::string, GiNaC::symbol> syms_;
  std::map<std::string, ex> values_;
};

// What inference knows about one node.
struct NodeTypes {
  std::map<std::string, StreamType> inputs;      // by port name ("in", "in0", "sel", ...)
  std::map<std::string, StreamType> outputs;     // by port name
  std::map<std::string, std::string> producers;  // input port -> "node.port" it reads
  ex flops = 0;                                  // FLOPs the node executes over the whole run (higher-order nodes)
};

// Everything a rule sees. Inputs are by port name; numbered ports are in0, in1, ...
struct RuleContext {
  const NodeSpec& node;
  const Graph& graph;
  SymbolTable& syms;
  std::map<std::string, StreamType> in;
  std::map<std::string, std::string> producers;  // input port -> "node.port"
  size_t num_outputs = 1;                        // numbered outputs (out0..) the node has
  // The literal beats a Source feeds into input `port` (through Broadcasts), or nullptr.
  std::function<const std::vector<Beat>*(const std::string& port)> literal_input;

  // Parameter by name with the registry's type and default.
  Params params() const;  // all of them (checks shared with the operator, e.g. make_tiled_view)
  template <class T>
  T get(ParamKey<T> key) const {
    return params().get(key);
  }
  int64_t get_int(const std::string& k) const;
  std::vector<int64_t> get_ints(const std::string& k) const;
  std::string get_string(const std::string& k) const;
  const StreamType& input(const std::string& port) const;                  // throws naming the missing port
  std::vector<const StreamType*> numbered(const std::string& base) const;  // in0, in1, ...
  bool has(const std::string& port) const { return in.count(port) > 0; }
  // A fresh symbol for output `port`'s dimension ("n_<node>_<port>", "..._<suffix>").
  ex fresh(const std::string& port, const std::string& suffix = "") const;
  [[noreturn]] void fail(const std::string& msg) const;
};

struct RuleResult {
  std::map<std::string, StreamType> outputs;
  ex flops = 0;
};
using ShapeRule = std::function<RuleResult(RuleContext&)>;

// Rules by operator name (every registered operator has one; a test checks).
const ShapeRule* find_shape_rule(const std::string& op);

// Error raised by shape inference; the message names the node(s), ports and shapes.
struct ShapeError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
// The graph is beyond what shape inference can type (a cycle without declared types), not wrong:
// `stepsim analyze` reports it, a run goes on without the static check (sim/engine/validate.h).
struct UntypableGraph : ShapeError {
  using ShapeError::ShapeError;
};

struct GraphTypes {
  std::map<std::string, NodeTypes> nodes;  // by node name
  std::vector<std::string> order;          // nodes in the order they were typed
};

// Types every node of `g` (acyclic parts in dependency order; a cycle must be broken by a
// node with declared output dims, see NodeSpec::dims). Applies the graph's `symbols:` values
// and NodeSpec::dims annotations. Throws ShapeError.
GraphTypes infer_types(const Graph& g, SymbolTable& syms);

// Types the last node of `g` (the C++ frontend adds nodes one at a time, producers first). Its
// inputs may read nodes named in `forward`: declared ahead with their types in `types` (the
// back edge of a cycle), not in `g` yet.
// `find`, when given, looks a node of `g` up by name (the builder keeps an index of its nodes);
// without it the node's inputs are found by a scan of g.nodes.
using NodeLookup = std::function<const NodeSpec*(const std::string&)>;
void type_last_node(const Graph& g, SymbolTable& syms, GraphTypes& types, const std::set<std::string>& forward = {},
                    const NodeLookup& find = {});

// Parses a stream type as StreamType::str() prints it, for the kinds a declaration needs:
// "[1, n~] of selector", "[4] of scalar", "[2, 3] of T[16x64:bf16]" (sizes are expressions in
// the table's symbols; "~" marks a ragged dimension). Throws std::invalid_argument.
StreamType parse_stream_type(const std::string& text, SymbolTable& syms);

// Shape of a literal stream (a Source): static sizes, ragged dims with their concrete sums.
StreamType literal_type(const std::vector<Beat>& beats);

// The element type of a concrete element.
ElemType elem_type_of(const Element& e);

}  // namespace stepsim::shape
