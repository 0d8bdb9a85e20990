"""One lowering rule per ATen operation family, in one table (RULES).

A rule is rule(lowering, node, *args, **kwargs) with the node's operands already lowered (SVal,
MVal, Lin, or Python values); it returns the node's value. Nodes whose operands are all known
are folded before any rule runs (ops on parameters, masks built with tril, RoPE tables), so
rules see at least one streamed operand. The docs' list of supported operations
(docs/python.md) is generated from this table: `python3 -m stepsim.torch`.
"""

import torch

from . import kvcache
from . import layout as L
from . import rope
from .values import Lin, LinView, MVal, SVal


class Rules:
    def __init__(self):
        self.table = {}   # "aten.add" -> function
        self.docs = []    # (names, text)
        self.never_fold = set()
        self.hints = {}

    def rule(self, *names, doc, rope_aware=False):
        """Registers f for `names`. A rule that is not rope_aware gets a RoPE in progress as its
        rotation made (rope.materialize)."""
        def register(f):
            f.rope_aware = rope_aware
            for n in names:
                self.table[n] = f
            self.docs.append((names, doc))
            return f

        return register

    def get(self, name):
        return self.table.get(name)

    def hint(self, name):
        return self.hints.get(name, ": the supported ATen operations are listed in docs/python.md")

    def markdown(self):
        lines = ["| ATen operations | lowered to |", "|---|---|"]
        for names, doc in sorted(self.docs, key=lambda d: d[0][0]):
            lines.append("| %s | %s |" % (", ".join("`%s`" % n for n in names), doc))
        return "\n".join(lines)


RULES = Rules()
rule = RULES.rule
RULES.never_fold.update({"aten.embedding"})  # the ids are the request's: the lookup is the workload


def out_shape(lw):
    return tuple(lw.concrete[lw.node].shape)


_out_shape = out_shape


# ---- views: no data moves

@rule("aten.view", "aten._unsafe_view", "aten._reshape_alias", "aten.reshape", "aten.unsqueeze", "aten.squeeze",
      "aten.flatten", "aten.unflatten",
      doc="a new layout of the same stream (axes refined or regrouped); a Linear viewed into heads takes the "
          "head dim as its column tile", rope_aware=True)
def view(lw, node, x, *args, out_shape=None, **kwargs):
    shape = out_shape or _out_shape(lw)
    if rope.is_rope(x):
        return rope.view(lw, node, x, shape)
    if isinstance(x, MVal):
        return MVal(lw.concrete[node], x.from_input, x.what)
    if isinstance(x, LinView):
        x = x.lin
    if isinstance(x, Lin):
        n = x.shape[-1]
        lead = tuple(x.shape[:-1])
        if shape[-1] == n:  # leading dims regrouped: the Linear's input is viewed instead
            return Lin(_view_of(lw, x.x, tuple(shape[:-1]) + (x.x.shape[-1],)), x.weight, x.bias, x.node,
                       x.weight_what, x.bias_what)
        if len(shape) >= len(lead) + 2 and tuple(shape[:len(lead)]) == lead:
            # [.., H, hd] or [.., parts, H, hd]: an unbind takes a Linear of the part's columns,
            # anything else builds it with the innermost dim as its column tile (a head per tile)
            return LinView(x, shape[len(lead):])
        x = lw.build_linear(x)
    return _view_of(lw, x, shape)


def _view_of(lw, x, shape):
    if isinstance(x, MVal):
        return MVal(x.data.reshape(shape), x.from_input, x.what)
    x = lw.stream_of(x)
    lay, cuts = x.layout.reshaped(shape)
    if lay is None:
        lw.fail("a view of %s as %s" % (x.layout, list(shape)))
    split = lw.refine(x, cuts)
    return SVal(lay, split.stream)


@rule("aten.clone", "aten.contiguous", "aten.alias", "aten.detach", "aten.lift_fresh_copy", "aten.dropout",
      "aten.native_dropout", "aten.lift_fresh",
      doc="nothing (a copy or a no-op in eval mode)", rope_aware=True)
