"""The PyTorch front door: a module as its authors wrote it, traced at the ATen level, lowered to STeP.

    lowered = stepsim.torch.lower(module, (x,), schedule={"tile_rows": 16})
    res = lowered.run(mode="functional")     # res.outputs: NumPy arrays, in the module's output order
    res.cycles, lowered.graph                # the cycles, the stepsim.Graph

`lower(module, args, kwargs=None, schedule=None)` runs module(*args, **kwargs) once on the example
arguments under make_fx (trace.py): Python on shapes, asserts, tuple unpacking, in-place cache
writes and complex arithmetic trace as they run. Floating tensors are traced in bf16 (the
datapath), so the model's own casts (softmax in fp32, then back) are lowered as it makes them.
Arguments that are not floating tensors (ints such as start_pos, int64 positions, complex RoPE
tables, bool masks) are constants of the lowering; floating tensors are the activations, stored
in HBM and streamed as the operations that read them need.

Every ATen operation is lowered by one rule of the table in ops.py (the list: docs/python.md, or
`python3 -m stepsim.torch`); the patterns are in their own modules: attention.py (products of
two streamed values), rope.py (rotations), moe.py (routing), kvcache.py (cache writes).

The schedule (a dict; None picks the defaults):
  tile_rows    rows per tile (default: the largest divisor up to 16 of the first activation's rows)
  non_divisor  what a dim whose size tile_rows does not divide gets: "error" (default: a clear
               error naming the dim and the operation) or "gcd" (gcd(size, tile_rows) rows there)
  tile_cols    the column tile of a Linear's output not viewed into heads (default: the largest
               divisor up to 64)
  compute_bw   FLOPs/cycle of every compute node (default: the preset's)
  fifo_depth   every channel's depth in beats (default: the longest value's tile count + 2)
  attention    "whole" (default: per batch and head the keys and values kept whole in a memory unit)
               or "flash" (attention.py: per request the key positions its mask lets it attend,
               packed in HBM, streamed in KV tiles; FlashAttention's online softmax)
  kv_tile      tokens per KV tile of attention "flash" (default 32)
  attention_parallel  "none" (default), "interleaved", "coarse" or "dynamic": the requests of an
               attention "flash" over attention_regions regions (default min(4, requests)), as
               graphs/layers/attention.cpp parallelizes them. These three keys without
               `attention` mean "flash", attention_regions alone also "dynamic"
Anything else is a stepsim.Error naming the key.
"""
from .. import _stepsim
from .lowering import Lowering, Unsupported  # noqa: F401
from .ops import RULES
from . import attention, rope  # noqa: F401 (their rules join the table)
from .trace import trace
from .values import MVal, SVal

SCHEDULE_KEYS = ("tile_rows", "tile_cols", "compute_bw", "fifo_depth", "routing_trace", "non_divisor", "moe_tiling",
                 "moe_tile_n", "moe_regions", "attention", "kv_tile", "attention_parallel", "attention_regions")

__all__ = ["lower", "Lowered", "LoweredResult", "SCHEDULE_KEYS", "supported_ops", "sdpa_shim"]


def sdpa_shim():
    """A context manager giving torch.nn.functional a scaled_dot_product_attention where PyTorch
    (< 2) has none: a reference implementation (softmax(q k^T * scale + mask) v; is_causal masks
    the upper triangle; a bool attn_mask keeps True; dropout ignored: eval), written with the
    operations hand-written attention uses, so a module written for torch >= 2 traces and lowers
    as that attention does. Where PyTorch has the function it is left alone (and the lowering
    traces it as this reference all the same)."""
    import contextlib

    import torch.nn.functional as F

    from .trace import reference_sdpa as sdpa

    @contextlib.contextmanager
    def installed():
        if hasattr(F, "scaled_dot_product_attention"):
            yield
            return
        F.scaled_dot_product_attention = sdpa
        try:
            yield
        finally:
            del F.scaled_dot_product_attention

    return installed()


def supported_ops():
    """The ATen operations the lowering has a rule for (sorted)."""
    return sorted(RULES.table)


