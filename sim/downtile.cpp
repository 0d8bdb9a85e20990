#include "sim/downtile.h"

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

namespace {

using frontend::int_list;

class Downtiler {
 public:
  Downtiler(const Graph& g, int64_t T) : g_(g), T_(T) {
    if (T < 1) throw std::invalid_argument("downtile: the physical tile must be >= 1");
    types_ = shape::infer_types(g, syms_);
  }

  Graph run() {
    Graph out = g_;
    out.nodes.clear();
    out.name = g_.name + "_t" + std::to_string(T_);
    for (const NodeSpec& n : g_.nodes) {
      if (!n.dims.empty() || !n.types.empty()) fail(n, "declared output dims/types are not supported");
      if (n.is(OpKind::kLinearOffChipLoad) || n.is(OpKind::kLinearOffChipStore))
        add(out, offchip(n));
      else if (n.is(OpKind::kRepeat))
        repeat(out, n);
      else if (n.is(OpKind::kMap))
        map(out, n);
      else if (n.is(OpKind::kAccum))
        accum(out, n);
      else if (n.is(OpKind::kSink) || (n.is(OpKind::kSource) && !carries_tiles(n)))
        add(out, n);
      else
        fail(n,
             "operator " + n.op + " is not supported (LinearOffChipLoad/Store, Repeat, Map, Accum matmul_acc, Sink)");
    }
    try {  // the result must be a graph the loader takes (derived names grow by their suffixes)
      check_graph(out);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("downtile: the down-tiled graph would not load: ") + e.what());
    }
    SymbolTable check;
    shape::infer_types(out, check);  // and type-check
    return out;
  }

 private:
  using SymbolTable = shape::SymbolTable;

  [[noreturn]] void fail(const NodeSpec& n, const std::string& msg) const {
    throw std::invalid_argument("downtile: node '" + n.name + "' (" + n.op + "): " + msg);
  }
  static void add(Graph& out, NodeSpec n) { out.nodes.push_back(std::move(n)); }

  int64_t as_int(const NodeSpec& n, const shape::ex& e, const std::string& what) {
    int64_t v = 0;
    if (!shape::to_int(shape::evaluate(e, syms_), v))
      fail(n, what + " " + shape::to_string(e) + " is not a known integer");
    return v;
  }
  const shape::StreamType& input_type(const NodeSpec& n, const std::string& port) {
    auto& in = types_.nodes.at(n.name).inputs;
    if (!in.count(port)) fail(n, "no input '" + port + "'");
    return in.at(port);
  }
  // Tile [rows, cols] of an input; both must be multiples of T.
  std::pair<int64_t, int64_t> tile_of(const NodeSpec& n, const std::string& port) {
    const shape::ElemType& e = input_type(n, port).elem;
    if (e.kind != shape::ElemType::Tile) fail(n, "input '" + port + "' does not carry tiles");
    if (e.has_rows_mean) fail(n, "input '" + port + "' has tiles of varying rows");
    const int64_t r = as_int(n, e.rows, "tile rows"), c = as_int(n, e.cols, "tile cols");
    if (r % T_ || c % T_)
      fail(n, "tile [" + std::to_string(r) + "x" + std::to_string(c) + "] of input '" + port +
                  "' is not a multiple of " + std::to_string(T_));
    return {r / T_, c / T_};
  }
  bool carries_tiles(const NodeSpec& n) {
    for (const auto& [port, t] : types_.nodes.at(n.name).outputs)
      if (t.elem.kind == shape::ElemType::Tile) return true;
    return false;
  }