def identity(lw, node, x, *args, **kwargs):
    if node.target.__name__.startswith("native_dropout"):
        return (x, None)
    return x


@rule("aten.expand", doc="broadcast axes: re-read (stride 0) by the consumer, never copied (GQA head repetition)")
def expand(lw, node, x, *args, **kwargs):
    shape = out_shape(lw)
    if isinstance(x, MVal):
        return MVal(lw.concrete[node], x.from_input, x.what)
    x = lw.stream_of(x)
    if tuple(x.shape) == shape:
        return x
    return SVal(x.layout.expanded(shape), x.stream)


@rule("aten.t", "aten.transpose", "aten.permute", "aten.swapaxes",
      doc="relabelled axes (the stream is unchanged; a consumer that needs another order re-streams it from a "
          "memory unit)")
def permute(lw, node, x, *args, **kwargs):
    if isinstance(x, MVal):
        return MVal(lw.concrete[node], x.from_input, x.what)
    x = lw.stream_of(x)
    n = len(x.shape)
    name = node.target.overloadpacket.__name__
    if name == "permute":
        perm = list(args[0])
    else:
        d0, d1 = (0, 1) if name == "t" else (args[0] % n, args[1] % n)
        perm = list(range(n))
        if n > 1:
            perm[d0], perm[d1] = perm[d1], perm[d0]
    return SVal(x.layout.permuted(perm), x.stream)


# ---- element-wise

def elementwise(lw, fn, *operands):
    if any(rope.is_rope(o) for o in operands):
        r = rope.elementwise(lw, fn, operands)
        if r is not None:
            return r
        operands = [rope.materialize(lw, o) if rope.is_rope(o) else o for o in operands]
    shape = out_shape(lw)
    # an input of the result's shape streams (once, however many read it); one broadcast to it is
    # read from HBM in the result's layout, re-read along the broadcast dims
    ops = [lw.stream_of(o) if isinstance(o, (Lin, LinView)) or
           (isinstance(o, MVal) and o.from_input and tuple(o.shape) == shape) else o for o in operands]
    driver = next((o for o in ops if isinstance(o, SVal) and tuple(o.shape) == shape and not o.layout.bcast), None)
    if driver is None:
        full = next((o for o in ops if isinstance(o, (MVal, SVal)) and tuple(o.shape) == shape), None)
        if full is None:
            lw.fail("an element-wise %s whose operands %s are all broadcast to %s" % (
                fn, [list(getattr(o, "shape", ())) for o in ops], list(shape)))
        driver = lw.stream_of(full) if isinstance(full, MVal) else lw.materialize(full)
    streams, dtypes = [], []
    for o in ops:
        if o is driver:
            streams.append(driver.stream)
            dtypes.append(driver.dtype)
        elif isinstance(o, SVal):
            streams.append(lw.conform(o, driver.layout))
            dtypes.append(o.dtype)
        elif isinstance(o, MVal):
            s, dt = lw.load(o, driver.layout)
            streams.append(s)
            dtypes.append(dt)
        else:
            s, _ = lw.load(torch.tensor(float(o)), driver.layout, dtype=driver.dtype)
            streams.append(s)
    return lw.track(SVal(driver.layout, lw.map(fn, *streams)))


def _scaled(lw, y, alpha):
    return y if alpha in (1, None) else elementwise(lw, "mul", y, alpha)


@rule("aten.add", doc="Map add (broadcasting: a row vector, a column of per-row values, a number, or a "
                      "re-read operand)", rope_aware=True)
def add(lw, node, a, b, alpha=1):
    if alpha not in (1, None):
        lw.fail("aten.add with alpha %r" % (alpha,))
    return elementwise(lw, "add", a, b)


@rule("aten.sub", doc="Map sub", rope_aware=True)
def sub(lw, node, a, b, alpha=1):
    if alpha not in (1, None):
        lw.fail("aten.sub with alpha %r" % (alpha,))
    return elementwise(lw, "sub", a, b)


