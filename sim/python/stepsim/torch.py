"""The PyTorch front door: a plain torch.nn.Module, traced with torch.fx, lowered to a STeP graph.

    lowered = stepsim.torch.lower(module, (x,), schedule={"tile_rows": 16, "tile_cols": 64})
    res = lowered.run(mode="functional")     # res.outputs: NumPy arrays, in the module's output order
    res.cycles, lowered.graph                # the cycles, the stepsim.Graph

The lowering streams every activation as row blocks: a value of shape [..., C] is a matrix
[M x C] (the leading dims flattened into M rows), streamed as M / tile_rows tiles of
[tile_rows x C], one stream per value, read by every consumer. Inputs and parameters live in HBM
(stored tensors; inputs rounded to bf16), outputs are stored back. Per operation:

  nn.Linear / F.linear   x [M x K], W [N x K]: x repeated N / tile_cols times, W read as
                         [tile_cols x K] tiles for every row block, Map matmul_t, the bias
                         ([1 x tile_cols] tiles) added, Accum retile_col back to [tile_rows x N]
  x @ W (W a parameter)  the same with W [K x N] tiles and Map matmul
  + - * /                element-wise Map with broadcasting: two activations, an activation and
                         a row vector (a parameter of shape [C]) or a column ([M x 1] values such
                         as a row mean), or a Python number (a [1 x 1] constant tensor)
  silu, sigmoid, exp, rsqrt, gelu(approximate="tanh"), x.pow(2)   Map of the tile function
  softmax(dim=-1)        row_max, sub_row, exp, row_sum, div
  x.mean(-1, keepdim=True)   row_sum times 1/C
  .float() .to() .type_as() .contiguous(), view/reshape keeping the last dim, nn.Dropout (eval),
                         nn.Identity: no node (tiles stay bf16)

Attention (one sequence, x [S x D]): a Linear's output viewed as [S, heads, head_dim] takes the
head dim as its column tile, so each tile is one head's slice: per-head values stream as
[S / tile_rows, heads] tiles, row block outer. transpose(0, 1) and k.transpose(-2, -1) are
bookkeeping. q @ k^T keeps every head's K whole in a memory unit (Bufferize, then Streamify in
(query block, head, key block) order, Accum retile_row) and multiplies with matmul_t; p @ v the
same with matmul; a mask buffer [S x S] is added per head; transpose(0, 1).reshape(S, D) joins
the heads' tiles (retile_col).

MoE blocks: a submodule with `gate` (an nn.Linear to E scores), `experts` (an nn.ModuleList of E
modules) and `top_k` is lowered as top-k gating (softmax of the gate scores, the k largest,
renormalized unless norm_topk_prob is False: Mixtral's routing, whatever its forward says): the
tokens go one per row to a TopK (the selector and mask from the data), Partition sends each token
to its k experts, each expert (lowered like the rest) runs on its tokens packed into one tile,
its output rows are scaled by the token's weight, Reassemble and Accum add sum a token's k
outputs, and the rows become row blocks again. With schedule routing_trace (a routing trace file,
as the MoE layers take) the selectors come from the trace instead: a timing run (the weights'
values do not matter), and a functional run is refused.

The schedule (a dict; None picks the defaults): tile_rows (rows per tile; default the largest
divisor of M up to 16), tile_cols (output column tile of a Linear not viewed into heads; default
the largest divisor of N up to 64), compute_bw (FLOPs/cycle of every compute node; default the
preset's), fifo_depth (every channel's depth in beats; default the longest value's tile count + 2,
so that a stream read by several consumers, one of them waiting for a whole K, never blocks the
others), routing_trace (above). Anything else is a stepsim.Error naming the operation and its
source line.
"""
import math
import operator

import numpy as np
import torch as _torch
import torch.fx as _fx
import torch.nn.functional as _F
from torch.fx.passes.shape_prop import ShapeProp as _ShapeProp

from . import _stepsim
from .graph import Graph

SCHEDULE_KEYS = ("tile_rows", "tile_cols", "compute_bw", "fifo_depth", "routing_trace")