  // The same affine view at block granularity: a logical tile index l = (lr, lc) in the grid of
  // [R x C] tiles starts at block (lr*R/T, lc*C/T); checked over the whole view.
  NodeSpec offchip(const NodeSpec& n) {
    NodeSpec o = n;
    const std::string tname = param_of(n, param::kTensor);
    const TensorSpec* t = nullptr;
    for (const TensorSpec& x : g_.tensors)
      if (x.name == tname) t = &x;
    if (!t) fail(n, "unknown tensor '" + tname + "'");
    const std::vector<int64_t> tile = param_of(n, param::kTile);
    if (tile.size() != 2 || tile[0] % T_ || tile[1] % T_ || int64_t(t->rows) % tile[0] || int64_t(t->cols) % tile[1])
      fail(n, "tile " + n.params.at(param::kTile.name) + " must divide tensor '" + tname + "' and be a multiple of " +
                  std::to_string(T_));
    const int64_t gc = int64_t(t->cols) / tile[1], pc = int64_t(t->cols) / T_, br = tile[0] / T_, bc = tile[1] / T_;
    std::vector<int64_t> shape = param_of(n, param::kOutShape), stride = param_of(n, param::kStride);
    if (shape.empty()) shape = {int64_t(t->rows) / tile[0], gc};
    if (stride.empty()) {
      stride.assign(shape.size(), 1);
      for (size_t d = shape.size() - 1; d > 0; --d) stride[d - 1] = stride[d] * shape[d];
    }
    const int64_t offset = param_of(n, param::kOffset);
    auto block = [&](int64_t l) { return (l / gc) * br * pc + (l % gc) * bc; };
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
      if (block(l) != p) fail(n, "the view is not affine at block granularity (tile " + std::to_string(l) + ")");
    }
    shape.push_back(br);
    shape.push_back(bc);
    pstride.push_back(pc);
    pstride.push_back(1);
    o.params[param::kTile.name] = int_list({T_, T_});
    o.params[param::kOutShape.name] = int_list(shape);
    o.params[param::kStride.name] = int_list(pstride);
    o.params[param::kOffset.name] = std::to_string(block(offset));
    return o;
  }

  // Repeat of a tile: the block group is buffered and replayed.
  void repeat(Graph& out, const NodeSpec& n) {
    const shape::StreamType& in = input_type(n, "in");
    if (in.elem.kind != shape::ElemType::Tile) {
      add(out, n);
      return;
    }
    tile_of(n, "in");
    NodeSpec buf =
        node_spec(n.name + "_buf", OpKind::kBufferize, {{param::kRank.name, "2"}}, {{"in", n.inputs.at("in")}});
    NodeSpec play = n;
    play.op = op_name(OpKind::kStreamify);
    play.params = {{param::kRepeat.name, "[" + n.params.at(param::kCount.name) + "]"}};
    play.inputs = {{"in", buf.name + ".out"}};
    add(out, buf);
    add(out, play);
  }

  void map(Graph& out, const NodeSpec& n) {
    const std::string fn = param_of(n, param::kFn);
    const MapFunction& f = map_function(fn);
    if (f.matmul) {
      matmul(out, n, 0, f.signature.transposed_b, f.accum_form);
      return;
    }
    // Element-wise: the output element k depends on the operands' elements k only (a broadcast
    // or unary function charged per output element), so blocks of a tile are independent.
    const bool elementwise = f.flop_rule.kind == FlopRule::Kind::kPerOutputElement &&
                             (f.signature.shape == TileSignature::Shape::kBroadcast ||
                              f.signature.shape == TileSignature::Shape::kSameAsFirst);
    if (!elementwise) fail(n, "function '" + fn + "' is not supported (matmul variants and element-wise functions)");
    std::pair<int64_t, int64_t> first{-1, -1};
    for (const auto& [port, ref] : n.inputs) {
      const auto t = tile_of(n, port);
      if (first.first >= 0 && t != first) fail(n, "element-wise inputs of different tile shapes (broadcasting)");
      first = t;
    }
    add(out, n);
  }

  void accum(Graph& out, const NodeSpec& n) {
    const std::string fn = param_of(n, param::kFn);
    const AccumFunction& f = accum_function(fn);
    if (!f.matmul) fail(n, "function '" + fn + "' is not supported (matmul_acc variants)");
    const int64_t rank = param_of(n, param::kRank);
    matmul(out, n, rank, f.signature.transposed_b, fn);
  }

  // A = in0 [M x K], B = in1 [K x N] (transposed: [N x K]); the inner `rank` logical dims are
  // reduced too (Accum). Output blocks (i, j) = sum over the reduced dims and k of A(i,k) B(k,j).
  // rank 1 (one reduced logical dim C) uses an accumulator bank: each logical tile's blocks are
  // buffered alone and walked (i, j, k), and the Accum (bank_rank 2) keeps the partial sum of
  // every output block across C, so the blocks of one C step need not wait for the next. Other
  // ranks buffer the reduced dims too and walk (i, j, reduced.., k).
  // `accum_fn`: the matmul's Accum form (MapFunction::accum_form), which sums the block products.
  void matmul(Graph& out, const NodeSpec& n, int64_t rank, bool transposed, const std::string& accum_fn) {
    const auto [mb, kb] = tile_of(n, "in0");
    const auto [b0, b1] = tile_of(n, "in1");
    const int64_t nb = transposed ? b0 : b1;
    if ((transposed ? b1 : b0) != kb) fail(n, "inner dimensions of the matmul operands differ");
    const shape::StreamType& a = input_type(n, "in0");
    if (int64_t(a.dims.size()) <= rank) fail(n, "rank " + std::to_string(rank) + " exceeds the input's dimensions");
    const bool bank = rank == 1;
    const int64_t view_rank = bank ? 0 : rank;  // reduced logical dims inside the buffers
    std::vector<int64_t> red;                   // the buffered reduced logical dims, outermost first
    for (size_t d = a.dims.size() - size_t(view_rank); d < a.dims.size(); ++d)
      red.push_back(as_int(n, a.dims[d].size, "reduced dimension"));
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
    const std::string buffered_rank = std::to_string(view_rank + 2);
    auto view = [&](const std::string& port, const std::string& tag, const std::vector<int64_t>& stride) {
      NodeSpec buf = node_spec(n.name + "_" + tag + "_buf", OpKind::kBufferize, {{param::kRank.name, buffered_rank}},
                               {{"in", n.inputs.at(port)}});
      NodeSpec play = node_spec(n.name + "_" + tag + "_view", OpKind::kStreamify,
                                {{param::kStride.name, int_list(stride)}, {param::kOutShape.name, int_list(shape)}},
                                {{"in", buf.name + ".out"}});
      add(out, buf);
      add(out, play);
      return play.name + ".out";
    };
    const std::string av = view("in0", "a", sa), bv = view("in1", "b", sb);
    // One Accum over (reduced.., k) of block products: its fp32 accumulator (per output block)
    // takes the products in the logical k order, so the sums are those of the logical matmul,
    // bit for bit.
    NodeSpec acc = n;
    acc.op = op_name(OpKind::kAccum);
    acc.params = {{param::kFn.name, accum_fn},
                  {param::kRank.name, std::to_string(view_rank + 1)}};
    if (bank) {  // [.., C, i, j, k]: k and C reduced around the (i, j) bank
      acc.params[param::kRank.name] = "2";
      acc.params[param::kBankRank.name] = "2";
    }
    acc.inputs = {{"in0", av}, {"in1", bv}};
    add(out, acc);
  }

  const Graph& g_;
  int64_t T_;
  SymbolTable syms_;
  shape::GraphTypes types_;
};

}  // namespace

Graph downtile(const Graph& g, int64_t T) { return Downtiler(g, T).run(); }

}  // namespace stepsim
