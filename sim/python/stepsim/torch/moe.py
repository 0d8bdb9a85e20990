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
the experts, each expert lowered on its tokens packed into one tile (every load it makes driven
by that tile: an expert with no token reads nothing), its rows scaled by their weight, Reassemble
and Accum add of each token's k rows, and the rows back into row blocks.
"""
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
    try:
        with torch.no_grad(), rec:
            m(inputs[0].detach())
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
        original = m.forward
        _LIBRARY.impl(name, lambda x, f=original: f(x), "CPU")
        op = getattr(torch.ops.stepsim_moe, name)
        m.forward = lambda x, *a, op=op, **k: op(x)
        undo.append(lambda m=m: m.__dict__.pop("forward", None))
        ops["stepsim_moe." + name] = spec
    return ops, lambda: [u() for u in undo]


# ---- lowering

def lower(lw, node, spec, x):
    x = lw.cols_exactly(lw.stream_of(x), len(x.shape) - 1)
    shape = tuple(x.shape)
    d = shape[-1]
    tokens = 1
    for s in shape[:-1]:
        tokens *= s
    rows, lay = _token_rows(lw, x, tokens, d)
    n = len(spec.experts)
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
    tr = lay.tile()[0]
    outs = [_expert(lw, node, e_, spec.experts[e_], routed[e_], routed_w[e_], d, n, tr) for e_ in range(n)]
    merged = g.Reassemble(*outs, sel, name=lw.name("_merge"))
    y = g.Accum(merged, fn="add", rank=1, name=lw.name("_combine"), **lw.bw())
    blocks = lw.rows_to_blocks(y, tokens, lay.tile()[0])
    lw.deepest = max(lw.deepest, tokens)  # Reassemble holds rows back until their turn
    out = lw.track(SVal(lay, blocks, "bf16"))
    view, cuts = lay.reshaped(shape)
    out = SVal(view, lw.refine(out, cuts).stream, "bf16")
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


def _expert(lw, node, e, module, routed, routed_w, d, n, tr):
    """Expert e on its routed rows (traced on an example tile of `tr` rows; the run's tiles have
    the rows routed to it); returns its output rows times each token's weight."""
    g = lw.g
    routed_w.set_dim(0, str(routed.shape[0]))  # the same tokens: one count
    packed = g.Accum(g.Promote(routed, name=lw.name("_e%d_one" % e)), fn="retile_row", rank=1,
                     name=lw.name("_e%d_pack" % e), **lw.bw())
    from .trace import trace
    if isinstance(module, RoutedTo):
        tr = 1  # the block's per-token gathers of stacked weights, traced on one row
    traced = trace(module, (torch.zeros(tr, d),), find_moe=False)
    bound = SVal(L.default_layout((tr, d), tr), packed, "bf16")
    y = lw.lower_nested(traced, [bound], packed, "e%d_" % e)
    y = lw.cols_exactly(lw.stream_of(y), 1)
    out = g.FlatMap(y.stream, fn="retile_streamify_row", rank=1, name=lw.name("_e%d_unpack" % e))
    out = g.Flatten(out, min=0, max=1, name=lw.name("_e%d_rows" % e))
    one_hot = torch.zeros(1, n)
    one_hot[0, e] = 1.0
    name = lw.store_tensor(one_hot, _one_tile(1, n), "fp32", "onehot")
    hot = g.Flatten(g.LinearOffChipLoad(tensor=name, tile=[1, n], out_shape=[1], stride=[0], ref=routed_w,
                                        name=lw.name("_e%d_hot" % e)), min=0, max=1, name=lw.name("_e%d_hotf" % e))
    w = lw.map("row_sum", lw.map("mul", routed_w, hot, suffix="_e%d_pick" % e), suffix="_e%d_weight" % e)
    return lw.map("mul", out, w, suffix="_e%d_scaled" % e)
