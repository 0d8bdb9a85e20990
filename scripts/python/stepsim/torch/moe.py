"""Mixture-of-experts blocks, recognised by what they compute and lowered to STeP's routing.

A trace on example values bakes in the example's routing, so a MoE block is not traced through:
it is found first, by structure, and traced as one operation. A block is a module whose own
forward takes a top-k over the scores of a projection (a Linear or a 2-d parameter applied to its
input) and has a list of expert modules as many as the projection's outputs — whatever the
attribute names (gate, router, ...), the loop form (torch.where, index_add_, nonzero, unique) or
the field naming k. The analysis reads the block's own ATen trace: the router's weight, k, where
the softmax is (before the top-k, or over the k chosen logits), whether the chosen weights are
renormalised, and whether the block also returns the router's logits.

Lowering (STeP's dynamic routing, as the paper's MoE layers): tokens one per row, the router's
scores (Map matmul_t) and their softmax in fp32, TopK to a selector and a mask, the chosen
probabilities (renormalised where the block does), Partition of the rows and of the weights to
the experts, each expert lowered on its tokens packed into tiles (every load it makes driven by
those tiles: an expert with no token reads nothing), its rows scaled by their weight, Reassemble
and Accum add of each token's k rows, and the rows back into row blocks.

The schedule chooses, as graphs/layers/moe.cpp's tile_n and regions do (the paper's §5.2, §5.3):
  moe_tiling   "dynamic" (default): Promote, so each expert packs ONE tile of exactly the tokens it
               got; "static": Reshape into tiles of moe_tile_n tokens, the last padded with zero
               rows that are computed as the others (their FLOPs, cycles and on-chip bytes are
               real) and dropped when the rows are unpacked (FlatMap filter_padding)
  moe_tile_n   the static tile (default: the tokens' tile rows); without moe_tiling it means static
               tiling, with moe_tiling "dynamic" it is unused (a design space searches both keys)
  moe_regions  R expert pipelines (default: one per expert), R dividing the E experts: the E/R
               experts of a region share the lowering of its first one (configuration
               time-multiplexing): EagerMerge of their packed tiles, every load of the pipeline
               a RandomOffChipLoad of the tiles of the expert the tile belongs to (ExpertAddrGen of
               the merge's selector, over the experts' matrices stacked per load), and Partition
               of the outputs back to the experts by the same selector.
"""
import numpy as np
import torch
from torch.nn.utils.stateless import functional_call
from torch.utils._python_dispatch import TorchDispatchMode

from .. import _stepsim
from . import layout as L
from .values import SVal

_LIBRARY = None
_COUNT = [0]


class MoESpec:
    """What a MoE block computes: router weight [E x D] (and bias), k, softmax_first (softmax of
    all scores, then top-k) or not (top-k of the logits, then their softmax), renormalize, the
    experts (modules [n, D] -> [n, D]) and whether the block returns (output, router logits)."""

    def __init__(self, module, router_weight, router_bias, k, softmax_first, renormalize, experts, returns_logits):
        self.module, self.router_weight, self.router_bias = module, router_weight, router_bias
        self.k, self.softmax_first, self.renormalize = k, softmax_first, renormalize
        self.experts, self.returns_logits = experts, returns_logits

    def describe(self):
        order = "softmax, top-%d" % self.k if self.softmax_first else "top-%d of the logits, softmax" % self.k
        return "%d experts, %s%s" % (len(self.experts), order, ", renormalised" if self.renormalize else "")


def _could_be(m):
    """A list of modules among its children, or expert weights stacked in a parameter of 3 dims or
    more (its own or a child's)."""
    lists = [c for c in m.children() if isinstance(c, torch.nn.ModuleList) and len(c) >= 2]
    stacked = [p for p in m.parameters() if p.dim() >= 3 and p.shape[0] >= 2]
    return bool(lists or stacked)