@rule("aten.rsub", doc="Map sub (operands swapped)")
def rsub(lw, node, a, b, alpha=1):
    return elementwise(lw, "sub", b, a)


@rule("aten.mul", doc="Map mul", rope_aware=True)
def mul(lw, node, a, b):
    return elementwise(lw, "mul", a, b)


@rule("aten.div", doc="Map div (true division)", rope_aware=True)
def div(lw, node, a, b, rounding_mode=None):
    if rounding_mode is not None:
        lw.fail("aten.div with rounding_mode %r" % rounding_mode)
    return elementwise(lw, "div", a, b)


@rule("aten.maximum", "aten.minimum", doc="Map max, min")
def maxmin(lw, node, a, b):
    return elementwise(lw, "max" if node.target.overloadpacket.__name__ == "maximum" else "min", a, b)


@rule("aten.gt", "aten.ge", "aten.lt", "aten.le", "aten.eq", "aten.ne",
      doc="Map of the comparison of the same name: 1 where true, 0 where false (a mask for select)")
def compare(lw, node, a, b):
    return elementwise(lw, node.target.overloadpacket.__name__, a, b)


@rule("aten.logical_not", "aten.bitwise_not", doc="of a mask: Map eq with 0")
def logical_not(lw, node, x):
    if lw.concrete[node].dtype != torch.bool:
        lw.fail("aten.%s of a streamed value that is not a mask" % node.target.overloadpacket.__name__)
    return elementwise(lw, "eq", x, 0.0)


@rule("aten.relu", doc="Map max with 0")
def relu(lw, node, x):
    return elementwise(lw, "max", x, 0.0)


_UNARY = {"exp": "exp", "sigmoid": "sigmoid", "silu": "silu", "rsqrt": "rsqrt", "tanh": "tanh", "sqrt": "sqrt",
          "neg": "neg", "abs": "abs", "erf": "erf"}


@rule(*["aten." + k for k in _UNARY], doc="Map of the tile function of the same name", rope_aware=True)
def unary(lw, node, x, *args, **kwargs):
    return elementwise(lw, _UNARY[node.target.overloadpacket.__name__], x)


@rule("aten.reciprocal", doc="Map div of 1 by x")
def reciprocal(lw, node, x):
    return elementwise(lw, "div", 1.0, x)


@rule("aten.gelu", doc="Map gelu (exact, with erf) or gelu_tanh (approximate='tanh')")
def gelu(lw, node, x, approximate="none"):
    return elementwise(lw, "gelu_tanh" if approximate == "tanh" else "gelu", x)


@rule("aten.pow", doc="x ** 2 and x ** 3 as Map mul, x ** 0.5 as sqrt, x ** -0.5 as rsqrt, x ** -1 as 1 / x")
def power(lw, node, x, e):
    if isinstance(e, (MVal, SVal, Lin)):
        lw.fail("aten.pow with a tensor exponent")
    if e == 1:
        return lw.stream_of(x)
    if e == 2:
        return elementwise(lw, "mul", x, x)
    if e == 3:
        return elementwise(lw, "mul", elementwise(lw, "mul", x, x), x)
    if e == 0.5:
        return elementwise(lw, "sqrt", x)
    if e == -0.5:
        return elementwise(lw, "rsqrt", x)
    if e == -1:
        return elementwise(lw, "div", 1.0, x)
    lw.fail("aten.pow with exponent %r (supported: 1, 2, 3, 0.5, -0.5, -1)" % (e,))


@rule("aten.where", doc="Map select(cond, a, b)")
def where_(lw, node, cond, a, b=None):
    if b is None:
        lw.fail("aten.where with one argument (the indices of a condition: data-dependent shapes)")
    return elementwise(lw, "select", cond, a, b)


@rule("aten.masked_fill", doc="Map select(mask, value, x)")
def masked_fill(lw, node, x, mask, value):
    return elementwise(lw, "select", mask, value, x)


