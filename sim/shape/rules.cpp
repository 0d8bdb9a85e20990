// One shape rule per operator: output stream types from input types and parameters, with the
// FLOPs a higher-order node executes. The rules restate the operators' semantics
// (docs/operators.md, hw/ops/*.cpp) on symbolic shapes; testbench/shape checks them against
// the shapes the simulator really produces.
#include <array>
#include <optional>

#include "hw/functions/functions.h"
#include "hw/ops/op.h"
#include "hw/ops/tiled_view.h"
#include "sim/graph/tensors.h"
#include "sim/shape/infer.h"
#include "sim/shape/metrics.h"

namespace stepsim::shape {

using namespace GiNaC;

namespace {

bool is_num(const ex& e) { return is_a<numeric>(e); }

// ---- Tile functions, symbolically (hw/functions/functions.h defines them concretely; the
// symbolic FLOPs are checked against the concrete ones in testbench/shape).

struct FnResult {
  ElemType out;
  ex flops = 0;           // per application (Map) or per update (Accum)
  ex finalize_flops = 0;  // Accum: per emitted tile
};

// " (in0 from 'a.out' is [..] of T[..], in1 from ...)": the operands' producers and shapes, for
// function errors.
std::string from_where(const RuleContext& c) {
  std::string s;
  for (size_t i = 0;; ++i) {
    const std::string port = "in" + std::to_string(i);
    auto it = c.in.find(port);
    if (it == c.in.end()) break;
    s += (s.empty() ? " (" : ", ") + port + " from '" + (c.producers.count(port) ? c.producers.at(port) : "?") +
         "' is " + it->second.str();
  }
  return s.empty() ? s : s + ")";
}

const ElemType& tile_arg(const RuleContext& c, const std::vector<ElemType>& args, size_t i, const std::string& fn) {
  if (i >= args.size()) c.fail("function '" + fn + "' needs " + std::to_string(i + 1) + " operands" + from_where(c));
  if (args[i].kind != ElemType::Tile)
    c.fail("function '" + fn + "' needs tiles, operand " + std::to_string(i) + " is " + args[i].str() + from_where(c));
  return args[i];
}

DType promote(DType a, DType b) { return (a == DType::FP32 || b == DType::FP32) ? DType::FP32 : a; }

// Broadcast one dimension: equal, or one side is 1.
ex bcast(const RuleContext& c, const ex& a, const ex& b, const std::string& what) {
  if (same_size(a, b)) return a;
  if (a.is_equal(1)) return b;
  if (b.is_equal(1)) return a;
  c.fail("elementwise " + what + ": " + to_string(a) + " vs " + to_string(b) + " do not broadcast" + from_where(c));
}

// The FLOPs of one application, by the function's own formula (hw/functions/flops.h).
ex flops_of(const FlopRule& rule, const ElemType& a, const ex& n, const ElemType& out) {
  return tile_flops<ex>(rule, {a.rows, a.cols, n, out.rows, out.cols});
}

DType out_dtype(TileSignature::DTypeRule rule, const std::vector<ElemType>& args) {
  switch (rule) {
    case TileSignature::DTypeRule::kPromote:
      return args.size() > 1 ? promote(args[0].dtype, args[1].dtype) : args[0].dtype;
    case TileSignature::DTypeRule::kFirst:
      return args[0].dtype;
    case TileSignature::DTypeRule::kBf16:
      return DType::BF16;
    case TileSignature::DTypeRule::kFp32:
      return DType::FP32;
  }
  return args[0].dtype;
}

// The output element of a Map or Accum function by its signature (hw/functions/functions.h);
// `count` = elements per reduction (retiling); `n` = the output columns operand 1 gives, for the
// FLOP formula.
ElemType function_out(const RuleContext& c, const std::string& fn, const TileSignature& sig,
                      const std::vector<ElemType>& args, const ex& count, ex& n) {
  using S = TileSignature::Shape;
  const ElemType& a = tile_arg(c, args, 0, fn);
  if (sig.shape == S::kSelect) {  // (cond, a, b): all three broadcast; the dtype from a and b
    const ElemType& x = tile_arg(c, args, 1, fn);
    const ElemType& y = tile_arg(c, args, 2, fn);
    const ex rows = bcast(c, bcast(c, a.rows, x.rows, fn + " rows"), y.rows, fn + " rows");
    const ex cols = bcast(c, bcast(c, a.cols, x.cols, fn + " cols"), y.cols, fn + " cols");
    return ElemType::tile(rows, cols, out_dtype(sig.dtype, {x, y}));
  }
  const bool two = sig.shape == S::kBroadcast || sig.shape == S::kRowOperand || sig.shape == S::kMatmul ||
                   sig.shape == S::kFlashAttention || sig.shape == S::kConcatRows || sig.shape == S::kConcatCols;
  const ElemType& b = two ? tile_arg(c, args, 1, fn) : a;
  const DType dtype = out_dtype(sig.dtype, two ? std::vector<ElemType>{a, b} : std::vector<ElemType>{a});
  switch (sig.shape) {
    case S::kBroadcast:
      return ElemType::tile(bcast(c, a.rows, b.rows, fn + " rows"), bcast(c, a.cols, b.cols, fn + " cols"), dtype);
    case S::kRowOperand:
      if (!same_size(b.rows, a.rows) || !b.cols.is_equal(1))
        c.fail(fn + " needs r [" + to_string(a.rows) + "x1], got " + b.str() + from_where(c));
      return ElemType::tile(a.rows, a.cols, dtype);
    case S::kSameAsFirst:
      return ElemType::tile(a.rows, a.cols, dtype);
    case S::kRowReduce:
      return ElemType::tile(a.rows, 1, dtype);
    case S::kMatmul: {
      const bool bt = sig.transposed_b;
      const ex k2 = bt ? b.cols : b.rows;
      n = bt ? b.rows : b.cols;
      if (!same_size(a.cols, k2))
        c.fail(fn + ": " + a.str() + " x " + b.str() + (bt ? " (B stored transposed)" : "") + ": inner dimensions " +
               to_string(a.cols) + " and " + to_string(k2) + " differ" + from_where(c));
      return ElemType::tile(a.rows, n, dtype);
    }
    case S::kRetileRows:
      return ElemType::tile(a.rows * count, a.cols, dtype);
    case S::kRetileCols:
      return ElemType::tile(a.rows, a.cols * count, dtype);
    case S::kFlashAttention:
      if (!same_size(b.rows, a.cols))
        c.fail(fn + ": S " + a.str() + " and V " + b.str() + " disagree on the KV tile" + from_where(c));
      n = b.cols;
      return ElemType::tile(a.rows, b.cols, dtype);
    case S::kConcatRows:
      if (!same_size(a.cols, b.cols))
        c.fail(fn + ": " + a.str() + " over " + b.str() + ": the columns differ" + from_where(c));
      return ElemType::tile(a.rows + b.rows, a.cols, dtype);
    case S::kConcatCols:
      if (!same_size(a.rows, b.rows))
        c.fail(fn + ": " + a.str() + " beside " + b.str() + ": the rows differ" + from_where(c));
      return ElemType::tile(a.rows, a.cols + b.cols, dtype);
    case S::kSelect:
      break;  // above
  }
  c.fail("no shape rule for function '" + fn + "'");
}

// A function's descriptor from its library; an unknown name fails naming the node.
template <class Lookup>
auto function_named(const RuleContext& c, Lookup lookup, const std::string& fn) -> decltype(lookup(fn)) {
  try {
    return lookup(fn);
  } catch (const std::invalid_argument& e) {
    c.fail(e.what());
  }
}

// A Map function's output element and FLOPs per application, by its descriptor.
FnResult map_fn(const RuleContext& c, const std::string& fn, const std::vector<ElemType>& args) {
  const MapFunction& f = function_named(c, map_function, fn);
  ex n = 0;
  const ElemType out = function_out(c, fn, f.signature, args, 0, n);
  return {out, flops_of(f.flop_rule, args.at(0), n, out)};
}

// An Accum function's emitted element, FLOPs per update and per emitted tile, by its descriptor.
FnResult accum_fn(const RuleContext& c, const std::string& fn, const std::vector<ElemType>& args, const ex& count) {
  const AccumFunction& f = function_named(c, accum_function, fn);
  ex n = 0;
  const ElemType out = function_out(c, fn, f.signature, args, count, n);
  return {out, flops_of(f.flop_rule, args.at(0), n, out), int(f.finalize_flops_per_out_elem) * out.rows * out.cols};
}

// ---- Helpers on dims.

std::vector<Dim> inner(const StreamType& t, size_t k) {  // the k innermost dims
  return std::vector<Dim>(t.dims.end() - long(k), t.dims.end());
}
std::vector<Dim> outer(const StreamType& t, size_t k) {  // all but the k innermost
  return std::vector<Dim>(t.dims.begin(), t.dims.end() - long(k));
}
std::vector<Dim> cat(std::vector<Dim> a, const std::vector<Dim>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
bool any_ragged(const std::vector<Dim>& d) {
  for (const Dim& x : d)
    if (x.kind == DimKind::Ragged) return true;
  return false;
}
bool any_dynamic(const std::vector<Dim>& d) {
  for (const Dim& x : d)
    if (x.kind != DimKind::Static) return true;
  return false;
}
// One dim holding the elements of `dims` (Flatten's rule): ragged if any of them is.
Dim merged(const std::vector<Dim>& dims) {
  return {card_of(dims), any_ragged(dims) ? DimKind::Ragged : any_dynamic(dims) ? DimKind::Dynamic : DimKind::Static};
}
void need_rank(const RuleContext& c, const std::string& port, const StreamType& t, size_t k, const std::string& why) {
  if (t.dims.size() < k)
    c.fail("input '" + port + "' " + t.str() + " has " + std::to_string(t.dims.size()) + " dimension(s); " + why);
}
// The total of dimension `i` (outermost first) over the dims outside it: a ragged dim's size is
// that total already, another's is multiplied by the outer instances.
ex total_of(const std::vector<Dim>& dims, size_t i) {
  return card_of(std::vector<Dim>(dims.begin(), dims.begin() + long(i) + 1));
}
// difference() compares sizes only, but a ragged dim's size is its total and another's the size
// of each instance: [2, 3] and [2, 3~] with 3 elements in all differ, and a run refuses to zip
// them. A ragged dim and another differ when their known totals do.
std::string shape_difference(const RuleContext& c, const StreamType& a, const StreamType& b) {
  const std::string d = difference(a, b);
  if (!d.empty()) return d;
  for (size_t i = 0; i < a.dims.size(); ++i) {
    if ((a.dims[i].kind == DimKind::Ragged) == (b.dims[i].kind == DimKind::Ragged)) continue;
    int64_t ta = 0, tb = 0;
    if (to_int(evaluate(total_of(a.dims, i), c.syms), ta) && to_int(evaluate(total_of(b.dims, i), c.syms), tb) &&
        ta != tb)
      return "dimension " + std::to_string(a.dims.size() - 1 - i) + ": " + std::to_string(ta) + " vs " +
             std::to_string(tb) + " in all";
  }
  return "";
}
// The chunk dims (the `rank` inner ones) of a stream merged from `ins` (EagerMerge, Reassemble):
// a dim every input gives the same static or dynamic size keeps it; another is ragged, its total
// the sum of the inputs' totals.
std::vector<Dim> merged_chunk(const std::vector<const StreamType*>& ins, size_t rank) {
  std::vector<Dim> chunk = inner(*ins[0], rank);
  for (size_t k = 0; k < rank; ++k) {
    bool same = chunk[k].kind != DimKind::Ragged;
    ex total = 0;
    for (const StreamType* t : ins) {
      const size_t pos = t->dims.size() - rank + k;
      same = same && t->dims[pos].kind != DimKind::Ragged && same_size(t->dims[pos].size, chunk[k].size);
      total += total_of(t->dims, pos);
    }
    if (!same) chunk[k] = Dim{total, DimKind::Ragged};
  }
  return chunk;
}

// The inputs of a zipping node (Map, Zip, Accum, ...) must have the same shape.
const StreamType& same_shapes(const RuleContext& c, const std::vector<const StreamType*>& ins) {
  if (ins.empty()) c.fail("needs at least one input (in0)");
  for (size_t i = 1; i < ins.size(); ++i) {
    StreamType a = *ins[0], b = *ins[i];
    a.elem = b.elem = ElemType::scalar();
    std::string d = shape_difference(c, a, b);
    if (!d.empty()) {
      const std::string p0 = c.producers.count("in0") ? c.producers.at("in0") : "?";
      const std::string pi =
          c.producers.count("in" + std::to_string(i)) ? c.producers.at("in" + std::to_string(i)) : "?";
      c.fail("inputs must have the same shape: in0 from '" + p0 + "' is " + ins[0]->str() + ", in" + std::to_string(i) +
             " from '" + pi + "' is " + ins[i]->str() + " (" + d + ")");
    }
  }
  return *ins[0];
}
std::vector<ElemType> elems(const std::vector<const StreamType*>& ins) {
  std::vector<ElemType> v;
  for (const StreamType* t : ins) v.push_back(t->elem);
  // A single tuple input is unpacked (Zip then Map).
  if (v.size() == 1 && v[0].kind == ElemType::Tuple) return v[0].members;
  return v;
}

// The tensor a node names, from the graph's tensors: section.
const TensorSpec& tensor_spec(const RuleContext& c) {
  const std::string name = c.get(param::kTensor);
  for (const TensorSpec& t : c.graph.tensors)
    if (t.name == name) return t;
  std::string declared;  // only for the message: built per node, it made typing quadratic in the tensors
  for (const TensorSpec& t : c.graph.tensors) declared += (declared.empty() ? "" : ", ") + t.name;
  c.fail("no tensor named '" + name +
         "' in the graph's tensors: section (declared: " + (declared.empty() ? "none" : declared) + ")");
}
// The node's view of its tensor, checked by the operators' own code (hw/ops/tiled_view.h): a tile
// that does not divide the tensor or a view past its end is rejected with the run's words.
TiledView checked_view(const RuleContext& c, const TensorSpec& t, bool affine) {
  OffChipTensor tensor = offchip_tensor(offchip_decl(t));
  try {
    TiledView v = make_tiled_view(tensor, c.params(), affine, "node '" + c.node.name + "' (" + c.node.op + "): ");
    v.tensor = nullptr;  // `tensor` is gone with this frame; the dims are what the rules read
    return v;
  } catch (const std::invalid_argument& e) {
    throw ShapeError(e.what());
  }
}
ElemType view_tile(const TiledView& v, const TensorSpec& t) {
  return ElemType::tile(v.tile_rows, v.tile_cols, t.dtype);
}
std::vector<Dim> static_dims(const std::vector<int64_t>& v) {
  std::vector<Dim> d;
  for (int64_t x : v) d.push_back(Dim::fixed(x));
  return d;
}
void expect_tiles(const RuleContext& c, const std::string& port, const ElemType& want) {
  const StreamType& t = c.input(port);
  std::string d = difference(t.elem, want);
  if (!d.empty())
    c.fail("input '" + port + "' from '" + (c.producers.count(port) ? c.producers.at(port) : "?") + "' carries " +
           t.elem.str() + ", expected " + want.str() + " (tensor tile and dtype)");
}
void expect_index(const RuleContext& c, const std::string& port) {
  const ElemType& e = c.input(port).elem;
  const bool ok = e.kind == ElemType::Scalar ||
                  (e.kind == ElemType::Tile && e.dtype == DType::INT32 && e.rows.is_equal(1) && e.cols.is_equal(1));
  if (!ok) c.fail("input '" + port + "' carries " + e.str() + ", expected tile indices (scalar or T[1x1:int32])");
}

// The element of a stream merged from `ins` (EagerMerge, Reassemble): their common element,
// or for tiles that differ only in their rows, tiles of varying rows (the largest rows, and the
// mean over all merged elements).
ElemType merged_elem(const RuleContext& c, const std::vector<const StreamType*>& ins) {
  const ElemType& e0 = ins[0]->elem;
  bool same = true;
  for (const StreamType* t : ins) same = same && difference(t->elem, e0).empty();
  if (same) return e0;
  ElemType m = e0;
  ex rows_sum = 0, count = 0;
  for (size_t i = 0; i < ins.size(); ++i) {
    const ElemType& e = ins[i]->elem;
    if (e.kind != ElemType::Tile || e0.kind != ElemType::Tile || !same_size(e.cols, e0.cols) || e.dtype != e0.dtype)
      c.fail("inputs carry different elements: in0 " + ins[0]->str() + ", in" + std::to_string(i) + " " +
             ins[i]->str());
    if (i) m.rows = max_size(m.rows, e.rows);
    rows_sum += ins[i]->card() * (e.has_rows_mean ? e.rows_mean : e.rows);
    count += ins[i]->card();
  }
  m.has_rows_mean = true;
  m.rows_mean = rows_sum / count;
  return m;
}

// Operands as the FLOP totals see them: tiles of varying rows at their mean rows.
std::vector<ElemType> at_mean_rows(std::vector<ElemType> args) {
  for (ElemType& a : args)
    if (a.kind == ElemType::Tile && a.has_rows_mean) {
      a.rows = a.rows_mean;
      a.has_rows_mean = false;
    }
  return args;
}
bool any_mean(const std::vector<ElemType>& args) {
  for (const ElemType& a : args)
    if (a.kind == ElemType::Tile && a.has_rows_mean) return true;
  return false;
}
// The output element of a function applied to operands of varying rows: the shape from the
// largest operands, the mean rows from the mean operands.
ElemType with_mean(ElemType out, const ElemType& out_at_mean) {
  if (out.kind == ElemType::Tile && !same_size(out.rows, out_at_mean.rows)) {
    out.has_rows_mean = true;
    out.rows_mean = out_at_mean.rows;
  }
  return out;
}
// A subset of a stream of varying-row tiles (Partition, Parallelize): its rows are its own.
ElemType subset_elem(const RuleContext& c, const ElemType& e, const std::string& port) {
  if (e.kind != ElemType::Tile || !e.has_rows_mean) return e;
  ElemType s = e;
  s.has_rows_mean = false;
  s.rows = c.fresh(port, "rows");
  return s;
}

// Scan's outputs from its state element `f.out` (hw/ops/higher_order.cpp, class Scan): `out`
// carries the state, or out_fn(operands.., state); `prior` the state before each element, which
// like the exclusive form needs the update function's identity.
RuleResult scan_forms(const RuleContext& c, const StreamType& s, const std::vector<ElemType>& args, const FnResult& f) {
  const StreamType state{s.dims, f.out};
  RuleResult res{{{"out", state}, {"prior", state}}, s.card() * f.flops};
  bool prior_read = false;
  for (const NodeSpec& n : c.graph.nodes)
    for (const auto& [port, ref] : n.inputs) prior_read = prior_read || ref == c.node.name + ".prior";
  const std::string fn = c.get(param::kFn);
  if ((c.params().get(param::kExclusive) || prior_read) && !accum_function(fn).identity)
    c.fail(
        "an exclusive Scan or its prior output needs a function with an identity element (the state before "
        "the first element); accum function '" +
        fn + "' has none");
  const std::string out_fn = c.get(param::kOutFn);
  if (!out_fn.empty()) {
    std::vector<ElemType> operands = args;
    operands.push_back(f.out);
    const FnResult o = map_fn(c, out_fn, operands);
    res.outputs["out"] = StreamType{s.dims, o.out};
    res.flops = res.flops + s.card() * o.flops;
  }
  return res;
}

// ---- The rules.

using Rules = std::array<ShapeRule, kNumOpKinds>;

// Source and Sink.
void add_source_sink_rules(Rules& r) {
  using C = RuleContext;
  r[size_t(OpKind::kSource)] = [](C& c) {
    RuleResult res;
    const std::string s = c.get(param::kStream);
    auto it = c.graph.streams.find(s);
    if (it == c.graph.streams.end()) c.fail("stream '" + s + "' is not in the graph's streams: section");
    StreamType t = literal_type(it->second);
    for (size_t i = 0; i < c.num_outputs; ++i) res.outputs["out" + std::to_string(i)] = t;
    return res;
  };
  r[size_t(OpKind::kSink)] = [](C&) { return RuleResult{}; };
}

// Off-chip memory.
void add_offchip_rules(Rules& r) {
  using C = RuleContext;
  r[size_t(OpKind::kLinearOffChipLoad)] = [](C& c) {
    const TensorSpec& t = tensor_spec(c);
    const TiledView v = checked_view(c, t, true);
    // The view's dims add stop levels: under a ref they nest inside its elements; alone they form
    // one tensor ([1, view..]).
    StreamType o{cat(c.has("ref") ? c.input("ref").dims : std::vector<Dim>{Dim::fixed(1)}, static_dims(v.out_shape)),
                 view_tile(v, t)};
    return RuleResult{{{"out", o}}, 0};
  };
  r[size_t(OpKind::kLinearOffChipStore)] = [](C& c) {
    const TensorSpec& t = tensor_spec(c);
    const TiledView v = checked_view(c, t, true);
    expect_tiles(c, "in", view_tile(v, t));
    // Every tile of the view once: fewer leave part of it unwritten, more have no place (the
    // run refuses both with these words, hw/ops/offchip_ops.cpp).
    int64_t n = 0;
    if (to_int(evaluate(c.input("in").card(), c.syms), n) && uint64_t(n) != v.count)
      c.fail("received " + std::to_string(n) + " tiles but its view of tensor '" + t.name + "' (out_shape " +
             v.shape_text() + ") expects " + std::to_string(v.count));
    return RuleResult{};
  };
  r[size_t(OpKind::kRandomOffChipLoad)] = [](C& c) {
    const TensorSpec& t = tensor_spec(c);
    const ElemType tile = view_tile(checked_view(c, t, false), t);
    expect_index(c, "raddr");
    return RuleResult{{{"out", StreamType{c.input("raddr").dims, tile}}}, 0};
  };
  r[size_t(OpKind::kRandomOffChipStore)] = [](C& c) {
    const TensorSpec& t = tensor_spec(c);
    const ElemType tile = view_tile(checked_view(c, t, false), t);
    expect_index(c, "waddr");
    expect_tiles(c, "wdata", tile);
    // One tile per address; the run counts both (their stops may differ).
    const StreamType &a = c.input("waddr"), &d = c.input("wdata");
    int64_t na = 0, nd = 0;
    if (to_int(evaluate(a.card(), c.syms), na) && to_int(evaluate(d.card(), c.syms), nd) && na != nd)
      c.fail("waddr from '" + c.producers.at("waddr") + "' " + a.str() + " has " + std::to_string(na) +
             " addresses but wdata from '" + c.producers.at("wdata") + "' " + d.str() + " has " + std::to_string(nd) +
             " tiles: one tile per address");
    return RuleResult{{{"out", StreamType{c.input("waddr").dims, ElemType::scalar()}}}, 0};
  };
}

// On-chip memory.
void add_onchip_rules(Rules& r) {
  using C = RuleContext;
  r[size_t(OpKind::kBufferize)] = [](C& c) {
    const StreamType& in = c.input("in");
    const size_t b = size_t(c.get(param::kRank));
    need_rank(c, "in", in, b + 1, "Bufferize rank " + std::to_string(b) + " stores that many inner ones");
    ElemType buf;
    buf.kind = ElemType::Buffer;
    buf.buffer_dims = inner(in, b);
    buf.members = {in.elem};
    return RuleResult{{{"out", StreamType{outer(in, b), buf}}}, 0};
  };
  r[size_t(OpKind::kStreamify)] = [](C& c) {
    const StreamType& in = c.input("in");
    if (in.elem.kind != ElemType::Buffer) c.fail("input 'in' carries " + in.elem.str() + ", not buffer references");
    std::vector<Dim> view = in.elem.buffer_dims;
    auto os = c.get(param::kOutShape);
    if (!os.empty()) view = static_dims(os);
    std::vector<Dim> dims;
    if (c.has("ref")) {
      const StreamType& ref = c.input("ref");
      const size_t rank = size_t(c.get(param::kRank));
      StreamType a{in.dims, {}}, b{outer(ref, std::min(rank, ref.dims.size())), {}};
      std::string d = shape_difference(c, a, b);
      if (!d.empty())
        c.fail("ref from '" + c.producers.at("ref") + "' " + ref.str() + " without its " + std::to_string(rank) +
               " inner dims must match the buffer stream from '" + c.producers.at("in") + "' " + in.str() + " (" + d +
               ")");
      // A ragged buffer dim's symbol is its sum over all buffers: replayed, the sum is multiplied
      // by the replays per buffer when that is one number, else it is data-dependent.
      const std::vector<Dim> reps = inner(ref, std::min(rank, ref.dims.size()));
      for (size_t k = 0; k < view.size(); ++k)
        if (view[k].kind == DimKind::Ragged)
          view[k] = any_ragged(reps) ? Dim{c.fresh("out", "d" + std::to_string(view.size() - 1 - k)), DimKind::Ragged}
                                     : Dim{view[k].size * card_of(reps), DimKind::Ragged};
      dims = cat(ref.dims, view);
    } else {
      const std::vector<int64_t> repeat = c.get(param::kRepeat);
      for (Dim& v : view)
        if (v.kind == DimKind::Ragged) v.size = v.size * card_of(static_dims(repeat));
      dims = cat(cat(in.dims, static_dims(repeat)), view);
    }
    return RuleResult{{{"out", StreamType{dims, in.elem.members.at(0)}}}, 0};
  };
}

// Reassemble takes every chunk of every input once: with selectors from a literal stream (a
// trace), the chunks they select of each input must be the chunks it has, or the run refuses.
void check_selected_chunks(const RuleContext& c, const std::vector<const StreamType*>& ins, size_t rank) {
  const std::vector<Beat>* lit = c.literal_input("sel");
  if (!lit) return;
  std::vector<int64_t> picked(ins.size(), 0);
  for (const Beat& b : *lit)
    if (b.has_elem && b.elem.is_selector())
      for (size_t i = 0; i < ins.size(); ++i) picked[i] += b.elem.selector().test(int(i));
  for (size_t i = 0; i < ins.size(); ++i) {
    int64_t have = 0;
    const std::string port = "in" + std::to_string(i);
    if (to_int(evaluate(card_of(outer(*ins[i], rank)), c.syms), have) && have != picked[i])
      c.fail("the selectors from '" + c.producers.at("sel") + "' select " + std::to_string(picked[i]) +
             " chunks of input '" + port + "' from '" + c.producers.at(port) + "' " + ins[i]->str() + ", which has " +
             std::to_string(have) + " (chunks of rank " + std::to_string(rank) + "; each is taken once)");
  }
}

// Routing by selectors.
void add_routing_rules(Rules& r) {
  using C = RuleContext;
  r[size_t(OpKind::kBroadcast)] = [](C& c) {
    RuleResult res;
    for (size_t i = 0; i < c.num_outputs; ++i) res.outputs["out" + std::to_string(i)] = c.input("in");
    return res;
  };
  r[size_t(OpKind::kPartition)] = [](C& c) {
    const StreamType& in = c.input("in");
    const StreamType& sel = c.input("sel");
    const size_t rank = size_t(c.get(param::kRank));
    need_rank(c, "in", in, rank + 1, "Partition rank " + std::to_string(rank) + " routes that many inner ones");
    if (sel.elem.kind != ElemType::Selector) c.fail("input 'sel' carries " + sel.elem.str() + ", not selectors");
    StreamType a{outer(in, rank), {}}, b{sel.dims, {}};
    std::string d = shape_difference(c, a, b);
    if (!d.empty())
      c.fail("selector from '" + c.producers.at("sel") + "' " + sel.str() +
             " must have the outer shape of the data from '" + c.producers.at("in") + "' " + in.str() +
             " without its " + std::to_string(rank) + " inner dims (" + d + ")");
    // Concrete selectors (a trace): the chunks each output receives are known.
    std::vector<int64_t> counts(c.num_outputs, 0);
    const std::vector<Beat>* lit = c.literal_input("sel");
    if (lit)
      for (const Beat& bt : *lit)
        if (bt.has_elem && bt.elem.is_selector())
          for (size_t i = 0; i < c.num_outputs; ++i) counts[i] += bt.elem.selector().test(int(i));
    RuleResult res;
    std::vector<Dim> chunk = inner(in, rank);
    for (size_t i = 0; i < c.num_outputs; ++i) {
      const std::string port = "out" + std::to_string(i);
      ex n = c.fresh(port);
      if (lit) c.syms.set_value(to_string(n), counts[i]);
      std::vector<Dim> cd = chunk;
      for (size_t k = 0; k < cd.size(); ++k)
        if (cd[k].kind == DimKind::Ragged)
          cd[k] = {c.fresh(port, "d" + std::to_string(cd.size() - 1 - k)), DimKind::Ragged};
      res.outputs[port] = StreamType{cat({Dim{n, DimKind::Dynamic}}, cd), subset_elem(c, in.elem, port)};
    }
    return res;
  };
  r[size_t(OpKind::kReassemble)] = [](C& c) {
    auto ins = c.numbered("in");
    const StreamType& sel = c.input("sel");
    const size_t rank = size_t(c.get(param::kRank));
    if (ins.empty()) c.fail("needs inputs in0, in1, ...");
    for (size_t i = 0; i < ins.size(); ++i)
      need_rank(c, "in" + std::to_string(i), *ins[i], rank + 1, "chunks of rank " + std::to_string(rank));
    const ElemType elem = merged_elem(c, ins);
    check_selected_chunks(c, ins, rank);
    // The new dimension: chunks per selector element (ragged; its sum = all chunks merged).
    ex total = 0;
    for (const StreamType* t : ins) total += card_of(outer(*t, rank));
    const std::vector<Dim> dims = cat(sel.dims, cat({Dim{total, DimKind::Ragged}}, merged_chunk(ins, rank)));
    return RuleResult{{{"out", StreamType{dims, elem}}}, 0};
  };
}

// Merging and distribution.
void add_merge_and_distribution_rules(Rules& r) {
  using C = RuleContext;
  r[size_t(OpKind::kEagerMerge)] = [](C& c) {
    auto ins = c.numbered("in");
    const size_t rank = size_t(c.get(param::kRank));
    if (ins.empty()) c.fail("needs inputs in0, in1, ...");
    ex total = 0;
    for (size_t i = 0; i < ins.size(); ++i) {
      need_rank(c, "in" + std::to_string(i), *ins[i], rank + 1, "chunks of rank " + std::to_string(rank));
      total += card_of(outer(*ins[i], rank));
    }
    const std::vector<Dim> chunk = merged_chunk(ins, rank);
    RuleResult res;
    res.outputs["out"] = StreamType{cat({Dim{total, DimKind::Dynamic}}, chunk), merged_elem(c, ins)};
    res.outputs["sel"] = StreamType{{Dim{total, DimKind::Dynamic}}, ElemType::selector()};
    return res;
  };
  r[size_t(OpKind::kTopK)] = [](C& c) {
    const StreamType& in = c.input("in");
    const int64_t k = c.get(param::kK);
    const ElemType& e = in.elem;
    const bool one_row = e.kind == ElemType::Tile && is_num(e.rows) && ex_to<numeric>(e.rows).to_long() == 1;
    if (!one_row || e.dtype == DType::INT32 || !is_num(e.cols))
      c.fail("input 'in' from '" + c.producers.at("in") + "' carries " + e.str() +
             "; TopK takes float [1 x E] tiles of scores");
    const int64_t cols = ex_to<numeric>(e.cols).to_long();
    if (cols > Selector::kMaxBits || k > cols)
      c.fail("k = " + std::to_string(k) + " of " + e.str() + " from '" + c.producers.at("in") +
             "': the tiles need k..." + std::to_string(Selector::kMaxBits) + " columns");
    RuleResult res;
    res.outputs["sel"] = StreamType{in.dims, ElemType::selector()};
    res.outputs["mask"] = StreamType{in.dims, ElemType::tile(1, cols, e.dtype)};
    return res;
  };
  r[size_t(OpKind::kParallelize)] = [](C& c) {
    const StreamType& in = c.input("in");
    const size_t rank = size_t(c.get(param::kRank));
    need_rank(c, "in", in, rank + 1, "chunks of rank " + std::to_string(rank));
    const ex n = card_of(outer(in, rank));
    const int64_t p = int64_t(c.num_outputs);
    RuleResult res;
    for (int64_t i = 0; i < p; ++i) {
      // Chunk j goes to output j mod p: output i gets ceil((n - i) / p) of the n chunks.
      Dim d{ceil_div(n - i, p), DimKind::Dynamic};
      if (is_num(n)) d = Dim::fixed(std::max<int64_t>(0, (ex_to<numeric>(n).to_long() - i + p - 1) / p));
      // A ragged chunk dimension's total splits between the outputs in a data-dependent way.
      std::vector<Dim> chunk = inner(in, rank);
      for (size_t k = 0; k < chunk.size(); ++k)
        if (chunk[k].kind == DimKind::Ragged)
          chunk[k] = {c.fresh("out" + std::to_string(i), "d" + std::to_string(chunk.size() - 1 - k)), DimKind::Ragged};
      res.outputs["out" + std::to_string(i)] =
          StreamType{cat({d}, chunk), subset_elem(c, in.elem, "out" + std::to_string(i))};
    }
    return res;
  };
}

// Higher-order operators.
void add_higher_order_rules(Rules& r) {
  using C = RuleContext;
  r[size_t(OpKind::kMap)] = [](C& c) {
    auto ins = c.numbered("in");
    const StreamType& s = same_shapes(c, ins);
    const std::vector<ElemType> args = elems(ins);
    FnResult f = map_fn(c, c.get(param::kFn), args);
    if (!any_mean(args)) return RuleResult{{{"out", StreamType{s.dims, f.out}}}, s.card() * f.flops};
    FnResult fm = map_fn(c, c.get(param::kFn), at_mean_rows(args));  // FLOPs at the mean rows
    return RuleResult{{{"out", StreamType{s.dims, with_mean(f.out, fm.out)}}}, s.card() * fm.flops};
  };
  auto accum = [](C& c, bool scan) {
    auto ins = c.numbered("in");
    const StreamType& s = same_shapes(c, ins);
    const size_t b = size_t(c.get(param::kRank));
    const size_t q = scan ? 0 : size_t(c.get(param::kBankRank));
    if (q) {  // [.., C, B1..Bq, K] -> [.., B1..Bq]: K and C reduced into a bank (hw/ops/higher_order.cpp)
      need_rank(c, "in0", s, q + 3, "bank_rank " + std::to_string(q) + " reduces K and C around the bank dimensions");
      const std::vector<Dim> kdim = inner(s, 1), bank_and_k = inner(s, q + 1), with_c = inner(s, q + 2);
      const std::vector<Dim> bank(bank_and_k.begin(), bank_and_k.end() - 1);
      const std::vector<Dim> red{with_c.front(), kdim.front()};
      ex count = card_of(red);
      if (any_ragged(red)) count = c.fresh("out", "count");
      const std::vector<ElemType> args = elems(ins);
      FnResult f = accum_fn(c, c.get(param::kFn), args, count);
      const StreamType o{cat(outer(s, q + 2), bank), f.out};
      return RuleResult{{{"out", o}}, s.card() * f.flops + o.card() * f.finalize_flops};
    }
    need_rank(c, "in0", s, b + 1, "the reduction rank is " + std::to_string(b));
    std::vector<Dim> red = inner(s, b);
    ex count = card_of(red);
    if (any_ragged(red)) count = c.fresh("out", "count");  // differs per reduction
    const std::vector<ElemType> args = elems(ins);
    FnResult f = accum_fn(c, c.get(param::kFn), args, count);
    if (any_mean(args)) {  // FLOPs of tiles of varying rows: at their mean rows
      FnResult fm = accum_fn(c, c.get(param::kFn), at_mean_rows(args), count);
      f.out = with_mean(f.out, fm.out);
      f.flops = fm.flops;
      f.finalize_flops = fm.finalize_flops;
    }
    if (scan) return scan_forms(c, s, args, f);
    const StreamType o{outer(s, b), f.out};
    // Accum finalizes once per emitted tile; Scan emits finalized states but, as the simulator
    // (hw/ops/higher_order.cpp), charges no finalize FLOPs for them.
    return RuleResult{{{"out", o}}, s.card() * f.flops + o.card() * f.finalize_flops};
  };
  r[size_t(OpKind::kAccum)] = [accum](C& c) { return accum(c, false); };
  r[size_t(OpKind::kScan)] = [accum](C& c) { return accum(c, true); };
  r[size_t(OpKind::kFlatMap)] = [](C& c) {
    auto ins = c.numbered("in");
    const StreamType& s = same_shapes(c, ins);
    const std::string fn = c.get(param::kFn);
    const std::vector<ElemType> args = elems(ins);
    const ElemType& a = tile_arg(c, args, 0, fn);
    const int64_t rank = c.get(param::kRank);
    if (rank < 0) c.fail("rank must be >= 0");
    // Each element expands into `count` tiles of `out` (count = nullopt: data-dependent, e.g. a
    // filter). rank b >= 1: the expansion is a rank-b stream [1, .., 1, count] nested under the
    // element's position; rank 0: the tiles are spliced into the innermost dimension.
    auto expand = [&](std::optional<ex> count, const ElemType& out) {
      std::vector<Dim> d = s.dims;
      if (rank == 0) {
        Dim& in = d.back();
        if (!count)
          in = Dim{c.fresh("out"), d.size() == 1 ? DimKind::Dynamic : DimKind::Ragged};
        else
          in = Dim{in.size * *count, in.kind == DimKind::Static && !is_num(*count) ? DimKind::Dynamic : in.kind};
      } else {
        for (int64_t k = 1; k < rank; ++k) d.push_back(Dim::fixed(1));
        if (!count)
          d.push_back(Dim{c.fresh("out"), DimKind::Ragged});
        else
          d.push_back(Dim{*count, is_num(*count) ? DimKind::Static : DimKind::Dynamic});
      }
      return RuleResult{{{"out", StreamType{d, out}}}, 0};
    };
    using E = FlatMapFunction::Expansion;
    switch (function_named(c, flatmap_function, fn).expansion) {
      case E::kRows:
        if (a.has_rows_mean && rank == 1)  // varying rows: as many in total
          return RuleResult{{{"out", StreamType{cat(s.dims, {Dim{s.card() * a.rows_mean, DimKind::Ragged}}),
                                                ElemType::tile(1, a.cols, a.dtype)}}},
                            0};
        return expand(a.rows, ElemType::tile(1, a.cols, a.dtype));
      case E::kCols:
        return expand(a.cols, ElemType::tile(a.rows, 1, a.dtype));
      case E::kFilteredRows:
        return expand(std::nullopt, ElemType::tile(1, a.cols, a.dtype));
      case E::kFiltered:
        return expand(std::nullopt, a);  // drops padded elements
    }
    c.fail("no shape rule for flatmap function '" + fn + "'");
  };
}

// Reshape pads only the innermost dimension: above it, the split dimension must be a known
// multiple of the chunk (step-paper-notes §2.5; the run refuses the rest at the dimension's end with
// these words, hw/ops/shape_ops.cpp). A dynamic or ragged dimension cannot be known to be one.
void check_split_without_padding(const RuleContext& c, const StreamType& in, const Dim& d, size_t k, int64_t chunk) {
  const std::string what = "dimension " + std::to_string(k);
  const std::string why = " (only the innermost dimension can be padded)";
  int64_t n = 0;
  if (d.kind == DimKind::Ragged || !to_int(evaluate(d.size, c.syms), n))
    c.fail(what + " of " + in.str() + " is " + (d.kind == DimKind::Ragged ? "ragged" : "dynamic") +
           ", not a static multiple of chunk " + std::to_string(chunk) + why);
  if (n % chunk != 0)
    c.fail(what + " has " + std::to_string(n) + " entries, not a multiple of chunk " + std::to_string(chunk) + why);
}

// Shape operators.
void add_shape_rules(Rules& r) {
  using C = RuleContext;
  r[size_t(OpKind::kFlatten)] = [](C& c) {
    const StreamType& in = c.input("in");
    const int64_t lo = c.get(param::kMin), hi = c.get(param::kMax);
    if (lo < 0 || hi < lo || size_t(hi) >= in.dims.size())
      c.fail("min " + std::to_string(lo) + " / max " + std::to_string(hi) + " outside the dims of " + in.str());
    const size_t first = in.dims.size() - 1 - size_t(hi), last = in.dims.size() - 1 - size_t(lo);
    std::vector<Dim> mid(in.dims.begin() + long(first), in.dims.begin() + long(last) + 1);
    std::vector<Dim> d(in.dims.begin(), in.dims.begin() + long(first));
    d.push_back(merged(mid));
    d.insert(d.end(), in.dims.begin() + long(last) + 1, in.dims.end());
    return RuleResult{{{"out", StreamType{d, in.elem}}}, 0};
  };
  r[size_t(OpKind::kReshape)] = [](C& c) {
    const StreamType& in = c.input("in");
    const int64_t chunk = c.get(param::kChunk);
    const size_t k = size_t(c.get(param::kRank));
    need_rank(c, "in", in, k + 1, "Reshape splits dimension " + std::to_string(k));
    const size_t pos = in.dims.size() - 1 - k;
    const Dim& dk = in.dims[pos];
    if (k > 0) check_split_without_padding(c, in, dk, k, chunk);
    std::vector<Dim> d(in.dims.begin(), in.dims.begin() + long(pos));
    Dim outer_d{ceil_div(dk.size, chunk), dk.kind};
    if (dk.kind == DimKind::Ragged) outer_d.size = c.fresh("out", "chunks");
    d.push_back(outer_d);
    d.push_back(Dim::fixed(chunk));
    d.insert(d.end(), in.dims.begin() + long(pos) + 1, in.dims.end());
    RuleResult res;
    res.outputs["out"] = StreamType{d, in.elem};
    res.outputs["pad"] = StreamType{d, ElemType::scalar()};  // flags 1/0, as filter_padding reads them
    return res;
  };
  r[size_t(OpKind::kPromote)] = [](C& c) {
    const StreamType& in = c.input("in");
    const int64_t k = c.get(param::kRank);
    std::vector<Dim> d = in.dims;
    // The new outermost dimension has size 1, or 0 for a stream known to be empty: D_a is 0, or
    // a symbol whose value is 0 (a Partition output no selector names). A D_a of unknown value
    // is taken as non-empty (docs/semantics.md).
    if (k < 0)
      d.insert(d.begin(), Dim::fixed(!d.empty() && evaluate(d.front().size, c.syms).is_zero() ? 0 : 1));
    else {
      // Above every dimension is the outermost form (rank -1): only the done token can show
      // where the stream's last unit ends, and a rank >= 0 Promote does not wait for it.
      if (size_t(k) >= d.size())
        c.fail("rank " + std::to_string(k) + " inserts the new dimension above all " + std::to_string(d.size()) +
               " dims of " + in.str() + "; use rank -1 (the outermost form) for that");
      d.insert(d.end() - k, Dim::fixed(1));
    }
    return RuleResult{{{"out", StreamType{d, in.elem}}}, 0};
  };
  r[size_t(OpKind::kRepeat)] = [](C& c) {
    const StreamType& in = c.input("in");
    return RuleResult{{{"out", StreamType{cat(in.dims, {Dim::fixed(c.get(param::kCount))}), in.elem}}}, 0};
  };
  r[size_t(OpKind::kExpand)] = [](C& c) {
    const StreamType& in = c.input("in");
    const StreamType& ref = c.input("ref");
    const size_t k = size_t(c.get(param::kRank));
    if (in.dims.size() != ref.dims.size())
      c.fail("data from '" + c.producers.at("in") + "' " + in.str() + " and ref from '" + c.producers.at("ref") + "' " +
             ref.str() + " must have the same rank");
    need_rank(c, "in", in, k, "Expand rank " + std::to_string(k) + " repeats the data over that many inner ones");
    for (size_t i = 0; i < k; ++i)
      if (!in.dim(i).size.is_equal(1))
        c.fail("data " + in.str() + " must have size 1 in its " + std::to_string(k) + " inner dims");
    StreamType a{outer(in, k), {}}, b{outer(ref, k), {}};
    std::string d = shape_difference(c, a, b);
    if (!d.empty())
      c.fail("data from '" + c.producers.at("in") + "' " + in.str() + " and ref from '" + c.producers.at("ref") + "' " +
             ref.str() + " differ outside the expanded dims (" + d + ")");
    return RuleResult{{{"out", StreamType{ref.dims, in.elem}}}, 0};
  };
  r[size_t(OpKind::kZip)] = [](C& c) {
    auto ins = c.numbered("in");
    const StreamType& s = same_shapes(c, ins);
    ElemType t;
    t.kind = ElemType::Tuple;
    for (const StreamType* x : ins) t.members.push_back(x->elem);
    return RuleResult{{{"out", StreamType{s.dims, t}}}, 0};
  };
}

// Address generation.
void add_address_rules(Rules& r) {
  using C = RuleContext;
  r[size_t(OpKind::kExpertAddrGen)] = [](C& c) {
    const StreamType& in = c.input("in");
    if (in.elem.kind != ElemType::Selector) c.fail("input 'in' carries " + in.elem.str() + ", not selectors");
    // One group of tiles_per_expert addresses per set bit, and an empty group for an empty
    // selector: [sel dims.., tiles_per_expert] for one-hot selectors (EagerMerge's, the case it is
    // made for). Otherwise the groups replace the selectors in their innermost dimension.
    const int64_t tiles = c.get(param::kTilesPerExpert);
    std::vector<Dim> d = in.dims;
    Dim addr = Dim::fixed(tiles);
    std::string ref = c.producers.count("in") ? c.producers.at("in") : "";
    for (const NodeSpec* p = c.graph.find(ref.substr(0, ref.find('.')));
         p && p->is(OpKind::kBroadcast) && p->inputs.count("in"); p = c.graph.find(ref.substr(0, ref.find('.'))))
      ref = p->inputs.at("in");
    const NodeSpec* src = c.graph.find(ref.substr(0, ref.find('.')));
    const bool one_hot = src && src->is(OpKind::kEagerMerge) && ref == src->name + ".sel";
    if (const std::vector<Beat>* lit = c.literal_input("in")) {
      int64_t groups = 0, bits = 0, empty = 0, other = 0;
      for (const Beat& b : *lit)
        if (b.has_elem && b.elem.is_selector()) {
          const int64_t n = b.elem.selector().count();
          groups += std::max<int64_t>(n, 1);
          bits += n;
          empty += n == 0;
          other += n != 1;
        }
      if (other) d.back() = Dim{groups, d.size() == 1 ? DimKind::Static : DimKind::Ragged};
      if (empty) addr = Dim{tiles * bits, DimKind::Ragged};
    } else if (!one_hot) {
      d.back() = Dim{c.fresh("out", "groups"), d.size() == 1 ? DimKind::Dynamic : DimKind::Ragged};
      addr = Dim{c.fresh("out", "addrs"), DimKind::Ragged};
    }
    return RuleResult{{{"out", StreamType{cat(d, {addr}), ElemType::scalar()}}}, 0};
  };
  r[size_t(OpKind::kKvCacheAddrGen)] = [](C& c) {
    const StreamType& idx = c.input("idx");
    const StreamType& len = c.input("kv_len");
    StreamType a{idx.dims, {}}, b{len.dims, {}};
    std::string d = shape_difference(c, a, b);
    if (!d.empty())
      c.fail("idx from '" + c.producers.at("idx") + "' " + idx.str() + " and kv_len from '" + c.producers.at("kv_len") +
             "' " + len.str() + " must have the same shape (" + d + ")");
    // Tiles per request differ: a ragged dimension whose sum is the tiles of all requests.
    const std::vector<Dim> dims = cat(idx.dims, {Dim{c.fresh("addr", "tiles"), DimKind::Ragged}});
    return RuleResult{{{"addr", StreamType{dims, ElemType::scalar()}},
                       {"last", StreamType{dims, ElemType::selector()}},
                       {"valid", StreamType{dims, ElemType::tile(1, 1, DType::INT32)}}},
                      0};
  };
}

// Indexed by OpKind; testbench/shape checks that every operator has one.
Rules make_rules() {
  Rules r;
  add_source_sink_rules(r);
  add_offchip_rules(r);
  add_onchip_rules(r);
  add_routing_rules(r);
  add_merge_and_distribution_rules(r);
  add_higher_order_rules(r);
  add_shape_rules(r);
  add_address_rules(r);
  return r;
}

}  // namespace

const ShapeRule* find_shape_rule(const std::string& op) {
  static const Rules rules = make_rules();
  const OpRegistry& registry = OpRegistry::instance();
  if (!registry.has(op)) return nullptr;
  const ShapeRule& rule = rules[size_t(registry.find(op).kind)];
  return rule ? &rule : nullptr;
}

}  // namespace stepsim::shape