def find_blocks(module, args, kwargs):
    """{qualified name: MoESpec} of the MoE blocks of `module` (the outermost, in forward order)."""
    names = [(n, m) for n, m in module.named_modules() if _could_be(m)]
    if not names:
        return {}
    seen = {}

    def keep(name):
        def hook(mod, inp, out):  # returns None: the output stays the module's
            seen.setdefault(name, (inp, out))
        return hook

    hooks = [m.register_forward_hook(keep(n)) for n, m in names]
    try:
        import copy

        state = {n: t.detach().clone() for n, t in module.state_dict(keep_vars=True).items()}
        args, kwargs = copy.deepcopy((tuple(args), dict(kwargs or {})))  # a cache object keeps its state
        with torch.no_grad():
            functional_call(module, state, args, kwargs)
    except Exception:
        return {}  # the trace proper reports the module's own failure, with its line
    finally:
        for h in hooks:
            h.remove()
    found = {}
    for n, m in names:
        if n not in seen or any(n.startswith(f + ".") or not f for f in found):
            continue
        spec = analyze(m, *seen[n])
        if spec is not None:
            found[n] = spec
    return found


def analyze(m, inputs, output):
    """The MoESpec of block `m` from the ATen operations its forward runs on `inputs` (recorded as
    they run: a loop over experts may ask a tensor for its values), or None if it is not one."""
    if len(inputs) != 1 or not isinstance(inputs[0], torch.Tensor):
        return None
    params = {p.data_ptr(): p.detach() for p in m.parameters()}
    rec = _Recorder()
    x = inputs[0].detach()
    if x.dim() >= 2:  # the structure is the same on a few tokens (and an einsum form is cheaper)
        x = x[tuple(slice(0, 1) for _ in range(x.dim() - 2)) + (slice(0, min(x.shape[-2], 8)),)]
    try:
        with torch.no_grad(), rec:
            m(x)
    except Exception:
        return None
    for op in rec.ops:
        if op.name != "topk":
            continue
        scores, softmax_first = _back_to_projection(op.args[0])
        if scores is None:
            continue
        weight, bias = _router(scores, params)
        if weight is None:
            continue
        e = int(weight.shape[0])
        experts = [c for c in m.modules() if isinstance(c, torch.nn.ModuleList) and len(c) == e]
        if not experts and any(p.dim() >= 3 and p.shape[0] == e for p in m.parameters()):
            experts = [[RoutedTo(m, j) for j in range(e)]]  # weights stacked per expert: einsum forms
        if not experts:
            raise _stepsim.Error("stepsim.torch: %s routes tokens with a top-k over %d router scores but has "
                                 "neither a list of %d expert modules nor expert weights stacked in parameters "
                                 "[%d, ...]" % (type(m).__name__, e, e, e))
        k = int(op.args[1])
        # softmax over the k chosen logits is the renormalised top-k of the softmax
        renormalize = _renormalized(op) if softmax_first else True
        returns_logits = isinstance(output, tuple) and len(output) == 2
        spec = MoESpec(m, weight, bias, k, softmax_first, renormalize, list(experts[0]), returns_logits)
        outs = output if isinstance(output, tuple) else (output,)
        spec.example_shapes = [tuple(o.shape) for o in outs]
        return spec
    return None


class RoutedTo(torch.nn.Module):
    """Expert j of a block whose experts are slices of stacked weights (w1[expert_indices] and
    einsum): the block itself with its top-k answering "expert j, weight 1" for every token (k =
    1), so what it computes is expert j's function of the rows. Traced as an expert, the router's
    work is dead and dropped, the gathers of the stacked weights fold into expert j's matrices."""

    def __init__(self, block, j):
        super().__init__()
        self.block, self.j = block, j

    def forward(self, x):
        import contextlib

        j = self.j

        def topk(input, k=1, dim=-1, largest=True, sorted=True, **_):
            shape = list(input.shape)
            shape[dim] = 1
            return torch.ones(shape, dtype=input.dtype), torch.full(shape, j, dtype=torch.long)

        with contextlib.ExitStack() as patches:
            for owner in (torch, torch.Tensor):
                saved = owner.topk
                setattr(owner, "topk", topk)
                patches.callback(setattr, owner, "topk", saved)
            out = self.block(x)
        return out[0] if isinstance(out, tuple) else out


class _Op:
    """One recorded ATen call: its name, its arguments (_Op for a tensor it made, else the
    value) and the calls that used its results."""

    def __init__(self, name, args):
        self.name, self.args, self.users = name, args, []


class _Item(_Op):
    """Output k of a call with several (topk's values and indices)."""

    def __init__(self, op, k):
        super().__init__("getitem", [op, k])
        op.users.append(self)