@rule("aten._to_copy", "aten.to", "aten.type_as",
      doc="Map cast_f32 / cast_bf16 where the dtype changes (a model computing in fp32 does so here too)")
def to_copy(lw, node, x, *args, dtype=None, **kwargs):
    want = node.meta.get("tensor_meta").dtype if node.meta.get("tensor_meta") is not None else dtype
    if want is None:
        want = lw.concrete[node].dtype
    if isinstance(x, MVal):
        return MVal(lw.concrete[node], x.from_input, x.what)
    x = lw.stream_of(x)
    if want in (torch.float32, torch.float64):
        return x if x.dtype == "fp32" else lw.track(SVal(x.layout, lw.map("cast_f32", x.stream)))
    if want in (torch.bfloat16, torch.float16):
        return x if x.dtype == "bf16" else lw.track(SVal(x.layout, lw.map("cast_bf16", x.stream)))
    lw.fail("a cast of a streamed value to %s" % want)


# ---- reductions over the last dim

def _last_dim(lw, x, dims, what):
    n = len(x.shape)
    dims = [dims] if isinstance(dims, int) else list(dims or [])
    if [d % n for d in dims] != [n - 1]:
        lw.fail("%s over dims %s of a %d-d value (only the last dim)" % (what, dims, n))


def row_reduce(lw, x, fn, keepdim=True):
    x = lw.cols_exactly(lw.stream_of(x), len(x.shape) - 1)
    lay = x.layout
    keep = [a for a in range(len(lay.sizes)) if a not in lay.cols]
    shape = tuple(lay.shape[:-1]) + ((1,) if keepdim else ())
    out = L.Layout(shape, [lay.sizes[a] for a in keep], [lay.dims[a] for a in keep],
                   [keep.index(a) for a in lay.grid], [keep.index(a) for a in lay.rows], [],
                   [keep.index(a) for a in lay.bcast])
    return lw.track(SVal(out, lw.map(fn, x.stream)))


@rule("aten.sum", doc="Map row_sum (over the last dim)")
def sum_(lw, node, x, dims=None, keepdim=False, dtype=None):
    _last_dim(lw, x, dims, "aten.sum")
    return row_reduce(lw, x, "row_sum", keepdim)


@rule("aten.mean", doc="Map row_mean (over the last dim)")
def mean(lw, node, x, dims=None, keepdim=False, dtype=None):
    _last_dim(lw, x, dims, "aten.mean")
    return row_reduce(lw, x, "row_mean", keepdim)


@rule("aten.amax", doc="Map row_max (over the last dim)")
def amax(lw, node, x, dims=None, keepdim=False):
    _last_dim(lw, x, dims, "aten.amax")
    return row_reduce(lw, x, "row_max", keepdim)


@rule("aten.var", doc="Map row_var (population variance over the last dim), times n / (n - correction)")
def var(lw, node, x, dims=None, unbiased=None, keepdim=False, correction=None):
    _last_dim(lw, x, dims, "aten.var")
    n = x.shape[-1]
    c = correction if correction is not None else (1 if unbiased in (None, True) else 0)
    v = row_reduce(lw, x, "row_var", keepdim)
    return v if c == 0 else elementwise(lw, "mul", v, n / (n - c))


@rule("aten._softmax", "aten.softmax",
      doc="row_max, sub_row, exp, row_sum, div (over the last dim; in the operand's dtype)")
def softmax(lw, node, x, dim, half_to_float=False):
    _last_dim(lw, x, dim, "aten._softmax")
    x = lw.cols_exactly(lw.stream_of(x), len(x.shape) - 1)
    m = lw.map("row_max", x.stream)
    e = lw.map("exp", lw.map("sub_row", x.stream, m))
    s = lw.map("row_sum", e)
    return lw.track(SVal(x.layout, lw.map("div", e, s)))