def lower(module, example_inputs, schedule=None):
    """Traces `module` with torch.fx on `example_inputs` (a tuple of tensors) and lowers it."""
    schedule = dict(schedule or {})
    unknown = set(schedule) - set(SCHEDULE_KEYS)
    if unknown:
        raise _stepsim.Error("schedule: unknown key(s) %s; known: %s" % (", ".join(sorted(unknown)),
                                                                         ", ".join(SCHEDULE_KEYS)))
    example_inputs = tuple(example_inputs)
    gm = _trace(module, example_inputs)
    return _Lowering(gm, example_inputs, schedule, type(module).__name__).lower()


class _Tracer(_fx.Tracer):
    """torch.fx's tracer with stack traces kept (for the errors) and MoE blocks as leaves."""

    def __init__(self):
        super().__init__()
        self.record_stack_traces = True

    def is_leaf_module(self, m, qualname):
        return _is_moe(m) or super().is_leaf_module(m, qualname)


def _trace(module, example_inputs):
    gm = _fx.GraphModule(module, _Tracer().trace(module))
    _ShapeProp(gm).propagate(*example_inputs)
    return gm


def _is_moe(m):
    """A mixture-of-experts block as the lowering knows it: `gate` (an nn.Linear to E scores),
    `experts` (an nn.ModuleList of E modules, [T, D] -> [T, D]) and `top_k`."""
    return (isinstance(getattr(m, "gate", None), _torch.nn.Linear) and
            isinstance(getattr(m, "experts", None), _torch.nn.ModuleList) and isinstance(getattr(m, "top_k", None), int))


class Lowered:
    """A lowered module: `graph` (a stepsim.Graph) and `run()`."""

    def __init__(self, graph, output_names, output_shapes, fifo_depth, traced_routing=False):
        self.graph = graph
        self.output_names = output_names
        self.output_shapes = output_shapes
        self.fifo_depth = fifo_depth
        self.traced_routing = traced_routing

    def run(self, mode="functional", preset="step-artifact", set=None, impl=None):
        """Runs the graph (stepsim.Graph.run) with the schedule's FIFO depth unless `set` gives one."""
        if self.traced_routing and mode == "functional":
            raise _stepsim.Error("this lowering routes its MoE tokens by a trace (schedule routing_trace), not by its "
                                 "gate: run it in timing mode, or lower without routing_trace for a functional run")
        settings = {"fifo_depth": self.fifo_depth}
        settings.update(set or {})
        r = self.graph.run(preset=preset, mode=mode, set=settings, impl=impl)
        outputs = []
        if mode == "functional":
            outputs = [r.outputs[n].reshape(s) for n, s in zip(self.output_names, self.output_shapes)]
        return LoweredResult(r, outputs)


class LoweredResult:
    """outputs (NumPy arrays in the module's output order, float32 holding bf16 values), cycles and
    the run's full stepsim.Result as `result`."""

    def __init__(self, result, outputs):
        self.result = result
        self.outputs = outputs
        self.cycles = result.cycles


class _Act:
    """A matrix [rows x cols] streamed as row blocks: [rows / tile_rows] tiles of [tile_rows x cols].
    A Linear's result also keeps its column tiles (`split`: [rows / tile_rows, n] tiles of
    [tile_rows x width]); the row blocks are made from them (Accum retile_col) on first use, so a
    value that is only viewed into heads never is. rows None: the tokens an expert was routed, packed
    into one tile whose row count only the run knows (weights and constants are read per tile)."""

    heads = None

    def __init__(self, rows, cols, stream=None, split=None, join=None):
        self.rows, self.cols = rows, cols
        self._stream, self.split, self._join = stream, split, join

    @property
    def stream(self):
        if self._stream is None:
            self._stream = self._join()
        return self._stream

    def grid(self, tile_rows):
        return None if self.rows is None else [self.rows // tile_rows]

    def like(self, stream, cols=None):
        return _Act(self.rows, self.cols if cols is None else cols, stream=stream)


class _Heads:
    """Attention's per-head matrices: `heads` matrices [rows x cols], streamed row block outer, head
    inner: [rows / tile_rows, heads] tiles of [tile_rows x cols]. `order` is the logical layout:
    "shd" ([rows, heads, cols], as view() makes it) or "hsd" (after transpose(0, 1)); `transposed`:
    the logical matrices are the transposes (k.transpose(-2, -1))."""

    def __init__(self, stream, rows, heads, cols, order="shd", transposed=False):
        self.stream, self.rows, self.heads, self.cols = stream, rows, heads, cols
        self.order, self.transposed = order, transposed

    def grid(self, tile_rows):
        return [self.rows // tile_rows, self.heads]

    def like(self, stream, cols=None):
        return _Heads(stream, self.rows, self.heads, self.cols if cols is None else cols, self.order, self.transposed)


def _bf16(a):
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)


def _divisor_up_to(n, limit):
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)