class _Recorder(TorchDispatchMode):
    """Records the ATen calls of a forward as they run on real tensors (no tracing tensors: a
    forward that reads values, as a loop over experts does, runs as it does in PyTorch)."""

    def __init__(self):
        super().__init__()
        self.ops, self.made, self.keep = [], {}, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__ if hasattr(func, "overloadpacket") else str(func)
        arg = lambda a: self.made.get(id(a), a) if isinstance(a, torch.Tensor) else a
        op = _Op(name, [arg(a) for a in args] + [arg(v) for v in (kwargs or {}).values()])
        for a in op.args:
            if isinstance(a, _Op):
                a.users.append(op)
        self.ops.append(op)
        outs = out if isinstance(out, (tuple, list)) else [out]
        for k, o in enumerate(outs):
            if isinstance(o, torch.Tensor):
                self.made[id(o)] = _Item(op, k) if len(outs) > 1 else op
                self.keep.append(o)  # ids stay unique while the record lives
        return out


_PASS = {"_to_copy", "view", "_unsafe_view", "_reshape_alias", "clone", "detach", "alias", "reshape", "contiguous",
         "to", "type_as"}


def _back_to_projection(node):
    """(the mm/addmm call the scores come from, whether a softmax is on the way), or (None, _)."""
    softmax = False
    while isinstance(node, _Op):
        if node.name in ("mm", "addmm"):
            return node, softmax
        if node.name in ("_softmax", "softmax"):
            softmax = True
        elif node.name not in _PASS:
            return None, False
        node = node.args[0]
    return None, False


def _router(mm, params):
    """The router's weight [E x D] (and bias) of mm/addmm(x, t(W)) on a parameter W."""
    args = list(mm.args)
    bias = None
    if mm.name == "addmm":
        bias = _param(args[0], params)
        args = args[1:]
    w, transposed = args[1], False
    while isinstance(w, _Op) and w.name in {"t", "transpose", "permute"} | _PASS:
        transposed ^= w.name in ("t", "transpose", "permute")
        w = w.args[0]
    p = _param(w, params)
    if p is None or p.dim() != 2:
        return None, None
    return (p if transposed else p.t()), bias


def _param(t, params):
    return params.get(t.data_ptr()) if isinstance(t, torch.Tensor) else None


def _renormalized(topk):
    """The top-k values divided by their own sum (a sum then a div downstream of getitem 0)."""
    frontier = [u for u in topk.users if u.name == "getitem" and u.args[1] == 0]
    for _ in range(6):
        nxt = []
        for v in frontier:
            for u in v.users:
                if u.name == "sum" and any(w.name in ("div", "div_") for w in u.users):
                    return True
                if u.name in _PASS:
                    nxt.append(u)
        frontier = nxt
    return False


def patch(blocks):
    """Each block's forward replaced by one custom operation (its own forward runs inside, out of
    the trace's sight). Returns {op name: spec} and an undo function."""
    global _LIBRARY
    if _LIBRARY is None:
        _LIBRARY = torch.library.Library("stepsim_moe", "DEF")
    ops, undo = {}, []
    for spec in blocks.values():
        m = spec.module
        name = "block%d" % _COUNT[0]
        _COUNT[0] += 1
        _LIBRARY.define("%s(Tensor x) -> %s" % (name, "(Tensor, Tensor)" if spec.returns_logits else "Tensor"))
        # the block's value in the trace is only its shape (find_blocks saw it): zeros, not another
        # run of the block (an einsum form gathers every token's expert weights)

        def shaped(x, shapes=spec.example_shapes):
            outs = tuple(torch.zeros(s, dtype=x.dtype) for s in shapes)
            return outs if len(outs) > 1 else outs[0]

        _LIBRARY.impl(name, shaped, "CPU")
        op = getattr(torch.ops.stepsim_moe, name)
        m.forward = lambda x, *a, op=op, **k: op(x)
        undo.append(lambda m=m: m.__dict__.pop("forward", None))
        ops["stepsim_moe." + name] = spec
    return ops, lambda: [u() for u in undo]


# ---- lowering

class Plan:
    """The block's schedule: tiling ("dynamic" | "static"), tile_n (tokens per static tile) and
    regions (expert pipelines; the experts of a region are served in turn by one)."""

    def __init__(self, tiling, tile_n, regions):
        self.tiling, self.tile_n, self.regions = tiling, tile_n, regions

    @property
    def static(self):
        return self.tiling == "static"


