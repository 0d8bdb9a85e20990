// The C++ frontend (paper §6, mirroring the authors' Python one): building a graph returns
// streams with symbolic shapes. Every node is shape-checked when it is added, so a mismatch
// between producer and consumer is an error at construction that names both ends and both
// shapes; shapes can be printed; a new dynamic dimension can be given a known expression. The
// result is an ordinary Graph: run it with simulate(), write it with write_graph() (YAML) and
// read it back with load_graph().
//
//   GraphBuilder b("expert");
//   b.tensor("x", 64, 256);  b.tensor("w", 256, 512);  b.output_tensor("y", 64, 512);
//   Stream x = b.load("x_load", "x", {16, 256});                   // [1, 4, 1] of T[16x256:bf16]
//   Stream w = b.load("w_load", "w", {256, 64}, {}, {}, x);         // [1, 4, 1, 1, 8] of T[256x64]
//   ...
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/graph/graph.h"
#include "sim/shape/infer.h"

namespace stepsim::frontend {

class GraphBuilder;

// One output port of a node, with its type.
class Stream {
 public:
  Stream() = default;
  const shape::StreamType& type() const;
  std::string shape() const { return type().str(); }
  const std::string& node() const { return node_; }
  const std::string& port() const { return port_; }
  std::string ref() const { return node_ + "." + port_; }
  // Gives dimension `dim` (outermost first) the known size `expr` (in the graph's symbols), for
  // this stream and everything built from it.
  Stream& set_dim(size_t dim, const std::string& expr);
  Stream& set_dim(size_t dim, const shape::ex& size) { return set_dim(dim, shape::to_string(size)); }