@rule("aten.native_layer_norm",
      doc="LayerNorm: row_mean, sub, row_var, add eps, rsqrt, mul, times the weight plus the bias")
def layer_norm(lw, node, x, normalized_shape, weight, bias, eps):
    if len(normalized_shape) != 1:
        lw.fail("layer_norm over %d dims (only the last)" % len(normalized_shape))
    x = lw.cols_exactly(lw.stream_of(x), len(x.shape) - 1)
    mu = row_reduce(lw, x, "row_mean")
    xc = lw.track(SVal(x.layout, lw.map("sub_row", x.stream, mu.stream)))
    v = row_reduce(lw, x, "row_var")
    r = lw.track(SVal(v.layout, lw.map("rsqrt", lw.map("add", v.stream, lw.load(torch.tensor(float(eps)), v.layout,
                                                                                  dtype="fp32")[0]))))
    y = lw.track(SVal(x.layout, lw.map("mul", xc.stream, lw.conform(r, x.layout))))
    y = SVal(y.layout, lw.map("cast_bf16", y.stream)) if y.dtype != x.dtype else y
    if weight is not None:
        y = _affine(lw, y, weight, "mul")
    if bias is not None:
        y = _affine(lw, y, bias, "add")
    return (y, mu, r)


def _affine(lw, y, p, fn):
    s, _ = lw.load(p, y.layout)
    return lw.track(SVal(y.layout, lw.map(fn, y.stream, s)))


# ---- contractions

@rule("aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm",
      doc="by a parameter: a Linear (x repeated per column tile, W's tiles per row block, Map matmul_t, "
          "bias add); of two streamed values: per batch (head), the right operand kept whole in a memory unit "
          "and replayed for every row block of the left one (Bufferize, Streamify, Accum retile_row), Map "
          "matmul or matmul_t")
def matmul(lw, node, *args, beta=1, alpha=1):
    name = node.target.overloadpacket.__name__
    bias = None
    if name in ("addmm", "baddbmm"):
        bias, a, b = args[:3]
    else:
        a, b = args[:2]
    if beta != 1 or alpha != 1:
        lw.fail("aten.%s with beta %r, alpha %r" % (name, beta, alpha))
    if isinstance(b, MVal) and not b.from_input:
        w = b.data
        if w.dim() == 3 and (w.shape[0] == 1 or bool((w == w[:1]).all())):
            w = w[0]  # one matrix for every batch element (an expert's weights gathered per token)
        if w.dim() != 2:
            lw.fail("aten.%s of a streamed value by a %d-d parameter %s" % (name, w.dim(), list(w.shape)))
        bvec = None
        if bias is not None:
            if not isinstance(bias, MVal) or bias.data.numel() != w.shape[1]:
                lw.fail("aten.%s with a bias of shape %s" % (name, list(getattr(bias, "shape", ()))))
            bvec = bias.data.reshape(-1)
        return Lin(a, w.t(), bvec, node, b.what, getattr(bias, "what", "bias"))
    from . import attention
    y = attention.batched_matmul(lw, node, a, b)
    if bias is not None:
        y = elementwise(lw, "add", y, bias)
    return y


# ---- splits of fused projections

@rule("aten.split", "aten.split_with_sizes", "aten.chunk", "aten.unbind",
      doc="of a Linear's output columns: one Linear per part (W's rows split); of a known value: folded")
def split(lw, node, x, *args, **kwargs):
    parts = lw.concrete[node]
    name = node.target.overloadpacket.__name__
    dim = (args[1] if len(args) > 1 else kwargs.get("dim", 0)) if name != "unbind" else (args[0] if args else 0)
    if isinstance(x, MVal):
        return [MVal(p, x.from_input, x.what) for p in parts]
    if isinstance(x, LinView) and name == "unbind" and dim % len(x.shape) == len(x.lin.shape) - 1:
        return [view(lw, node, x.part(j), out_shape=tuple(p.shape)) for j, p in enumerate(parts)]
    if isinstance(x, LinView):
        x = lw.stream_of(x)
    n = len(x.shape)
    if isinstance(x, Lin) and dim % n == n - 1 and name != "unbind":
        out, start = [], 0
        for p in parts:
            out.append(x.columns(start, start + p.shape[-1]))
            start += p.shape[-1]
        return out
    lw.fail("aten.%s of a streamed value along dim %d (splits of a Linear's output columns are supported)"
            % (name, dim))