def plan(lw, spec, tr):
    """The Plan of block `spec` from the schedule (moe_tiling, moe_tile_n, moe_regions), or a
    stepsim.Error naming the key and the value. `tr`: the tokens' tile rows (the default static
    tile)."""
    s = lw.schedule  # each key's values: checked by stepsim.torch._check_schedule
    n = len(spec.experts)
    tile_n = s.get("moe_tile_n")
    tiling = s.get("moe_tiling") or ("static" if tile_n is not None else "dynamic")
    regions = s.get("moe_regions")
    if regions is None:
        regions = n
    if regions > n or n % regions:
        raise _stepsim.Error("stepsim.torch: schedule: moe_regions %d does not divide the %d experts of %s (the "
                             "experts share moe_regions pipelines, each serving the same number in turn: one of %s)"
                             % (regions, n, type(spec.module).__name__,
                                ", ".join(str(r) for r in range(1, n + 1) if n % r == 0)))
    return Plan(tiling, tile_n if tile_n is not None else tr, regions)


def lower(lw, node, spec, x):
    x = lw.cols_exactly(lw.stream_of(x), len(x.shape) - 1)
    shape = tuple(x.shape)
    d = shape[-1]
    tokens = 1
    for s in shape[:-1]:
        tokens *= s
    rows, lay = _token_rows(lw, x, tokens, d)
    n = len(spec.experts)
    tr = lay.tile()[0]
    p = plan(lw, spec, tr)
    g = lw.g
    gate = lw.store_tensor(spec.router_weight, _one_tile(n, d), "bf16", "router_weight")
    scores = lw.map("matmul_t", rows, g.LinearOffChipLoad(tensor=gate, tile=[n, d], out_shape=[tokens], stride=[0],
                                                           name=lw.name("_router_w")), suffix="_scores")
    if spec.router_bias is not None:
        b = lw.store_tensor(spec.router_bias.reshape(1, n), _one_tile(1, n), "bf16", "router_bias")
        scores = lw.map("add", scores, g.LinearOffChipLoad(tensor=b, tile=[1, n], out_shape=[tokens], stride=[0],
                                                            name=lw.name("_router_b")), suffix="_scores_b")
    logits = scores
    scores = lw.map("cast_f32", scores, suffix="_f32")
    m = lw.map("row_max", scores)
    e = lw.map("exp", lw.map("sub_row", scores, m))
    probs = lw.map("div", e, lw.map("row_sum", e))
    trace = lw.schedule.get("routing_trace")
    if trace:  # timing runs: the selectors of a routing trace; the weights' values do not matter
        name = lw.name("_routing")
        g.trace_stream(name, "{trace: '%s', kind: selector, rank: 1, limit: %d}" % (trace, tokens))
        (sel,) = g.Source(stream=name, name=name)
        weights = probs
    else:
        sel, mask = g.TopK(probs, k=spec.k, name=lw.name("_topk"))
        weights = lw.map("mul", probs, mask, suffix="_chosen")
    if spec.renormalize and not trace:
        weights = lw.map("div", weights, lw.map("row_sum", weights), suffix="_renorm")
    routed = g.Partition(rows, sel, outputs=n, name=lw.name("_route"))
    routed_w = g.Partition(weights, sel, outputs=n, name=lw.name("_route_w"))
    packs = [_pack(lw, e_, routed[e_], routed_w[e_], p) for e_ in range(n)]
    if p.regions == n:  # one pipeline per expert
        ys = [_expert(lw, spec.experts[e_], packs[e_].tiles, e_, d, tr) for e_ in range(n)]
    else:
        ys = []
        per = n // p.regions
        for r in range(p.regions):
            ys += _region(lw, spec, r, list(range(r * per, (r + 1) * per)), packs, d, tr)
    outs = [_unpack(lw, e_, ys[e_], packs[e_], routed_w[e_], n, p) for e_ in range(n)]
    merged = g.Reassemble(*outs, sel, name=lw.name("_merge"))
    y = g.Accum(merged, fn="add", rank=1, name=lw.name("_combine"), **lw.bw())
    blocks = lw.rows_to_blocks(y, tokens, lay.tile()[0])
    # Reassemble holds rows back until their turn (static tiling: padded to whole tiles)
    lw.deepest = max(lw.deepest, tokens + (p.tile_n if p.static else 0))
    flat = L.default_layout((tokens, d), lay.tile()[0])  # the row blocks as one stream dim
    out = lw.track(SVal(flat, blocks))
    view, cuts = flat.reshaped(shape)  # [B, T, D]: the blocks' dim split back (Reshape)
    out = SVal(view, lw.refine(out, cuts).stream)
    if spec.returns_logits:  # the router's logits too, made only if the model reads them
        import operator

        read = any(u.target is operator.getitem and u.args[1] == 1 and u.users for u in node.users)
        return (out, _logits(lw, logits, tokens, n, lay.tile()[0]) if read else None)
    return out