 private:
  friend class GraphBuilder;
  Stream(GraphBuilder* b, std::string node, std::string port) : b_(b), node_(std::move(node)), port_(std::move(port)) {}
  GraphBuilder* b_ = nullptr;
  std::string node_, port_;
};

using Inputs = std::vector<std::pair<std::string, Stream>>;  // port -> producer
using ParamMap = std::map<std::string, std::string>;

struct NodeOptions {
  std::optional<uint64_t> compute_bw;  // FLOPs/cycle
  std::optional<uint32_t> depth;       // FIFO depth of the node's outputs
  std::optional<size_t> num_outputs;   // numbered outputs (out0..)
  std::string impl;                    // approx | hls | rtl ("": the graph's default)
};

// "[1, 2]" from {1, 2}.
std::string int_list(const std::vector<int64_t>& v);

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name, std::string description = "");
  // A builder that goes on from an existing graph (a file, a layer of the library): its nodes are
  // typed again (throws shape::ShapeError, as analyze would). A graph inference cannot type (a
  // cycle without declared types) is taken as it is: its streams have no types, and adding a node
  // that reads one fails naming the reason.
  static GraphBuilder from_graph(Graph g);

  // Node names, literal/trace stream names and the nodes named in forward/set_depth/
  // set_compute_bw get this prefix from now on (tensors and symbols are global), so that layers
  // can be composed into one graph without name clashes, e.g. "attn_" then "moe_".
  void set_prefix(std::string prefix) { prefix_ = std::move(prefix); }
  const std::string& prefix() const { return prefix_; }

  // ---- Declarations.
  // Tensors declared from now on are stored in [rows x cols] blocks (OffChipTensor); 0 x 0 is
  // row-major (the default).
  void set_tensor_block(uint64_t rows, uint64_t cols) {
    block_rows_ = rows;
    block_cols_ = cols;
  }
  void tensor(const std::string& name, uint64_t rows, uint64_t cols, DType dtype = DType::BF16,
              uint64_t seed = 1);  // random init
  void output_tensor(const std::string& name, uint64_t rows, uint64_t cols, DType dtype = DType::BF16);
  // Any declaration (init zeros, random, file or output). Throws std::invalid_argument for a
  // duplicate name or an empty shape.
  void declare_tensor(const TensorSpec& t);
  void set_impl(std::string impl);  // the graph's default (docs/cosim.md): approx, hls or rtl
  // The tokens one run processes (Graph::tokens: the report's energy per token); 0 = not known.
  void set_tokens(uint64_t tokens) { g_.tokens = tokens; }
  void literal_stream(const std::string& name, const std::string& tokens);  // "1 2 S1 D"
  // A stream from a trace file, as a graph's streams: entry (YAML flow text), e.g.
  // "{trace: 'shared:traces/moe/x.csv', kind: selector, rank: 1}". base_dir resolves relative paths.
  void trace_stream(const std::string& name, const std::string& yaml_spec, const std::string& base_dir = ".");
  void symbol(const std::string& name, const std::string& value);

  // ---- Any operator: adds node `name` and types it (throws shape::ShapeError naming both
  // ends). Returns the node's outputs by port name.
  std::map<std::string, Stream> add(const std::string& name, const std::string& op, const ParamMap& params,
                                    const Inputs& inputs, const NodeOptions& opt = {});
  // Is there a node called `name` (with the builder's prefix already applied)? Constant time.
  bool has_node(const std::string& name) const { return node_position_.count(name) > 0; }
  Stream add1(const std::string& name, const std::string& op, const ParamMap& params, const Inputs& inputs,
              const NodeOptions& opt = {});  // the node's single output
  // The same by the operator's kind (the library's own nodes: no operator name spelled again).
  std::map<std::string, Stream> add(const std::string& name, OpKind op, const ParamMap& params, const Inputs& inputs,
                                    const NodeOptions& opt = {}) {
    return add(name, op_name(op), params, inputs, opt);
  }
  Stream add1(const std::string& name, OpKind op, const ParamMap& params, const Inputs& inputs,
              const NodeOptions& opt = {}) {
    return add1(name, op_name(op), params, inputs, opt);
  }

  // ---- Typed helpers for the common operators (ports and parameters as in docs/operators.md).
  // `after`: streams whose end the source waits for (their contents are ignored).
  Stream source(const std::string& name, const std::string& stream, uint32_t depth = 0,
                const std::vector<Stream>& after = {});
  Stream load(const std::string& name, const std::string& tensor, const std::vector<int64_t>& tile,
              const std::vector<int64_t>& out_shape = {}, const std::vector<int64_t>& stride = {},
              const std::optional<Stream>& ref = std::nullopt);
  void store(const std::string& name, const std::string& tensor, const std::vector<int64_t>& tile, const Stream& in,
             const std::vector<int64_t>& out_shape = {}, const std::vector<int64_t>& stride = {});
  Stream random_load(const std::string& name, const std::string& tensor, const std::vector<int64_t>& tile,
                     const Stream& raddr);
  Stream map(const std::string& name, const std::string& fn, const std::vector<Stream>& in, uint64_t compute_bw = 0);
  Stream accum(const std::string& name, const std::string& fn, int rank, const std::vector<Stream>& in,
               uint64_t compute_bw = 0);
  Stream flatmap(const std::string& name, const std::string& fn, int rank, const std::vector<Stream>& in);
  Stream flatten(const std::string& name, const Stream& in, int min, int max);
  std::pair<Stream, Stream> reshape(const std::string& name, const Stream& in, int64_t chunk, int rank = 0);
  Stream promote(const std::string& name, const Stream& in, int rank = -1);
  Stream repeat(const std::string& name, const Stream& in, int64_t count);
  Stream expand(const std::string& name, const Stream& in, const Stream& ref, int rank = 1);
  Stream zip(const std::string& name, const std::vector<Stream>& in);
  Stream bufferize(const std::string& name, const Stream& in, int rank);
  Stream streamify(const std::string& name, const Stream& buffers, const std::vector<int64_t>& repeat);
  Stream streamify_ref(const std::string& name, const Stream& buffers, const Stream& ref, int rank = 1);
  std::vector<Stream> partition(const std::string& name, const Stream& in, const Stream& sel, size_t outputs,
                                int rank = 0);
  Stream reassemble(const std::string& name, const std::vector<Stream>& in, const Stream& sel, int rank = 0);
  std::pair<Stream, Stream> eager_merge(const std::string& name, const std::vector<Stream>& in, int rank = 0);
  std::vector<Stream> broadcast(const std::string& name, const Stream& in, size_t outputs);
  void sink(const std::string& name, const Stream& in);

  // A cycle (e.g. dynamic parallelization feeding region completions back to the dispatcher):
  // declares output `port` of node `node`, to be added later, with its type, so that nodes
  // reading it can be built first. When `node` is added its real type must equal the declared
  // one (with the known symbol values substituted); graph() refuses while a declaration is open.
  Stream forward(const std::string& node, const std::string& port, const shape::StreamType& type);

  // The stream `node.port` of a node already in the graph (a graph that came from from_graph).
  Stream stream(const std::string& node, const std::string& port);
  // Per-node settings after the fact; throws std::invalid_argument for a node not in the graph
  // or a value out of range (as a graph file's depth: and compute_bw:).
  void set_depth(const std::string& node, uint32_t depth);
  void set_compute_bw(const std::string& node, uint64_t flops_per_cycle);
  // Every node under the current prefix that has no depth of its own gets `depth`.
  void set_prefix_depth(uint32_t depth);

  const Graph& graph() const;
  shape::SymbolTable& symbols() { return syms_; }
  const shape::GraphTypes& types() const { return types_; }
  const shape::StreamType& type_of(const std::string& node, const std::string& port) const;

 private:
  friend class Stream;
  void retype(const std::string& node);                                   // re-runs inference for a node after set_dim
  std::set<std::string> declared_ahead(const std::string& except) const;  // forward nodes but `except`
  void new_stream(const std::string& name) const;                         // throws for a bad or taken stream name
  NodeSpec& node(const std::string& name);                                // throws naming a node not in the graph
  void set_node(const std::string& local, const std::function<void(NodeSpec&)>& set);
  Graph g_;
  // The names of g_.nodes: a node added to a graph of n nodes must not cost n (issue 33: building
  // a 4000-node chain from Python took 36 s, quadratic in the nodes).
  std::unordered_map<std::string, size_t> node_position_;  // name -> index in g_.nodes
  shape::SymbolTable syms_;
  shape::GraphTypes types_;
  std::map<std::string, std::map<std::string, shape::StreamType>> forward_;  // node -> port -> declared
  std::string prefix_;
  uint64_t block_rows_ = 0, block_cols_ = 0;
  std::string untyped_;  // from_graph: why inference could not type the graph ("" = typed)
};

}  // namespace stepsim::frontend