@rule("aten.slice", doc="of a Linear's output columns: the Linear of those columns; the halves of a vector "
                        "(rotate-half RoPE); of a known value: folded", rope_aware=True)
def slice_(lw, node, x, dim=0, start=None, end=None, step=1):
    n = len(x.shape)
    size = x.shape[dim % n]
    start = 0 if start is None else max(0, min(start if start >= 0 else start + size, size))
    end = size if end is None else max(0, min(end if end >= 0 else end + size, size))
    if isinstance(x, MVal):  # a view of a stored tensor: its loads read that part
        return MVal(lw.concrete[node], x.from_input, x.what)
    if start == 0 and end == size and step == 1:
        return x
    if isinstance(x, Lin) and dim % n == n - 1 and step == 1:
        return x.columns(start, end)
    return rope.lane_slice(lw, node, x, dim % n, start, end, step)


@rule("aten.select", doc="a lane of a pair (interleaved RoPE: x.reshape(..., -1, 2)[..., j]); of a known value: "
                         "folded", rope_aware=True)
def select(lw, node, x, dim, index):
    if isinstance(x, LinView) and dim % len(x.shape) == len(x.lin.shape) - 1:
        return view(lw, node, x.part(index % x.tail[0]), out_shape=tuple(lw.concrete[node].shape))
    return rope.select(lw, node, x, dim, index)


@rule("aten.index_select", doc="with a constant index that repeats each entry (repeat_interleave, GQA) or "
                               "the whole dim (repeat): broadcast axes, re-read, never copied")
