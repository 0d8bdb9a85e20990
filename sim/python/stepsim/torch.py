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

The schedule (a dict; None picks the defaults): tile_rows (rows per tile; default the largest
divisor of M up to 16), tile_cols (output column tile of a Linear; default the largest divisor of
N up to 64), compute_bw (FLOPs/cycle of every compute node; default the preset's). Anything else
is a stepsim.Error naming the operation and its source line.
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

SCHEDULE_KEYS = ("tile_rows", "tile_cols", "compute_bw")


def lower(module, example_inputs, schedule=None):
    """Traces `module` with torch.fx on `example_inputs` (a tuple of tensors) and lowers it."""
    schedule = dict(schedule or {})
    unknown = set(schedule) - set(SCHEDULE_KEYS)
    if unknown:
        raise _stepsim.Error("schedule: unknown key(s) %s; known: %s" % (", ".join(sorted(unknown)),
                                                                         ", ".join(SCHEDULE_KEYS)))
    tracer = _fx.Tracer()
    tracer.record_stack_traces = True
    gm = _fx.GraphModule(module, tracer.trace(module))
    example_inputs = tuple(example_inputs)
    _ShapeProp(gm).propagate(*example_inputs)
    return _Lowering(gm, example_inputs, schedule).lower()


class Lowered:
    """A lowered module: `graph` (a stepsim.Graph) and `run()`."""

    def __init__(self, graph, output_names, output_shapes):
        self.graph = graph
        self.output_names = output_names
        self.output_shapes = output_shapes

    def run(self, mode="functional", preset="step-artifact", set=None, impl=None):
        r = self.graph.run(preset=preset, mode=mode, set=set, impl=impl)
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
    """An activation streamed as row blocks [tile_rows x cols]."""

    def __init__(self, stream, rows, cols):
        self.stream, self.rows, self.cols = stream, rows, cols


def _bf16(a):
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)


def _divisor_up_to(n, limit):
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)


