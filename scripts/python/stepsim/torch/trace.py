"""Tracing a module as its authors wrote it: ATen operations on concrete example values.

torch.fx's symbolic tracer cannot take Python on shapes (`B, T, C = x.size()`, asserts, tuple
unpacking of traced values on Python 3.11 with torch 1.13); make_fx can: it runs the forward on
real tensors and records every ATen operation the dispatcher sees, so control flow on shapes,
in-place cache writes and complex arithmetic all trace. Parameters and buffers are passed by
functional_call as inputs of the trace (so the graph names them), buffers as copies (tracing
writes a cache; the user's module keeps its state). Floating parameters, buffers and inputs are
traced in bf16, the accelerator's datapath: the casts the model makes itself (`x.float()` before a
softmax, `.type_as(x)` after) are then in the graph, as they are when the model is deployed.
"""
import contextlib
import math
import sys
import traceback

import torch
import torch.fx as fx
import torch.utils._pytree as pytree
from torch.fx.experimental import proxy_tensor
from torch.nn.utils.stateless import functional_call

from .. import _stepsim

_OUR_FILES = ("/stepsim/torch/", "/torch/", "/functorch/", "<")


class Traced:
    """The ATen graph of one forward and what its placeholders are.

    gm: the fx.GraphModule (call_function nodes on torch.ops.aten.*);
    sources: per placeholder, ("param" | "buffer", qualified name) or ("input", position);
    values: the placeholder values, in order (to run gm again, node by node)."""

    def __init__(self, gm, sources, values, dtype, moe=None):
        self.gm, self.sources, self.values, self.dtype = gm, sources, values, dtype
        self.moe = moe or {}  # custom op name -> moe.MoESpec (blocks traced as one operation)


def trace(module, args, kwargs=None, find_moe=True):
    """Traces module(*args, **kwargs) at the ATen level, floating tensors in bf16; a module that
    does not run in bf16 (a table it makes in fp32 meets its bf16 weights) is traced as written,
    in the dtypes it was given, its datapath then the lowering's (bf16 weights and inputs)."""
    try:
        return _trace(module, args, kwargs, torch.bfloat16, find_moe)
    except _stepsim.Error as e:
        if "tracing" not in str(e) or "scaled_dot_product_attention" in str(e):
            raise
    return _trace(module, args, kwargs, None, find_moe)


def _trace(module, args, kwargs, dtype, find_moe):
    kwargs = dict(kwargs or {})
    cast = lambda t: t.detach().to(dtype) if dtype is not None and t.is_floating_point() else t.detach()
    params = {n: cast(p) for n, p in _every(module, "_parameters")}
    buffers = {n: cast(b).clone() for n, b in _every(module, "_buffers")}
    flat, spec = pytree.tree_flatten((tuple(args), kwargs))
    # other objects (a cache class holding tensors): copies, their floating tensors in `dtype` (the
    # forward may write them; the user's objects keep their state); their tensors are constants
    flat = [v if isinstance(v, torch.Tensor) or _plain(v) else _cast_copy(v, dtype) for v in flat]
    tensor_at = [k for k, v in enumerate(flat) if isinstance(v, torch.Tensor)]
    tensors = [cast(flat[k]) for k in tensor_at]

    def forward(p, b, *ts):
        leaves = list(flat)
        for k, t in zip(tensor_at, ts):
            leaves[k] = t
        a, kw = pytree.tree_unflatten(leaves, spec)
        return functional_call(module, {**p, **b}, tuple(a), kw)

    sources = [("param", n) for n in params] + [("buffer", n) for n in buffers] + \
              [("input", _argument_name(module, k, spec, flat)) for k in tensor_at]
    values = list(params.values()) + [b.clone() for b in buffers.values()] + tensors
    from . import moe

    blocks = moe.find_blocks(module, args, kwargs) if find_moe else {}
    ops, undo = moe.patch(blocks)
    with _stack_traces(), _sdpa_as_math(), torch.no_grad():
        try:
            gm = proxy_tensor.make_fx(forward)(params, buffers, *tensors)
        except _stepsim.Error:
            raise
        except Exception as e:  # the user's code failed on its example inputs
            raise _stepsim.Error("stepsim.torch: tracing %s failed%s: %s" % (
                type(module).__name__, user_line(sys.exc_info()[2]), _explain(e))) from None
        finally:
            undo()
    _drop_dead_code(gm)
    return Traced(gm, sources, values, dtype, ops)


def _drop_dead_code(gm):
    """Operations whose results nothing uses (a router an expert's trace no longer needs), kept
    when they write in place (a cache write has no user)."""
    for node in reversed(list(gm.graph.nodes)):
        if node.op == "call_function" and not node.users and not op_name(node).endswith("_"):
            gm.graph.erase_node(node)


def _plain(v):
    return v is None or isinstance(v, (bool, int, float, complex, str, torch.dtype, torch.device))