def index_select(lw, node, x, dim, index):
    idx = index.data if isinstance(index, MVal) and not index.from_input else None
    if idx is None:
        lw.fail("aten.index_select with an index computed from the inputs (a data-dependent gather)")
    x = lw.stream_of(x)
    n = x.shape[dim]
    idx = [int(i) for i in idx.reshape(-1)]
    r = len(idx) // n if n else 0
    shape = list(x.shape)
    if r * n == len(idx) and idx == [i // r for i in range(len(idx))]:  # each entry r times, in place
        inner = shape[:dim + 1] + [1] + shape[dim + 1:]
        wide = shape[:dim + 1] + [r] + shape[dim + 1:]
    elif r * n == len(idx) and idx == [i % n for i in range(len(idx))]:  # the whole dim r times
        inner = shape[:dim] + [1] + shape[dim:]
        wide = shape[:dim] + [r] + shape[dim:]
    else:
        lw.fail("aten.index_select with the index %s (supported: repeat_interleave and repeat patterns)"
                % (idx[:16],))
    v = _view_of(lw, x, tuple(inner))
    v = SVal(v.layout.expanded(tuple(wide)), v.stream)
    return _view_of(lw, v, tuple(lw.concrete[node].shape))


@rule("aten.embedding", doc="an off-chip gather: RandomOffChipLoad of the table's rows at the token ids (a "
                            "literal stream of tile indices), then rows grouped into row blocks")
def embedding(lw, node, weight, indices, *args):
    if not isinstance(weight, MVal) or not isinstance(indices, MVal) or weight.from_input:
        lw.fail("aten.embedding of a streamed table or with streamed ids")
    ids = [int(i) for i in indices.data.reshape(-1)]
    v, d = weight.data.shape
    table = lw.store_tensor(weight.data, L.from_spec((v, d), [(0, v, "r"), (1, d, "c")]), "bf16", weight.what)
    name = lw.name("_ids")
    lw.g.literal_stream(name, " ".join(str(i) for i in ids) + " S1 D")
    (addr,) = lw.g.Source(stream=name, name=name)
    rows = lw.g.RandomOffChipLoad(addr, tensor=table, tile=[1, d], name=lw.name("_gather"))
    shape = tuple(lw.concrete[node].shape)
    lay = lw.default_layout(shape)
    tr = lay.tile()[0]
    rows = lw.rows_to_blocks(rows, len(ids), tr)
    flat = L.default_layout((len(ids), d), tr)
    out, cuts = flat.reshaped(shape)
    return lw.track(SVal(out, lw.refine(SVal(flat, rows), cuts).stream))


@rule("aten.stack", doc="the two lanes of a pair (interleaved RoPE); of known values: folded", rope_aware=True)
def stack(lw, node, parts, dim=0):
    return rope.stack(lw, node, parts, dim)


@rule("aten.cat", doc="the halves of a vector (rotate-half RoPE); a cache and new keys or values along a dim "
                      "that is not the last (each made whole along it, Map cat_rows); of known values: folded",
      rope_aware=True)
def cat(lw, node, parts, dim=0):
    if any(rope.is_rope(p) for p in parts):
        return rope.cat(lw, node, parts, dim)
    return kvcache.concat(lw, list(parts), dim)


@rule("aten.copy_", doc="a write into a cache buffer: LinearOffChipStore; later reads of those positions "
                        "take the stream (kvcache.py)")
def copy_(lw, node, dst, src, non_blocking=False):
    return kvcache.copy_(lw, node, dst, src, non_blocking)


@rule("aten.index_put_", doc="a write at constant positions (k_out[:, :, input_pos] = k): as aten.copy_")
def index_put_(lw, node, dst, indices, values, accumulate=False):
    return kvcache.index_put_(lw, node, dst, indices, values, accumulate)


@rule("aten.index_copy_", "aten.index_copy", doc="a write at constant positions along a dim: as aten.copy_")
def index_copy_(lw, node, dst, dim, index, source):
    return kvcache.index_copy_(lw, node, dst, dim, index, source)


@rule("aten.view_as_complex", "aten.view_as_real",
      doc="complex RoPE: the product by a complex table as a rotation (Map rotate_pairs, mul by the real "
          "tables, add)", rope_aware=True)
def complex_view(lw, node, x):
    if node.target.overloadpacket.__name__ == "view_as_complex":
        return rope.view_as_complex(lw, node, x)
    return rope.view_as_real(lw, node, x)


@rule("aten.topk", doc="inside a MoE block only (moe.py): the block is recognised by its structure and lowered "
                       "to TopK, Partition and Reassemble")
def topk(lw, node, *args, **kwargs):
    lw.fail("aten.topk outside a recognised MoE block. A MoE block is a module whose forward takes a top-k over "
            "the scores of a projection (a Linear or a 2-d parameter) and that holds as many experts: a list "
            "(nn.ModuleList) of expert modules, or their weights stacked in parameters [experts, ...]; a top-k "
            "for anything else is data-dependent and has no lowering")


BEGIN, END = "<!-- aten-ops: generated by python3 -m stepsim.torch --write docs/python.md -->", \
    "<!-- aten-ops end -->"


def docs_block():
    """The table of supported ATen operations as docs/python.md holds it (between its markers)."""
    from . import attention  # noqa: F401 (its rules join the table)
    return "%s\n%s\n%s" % (BEGIN, RULES.markdown(), END)


def main(argv=None):
    """Prints the table, or with --write FILE replaces the block between the markers in FILE."""
    import sys

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "--write":
        text = open(argv[1], encoding="utf-8").read()
        if BEGIN not in text or END not in text:
            sys.exit("error: %s has no aten-ops markers" % argv[1])
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        with open(argv[1], "w", encoding="utf-8") as f:
            f.write(head + docs_block() + tail)
        return
    sys.stdout.write(docs_block() + "\n")


if __name__ == "__main__":
    main()