class _Lowering:
    def __init__(self, gm, example_inputs, schedule, name):
        self.gm, self.inputs, self.schedule = gm, example_inputs, schedule
        self.g = Graph(name, "lowered from the PyTorch module %s by stepsim.torch" % name)
        self.values = {}
        self.tensors = {}  # (id(tensor), shape) -> stored tensor name
        self.count = 0
        self.placeholders = 0
        self.tile_rows = None
        self.keep = []
        self.deepest = 0
        self.bound = []
        self.prefix = ""

    # ---- the walk

    def walk(self):
        """Lowers every node of self.gm; returns the output nodes."""
        self.head_cols = _head_views(self.gm)
        for node in self.gm.graph.nodes:
            if node.op == "output":
                outputs = node.args[0]
                return list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
            self.values[node] = self.track(self.node(node))
        return []

    def lower_submodule(self, module, x, example, prefix):
        """`module` (an expert) lowered on the value `x` instead of an input from HBM."""
        saved = self.gm, self.values, self.bound, self.prefix
        self.gm, self.values, self.bound, self.prefix = _trace(module, (example,)), {}, [x], prefix
        try:
            outs = self.walk()
            if len(outs) != 1 or not isinstance(self.value(outs[0]), _Act):
                self.fail(outs[0] if outs else None, "an expert that does not return one matrix")
            return self.value(outs[0])
        finally:
            self.gm, self.values, self.bound, self.prefix = saved

    def lower(self):
        flat = self.walk()
        names, shapes = [], []
        for k, out in enumerate(flat):
            act = self.value(out)
            if not isinstance(act, _Act):
                self.fail(out, "an output that is not computed from the inputs")
            name = "output%d" % k
            self.g.output_tensor(name, (act.rows, act.cols))
            self.g.LinearOffChipStore(act.stream, tensor=name, tile=[self.tile_rows, act.cols],
                                      out_shape=[act.rows // self.tile_rows], name="store_" + name)
            names.append(name)
            shapes.append(tuple(out.meta["tensor_meta"].shape))
        return Lowered(self.g, names, shapes, self.schedule.get("fifo_depth") or self.deepest + 2,
                       bool(self.schedule.get("routing_trace")))

    def node(self, node):
        if node.op == "placeholder":
            return self.placeholder(node)
        if node.op == "get_attr":
            return _attr(self.gm, node.target)
        if node.op == "call_module":
            return self.call_module(node)
        if node.op in ("call_function", "call_method"):
            return self.call(node)
        self.fail(node, node.op)

    def track(self, v):
        """Notes the tiles of every streamed value: the default FIFO depth holds the longest."""
        if isinstance(v, (_Act, _Heads)) and v.rows is not None:
            self.deepest = max(self.deepest, v.rows // self.tile_rows * (v.heads or 1))
        return v

    def value(self, arg):
        return self.values[arg] if isinstance(arg, _fx.Node) else arg

    def fail(self, node, what):
        raise _stepsim.Error("stepsim.torch: unsupported operation %s%s" % (what, _where(node)))

    # ---- node kinds

    def placeholder(self, node):
        if self.bound:  # a submodule's input: a value of the enclosing graph
            return self.bound.pop(0)
        x = self.inputs[self.placeholders]
        name = "input%d" % self.placeholders
        self.placeholders += 1
        rows, cols = _matrix(x.shape)
        self.pick_tile_rows(rows, node)
        self.g.tensor(name, (rows, cols), init=_bf16(x.detach().float().reshape(rows, cols).numpy()))
        load = self.g.LinearOffChipLoad(tensor=name, tile=[self.tile_rows, cols], out_shape=[rows // self.tile_rows],
                                        name="load_" + name)
        return _Act(rows, cols, stream=load)

    def call_module(self, node):
        m = self.gm.get_submodule(node.target)
        x = self.value(node.args[0]) if node.args else None
        if _is_moe(m):
            return self.moe(node, x, m)
        if isinstance(m, _torch.nn.Linear):
            return self.linear(node, x, m.weight, m.bias)
        if isinstance(m, _torch.nn.SiLU):
            return self.unary(node, x, "silu")
        if isinstance(m, _torch.nn.Sigmoid):
            return self.unary(node, x, "sigmoid")
        if isinstance(m, _torch.nn.GELU):
            return self.gelu(node, x, m.approximate)
        if isinstance(m, _torch.nn.Softmax):
            return self.softmax(node, x, m.dim)
        if isinstance(m, (_torch.nn.Identity, _torch.nn.Dropout)):
            return x
        self.fail(node, "module %s" % type(m).__name__)

    def call(self, node):
        target = node.target
        args = [self.value(a) for a in node.args]
        kwargs = {k: self.value(v) for k, v in node.kwargs.items()}
        key = target if node.op == "call_method" else _FUNCTIONS.get(target)
        handler = getattr(self, "op_" + key, None) if key else None
        if handler is None:
            self.fail(node, key or getattr(target, "__name__", str(target)))
        return handler(node, *args, **kwargs)

    # ---- helpers

    def pick_tile_rows(self, rows, node):
        if self.tile_rows is None:
            self.tile_rows = self.schedule.get("tile_rows") or _divisor_up_to(rows, 16)
        if rows % self.tile_rows:
            raise _stepsim.Error("schedule: tile_rows %d does not divide the %d rows of %s%s"
                                 % (self.tile_rows, rows, node.name, _where(node)))

    def name(self, node, suffix=""):
        self.count += 1
        return "%s%s%s_%d" % (self.prefix, node.name, suffix, self.count)

    def bw(self):
        bw = self.schedule.get("compute_bw")
        return {"compute_bw": bw} if bw else {}

    def tensor_of(self, t, shape):
        """A parameter, buffer or constant as a stored bf16 tensor of `shape` (one per tensor object)."""
        key = (id(t), shape)
        if key not in self.tensors:
            name = "param%d" % len(self.tensors)
            self.keep.append(t)  # the id stays this tensor's while the lowering runs
            self.g.tensor(name, shape, init=_bf16(np.asarray(t.detach().float().numpy(), np.float32).reshape(shape)))
            self.tensors[key] = name
        return self.tensors[key]

    def constant(self, node, t, like):
        """A stored constant read once per tile of `like`: a row vector [1 x C] or a number [1 x 1]
        (broadcast over the tile's rows), or a matrix [rows x cols] of like's shape (one row block
        per tile, the same for every head: an attention mask). Returns (stream, cols)."""
        grid = like.grid(self.tile_rows)
        if grid is None:  # a packed tile of routed rows: one read per tile, driven by the tiles
            name = self.tensor_of(t, (1, t.shape[-1] if t.dim() else 1))
            cols = t.shape[-1] if t.dim() else 1
            load = self.g.LinearOffChipLoad(tensor=name, tile=[1, cols], out_shape=[1], ref=like.stream,
                                            name=self.name(node, "_const"))
            return self.g.Flatten(load, min=0, max=1, name=self.name(node, "_constf")), cols
        if t.dim() == 2 and t.shape[0] == like.rows and t.shape[0] > 1:
            name = self.tensor_of(t, tuple(t.shape))
            stride = [1] + [0] * (len(grid) - 1)
            tile = [self.tile_rows, t.shape[1]]
        else:
            name = self.tensor_of(t, (1, t.shape[-1] if t.dim() else 1))
            stride = [0] * len(grid)
            tile = [1, t.shape[-1] if t.dim() else 1]
        load = self.g.LinearOffChipLoad(tensor=name, tile=tile, out_shape=grid, stride=stride,
                                        name=self.name(node, "_const"))
        return load, tile[1]

    # ---- operations

    def map(self, node, fn, *streams, suffix=""):
        return self.g.Map(*streams, fn=fn, name=self.name(node, suffix), **self.bw())

    def need_value(self, node, x):
        if not isinstance(x, (_Act, _Heads)):
            self.fail(node, "%s on a value that is not computed from the inputs" % node.target)

    def unary(self, node, x, fn):
        self.need_value(node, x)
        return x.like(self.map(node, fn, x.stream))

    def operand(self, node, v, like):
        """An operand of an element-wise op on `like`: (its stream, its columns)."""
        if isinstance(v, (_Act, _Heads)):
            if type(v) is not type(like) or v.grid(self.tile_rows) != like.grid(self.tile_rows):
                self.fail(node, "%s of values streamed differently" % node.target)
            return v.stream, v.cols
        if isinstance(v, (int, float)):
            return self.constant(node, _torch.tensor(float(v)), like)
        if isinstance(v, _torch.Tensor) and (v.numel() == 1 or v.dim() == 1 or (v.dim() == 2 and (
                v.shape[0] == 1 or tuple(v.shape) == (like.rows, like.cols)))):
            return self.constant(node, v.reshape(1, 1) if v.numel() == 1 else v, like)
        self.fail(node, "%s with an operand of shape %s" % (node.target, tuple(getattr(v, "shape", ()))))

    def elementwise(self, node, fn, a, b):
        like = a if isinstance(a, (_Act, _Heads)) else b
        if not isinstance(like, (_Act, _Heads)):
            self.fail(node, "%s between constants" % fn)
        sa, ca = self.operand(node, a, like)
        sb, cb = self.operand(node, b, like)
        return like.like(self.map(node, fn, sa, sb), max(ca, cb))

    def linear(self, node, x, weight, bias, transposed=True):
        if not isinstance(x, _Act):
            self.fail(node, "linear of a value that is not a matrix computed from the inputs")
        n, k = weight.shape if transposed else (weight.shape[1], weight.shape[0])
        if k != x.cols:
            self.fail(node, "linear of [%d x %d] by a weight of shape %s" % (x.rows, x.cols, tuple(weight.shape)))
        tn = self.head_cols.get(node) or self.schedule.get("tile_cols") or _divisor_up_to(n, 64)
        if n % tn:
            raise _stepsim.Error("schedule: tile_cols %d does not divide the %d output columns of %s%s"
                                 % (tn, n, node.name, _where(node)))
        xr = self.g.Repeat(x.stream, count=n // tn, name=self.name(node, "_rep"))
        # W's column tiles ([tn x K] of W [N x K], or [K x tn] of W [K x N]) again for every row block
        # (a static count, or, for packed routed rows, one pass per tile: `ref`).
        if x.rows is None:
            per_block = dict(out_shape=[n // tn], stride=[1], ref=x.stream)
        else:
            per_block = dict(out_shape=[x.rows // self.tile_rows, n // tn], stride=[0, 1])
        w = self.g.LinearOffChipLoad(tensor=self.tensor_of(weight, tuple(weight.shape)),
                                     tile=[tn, k] if transposed else [k, tn], name=self.name(node, "_w"), **per_block)
        y = self.map(node, "matmul_t" if transposed else "matmul", xr, w, suffix="_mm")
        if bias is not None:
            b = self.g.LinearOffChipLoad(tensor=self.tensor_of(bias, (1, n)), tile=[1, tn], name=self.name(node, "_b"),
                                         **per_block)
            y = self.map(node, "add", y, b, suffix="_bias")
        return self.joinable(node, x.rows, n, y, tn)

    def joinable(self, node, rows, cols, split, width):
        """A matrix whose row blocks are its column tiles side by side (made when first read)."""
        join = lambda: self.g.Accum(split, fn="retile_col", rank=1, name=self.name(node, "_cols"), **self.bw())
        return _Act(rows, cols, split=(split, width), join=join)

    def gelu(self, node, x, approximate):
        if approximate != "tanh":
            self.fail(node, "gelu(approximate=%r) (only the tanh form has a tile function)" % approximate)
        return self.unary(node, x, "gelu_tanh")

    def softmax(self, node, x, dim):
        self.need_value(node, x)
        if dim not in (-1, len(node.meta["tensor_meta"].shape) - 1):
            self.fail(node, "softmax over dim %s (only the last)" % dim)
        m = self.map(node, "row_max", x.stream, suffix="_max")
        e = self.map(node, "exp", self.map(node, "sub_row", x.stream, m, suffix="_sub"), suffix="_exp")
        s = self.map(node, "row_sum", e, suffix="_sum")
        return x.like(self.map(node, "div", e, s, suffix="_div"))

    def whole_per_head(self, node, b, query_rows):
        """Each head's whole matrix [rows x cols] of `b`, once per (query row block, head): the row
        blocks are kept in a memory unit (Bufferize), replayed in (query block, head, row block)
        order and stacked (Accum retile_row)."""
        blocks, heads = b.rows // self.tile_rows, b.heads
        buf = self.g.Bufferize(b.stream, rank=2, name=self.name(node, "_buf"))
        replay = self.g.Streamify(buf, out_shape=[query_rows // self.tile_rows, heads, blocks], stride=[0, 1, heads],
                                  name=self.name(node, "_replay"))
        return self.g.Accum(replay, fn="retile_row", rank=1, name=self.name(node, "_whole"), **self.bw())

    def head_matmul(self, node, a, b):
        """Per head: a [rows x k] times b ([k x cols], or b^T when b holds [cols x k])."""
        if a.order != "hsd" or b.order != "hsd" or a.transposed or a.heads != b.heads:
            self.fail(node, "matmul of per-head values in this layout (want [heads, rows, k] @ [heads, k, cols])")
        whole = self.whole_per_head(node, b, a.rows)
        if b.transposed:  # a @ B^T with B [cols x k] per head: matmul_t
            if b.cols != a.cols:
                self.fail(node, "matmul of [%d x %d] by [%d x %d]^T per head" % (a.rows, a.cols, b.rows, b.cols))
            return _Heads(self.map(node, "matmul_t", a.stream, whole, suffix="_mm"), a.rows, a.heads, b.rows, "hsd")
        if b.rows != a.cols:
            self.fail(node, "matmul of [%d x %d] by [%d x %d] per head" % (a.rows, a.cols, b.rows, b.cols))
        return _Heads(self.map(node, "matmul", a.stream, whole, suffix="_mm"), a.rows, a.heads, b.cols, "hsd")

    def row_softmax(self, node, s, suffix):
        m = self.map(node, "row_max", s, suffix=suffix + "_max")
        e = self.map(node, "exp", self.map(node, "sub_row", s, m, suffix=suffix + "_sub"), suffix=suffix + "_exp")
        return self.map(node, "div", e, self.map(node, "row_sum", e, suffix=suffix + "_sum"), suffix=suffix + "_div")

    def moe(self, node, x, m):
        """A MoE block routed by its own gate: softmax of the gate scores per token, TopK (k =
        top_k) to a selector and a mask, the chosen scores renormalized (unless the module says
        norm_topk_prob = False); each expert runs on the tokens routed to it, packed into one
        tile (Partition, Promote, Accum retile_row), its output rows scaled by the token's weight,
        and the k outputs of each token summed in token order (Reassemble, Accum add)."""
        if not isinstance(x, _Act) or x.rows is None:
            self.fail(node, "a MoE block on a value that is not a matrix of tokens")
        experts, k, tokens, d = m.experts, m.top_k, x.rows, x.cols
        n = len(experts)
        rows = self.g.Flatten(self.g.FlatMap(x.stream, fn="retile_streamify_row", rank=1, name=self.name(node, "_rows")),
                              min=0, max=1, name=self.name(node, "_tokens"))
        gate = self.g.LinearOffChipLoad(tensor=self.tensor_of(m.gate.weight, tuple(m.gate.weight.shape)), tile=[n, d],
                                        out_shape=[tokens], stride=[0], name=self.name(node, "_gate_w"))
        scores = self.map(node, "matmul_t", rows, gate, suffix="_gate")
        if m.gate.bias is not None:
            bias = self.g.LinearOffChipLoad(tensor=self.tensor_of(m.gate.bias, (1, n)), tile=[1, n], out_shape=[tokens],
                                            stride=[0], name=self.name(node, "_gate_b"))
            scores = self.map(node, "add", scores, bias, suffix="_gate_bias")
        probs = self.row_softmax(node, scores, "_probs")
        trace = self.schedule.get("routing_trace")
        if trace:  # timing runs: the selectors of a routing trace; the weights' values do not matter
            name = self.name(node, "_routing")
            self.g.trace_stream(name, "{trace: '%s', kind: selector, rank: 1, limit: %d}" % (trace, tokens))
            (sel,) = self.g.Source(stream=name, name=name)
            weights = probs
        else:
            sel, mask = self.g.TopK(probs, k=k, name=self.name(node, "_topk"))
            weights = self.map(node, "mul", probs, mask, suffix="_chosen")
        if not trace and getattr(m, "norm_topk_prob", True):
            weights = self.map(node, "div", weights, self.map(node, "row_sum", weights, suffix="_wsum"), suffix="_w")
        routed = self.g.Partition(rows, sel, outputs=n, name=self.name(node, "_route"))
        routed_w = self.g.Partition(weights, sel, outputs=n, name=self.name(node, "_route_w"))
        outs = [self.expert(node, e, experts[e], routed[e], routed_w[e], d, n) for e in range(n)]
        merged = self.g.Reassemble(*outs, sel, name=self.name(node, "_merge"))
        y = self.g.Accum(merged, fn="add", rank=1, name=self.name(node, "_combine"), **self.bw())
        chunks, _ = self.g.Reshape(y, chunk=self.tile_rows, name=self.name(node, "_chunk"))
        self.deepest = max(self.deepest, tokens)  # Reassemble holds rows back until their turn
        return _Act(tokens, d, stream=self.g.Accum(chunks, fn="retile_row", rank=1, name=self.name(node, "_blocks"),
                                                   **self.bw()))

    def expert(self, node, e, module, routed, routed_w, d, n):
        """Expert e on its routed token rows; returns its output rows times each token's weight."""
        routed_w.set_dim(0, str(routed.shape[0]))  # the same tokens: one count
        packed = self.g.Accum(self.g.Promote(routed, name=self.name(node, "_e%d_one" % e)), fn="retile_row", rank=1,
                              name=self.name(node, "_e%d_pack" % e), **self.bw())
        y = self.lower_submodule(module, _Act(None, d, stream=packed), _torch.zeros(self.tile_rows, d), "e%d_" % e)
        out = self.g.FlatMap(y.stream, fn="retile_streamify_row", rank=1, name=self.name(node, "_e%d_unpack" % e))
        out = self.g.Flatten(out, min=0, max=1, name=self.name(node, "_e%d_rows" % e))
        one_hot = _torch.zeros(1, n)
        one_hot[0, e] = 1.0
        hot, _ = self.constant(node, one_hot, _Act(None, n, stream=routed_w))
        w = self.map(node, "row_sum", self.map(node, "mul", routed_w, hot, suffix="_e%d_pick" % e),
                     suffix="_e%d_weight" % e)
        return self.map(node, "mul", out, w, suffix="_e%d_scaled" % e)

    # call_function / call_method handlers, by the names of _FUNCTIONS and the methods
    def op_add(self, node, a, b, alpha=1):
        return self.elementwise(node, "add", a, b)

    def op_sub(self, node, a, b, alpha=1):
        return self.elementwise(node, "sub", a, b)

    def op_mul(self, node, a, b):
        return self.elementwise(node, "mul", a, b)

    def op_div(self, node, a, b, rounding_mode=None):
        return self.elementwise(node, "div", a, b)

    op_truediv = op_div

    def op_silu(self, node, x, inplace=False):
        return self.unary(node, x, "silu")

    def op_sigmoid(self, node, x):
        return self.unary(node, x, "sigmoid")

    def op_exp(self, node, x):
        return self.unary(node, x, "exp")

    def op_rsqrt(self, node, x):
        return self.unary(node, x, "rsqrt")

    def op_gelu(self, node, x, approximate="none"):
        return self.gelu(node, x, approximate)

    def op_softmax(self, node, x, dim=None, dtype=None, **_):
        return self.softmax(node, x, dim)

    def op_pow(self, node, x, exponent):
        if exponent != 2:
            self.fail(node, "pow with exponent %r (only 2)" % (exponent,))
        self.need_value(node, x)
        return x.like(self.map(node, "mul", x.stream, x.stream))

    def op_mean(self, node, x, dim=None, keepdim=False, dtype=None):
        self.need_value(node, x)
        if dim not in (-1, [-1], (-1,)) or not keepdim:
            self.fail(node, "mean(dim=%r, keepdim=%r) (only the last dim, keepdim=True)" % (dim, keepdim))
        s = self.map(node, "row_sum", x.stream, suffix="_sum")
        scale, _ = self.constant(node, _torch.tensor(1.0 / x.cols), x)
        return x.like(self.map(node, "mul", s, scale, suffix="_scale"), 1)

    def op_linear(self, node, x, weight, bias=None):
        return self.linear(node, x, weight, bias)

    def op_matmul(self, node, a, b):
        if isinstance(a, _Act) and isinstance(b, _torch.Tensor) and b.dim() == 2:
            return self.linear(node, a, b, None, transposed=False)
        if isinstance(a, _Heads) and isinstance(b, _Heads):
            return self.head_matmul(node, a, b)
        self.fail(node, "matmul of %s by %s" % (type(a).__name__.strip("_"), type(b).__name__.strip("_")))

    op_bmm = op_matmul

    def op_identity(self, node, x, *args, **kwargs):
        return x

    op_float = op_to = op_type_as = op_contiguous = op_identity

    def op_view(self, node, x, *shape):
        self.need_value(node, x)
        out = tuple(node.meta["tensor_meta"].shape)
        if isinstance(x, _Act) and _matrix(out) == (x.rows, x.cols):
            return x
        if isinstance(x, _Act) and len(out) == 3 and out[0] == x.rows and out[1] * out[2] == x.cols:
            if not x.split or x.split[1] != out[2]:
                self.fail(node, "view into heads of a value that is not a Linear's output")
            return _Heads(x.split[0], x.rows, out[1], out[2], "shd")
        if isinstance(x, _Heads) and x.order == "shd" and not x.transposed and out == (x.rows, x.heads * x.cols):
            return self.joinable(node, x.rows, x.heads * x.cols, x.stream, x.cols)
        self.fail(node, "%s to %s (views that keep the last dimension, or split it into heads)" % (node.target, out))

    op_reshape = op_flatten = op_view

    def op_transpose(self, node, x, d0, d1):
        self.need_value(node, x)
        dims = sorted(d % 3 for d in (d0, d1))
        if isinstance(x, _Heads) and dims == [0, 1] and not x.transposed:
            return _Heads(x.stream, x.rows, x.heads, x.cols, "hsd" if x.order == "shd" else "shd")
        if isinstance(x, _Heads) and dims == [1, 2] and x.order == "hsd":
            return _Heads(x.stream, x.rows, x.heads, x.cols, "hsd", not x.transposed)
        self.fail(node, "transpose(%s, %s) of this value" % (d0, d1))


_FUNCTIONS = {
    operator.add: "add", _torch.add: "add", operator.sub: "sub", _torch.sub: "sub", operator.mul: "mul",
    _torch.mul: "mul", operator.truediv: "div", _torch.div: "div", _F.silu: "silu", _torch.sigmoid: "sigmoid",
    _torch.exp: "exp", _torch.rsqrt: "rsqrt", _F.gelu: "gelu", _torch.softmax: "softmax", _F.softmax: "softmax",
    _F.linear: "linear", _torch.matmul: "matmul", operator.matmul: "matmul", _torch.pow: "pow",
    _torch.mean: "mean", _torch.reshape: "reshape", _torch.flatten: "flatten", _torch.transpose: "transpose",
    _torch.bmm: "bmm",
}


def _head_views(gm):
    """{Linear node: head dim} for each Linear whose output is viewed as [rows, heads, head dim]:
    its column tile is the head dim, so that each tile is one head's slice."""
    out = {}
    for node in gm.graph.nodes:
        if node.target in ("view", "reshape") and node.args and isinstance(node.args[0], _fx.Node):
            src = node.args[0]
            shape = node.meta.get("tensor_meta")
            is_linear = (src.op == "call_module" and isinstance(gm.get_submodule(src.target), _torch.nn.Linear)) or \
                src.target is _F.linear
            if is_linear and shape is not None and len(shape.shape) == 3:
                out[src] = int(shape.shape[-1])
    return out


def _matrix(shape):
    shape = tuple(shape)
    if len(shape) == 0:
        return 1, 1
    return int(math.prod(shape[:-1])), int(shape[-1])


def _attr(gm, target):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _where(node):
    """ ' at FILE:LINE: CODE', the module's source line of the node: the innermost frame of the
    stack torch.fx recorded (innermost first) that is not in PyTorch itself."""
    if not isinstance(node, _fx.Node):
        return ""
    trace = getattr(node, "stack_trace", None) or node.meta.get("stack_trace")
    lines = [l.strip() for l in (trace or "").strip().splitlines()]
    for k, line in enumerate(lines):
        if line.startswith("File ") and "/torch/" not in line:
            parts = line.split(",")
            file = parts[0][len("File "):].strip('"')
            number = parts[1].strip().replace("line ", "") if len(parts) > 1 else "?"
            code = lines[k + 1] if k + 1 < len(lines) and not lines[k + 1].startswith("File ") else ""
            return " at %s:%s: %s" % (file, number, code)
    return " (node %s)" % node.name