def _one_tile(r, c):
    return L.from_spec((r, c), [(0, r, "r"), (1, c, "c")])


def _token_rows(lw, x, tokens, d):
    """x's tokens one per row, in order: [1, tokens] of [1 x d]; and the row-block layout of the
    output [tokens, d] (the rows of x's tiles)."""
    lay = x.layout
    want, cuts = lay.reshaped((tokens, d))
    x = lw.refine(x, cuts) if cuts else x
    want = x.layout.reshaped((tokens, d))[0]
    token_axes = [a for a in range(len(want.sizes)) if want.dims[a] == 0]
    if list(want.grid) + list(want.rows) != token_axes or want.bcast:
        x = lw.reorder_grid(x, [a for a in token_axes if a in want.grid])
        want = x.layout.reshaped((tokens, d))[0]
    g = len(want.grid_sizes())
    rows = lw.g.FlatMap(x.stream, fn="retile_streamify_row", rank=1, name=lw.name("_rows"))
    if g:  # [1, grid.., rows] -> [1, tokens]
        rows = lw.g.Flatten(rows, min=0, max=g, name=lw.name("_tokens"))
    return rows, want


def _logits(lw, logits, tokens, n, tr):
    blocks = lw.rows_to_blocks(logits, tokens, tr, "_logits")
    return lw.track(SVal(L.default_layout((tokens, n), tr), blocks))


class _Pack:
    """Expert e's tokens packed into tiles: `tiles` ([1] of [P_e x d], dynamic; [C_e] of
    [tile_n x d], static), `pad` (static: the padding flags [C_e, tile_n]) and `count` (P_e, the
    tokens routed to it, as the graph's symbol)."""

    def __init__(self, tiles, pad, count):
        self.tiles, self.pad, self.count = tiles, pad, count


def _pack(lw, e, routed, routed_w, p):
    """Dynamic tiling (the paper's §5.2): Promote, so Accum retile_row packs ONE tile of exactly
    the P_e routed rows (none for an expert without a token). Static tiling: Reshape into chunks of
    tile_n rows, the last padded (zero rows, flagged), each chunk one [tile_n x d] tile: the
    padding rows are computed as the others are, and dropped when the rows are unpacked."""
    g = lw.g
    count = str(routed.shape[0])
    routed_w.set_dim(0, count)  # the same tokens: one count
    if not p.static:
        tiles = g.Accum(g.Promote(routed, name=lw.name("_e%d_one" % e)), fn="retile_row", rank=1,
                        name=lw.name("_e%d_pack" % e), **lw.bw())
        return _Pack(tiles, None, count)
    chunks, pad = g.Reshape(routed, chunk=p.tile_n, name=lw.name("_e%d_chunk" % e))
    tiles = g.Accum(chunks, fn="retile_row", rank=1, name=lw.name("_e%d_pack" % e), **lw.bw())
    return _Pack(tiles, pad, count)


def _trace_expert(module, d, tr):
    from .trace import trace
    if isinstance(module, RoutedTo):
        tr = 1  # the block's per-token gathers of stacked weights, traced on one row
    return trace(module, (torch.zeros(tr, d),), find_moe=False), tr


def _expert(lw, module, tiles, e, d, tr, prefix=None, traced=None):
    """Expert `module` lowered on the packed `tiles` (traced on an example tile of `tr` rows, or
    `traced` as _trace_expert gave it; the run's tiles have the rows packed, and every load the
    expert makes is driven by them: one pass of its weights per tile, none for an expert without
    a token). Returns its output tiles."""
    traced, tr = traced or _trace_expert(module, d, tr)
    bound = SVal(L.default_layout((tr, d), tr), tiles)
    y = lw.lower_nested(traced, [bound], tiles, prefix or "e%d_" % e)
    return lw.cols_exactly(lw.stream_of(y), 1).stream