class _Lowering:
    def __init__(self, gm, example_inputs, schedule):
        self.gm, self.inputs, self.schedule = gm, example_inputs, schedule
        self.g = Graph(type(gm).__name__.lower() if type(gm) is not _fx.GraphModule else "torch_module")
        self.values = {}
        self.tensors = {}  # id(param) -> tensor name
        self.count = 0
        self.placeholders = 0
        self.tile_rows = None

    # ---- the walk

    def lower(self):
        outputs = None
        for node in self.gm.graph.nodes:
            if node.op == "output":
                outputs = node.args[0]
                break
            self.values[node] = self.node(node)
        flat = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
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
        return Lowered(self.g, names, shapes)

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

    def value(self, arg):
        return self.values[arg] if isinstance(arg, _fx.Node) else arg

    def fail(self, node, what):
        raise _stepsim.Error("stepsim.torch: unsupported operation %s%s" % (what, _where(node)))

    # ---- node kinds

    def placeholder(self, node):
        k = self.placeholders
        self.placeholders += 1
        x = self.inputs[k]
        rows, cols = _matrix(x.shape)
        self.pick_tile_rows(rows, node)
        name = "input%d" % k
        self.g.tensor(name, (rows, cols), init=_bf16(x.detach().float().reshape(rows, cols).numpy()))
        return _Act(self.g.LinearOffChipLoad(tensor=name, tile=[self.tile_rows, cols], out_shape=[rows // self.tile_rows],
                                             name="load_" + name), rows, cols)

    def call_module(self, node):
        m = self.gm.get_submodule(node.target)
        x = self.value(node.args[0]) if node.args else None
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
        if key is None:
            self.fail(node, getattr(target, "__name__", str(target)))
        handler = getattr(self, "op_" + key, None)
        if handler is None:
            self.fail(node, key)
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
        return "%s%s_%d" % (node.name, suffix, self.count)

    def bw(self):
        bw = self.schedule.get("compute_bw")
        return {"compute_bw": bw} if bw else {}

    def tensor_of(self, t, shape):
        """A parameter or constant as a stored bf16 tensor of `shape` (one per tensor object)."""
        key = (id(t), shape)
        if key not in self.tensors:
            name = "param%d" % len(self.tensors)
            self.g.tensor(name, shape, init=_bf16(np.asarray(t.detach().float().numpy(), np.float32).reshape(shape)))
            self.tensors[key] = name
        return self.tensors[key]

    def per_row_block(self, node, t, cols, like):
        """A row vector [1 x cols] (or a [1 x 1] constant), read once per row block of `like`."""
        name = self.tensor_of(t, (1, cols))
        return self.g.LinearOffChipLoad(tensor=name, tile=[1, cols], out_shape=[self.blocks(like)], stride=[0],
                                        name=self.name(node, "_const"))

    def blocks(self, act):
        return act.rows // self.tile_rows

    # ---- operations

    def map(self, node, fn, *streams, suffix=""):
        return self.g.Map(*streams, fn=fn, name=self.name(node, suffix), **self.bw())

    def unary(self, node, x, fn):
        self.need_act(node, x)
        return _Act(self.map(node, fn, x.stream), x.rows, x.cols)

    def need_act(self, node, x):
        if not isinstance(x, _Act):
            self.fail(node, "%s on a value that is not computed from the inputs" % node.target)

    def operand(self, node, v, like):
        """An operand of an element-wise op with activation `like`: its stream and its columns."""
        if isinstance(v, _Act):
            return v.stream, v.cols
        if isinstance(v, (int, float)):
            return self.per_row_block(node, _torch.tensor([[float(v)]]), 1, like), 1
        if isinstance(v, _torch.Tensor) and (v.dim() == 1 or (v.dim() == 2 and v.shape[0] == 1)):
            return self.per_row_block(node, v.reshape(1, -1), v.shape[-1], like), v.shape[-1]
        if isinstance(v, _torch.Tensor) and v.numel() == 1:
            return self.per_row_block(node, v.reshape(1, 1), 1, like), 1
        self.fail(node, "%s with an operand of shape %s" % (node.target, tuple(getattr(v, "shape", ()))))

    def elementwise(self, node, fn, a, b):
        act = a if isinstance(a, _Act) else b
        if not isinstance(act, _Act):
            self.fail(node, "%s between constants" % fn)
        sa, ca = self.operand(node, a, act)
        sb, cb = self.operand(node, b, act)
        return _Act(self.map(node, fn, sa, sb), act.rows, max(ca, cb))

    def linear(self, node, x, weight, bias, transposed=True):
        self.need_act(node, x)
        n, k = weight.shape if transposed else (weight.shape[1], weight.shape[0])
        if k != x.cols:
            self.fail(node, "linear of [%d x %d] by a weight of shape %s" % (x.rows, x.cols, tuple(weight.shape)))
        tn = self.schedule.get("tile_cols") or _divisor_up_to(n, 64)
        if n % tn:
            raise _stepsim.Error("schedule: tile_cols %d does not divide the %d output columns of %s%s"
                                 % (tn, n, node.name, _where(node)))
        w = self.tensor_of(weight, tuple(weight.shape))
        xr = self.g.Repeat(x.stream, count=n // tn, name=self.name(node, "_rep"))
        # W's column tiles (N / tn of them, [tn x K] or [K x tn]) again for every row block.
        tile = [tn, k] if transposed else [k, tn]
        wl = self.g.LinearOffChipLoad(tensor=w, tile=tile, out_shape=[self.blocks(x), n // tn], stride=[0, 1],
                                      name=self.name(node, "_w"))
        y = self.map(node, "matmul_t" if transposed else "matmul", xr, wl, suffix="_mm")
        if bias is not None:
            b = self.tensor_of(bias, (1, n))
            bl = self.g.LinearOffChipLoad(tensor=b, tile=[1, tn], out_shape=[self.blocks(x), n // tn], stride=[0, 1],
                                          name=self.name(node, "_b"))
            y = self.map(node, "add", y, bl, suffix="_bias")
        # The column tiles of each row block side by side again: [tile_rows x N].
        y = self.g.Accum(y, fn="retile_col", rank=1, name=self.name(node, "_cols"), **self.bw())
        return _Act(y, x.rows, n)

    def gelu(self, node, x, approximate):
        if approximate != "tanh":
            self.fail(node, "gelu(approximate=%r) (only the tanh form has a tile function)" % approximate)
        return self.unary(node, x, "gelu_tanh")

    def softmax(self, node, x, dim):
        self.need_act(node, x)
        if dim not in (-1, len(node.meta["tensor_meta"].shape) - 1):
            self.fail(node, "softmax over dim %s (only the last)" % dim)
        m = self.map(node, "row_max", x.stream, suffix="_max")
        e = self.map(node, "exp", self.map(node, "sub_row", x.stream, m, suffix="_sub"), suffix="_exp")
        s = self.map(node, "row_sum", e, suffix="_sum")
        return _Act(self.map(node, "div", e, s, suffix="_div"), x.rows, x.cols)

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

    def op_rsub(self, node, a, b, alpha=1):
        return self.elementwise(node, "sub", b, a)

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
        self.need_act(node, x)
        return _Act(self.map(node, "mul", x.stream, x.stream), x.rows, x.cols)

    def op_mean(self, node, x, dim=None, keepdim=False, dtype=None):
        self.need_act(node, x)
        if dim not in (-1, [-1], (-1,)) or not keepdim:
            self.fail(node, "mean(dim=%r, keepdim=%r) (only the last dim, keepdim=True)" % (dim, keepdim))
        s = self.map(node, "row_sum", x.stream, suffix="_sum")
        scale = self.per_row_block(node, _torch.tensor([[1.0 / x.cols]]), 1, x)
        return _Act(self.map(node, "mul", s, scale, suffix="_scale"), x.rows, 1)

    def op_linear(self, node, x, weight, bias=None):
        return self.linear(node, x, weight, bias)

    def op_matmul(self, node, a, b):
        if isinstance(a, _Act) and isinstance(b, _torch.Tensor) and b.dim() == 2:
            return self.linear(node, a, b, None, transposed=False)
        self.fail(node, "matmul of two computed values (attention-style products come with the next lowering step)")

    def op_identity(self, node, x, *args, **kwargs):
        return x

    op_float = op_to = op_type_as = op_contiguous = op_identity

    def op_view(self, node, x, *shape):
        self.need_act(node, x)
        out = node.meta["tensor_meta"].shape
        if _matrix(out) != (x.rows, x.cols):
            self.fail(node, "%s to %s (only views that keep the last dimension)" % (node.target, tuple(out)))
        return x

    op_reshape = op_flatten = op_view


_FUNCTIONS = {
    operator.add: "add", _torch.add: "add", operator.sub: "sub", _torch.sub: "sub", operator.mul: "mul",
    _torch.mul: "mul", operator.truediv: "div", _torch.div: "div", _F.silu: "silu", _torch.sigmoid: "sigmoid",
    _torch.exp: "exp", _torch.rsqrt: "rsqrt", _F.gelu: "gelu", _torch.softmax: "softmax", _F.softmax: "softmax",
    _F.linear: "linear", _torch.matmul: "matmul", operator.matmul: "matmul", _torch.pow: "pow",
    _torch.mean: "mean", _torch.reshape: "reshape", _torch.flatten: "flatten",
}


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