def _cast_copy(obj, dtype):
    import copy

    obj = copy.deepcopy(obj)
    seen = set()

    def visit(o):
        if id(o) in seen or _plain(o):
            return o
        seen.add(id(o))
        if isinstance(o, torch.Tensor):
            return o.to(dtype) if dtype is not None and o.is_floating_point() else o
        if isinstance(o, list):
            o[:] = [visit(v) for v in o]
        elif isinstance(o, dict):
            for k in list(o):
                o[k] = visit(o[k])
        elif isinstance(o, tuple):
            return type(o)(visit(v) for v in o) if not hasattr(o, "_fields") else type(o)(*(visit(v) for v in o))
        elif hasattr(o, "__dict__") and not isinstance(o, torch.nn.Module):
            for k, v in list(vars(o).items()):
                setattr(o, k, visit(v))
        return o

    return visit(obj)


def _every(module, kind):
    """(qualified name, tensor) of every parameter or buffer, shared ones under each of their names
    (functional_call replaces by name: a tied weight must be given under both)."""
    for prefix, m in module.named_modules(remove_duplicate=False):
        for name, t in getattr(m, kind).items():
            if t is not None:
                yield (prefix + "." if prefix else "") + name, t


def _argument_name(module, k, spec, flat):
    """A readable name of forward argument leaf k: the parameter name of forward's signature."""
    import inspect

    try:
        names = [p for p in inspect.signature(module.forward).parameters]
    except (TypeError, ValueError):
        names = []
    return names[k] if k < len(names) else "arg%d" % k


def _explain(e):
    text = "%s: %s" % (type(e).__name__, e)
    if isinstance(e, AttributeError) and "scaled_dot_product_attention" in str(e):
        return ("the module calls torch.nn.functional.scaled_dot_product_attention, which PyTorch %s does not "
                "have: it is written for torch >= 2. Run it where torch >= 2 is installed, or give torch 1.13 the "
                "function with stepsim.torch.sdpa_shim() (a reference implementation; it lowers like hand-written "
                "attention)" % torch.__version__)
    return text


def reference_sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """F.scaled_dot_product_attention as hand-written attention computes it: softmax(q k^T *
    scale + mask) v; is_causal masks the upper triangle (aligned to the last key); a bool
    attn_mask keeps True; dropout ignored (eval)."""
    s = q @ k.transpose(-2, -1) * (scale if scale is not None else 1.0 / math.sqrt(q.shape[-1]))
    if is_causal:
        n, m = q.shape[-2], k.shape[-2]
        s = s.masked_fill(torch.ones(n, m, dtype=torch.bool).tril(m - n).logical_not(), float("-inf"))
    if attn_mask is not None:
        s = s.masked_fill(attn_mask.logical_not(), float("-inf")) if attn_mask.dtype == torch.bool \
            else s + attn_mask
    return torch.softmax(s, dim=-1) @ v


@contextlib.contextmanager
def _sdpa_as_math():
    """While tracing, F.scaled_dot_product_attention (torch >= 2's, or the shim's) is the reference
    above: the trace holds the products, the mask and the softmax the attention rules lower, not a
    fused kernel's ATen operation."""
    import torch.nn.functional as F

    saved = getattr(F, "scaled_dot_product_attention", None)
    if saved is None:
        yield
        return
    F.scaled_dot_product_attention = reference_sdpa
    try:
        yield
    finally:
        F.scaled_dot_product_attention = saved


class _StackTracer(proxy_tensor.PythonKeyTracer):
    """make_fx's tracer, keeping each node's Python stack (for errors naming the user's line)."""

    def __init__(self):
        super().__init__()
        self.record_stack_traces = True


@contextlib.contextmanager
def _stack_traces():
    saved = proxy_tensor.PythonKeyTracer
    proxy_tensor.PythonKeyTracer = _StackTracer
    try:
        yield
    finally:
        proxy_tensor.PythonKeyTracer = saved


def _user_frame(frames):
    """(file, line, code) of the innermost frame that is neither stepsim's nor PyTorch's."""
    for f in reversed(frames):
        if not any(mark in f.filename for mark in _OUR_FILES):
            return f.filename, f.lineno, (f.line or "").strip()
    return None


def user_line(tb):
    """' at FILE:LINE: CODE' for the innermost user frame of a traceback, or ''."""
    found = _user_frame(traceback.extract_tb(tb)) if tb is not None else None
    return " at %s:%s: %s" % found if found else ""


def where(node):
    """' at FILE:LINE: CODE', the user's source line of an ATen node (from the recorded stack)."""
    if not isinstance(node, fx.Node):
        return ""
    text = getattr(node, "stack_trace", None) or node.meta.get("stack_trace") or ""
    frames = []
    lines = text.splitlines()
    for k, line in enumerate(lines):
        s = line.strip()
        if s.startswith("File "):
            parts = s.split(",")
            file = parts[0][len("File "):].strip('"')
            number = parts[1].strip().replace("line ", "") if len(parts) > 1 else "?"
            code = lines[k + 1].strip() if k + 1 < len(lines) and not lines[k + 1].strip().startswith("File ") else ""
            frames.append(traceback.FrameSummary(file, int(number) if number.isdigit() else 0, "", line=code))
    found = _user_frame(frames[::-1])  # the recorded stack is innermost first
    return " at %s:%s: %s" % found if found else ""


def op_name(node):
    """The ATen operation of a node as the user reads it: aten.view_as_complex, aten.topk."""
    target = node.target
    if hasattr(target, "overloadpacket"):  # aten.add.Tensor -> aten.add
        return ".".join(str(target).split(".")[:2])
    return getattr(target, "__name__", str(target))