def lower(module, args, kwargs=None, schedule=None):
    """Traces module(*args, **kwargs) at the ATen level and lowers it to a STeP graph."""
    import torch

    schedule = _check_schedule(schedule)
    if not isinstance(module, torch.nn.Module):
        raise TypeError("stepsim.torch.lower: module must be a torch.nn.Module, not %s" % type(module).__name__)
    if isinstance(args, torch.Tensor):
        args = (args,)
    if not isinstance(args, (tuple, list)):
        raise TypeError("stepsim.torch.lower: args must be a tuple of the forward's arguments (or one tensor), "
                        "not %s" % type(args).__name__)
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError("stepsim.torch.lower: kwargs must be a dict or None, not %s" % type(kwargs).__name__)
    module.eval()
    traced = trace(module, tuple(args), kwargs)
    lw = Lowering(traced, schedule, type(module).__name__, RULES)
    outs = lw.run()
    names, layouts, shapes, dtypes = [], [], [], []
    for k, (value, concrete, node) in enumerate(outs):
        if not isinstance(concrete, torch.Tensor):
            raise _stepsim.Error("stepsim.torch: output %d of %s is %s, not a tensor: the lowering streams "
                                 "tensors" % (k, type(module).__name__, type(concrete).__name__))
        lw.node = node
        if not isinstance(value, MVal) or value.from_input:
            value = lw.stream_of(value)  # a Linear built, a rotation made, an input streamed
        if not isinstance(value, SVal):
            raise _stepsim.Error("stepsim.torch: output %d of %s is not computed from the floating inputs (the "
                                 "activations): it depends only on parameters, buffers and integer, bool or complex "
                                 "arguments, which are constants of the lowering" % (k, type(module).__name__))
        lw.node = node
        value = lw.materialize(value)
        if value.dtype == "fp32" and getattr(concrete, "dtype", None) in (torch.bfloat16, torch.float16):
            value = SVal(value.layout, lw.map("cast_bf16", value.stream))  # the model's output dtype
        name = "output%d" % k
        r, c = value.layout.tile()
        grid = value.layout.grid_sizes()
        rows = max(1, int(__import__("math").prod(grid or [1]))) * r
        lw.g.output_tensor(name, (rows, c), dtype=value.dtype)
        view = dict(out_shape=grid, stride=[]) if grid else dict(out_shape=[1], stride=[0])
        view["stride"] = _row_major(grid) if grid else [0]
        lw.g.LinearOffChipStore(value.stream, tensor=name, tile=[r, c], name="store_" + name, **view)
        names.append(name)
        layouts.append(value.layout)
        shapes.append(tuple(concrete.shape) if isinstance(concrete, torch.Tensor) else ())
        dtypes.append(value.dtype)
    lw.g.tokens = _tokens_of(args)
    lowered = Lowered(lw.g, names, layouts, shapes, schedule.get("fifo_depth") or lw.deepest + 2,
                      bool(schedule.get("routing_trace")))
    lowered.routes_by_value = bool(traced.moe) and not schedule.get("routing_trace")
    return lowered


def _tokens_of(args):
    """The tokens a run processes: the rows of the first floating argument (all its dimensions but
    the last: batch x sequence of the hidden states [B, S, D]); 0 without one."""
    import torch

    for a in args:
        if isinstance(a, torch.Tensor) and a.is_floating_point() and a.dim() >= 1:
            return int(a.numel() // max(1, a.shape[-1])) if a.shape[-1] else 0
    return 0


def _row_major(sizes):
    out, s = [], 1
    for n in reversed(sizes):
        out.insert(0, s)
        s *= n
    return out


def _check_schedule(schedule):
    if schedule is None:
        return {}
    if not isinstance(schedule, dict):
        raise _stepsim.Error("schedule: a dict of %s, not %s" % (", ".join(SCHEDULE_KEYS), type(schedule).__name__))
    unknown = set(schedule) - set(SCHEDULE_KEYS)
    if unknown:
        raise _stepsim.Error("schedule: unknown key(s) %s; known: %s" % (", ".join(sorted(map(str, unknown))),
                                                                         ", ".join(SCHEDULE_KEYS)))
    for k in ("tile_rows", "tile_cols", "compute_bw", "fifo_depth", "moe_tile_n", "moe_regions", "kv_tile",
              "attention_regions"):
        v = schedule.get(k)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= 1 << 20):
            raise _stepsim.Error("schedule: %s must be a whole number 1..%d, not %r" % (k, 1 << 20, v))
    if schedule.get("non_divisor", "error") not in ("error", "gcd"):
        raise _stepsim.Error("schedule: non_divisor must be 'error' or 'gcd', not %r" % (schedule["non_divisor"],))
    # attention (attention.py): 'whole', or 'flash' with its KV tile and parallelization. A flash key
    # without `attention` means 'flash', attention_regions without attention_parallel 'dynamic' (so
    # each key alone is a valid schedule, as a design space checks them); beside an explicit choice
    # they do not apply to, they are refused
    schedule = dict(schedule)
    if schedule.get("attention", "whole") not in ("whole", "flash"):
        raise _stepsim.Error("schedule: attention must be 'whole' or 'flash', not %r" % (schedule["attention"],))
    flash_only = [k for k in ("kv_tile", "attention_parallel", "attention_regions") if schedule.get(k) is not None]
    if flash_only and schedule.get("attention") is None:
        schedule["attention"] = "flash"
    if flash_only and schedule["attention"] != "flash":
        raise _stepsim.Error("schedule: %s appl%s to attention 'flash' (KV tiles streamed from HBM), not to "
                             "attention 'whole'" % (", ".join(flash_only), "ies" if len(flash_only) == 1 else "y"))
    if schedule.get("attention_regions") is not None and schedule.get("attention_parallel") is None:
        schedule["attention_parallel"] = "dynamic"
    parallel = schedule.get("attention_parallel", "none")
    if parallel not in ("none", "interleaved", "coarse", "dynamic"):
        raise _stepsim.Error("schedule: attention_parallel must be 'none', 'interleaved', 'coarse' or 'dynamic', "
                             "not %r" % (parallel,))
    if schedule.get("attention_regions") is not None and parallel == "none":
        raise _stepsim.Error("schedule: attention_regions applies to attention_parallel 'interleaved', 'coarse' or "
                             "'dynamic', not 'none'")
    # MoE blocks (moe.py): moe_tiling 'dynamic' (one tile of what each expert got) or 'static'
    # (tiles of moe_tile_n tokens, the last padded; moe_tile_n without moe_tiling means static, and
    # an explicit 'dynamic' leaves it unused, so a design space can search both keys); moe_regions
    # pipelines shared by the experts (that it divides a block's experts is checked there)
    if schedule.get("moe_tiling") not in (None, "dynamic", "static"):
        raise _stepsim.Error("schedule: moe_tiling must be 'dynamic' or 'static', not %r" % (schedule["moe_tiling"],))
    return dict(schedule)