def _unpack(lw, e, y, pack, routed_w, n, p):
    """Expert e's output tiles back to rows ([P_e] of [1 x d]; static tiling: the padding rows
    dropped), each times the token's routing weight for e."""
    g = lw.g
    out = g.FlatMap(y, fn="retile_streamify_row", rank=1, name=lw.name("_e%d_unpack" % e))
    if not p.static:
        out.set_dim(1, pack.count)  # one tile of the expert's tokens (said: a shared pipeline's tiles vary)
    out = g.Flatten(out, min=0, max=1, name=lw.name("_e%d_rows" % e))
    if p.static:
        flags = g.Flatten(pack.pad, min=0, max=1, name=lw.name("_e%d_padf" % e))
        out = g.FlatMap(out, flags, fn="filter_padding", rank=0, name=lw.name("_e%d_unpad" % e))
        out.set_dim(0, pack.count)  # the padding gone: the expert's tokens again
    one_hot = torch.zeros(1, n)
    one_hot[0, e] = 1.0
    name = lw.store_tensor(one_hot, _one_tile(1, n), "fp32", "onehot")
    hot = g.Flatten(g.LinearOffChipLoad(tensor=name, tile=[1, n], out_shape=[1], stride=[0], ref=routed_w,
                                        name=lw.name("_e%d_hot" % e)), min=0, max=1, name=lw.name("_e%d_hotf" % e))
    w = lw.map("row_sum", lw.map("mul", routed_w, hot, suffix="_e%d_pick" % e), suffix="_e%d_weight" % e)
    return lw.map("mul", out, w, suffix="_e%d_scaled" % e)


# ---- time-multiplexing: experts sharing one pipeline

