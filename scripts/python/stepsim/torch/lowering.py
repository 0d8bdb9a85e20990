"""The walk over a traced ATen graph and the graph-building helpers every rule uses.

Each node is run on its example values (torch.fx.Interpreter: concrete shapes, folded
constants, which buffer a cache write aliases) and lowered by the rule of its ATen operation
(ops.RULES). A node whose operands are all known (parameters, buffers, constants) is folded: its
value is computed here and lives in HBM like a parameter.
"""
import math
import re

import numpy as np
import torch
import torch.fx as fx

from .. import _stepsim
from ..core.graph import Graph
from . import kvcache
from . import layout as L
from . import rope
from .trace import op_name, where
from .values import Lin, LinView, MVal, SVal, tile_dtype


def bf16_array(a):
    """float32 values rounded to bf16 (to nearest even), as float32."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)


# views of a cache buffer stay views (the buffer's addresses) until an operation reads them; a
# write keeps its destination as the buffer's view
_NO_FORWARDING = {"aten.view", "aten._unsafe_view", "aten._reshape_alias", "aten.reshape", "aten.unsqueeze",
                  "aten.squeeze", "aten.slice", "aten.select", "aten.permute", "aten.transpose", "aten.t",
                  "aten.expand", "aten.alias", "aten.detach", "aten.copy_", "aten.index_put_", "aten.index_copy_"}
_LINVIEW_AWARE = ("aten.unbind", "aten.select", "aten.view", "aten._unsafe_view", "aten._reshape_alias")


class Unsupported(_stepsim.Error):
    pass


class Lowering:
    def __init__(self, traced, schedule, name, rules):
        self.traced, self.schedule, self.rules = traced, schedule, rules
        self.g = Graph(name, "lowered from the PyTorch module %s by stepsim.torch (ATen level)" % name)
        self.values = {}      # fx node -> SVal | MVal | Lin | Python value | tuple of them
        self.concrete = {}    # fx node -> example value (tensors, tuples, numbers)
        self.stored = {}      # (id(tensor data), layout key, dtype) -> stored tensor name
        self.keep = []
        self.streamed = {}  # (id of an MVal's data, layout key) -> its SVal
        self.joined = {}       # (stream, layout, dim) -> the stream with the dim joined in its tiles
        self.tensor_names = {}  # base name -> how many stored tensors took it
        self.count = 0
        self.deepest = 1
        self.node = None      # the node being lowered (for names and errors)
        self.tile_rows = schedule.get("tile_rows")
        self.ref = None         # inside an expert: the packed tiles that drive every load
        self.prefix = ""
        self.writes = []        # kvcache.Write: streamed writes into cache buffers

    # ---- the walk

    def run(self, bound=None):
        """Lowers every node; returns [(value, example value, node)] of the outputs. `bound`: values
        of the enclosing graph for the inputs (an expert's packed tokens)."""
        bound = list(bound or [])
        placeholders = iter(zip(self.traced.sources, self.traced.values))
        outputs = None
        for node in self.traced.gm.graph.nodes:
            self.node = node
            if node.op == "placeholder":
                (kind, name), value = next(placeholders)
                self.concrete[node] = value
                self.values[node] = bound.pop(0) if kind == "input" and bound else self.placeholder(kind, name, value)
            elif node.op == "output":
                outputs = node.args[0]
            elif node.op == "get_attr":
                value = getattr(self.traced.gm, node.target)
                self.concrete[node] = value
                self.values[node] = MVal(value) if isinstance(value, torch.Tensor) else value
            else:
                self.concrete[node] = self.example(node)
                self.values[node] = self.guarded(node)
        flat = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        return [(self.values[o], self.concrete[o], o) if isinstance(o, fx.Node) else (o, o, None) for o in flat]

    def lower_nested(self, traced, bound, ref, prefix):
        """A traced submodule (an expert) lowered into the same graph on `bound` inputs, every load
        driven by `ref`; returns its one output's value."""
        saved = self.traced, self.values, self.concrete, self.node, self.ref, self.prefix
        self.traced, self.values, self.concrete, self.ref, self.prefix = traced, {}, {}, ref, prefix
        try:
            outs = self.run(bound)
            if len(outs) != 1:
                self.fail("an expert that returns %d values" % len(outs))
            return self.stream_of(outs[0][0])  # built here: its loads are driven by `ref` too
        finally:
            self.traced, self.values, self.concrete, self.node, self.ref, self.prefix = saved

    def example(self, node):
        """The node's value on the example inputs (a MoE block's: zeros of its traced shape, as
        only its shape matters and its forward ran with the trace's parameters)."""
        if op_name(node) in self.traced.moe:
            outs = tuple(torch.zeros(s) for s in self.traced.moe[op_name(node)].example_shapes)
            return outs if len(outs) > 1 else outs[0]
        args, kwargs = fx.node.map_arg((node.args, node.kwargs), lambda n: self.concrete[n])
        return node.target(*args, **kwargs)

    def placeholder(self, kind, name, value):
        if not isinstance(value, torch.Tensor):
            return value
        if value.numel() == 0:
            self.fail("%s %s of shape %s has no elements" % (kind, name, list(value.shape)))
        if kind == "input" and value.is_floating_point():
            return MVal(value, from_input=True, what="input %s" % name)
        return MVal(value, what="%s %s" % (kind, name))

    def guarded(self, node):
        """lower_node, every failure a stepsim.Error naming the operation and the user's line."""
        try:
            return self.lower_node(node)
        except Unsupported:
            raise
        except _stepsim.Error as e:
            if str(e).startswith("stepsim.torch"):
                raise
            raise Unsupported("stepsim.torch: %s%s could not be lowered: %s"
                              % (op_name(node), where(node), e)) from None
        except Exception as e:  # a case no rule foresaw: still the operation and the line
            raise Unsupported("stepsim.torch: %s%s could not be lowered (%s: %s)" % (
                op_name(node), where(node), type(e).__name__, e)) from None

    def lower_node(self, node):
        args = fx.node.map_arg(node.args, lambda n: self.values[n])
        kwargs = fx.node.map_arg(node.kwargs, lambda n: self.values[n])
        key = op_name(node)
        if node.target is getattr(__import__("operator"), "getitem"):
            seq, k = args
            return seq[k]
        if key not in _NO_FORWARDING:  # a read of a cache buffer takes what this forward wrote
            args = fx.node.map_aggregate(args, lambda v: kvcache.forwarded(self, v))
            kwargs = fx.node.map_aggregate(kwargs, lambda v: kvcache.forwarded(self, v))
        if key in self.traced.moe:
            from . import moe
            return moe.lower(self, node, self.traced.moe[key], *args)
        if self.foldable(args, kwargs) and key not in self.rules.never_fold:
            source = next((a for a in args if isinstance(a, MVal)), None)
            return self.fold(node, source.what if source is not None and key in _NO_FORWARDING else "constant")
        rule = self.rules.get(key)
        # in place on a streamed value (scores += mask): the op; the operand's node then names
        # the result for any later use
        in_place = rule is None and key.endswith("_") and self.rules.get(key[:-1]) is not None
        if in_place:
            rule = self.rules.get(key[:-1])
        if rule is None:
            self.fail("%s is not supported%s" % (key, self.rules.hint(key)))
        made = lambda v: self.stream_of(v) if (isinstance(v, LinView) and key not in _LINVIEW_AWARE) or \
            (rope.is_rope(v) and not rule.rope_aware) else v
        args = [made(a) if not isinstance(a, (list, tuple)) else type(a)(made(b) for b in a) for a in args]
        result = rule(self, node, *args, **kwargs)
        if in_place and node.args and isinstance(node.args[0], fx.Node):
            self.values[node.args[0]] = result
        return result

    def foldable(self, args, kwargs):
        """Every operand is known now (no stream, no Linear, nothing derived from an input)."""
        found = []

        def visit(v):
            if isinstance(v, (list, tuple)):
                for x in v:
                    visit(x)
            elif isinstance(v, (SVal, Lin, LinView)) or (isinstance(v, MVal) and v.from_input) or rope.is_rope(v):
                found.append(v)

        visit(args)
        visit(kwargs)
        return not found

    def fold(self, node, what="constant"):
        """The node's example value, known now (a view of a parameter keeps its name)."""
        value = self.concrete[node]
        wrap = lambda v: MVal(v, what=what) if isinstance(v, torch.Tensor) else v
        if isinstance(value, (tuple, list)):
            return type(value)(wrap(v) for v in value)
        return wrap(value)

    # ---- errors and names

    def fail(self, what, node=None):
        node = node or self.node
        raise Unsupported("stepsim.torch: %s%s" % (what, where(node)))

    def name(self, suffix=""):
        self.count += 1
        return "%s%s%s_%d" % (self.prefix, self.node.name, suffix, self.count)

    def bw(self):
        bw = self.schedule.get("compute_bw")
        return {"compute_bw": bw} if bw else {}

    # ---- tiles

    def rows_for(self, n):
        """The tile rows of a dim of n rows: the schedule's tile_rows (by default the largest
        divisor up to 16 of the first dim that asks), which must divide n unless the schedule says
        non_divisor 'gcd'."""
        what = "the operand of %s%s" % (op_name(self.node), where(self.node)) if self.node.op != "placeholder" \
            else "an input"
        if self.tile_rows is None:
            self.tile_rows = _divisor_up_to(n, 16)
            if self.tile_rows < 4 and n > 16 and self.schedule.get("non_divisor", "error") == "error":
                raise Unsupported(
                    "stepsim.torch: schedule: the %d rows of %s have no divisor from 4 to 16, so the default tile "
                    "would be %d row(s), about %dx the cycles of 16-row tiles: set tile_rows to a divisor of %d (%d "
                    "itself: one tile), or non_divisor 'gcd' with a tile_rows to take gcd(%d, tile_rows) rows there"
                    % (n, what, self.tile_rows, 16 // self.tile_rows, n, n, n))
        if n % self.tile_rows and n > 1:
            if self.schedule.get("non_divisor", "error") == "gcd":
                return math.gcd(n, self.tile_rows)
            raise Unsupported("stepsim.torch: schedule: tile_rows %d does not divide the %d rows of %s (set tile_rows "
                              "to a divisor, or non_divisor 'gcd' to take gcd(%d, %d) = %d rows there)"
                              % (self.tile_rows, n, what, n, self.tile_rows, math.gcd(n, self.tile_rows)))
        return self.tile_rows

    def default_layout(self, shape):
        shape = tuple(int(s) for s in shape)
        rows = shape[-2] if len(shape) >= 2 else 1
        return L.default_layout(shape, self.rows_for(rows) if rows > 1 else 1)

    def track(self, v):
        if isinstance(v, SVal):
            self.deepest = max(self.deepest, math.prod(v.layout.grid_sizes() or [1]))
        return v

    # ---- HBM: stored tensors and loads

    def store_tensor(self, data, lay, dtype, hint="const"):
        """`data` (broadcastable to lay.shape, bcast axes at index 0) stored as lay's matrix, named
        after what it is (`hint`: "param w1.weight" -> w1_weight, "input x" -> input_x)."""
        key = (id(data), lay.key(), dtype)
        if key not in self.stored:
            self.keep.append(data)
            array = lay.to_stream(np.asarray(data.detach().float().numpy(), np.float32).reshape(
                [s if s else 1 for s in lay.shape]))
            if dtype == "bf16":
                array = bf16_array(array)
            name = self.fresh_tensor_name(hint)
            self.g.tensor(name, array.shape, dtype=dtype, init=np.ascontiguousarray(array, np.float32))
            self.stored[key] = name
        return self.stored[key]

    def fresh_tensor_name(self, hint):
        kind, _, name = hint.partition(" ")
        base = {"param": name, "buffer": name, "input": "input_" + name}.get(kind, kind)
        base = re.sub(r"[^A-Za-z0-9_]", "_", base)[:100] or "const"
        base = base if base[0].isalpha() or base[0] == "_" else "t_" + base
        taken = self.tensor_names.get(base, 0)
        self.tensor_names[base] = taken + 1
        return base if not taken else "%s_%d" % (base, taken + 1)

    def load(self, m, like, dtype=None):
        """MVal `m` read as a stream in layout `like` (m's shape broadcastable to like.shape):
        dims m has as 1 are re-read (stride 0 in the grid) or are 1 in the tile."""
        data = m.data if isinstance(m, MVal) else torch.as_tensor(m)
        if data.is_complex():
            self.fail("a complex operand that is not a rotation (RoPE) table")
        dtype = dtype or tile_dtype(data.dtype)
        shape = list(like.shape)
        d = data.reshape([1] * (len(shape) - data.dim()) + list(data.shape)) if data.dim() <= len(shape) else None
        if d is None or any(a not in (1, b) for a, b in zip(d.shape, shape)):
            self.fail("an operand of shape %s where %s is wanted" % (list(data.shape), shape))
        bdims = {k for k, (a, b) in enumerate(zip(d.shape, shape)) if a == 1 and b > 1}
        keep = [a for a in range(len(like.sizes)) if like.dims[a] not in bdims]
        rows_b = [a for a in like.rows if like.dims[a] in bdims]
        cols_b = [a for a in like.cols if like.dims[a] in bdims]
        if (rows_b and len(rows_b) != len(like.rows)) or (cols_b and len(cols_b) != len(like.cols)):
            d = d.expand([b if k in bdims and any(like.dims[a] == k for a in like.rows + like.cols) else a
                          for k, (a, b) in enumerate(zip(d.shape, shape))])
            return self.load(MVal(d.contiguous(), what=getattr(m, "what", "constant")), like, dtype)
        sub = L.Layout(d.shape, [like.sizes[a] for a in keep], [like.dims[a] for a in keep],
                       [keep.index(a) for a in like.grid if a in keep],
                       [keep.index(a) for a in like.rows if a in keep], [keep.index(a) for a in like.cols if a in keep])
        name = self.store_tensor(d, sub, dtype, getattr(m, "what", "const"))
        out_shape, stride = [], []
        inner = 1
        for a in reversed([a for a in like.grid if a not in like.bcast]):
            out_shape.insert(0, like.sizes[a])
            if like.dims[a] in bdims:
                stride.insert(0, 0)
            else:
                stride.insert(0, inner)
                inner *= like.sizes[a]
        return self.read(name, sub.tile(), out_shape, stride), dtype

    def read(self, tensor, tile, out_shape, stride, suffix="_load"):
        """LinearOffChipLoad of `tensor`'s [r x c] tiles over the view out_shape/stride, as a stream
        [lead.., out_shape..]: lead is [1] (a static load), or the dims of the context's `ref`
        stream (inside an expert: one pass per packed tile of routed tokens, none for no token)."""
        args = dict(tensor=tensor, tile=list(tile), name=self.name(suffix))
        args.update(out_shape=list(out_shape) or [1], stride=list(stride) or [0])
        s = self.g.LinearOffChipLoad(ref=self.ref, **args) if self.ref is not None else self.g.LinearOffChipLoad(**args)
        if not out_shape:
            s = self.g.Flatten(s, min=0, max=1, name=self.name(suffix + "_one"))
        return s

    def stream_of(self, v, like=None):
        """v as a streamed SVal (an MVal loaded in `like` or its default layout; a Lin built)."""
        if isinstance(v, SVal):
            return v
        if isinstance(v, Lin):
            return self.build_linear(v)
        if isinstance(v, LinView):
            from .ops import _view_of
            return _view_of(self, self.build_linear(v.lin, col_tile=v.tail[-1]), v.shape)
        if rope.is_rope(v):
            return rope.materialize(self, v)
        if isinstance(v, MVal):
            lay = like if like is not None and tuple(like.shape) == v.shape else self.default_layout(v.shape)
            key = (id(self.g), id(v.data), lay.key())
            if key not in self.streamed:  # one load per value and layout, however many read it
                s, dtype = self.load(v, lay)
                self.keep.append(v.data)
                self.streamed[key] = self.track(SVal(lay, s))
            return self.streamed[key]
        self.fail("a value of type %s where a tensor is wanted" % type(v).__name__)

    # ---- compute

    def map(self, fn, *streams, suffix=""):
        return self.g.Map(*streams, fn=fn, name=self.name(suffix or "_" + fn), **self.bw())

    def build_linear(self, lin, col_tile=None):
        """x [.., K] @ W^T: x repeated per column tile, W's [tn x K] tiles per row block, matmul_t,
        the bias added. The output keeps its column tiles in the grid (innermost) until a
        consumer joins them."""
        n, k = int(lin.weight.shape[0]), int(lin.weight.shape[1])
        tn = col_tile or self.schedule.get("tile_cols") or _divisor_up_to(n, 64)
        if n % tn:
            raise Unsupported("stepsim.torch: schedule: tile_cols %d does not divide the %d output columns of %s%s"
                                 % (tn, n, op_name(lin.node), where(lin.node)))
        if tn in lin.built:
            return lin.built[tn]
        x = self.cols_exactly(self.stream_of(lin.x), len(lin.x.shape) - 1)
        lay = x.layout
        keep = [a for a in range(len(lay.sizes)) if a not in lay.cols]
        out_dim = len(lay.shape) - 1
        sizes = [lay.sizes[a] for a in keep]
        dims = [lay.dims[a] for a in keep]
        grid = [keep.index(a) for a in lay.grid]
        rows = [keep.index(a) for a in lay.rows]
        cols = []
        if n // tn > 1:
            grid.append(len(sizes))
            sizes.append(n // tn)
            dims.append(out_dim)
        if tn > 1:
            cols.append(len(sizes))
            sizes.append(tn)
            dims.append(out_dim)
        out = L.Layout(tuple(lay.shape[:-1]) + (n,), sizes, dims, grid, rows, cols)
        xs = self.repeat(x, n // tn)
        w_lay = L.from_spec((n, k), [(0, n // tn, "g"), (0, tn, "r"), (1, k, "c")])
        wname = self.store_tensor(lin.weight, w_lay, "bf16", lin.weight_what)
        view = (lay.grid_sizes() + ([n // tn] if n // tn > 1 else []),
                [0] * len(lay.grid_sizes()) + ([1] if n // tn > 1 else []))
        w = self.read(wname, [tn, k], *view, suffix="_w")
        y = self.map("matmul_t", xs, w, suffix="_mm")
        if lin.bias is not None:
            b_lay = L.from_spec((1, n), [(1, n // tn, "g"), (1, tn, "c")])
            bname = self.store_tensor(lin.bias.reshape(1, n), b_lay, "bf16", lin.bias_what)
            b = self.read(bname, [1, tn], *view, suffix="_b")
            y = self.map("add", y, b, suffix="_bias")
        lin.built[tn] = self.track(SVal(out, y))
        return lin.built[tn]

    def repeat(self, v, count):
        """v's stream with each tile `count` times (a new innermost grid dim; none for 1)."""
        if count == 1:
            return v.stream
        return self.g.Repeat(v.stream, count=count, name=self.name("_rep"))

    # ---- layout conversions

    def rows_to_blocks(self, rows, n, tr, suffix="_blocks"):
        """A stream [1, n] of single rows as row blocks [1, n / tr] of [tr x C] ([1] for one block)."""
        if tr <= 1:  # rows are the blocks; one row is one block: [1]
            return self.g.Flatten(rows, min=0, max=1, name=self.name(suffix + "_one")) if n == 1 else rows
        chunks, _ = self.g.Reshape(rows, chunk=tr, name=self.name(suffix + "_chunk"))
        s = self.g.Accum(chunks, fn="retile_row", rank=1, name=self.name(suffix), **self.bw())
        if n // tr == 1:
            s = self.g.Flatten(s, min=0, max=1, name=self.name(suffix + "_one"))
        return s

    def rows_to_grid(self, v):
        """v with its tiles cut into single rows (FlatMap retile_streamify_row): the rows axes
        become the innermost grid dims."""
        lay = v.layout
        if not lay.rows:
            return v
        s = self.g.FlatMap(v.stream, fn="retile_streamify_row", rank=1, name=self.name("_rowwise"))
        rows = list(lay.rows)
        merged = L.Layout(lay.shape, lay.sizes, lay.dims, list(lay.grid) + rows, [], lay.cols, lay.bcast)
        for k in range(len(rows) - 1):  # the one stream dim of R rows split into one per rows axis
            s = self.g.Reshape(s, chunk=math.prod(lay.sizes[a] for a in rows[k + 1:]), rank=0,
                               name=self.name("_rowsplit"))[0]
        return self.track(SVal(merged, s))

    def refine(self, v, cuts):
        """SVal v with its layout's axes cut further ({axis: parts}); a cut grid axis splits its
        stream dim (Reshape), cuts in the tile are bookkeeping."""
        lay = v.layout
        stream = v.stream
        axes = lay.stream_axes()
        inner = 0  # stream dims inside the one being split, after their own splits
        for a in reversed(axes):
            parts = cuts.get(a)
            if parts and len(parts) > 1:
                for k in range(len(parts) - 1):
                    chunk = math.prod(parts[k + 1:])
                    stream = self.g.Reshape(stream, chunk=chunk, rank=inner, name=self.name("_split"))
                    if isinstance(stream, tuple):
                        stream = stream[0]
                inner += len(parts)
            else:
                inner += 1
        return SVal(lay.refined(cuts), stream)

    def cols_exactly(self, v, dim):
        """v with the tile's columns exactly the axes of `dim` (a reduction or a contraction over
        it): column tiles still in the grid are joined (Accum retile_col), once per stream."""
        if list(v.layout.cols) == v.layout.axes_of(dim):
            return v
        key = (id(v.stream.graph), v.stream.ref, v.layout.key(), dim)  # a scratch graph has its own
        if key not in self.joined:
            self.joined[key] = self._join_cols(v, dim)
        return self.joined[key]

    def _join_cols(self, v, dim):
        lay = v.layout
        axes = lay.axes_of(dim)
        in_rows = [a for a in axes if a in lay.rows]
        other_cols = [a for a in lay.cols if lay.dims[a] != dim]
        in_grid = [a for a in axes if a in lay.grid]
        if in_rows or other_cols or any(a in lay.bcast for a in in_grid):
            self.fail("a reduction or contraction over dim %d of a value laid out as %s (the dim is not in the "
                      "tile's columns)" % (dim, lay))
        # the grid axes of the dim must be innermost in the grid, in the dim's order
        stream_grid = lay.stream_axes()
        if stream_grid[len(stream_grid) - len(in_grid):] != in_grid:
            v = self.reorder_grid(v, [a for a in stream_grid if a not in in_grid] + in_grid)
            lay = v.layout
        joined = self.g.Accum(v.stream, fn="retile_col", rank=len(in_grid), name=self.name("_join"), **self.bw())
        grid = [a for a in lay.grid if a not in in_grid]
        out = L.Layout(lay.shape, lay.sizes, lay.dims, grid, lay.rows, axes, lay.bcast)
        return self.track(SVal(out, joined))

    def split_cols(self, v, lay):
        """v, whose tiles hold the whole last dim, cut into the column tiles of `lay` (the last
        dim's outer axes innermost in the grid): FlatMap retile_streamify_col to single columns,
        Reshape into groups of the tile's width, Accum retile_col."""
        last = len(lay.shape) - 1
        width = lay.tile()[1]
        n = lay.shape[-1]
        if not lay.cols or any(lay.dims[a] != last for a in lay.cols) or n % width:
            self.fail("values laid out differently meet: %s and %s" % (v.layout, lay))
        src = v.layout
        have = src.axes_of(last)  # all in the tile's columns, outer first
        if math.prod(src.sizes[a] for a in have) != n or list(src.cols) != have:
            self.fail("values laid out differently meet: %s and %s" % (v.layout, lay))
        # cut src's column axes so that `width` is a run of inner axes
        cuts, _ = L._common_cuts([src.sizes[a] for a in have], [n // width, width] if n // width > 1 else [width])
        refined = src.refined({have[k]: c for k, c in (cuts or {}).items()})
        axes = refined.axes_of(last)
        inner, prod = [], 1
        for a in reversed(axes):
            if prod == width:
                break
            inner.insert(0, a)
            prod *= refined.sizes[a]
        outer = [a for a in axes if a not in inner]
        if prod != width or len(outer) > 1:
            self.fail("values laid out differently meet: %s and %s" % (v.layout, lay))
        out = L.Layout(refined.shape, refined.sizes, refined.dims, list(refined.grid) + outer, refined.rows, inner,
                       refined.bcast)
        cols = self.g.FlatMap(v.stream, fn="retile_streamify_col", rank=1, name=self.name("_columns"))
        groups, _ = self.g.Reshape(cols, chunk=width, name=self.name("_colgroups"))
        s = self.g.Accum(groups, fn="retile_col", rank=1, name=self.name("_coltiles"), **self.bw())
        return self.track(SVal(out, s))

    def reorder_grid(self, v, order):
        """v with its stream's grid axes in `order`: the differing inner part is kept in a memory
        unit (Bufferize) and replayed in the new order (Streamify with strides)."""
        lay = v.layout
        old = lay.stream_axes()
        if list(order) == old:
            return v
        p = 0
        while old[p] == order[p]:
            p += 1
        inner = old[p:]
        strides = {}
        s = 1
        for a in reversed(inner):
            strides[a] = s
            s *= lay.sizes[a]
        buf = self.g.Bufferize(v.stream, rank=len(inner), name=self.name("_buf"))
        replay = self.g.Streamify(buf, out_shape=[lay.sizes[a] for a in order[p:]],
                                  stride=[strides[a] for a in order[p:]], name=self.name("_reorder"))
        bc = [a for a in lay.grid if a in lay.bcast]
        out = L.Layout(lay.shape, lay.sizes, lay.dims, list(order) + bc, lay.rows, lay.cols, lay.bcast)
        return self.track(SVal(out, replay))

    def conform(self, v, lay):
        """The stream of SVal v (shape broadcastable to lay.shape) aligned with layout `lay`: dims v
        has as 1 are 1 in its tiles (the Map broadcasts them) or repeated innermost in the grid."""
        shape = tuple(lay.shape)
        if tuple(v.shape) == shape:
            return self.same_layout(v, lay).stream
        vshape = (1,) * (len(shape) - len(v.shape)) + tuple(v.shape)
        if len(vshape) != len(shape) or any(a not in (1, b) for a, b in zip(vshape, shape)):
            self.fail("operands of shapes %s and %s do not broadcast" % (list(v.shape), list(shape)))
        bdims = {k for k, (a, b) in enumerate(zip(vshape, shape)) if a == 1 and b > 1}
        keep = [a for a in range(len(lay.sizes)) if lay.dims[a] not in bdims]
        for group in (lay.rows, lay.cols):
            gone = [a for a in group if a not in keep]
            if gone and len(gone) != len(group):
                self.fail("an operand of shape %s broadcast inside the tiles of %s" % (list(v.shape), lay))
        stream_grid = lay.stream_axes()
        repeated = [a for a in stream_grid if a not in keep]
        if repeated and stream_grid[len(stream_grid) - len(repeated):] != repeated:
            self.fail("an operand of shape %s broadcast over outer stream dims of %s" % (list(v.shape), lay))
        sub = L.Layout(vshape, [lay.sizes[a] for a in keep], [lay.dims[a] for a in keep],
                       [keep.index(a) for a in lay.grid if a in keep], [keep.index(a) for a in lay.rows if a in keep],
                       [keep.index(a) for a in lay.cols if a in keep], [keep.index(a) for a in lay.bcast if a in keep])
        have = v.layout.reshaped(vshape)[0] if len(v.shape) != len(vshape) else v.layout
        w = self.same_layout(SVal(have, v.stream), sub)
        for a in repeated:  # outer first: each Repeat adds the next innermost dim
            w = SVal(w.layout, self.repeat(w, lay.sizes[a]))
        return w.stream

    def materialize(self, v):
        """v as a stream that carries every element: an expanded value (broadcast axes, re-read
        by its consumers) cannot be an output, and is refused."""
        if not v.layout.bcast:
            return v
        self.fail("an expanded value %s used element-wise" % v.layout)

    def same_layout(self, v, lay):
        """v converted to layout `lay` (the same logical tensor), or a clear error: column tiles
        joined (Accum retile_col), the grid reordered (a memory unit)."""
        if v.layout == lay or v.layout.signature() == lay.signature():
            return SVal(lay, v.stream)
        last = len(lay.shape) - 1
        if lay.describe_axes(lay.cols, True) == ((last, lay.shape[-1], 1),) and \
                v.layout.describe_axes(v.layout.cols, True) != ((last, lay.shape[-1], 1),):
            return self.same_layout(self.cols_exactly(v, last), lay)
        if v.layout.describe_axes(v.layout.cols, True) == ((last, lay.shape[-1], 1),) and \
                lay.describe_axes(lay.cols, True) != ((last, lay.shape[-1], 1),):
            return self.same_layout(self.split_cols(v, lay), lay)
        a = v.layout
        want = lay.describe_axes(lay.stream_axes(), False)
        have = a.describe_axes(a.stream_axes(), False)
        if sorted(want) == sorted(have) and len(set(have)) == len(have) and \
                a.describe_axes(a.rows, True) == lay.describe_axes(lay.rows, True) and \
                a.describe_axes(a.cols, True) == lay.describe_axes(lay.cols, True) and not a.bcast and not lay.bcast:
            by_desc = dict(zip(have, a.stream_axes()))
            return SVal(lay, self.reorder_grid(v, [by_desc[d] for d in want]).stream)
        self.fail("values laid out differently meet: %s and %s" % (a, lay))


def _divisor_up_to(n, limit):
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)