class Lowered:
    """A lowered module: `graph` (a stepsim.Graph) and `run()`."""

    def __init__(self, graph, output_names, layouts, output_shapes, fifo_depth, traced_routing=False):
        self.graph = graph
        self.output_names = output_names
        self.layouts = layouts
        self.output_shapes = output_shapes
        self.fifo_depth = fifo_depth
        self.traced_routing = traced_routing
        self.routes_by_value = False  # a MoE block routed by its gate: functional runs only

    def run(self, mode="functional", preset="step-artifact", set=None, impl=None, downtile=None, tech=None):
        """Runs the graph (stepsim.Graph.run) with the schedule's FIFO depth unless `set` gives one;
        tech: the technology table of the energy and area (None: the default).

        impl "hls" or "rtl" co-simulates it on the cycle-accurate units (stepsim/torch/cosim.py): the
        graph is down-tiled to the units' tile first (downtile: "auto", the default then, or a side
        T), and the result, a cosim.CosimResult, adds the per-node account (`cosim`), the verdict
        (`equivalent`) and a `summary`. Without impl, downtile (None by default) runs the graph
        down-tiled all the same."""
        if self.traced_routing and mode == "functional":
            raise _stepsim.Error("this lowering routes its MoE tokens by a trace (schedule routing_trace), not by its "
                                 "gate: run it in timing mode, or lower without routing_trace for a functional run")
        if self.routes_by_value and mode == "timing":
            raise _stepsim.Error("this lowering routes its MoE tokens by its gate (TopK on the scores' values), which "
                                 "a timing run does not compute: run it in functional mode, or lower with schedule "
                                 "routing_trace (a routing trace file) for a timing run")
        settings = {"fifo_depth": self.fifo_depth}
        settings.update(set or {})
        if impl not in (None, "approx"):
            from . import cosim
            return cosim.run(self, mode, preset, settings, impl, "auto" if downtile is None else downtile)
        r = self.graph.run(preset=preset, mode=mode, set=settings, impl=impl, downtile=downtile, tech=tech)
        return LoweredResult(r, self.outputs_of(r, mode))

    def outputs_of(self, result, mode="functional"):
        """The module's outputs from a run's stored tensors (NumPy, in the module's output order; none
        in timing mode)."""
        if mode != "functional":
            return []
        return [lay.from_stream(result.outputs[n]).reshape(s) for n, lay, s in
                zip(self.output_names, self.layouts, self.output_shapes)]


class LoweredResult:
    """outputs (NumPy arrays in the module's output order, float32 holding bf16 values), cycles and
    the run's full stepsim.Result as `result`."""

    def __init__(self, result, outputs):
        self.result = result
        self.outputs = outputs
        self.cycles = result.cycles