class _Read:
    """One load an expert's lowering made: the stored matrix, its dtype and the tiled view."""

    def __init__(self, name, array, dtype, tile, out_shape, stride):
        self.name, self.array, self.dtype = name, array, dtype
        self.tile, self.out_shape, self.stride = tuple(tile), tuple(out_shape), tuple(stride)

    def form(self):
        return (self.array.shape, self.dtype, self.tile, self.out_shape, self.stride)

    def tiles(self):
        """The tiles the view reads, in its order, stacked as rows [tiles x r, c]."""
        import itertools

        r, c = self.tile
        across = self.array.shape[1] // c
        out = []
        for idx in itertools.product(*[range(s) for s in self.out_shape]):
            t = sum(i * s for i, s in zip(idx, self.stride))
            out.append(self.array[(t // across) * r:(t // across + 1) * r, (t % across) * c:(t % across + 1) * c])
        return np.concatenate(out, 0)


class _Swap:
    """Lowering attributes replaced while a block runs (an instance attribute shadows a method),
    and put back after it: the state an expert's lowering writes, so that one can be lowered
    into a scratch graph, or its loads redirected, without touching the enclosing lowering."""

    _GONE = object()

    def __init__(self, lw, **attrs):
        self.lw, self.attrs = lw, attrs

    def __enter__(self):
        self.saved = {k: self.lw.__dict__.get(k, self._GONE) for k in self.attrs}
        self.lw.__dict__.update(self.attrs)
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is self._GONE:
                self.lw.__dict__.pop(k, None)
            else:
                self.lw.__dict__[k] = v
        return False


def _record(lw, module, d, tr, traced):
    """The loads expert `module` makes, in order, from a lowering of it (`traced`) into a scratch
    graph (its weights and constants as its own lowering stores and views them)."""
    from ..core.graph import Graph
    from .lowering import Lowering

    scratch = Graph("scratch")
    rows = tr if not isinstance(module, RoutedTo) else 1
    scratch.tensor("x", (rows, d))
    tiles = scratch.Flatten(scratch.LinearOffChipLoad(tensor="x", tile=[rows, d], out_shape=[1], stride=[0]),
                            min=0, max=1)
    seen = []

    def read(tensor, tile, out_shape, stride, suffix="_load"):
        seen.append((tensor, tile, list(out_shape) or [1], list(stride) or [0]))
        return Lowering.read(lw, tensor, tile, out_shape, stride, suffix)

    with _Swap(lw, g=scratch, stored={}, streamed={}, tensor_names={}, read=read, count=lw.count,
               deepest=lw.deepest, writes=list(lw.writes)):
        _expert(lw, module, tiles, 0, d, tr, prefix="scratch_", traced=traced)
    dtypes = {t["name"]: t["dtype"] for t in scratch.tensors}
    return [_Read(t, np.asarray(scratch._arrays[t], np.float32), dtypes[t], tile, o, s) for t, tile, o, s in seen]


def _region(lw, spec, r, experts, packs, d, tr):
    """Configuration time-multiplexing (the paper's §5.3, graphs/layers/moe.cpp's moe_tm): the
    experts of region r share one pipeline, the lowering of the first of them. EagerMerge forwards
    their packed tiles in arrival order with a selector per tile; every load of the pipeline reads
    the tiles of the expert the tile belongs to (the experts' matrices stacked per load, as the
    load's view reads them: ExpertAddrGen of the selector, RandomOffChipLoad); Partition by the
    same selector gives each expert its output tiles back. Returns the experts' output tiles."""
    g = lw.g
    block = type(spec.module).__name__
    traced = [_trace_expert(spec.experts[e], d, tr) for e in experts]
    reads = [_record(lw, spec.experts[e], d, tr, t) for e, t in zip(experts, traced)]
    for e, rs in zip(experts[1:], reads[1:]):
        if [x.form() for x in rs] != [x.form() for x in reads[0]]:
            raise _stepsim.Error(
                "stepsim.torch: schedule: moe_regions %d shares one pipeline among experts %d..%d of %s, but expert "
                "%d lowers to other loads than expert %d (%d loads %s, not %d %s): its experts must compute alike"
                % (len(packs) // len(experts), experts[0], experts[-1], block, e, experts[0], len(rs),
                   [x.form()[2:] for x in rs][:4], len(reads[0]), [x.form()[2:] for x in reads[0]][:4]))
    x, sel = g.EagerMerge(*[packs[e].tiles for e in experts], rank=0, name=lw.name("_r%d_merge" % r))
    k = [0]

    def store(data, lay, dtype, hint="const"):  # the region's stacked matrices are stored instead
        return "_region%d_pending" % r

    def read(tensor, tile, out_shape, stride, suffix="_load"):
        i = k[0]
        k[0] += 1
        out_shape, stride = list(out_shape), list(stride)
        first = reads[0][i] if i < len(reads[0]) else None
        if first is None or first.tile != tuple(tile) or first.out_shape != tuple(out_shape or [1]):
            raise _stepsim.Error("stepsim.torch: moe_regions: the shared pipeline of %s loads differently from "
                                 "its experts' own lowering (load %d)" % (block, i))
        stacked = np.concatenate([rs[i].tiles() for rs in reads], 0)
        name = lw.fresh_tensor_name("%s_r%d" % (first.name, r))  # w1_weight_r0: expert 0's w1, then 1's..
        g.tensor(name, stacked.shape, dtype=first.dtype, init=np.ascontiguousarray(stacked, np.float32))
        count = int(np.prod(first.out_shape))
        addr = g.ExpertAddrGen(sel, tiles_per_expert=count, name=lw.name(suffix + "_addr"))
        s = g.RandomOffChipLoad(addr, tensor=name, tile=list(tile), name=lw.name(suffix))
        view = list(first.out_shape)
        for j in range(len(view) - 1):  # [N, tiles] -> [N, view..] as the linear view would stream them
            s = g.Reshape(s, chunk=int(np.prod(view[j + 1:])), name=lw.name(suffix + "_view"))[0]
        if not out_shape:
            s = g.Flatten(s, min=0, max=1, name=lw.name(suffix + "_one"))
        return s

    with _Swap(lw, store_tensor=store, read=read, streamed={}):
        y = _expert(lw, spec.experts[experts[0]], x, experts[0], d, tr, prefix="r%d_" % r, traced=traced[0])
    split = g.Partition(y, sel, outputs=len(experts), name=lw.name("_r%d_split" % r))
    outs = []
    for j, e in enumerate(experts):  # each expert gets back as many tiles as it packed
        split[j].set_dim(0, packs[e].tiles._type()["dims"][0][0])  # the graph's own text of the count
        outs.append(split[j])
    return outs
