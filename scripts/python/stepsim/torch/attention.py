"""The product of two streamed values, as attention writes it (q @ k^T, p @ v), per batch and head.

For every tile of the left operand (a row block of one batch element and head) the right operand's
whole matrix of that batch element is needed: it is kept in a memory unit (Bufferize, one buffer
per element of the leading batch dims both streams share) and replayed in the left operand's
order (Streamify: stride 0 over the left's row blocks and over broadcast heads, so GQA's repeated
KV heads are read again, never copied), its blocks joined into one tile (Accum retile_row /
retile_col), and multiplied tile by tile (Map matmul; matmul_t when the right operand's tiles hold
its transpose, as k.transpose(-2, -1) does). This is schedule attention 'whole' (the default).

Schedule attention 'flash' (below) lowers a whole attention (q @ k^T, its scale and mask, the
softmax, @ v) at once instead: per request, only the key positions its mask lets it attend are
read, from HBM, in tiles of kv_tile tokens, with FlashAttention's online softmax, parallelized
over regions as graphs/layers/attention.cpp does (attention_parallel, attention_regions).
"""
import math

import numpy as np
import torch
import torch.fx as fx

from . import layout as L
from . import rope
from .lowering import Unsupported
from .trace import op_name, where
from .values import Lin, LinView, MVal, SVal


def batched_matmul(lw, node, a, b):
    if isinstance(node.target, Fused):
        return flash(lw, node, node.target, a)
    if node._erased:  # q @ k^T whose lowering made the plan that fused it into a flash attention
        return None
    if lw.schedule.get("attention", "whole") == "flash":
        reason = plan(lw).refused.get(node)
        _refuse(lw, "a product of streamed values that is not an attention the lowering streams by KV tiles%s; "
                "attention 'whole' lowers it" % (" (%s)" % reason if reason else ""))
    a = lw.cols_exactly(lw.stream_of(a), len(a.shape) - 1)
    if isinstance(b, MVal):
        return _by_stored(lw, a, b)
    b = lw.stream_of(b)
    n = len(a.shape)
    if len(b.shape) != n or n not in (2, 3):
        lw.fail("a product of streamed values of shapes %s and %s" % (list(a.shape), list(b.shape)))
    kdim, ndim = n - 2, n - 1  # b's dims: [.., K, N]
    if a.layout.bcast or any(a.layout.dims[x] != n - 2 for x in a.layout.rows):
        lw.fail("a product whose left operand is laid out as %s" % a.layout)
    if n == 3:
        a, b = _match_batch(lw, a, b)
    bl = b.layout
    row_dims = {bl.dims[x] for x in bl.rows}
    col_dims = {bl.dims[x] for x in bl.cols}
    if len(row_dims) > 1 or len(col_dims) > 1 or (row_dims and row_dims == col_dims) or \
            (row_dims | col_dims) - {kdim, ndim}:
        lw.fail("a product whose right operand's tiles mix dims: %s" % bl)
    transposed = ndim in row_dims or kdim in col_dims  # tiles hold [N x K]
    tile_row_dim = ndim if transposed else kdim
    tile_col_dim = kdim if transposed else ndim
    row_blocks = [x for x in bl.grid if bl.dims[x] == tile_row_dim]
    col_blocks = [x for x in bl.grid if bl.dims[x] == tile_col_dim]
    if any(x in bl.bcast for x in row_blocks + col_blocks):
        lw.fail("a product whose right operand is broadcast along its matrix dims: %s" % bl)
    whole = _replay_whole(lw, a, b, row_blocks, col_blocks)
    y = lw.map("matmul_t" if transposed else "matmul", a.stream, whole)
    # the output: a's axes with K's replaced by N's, N's (from b) in the tile's columns
    al = a.layout
    keep = [x for x in range(len(al.sizes)) if al.dims[x] != n - 1]
    n_axes = [x for x in range(len(bl.sizes)) if bl.dims[x] == ndim]
    sizes = [al.sizes[x] for x in keep] + [bl.sizes[x] for x in n_axes]
    dims = [al.dims[x] for x in keep] + [n - 1] * len(n_axes)
    cols = list(range(len(keep), len(keep) + len(n_axes)))
    shape = tuple(a.shape[:-1]) + (b.shape[-1],)
    out = L.Layout(shape, sizes, dims, [keep.index(x) for x in al.grid], [keep.index(x) for x in al.rows], cols)
    return lw.track(SVal(out, y))


def _by_stored(lw, a, b):
    """a times b stored in HBM (an input or a constant): b's whole matrix of each batch element
    read for every tile of a, in a's order (a view of stride 0 over a's row blocks)."""
    al = a.layout
    n = len(a.shape)
    data = b.data
    if data.dim() != n or (n == 3 and data.shape[0] != a.shape[0]):
        lw.fail("a product of %s by a stored %s" % (list(a.shape), list(data.shape)))
    # b seen as [batch, a's row blocks (broadcast), K, N]: its load follows a's grid exactly
    blocks = [x for x in al.grid if al.dims[x] == n - 2]
    spec_b = data.unsqueeze(n - 2)  # a dim of 1 where a has its row blocks
    shape = tuple(data.shape[:-2]) + (math.prod(al.sizes[x] for x in blocks) if blocks else 1,) + \
        tuple(data.shape[-2:])
    sizes, dims, grid = [], [], []
    index = {}
    for x in range(len(al.sizes)):
        if al.dims[x] == n - 1 or x in al.rows:
            continue
        index[x] = len(sizes)
        sizes.append(al.sizes[x])
        dims.append(al.dims[x])  # batch dims keep their index; the row blocks are dim n - 2
    k, m = data.shape[-2], data.shape[-1]
    rows, cols = [len(sizes)], [len(sizes) + 1]
    sizes += [k, m]
    dims += [n - 1, n]
    grid = [index[x] for x in al.grid]
    like = L.Layout(shape, sizes, dims, grid, [r for r, s in zip(rows, [k]) if s > 1],
                    [c for c, s in zip(cols, [m]) if s > 1])
    like = _drop_ones(like)
    s, dtype = lw.load(MVal(spec_b, what=b.what), like)
    y = lw.map("matmul", a.stream, s)
    keep = [x for x in range(len(al.sizes)) if al.dims[x] != n - 1]
    out = L.Layout(tuple(a.shape[:-1]) + (m,), [al.sizes[x] for x in keep] + ([m] if m > 1 else []),
                   [al.dims[x] for x in keep] + ([n - 1] if m > 1 else []), [keep.index(x) for x in al.grid],
                   [keep.index(x) for x in al.rows], [len(keep)] if m > 1 else [])
    return lw.track(SVal(out, y))


def _drop_ones(lay):
    keep = [a for a in range(len(lay.sizes)) if lay.sizes[a] > 1]
    return L.Layout(lay.shape, [lay.sizes[a] for a in keep], [lay.dims[a] for a in keep],
                    [keep.index(a) for a in lay.grid if a in keep], [keep.index(a) for a in lay.rows if a in keep],
                    [keep.index(a) for a in lay.cols if a in keep])


def _match_batch(lw, a, b):
    """a and b with their batch dim (0) cut into the same axes (GQA: q's heads [Hkv, n_rep]
    against k's [Hkv, broadcast n_rep])."""
    sa = [a.layout.sizes[x] for x in a.layout.axes_of(0)]
    sb = [b.layout.sizes[x] for x in b.layout.axes_of(0)]
    if sa == sb:
        return a, b
    cuts_a, _ = L._common_cuts(sa, sb)
    cuts_b, _ = L._common_cuts(sb, sa)
    if cuts_a is None or cuts_b is None:
        lw.fail("a batched product with batch dims cut differently: %s and %s" % (a.layout, b.layout))
    ax_a, ax_b = a.layout.axes_of(0), b.layout.axes_of(0)
    # a's stream dims split for real (the output keeps them); b's cuts only address its buffer
    lb = b.layout.refined({ax_b[k]: v for k, v in cuts_b.items()})
    return lw.refine(a, {ax_a[k]: v for k, v in cuts_a.items()}), SVal(lb, b.stream)


def _replay_whole(lw, a, b, row_blocks, col_blocks):
    """b's whole matrix per tile of a, in a's stream order."""
    al, bl = a.layout, b.layout
    a_grid, b_grid = al.stream_axes(), bl.stream_axes()
    batch_a = al.axes_of(0) if len(al.shape) == 3 else []
    batch_b = bl.axes_of(0) if len(bl.shape) == 3 else []
    pair = dict(zip(batch_a, batch_b))  # a's batch axis -> b's (same sizes, after _match_batch)
    # leading dims both streams carry in the same order: one buffer per element of them
    prefix = 0
    while prefix < min(len(a_grid), len(b_grid)) and pair.get(a_grid[prefix]) == b_grid[prefix]:
        prefix += 1
    buffered = b_grid[prefix:]
    stride, s = {}, 1
    for x in reversed(buffered):
        stride[x] = s
        s *= bl.sizes[x]
    out_shape, strides = [], []
    for x in a_grid[prefix:]:
        out_shape.append(al.sizes[x])
        bx = pair.get(x)
        strides.append(stride.get(bx, 0) if bx is not None and bx not in bl.bcast else 0)
    # blocks in the order they are joined: the tile-row blocks outer, the tile-column blocks inner
    block_order = [x for x in buffered if x in row_blocks] + [x for x in buffered if x in col_blocks]
    for x in block_order:
        out_shape.append(bl.sizes[x])
        strides.append(stride[x])
    if not buffered:  # b is one tile per element of the shared dims: repeated over a's other dims
        s = b.stream
        for x in a_grid[prefix:]:
            s = lw.g.Repeat(s, count=al.sizes[x], name=lw.name("_again"))
        return s
    buf = lw.g.Bufferize(b.stream, rank=len(buffered), name=lw.name("_keep"))
    s = lw.g.Streamify(buf, out_shape=out_shape, stride=strides, name=lw.name("_replay"))
    cols_n = len([x for x in block_order if x in col_blocks])
    rows_n = len(block_order) - cols_n
    if cols_n:
        s = lw.g.Accum(s, fn="retile_col", rank=cols_n, name=lw.name("_whole_cols"), **lw.bw())
    if rows_n:
        s = lw.g.Accum(s, fn="retile_row", rank=rows_n, name=lw.name("_whole"), **lw.bw())
    if not a_grid:
        lw.fail("a product whose left operand is a single tile")
    lw.deepest = max(lw.deepest, math.prod(bl.grid_sizes() or [1]))
    return s


# ---- FlashAttention over KV tiles from HBM (schedule attention "flash") -------------------------
#
# The plan (made once per traced graph, before the first value is read) finds every attention:
# q @ k^T (aten.bmm), element-wise ops on the scores (a scale, a mask, casts, views), one softmax
# over the keys, casts and views, @ v (aten.bmm). It replaces them, and the data movement that
# made k and v (views, repeat_kv's expand and clone, slices of a cache buffer, torch.cat of a
# cache with new keys), by one node that the bmm rule lowers here: keys and values are never made
# whole. Per item (a KV head of a batch element with every query head that reads it stacked into
# one query tile, and a row block of the queries) the key positions its queries attend are packed
# into the item's slot of a KV tensor in HBM and streamed in tiles of kv_tile tokens
# (KvCacheAddrGen, RandomOffChipLoad), as the paper's decode attention and graphs/layers/
# attention.cpp do: S = Q K^T (Map matmul_t_f32, the scale folded into Q), the positions past the
# item's length in its last tile masked (Map mask_cols), FlashAttention's online softmax with V
# (Accum flash_attn_update), over the regions of attention_parallel.
#
# Where each key and value row comes from is found by running the absorbed data movement on
# tensors of element ids: a position of a cache buffer is an old row (a constant: the KV tensor's
# initial contents) or a row this forward wrote (kvcache.Write), a row of a new key stream (Hugging
# Face's torch.cat) likewise: new rows are stored into their slots (RandomOffChipStore), and the
# Sources of the load addresses wait for those stores. Which positions a query attends is read off
# the mask: the score chain is evaluated on the example values and must be a * s + m with one
# scale a; a position is not attended where m is -inf or at most -1e30 (a bool mask's False,
# Hugging Face's finfo.min). A request's KV length is the number of positions its queries attend:
# only those are read. Positions attended by some queries of an item and not by others, and masks
# adding values other than 0 (a bias), are applied per tile: Map add of a mask tile packed the same
# way and read with the KV tiles.

_SCORE_VIEWS = {"aten.view", "aten._unsafe_view", "aten._reshape_alias", "aten.reshape", "aten.unsqueeze",
                "aten.squeeze", "aten.clone", "aten.contiguous", "aten.alias", "aten.detach", "aten._to_copy",
                "aten.expand", "aten.dropout", "aten.lift_fresh"}
_SCORE_OPS = {"aten.add", "aten.sub", "aten.mul", "aten.div", "aten.where", "aten.masked_fill"}
_SOFTMAX = {"aten._softmax", "aten.softmax"}
_MOVES = {"aten.view", "aten._unsafe_view", "aten._reshape_alias", "aten.reshape", "aten.unsqueeze",
          "aten.squeeze", "aten.slice", "aten.select", "aten.permute", "aten.transpose", "aten.t", "aten.expand",
          "aten.alias", "aten.detach", "aten.clone", "aten.contiguous", "aten._to_copy", "aten.cat",
          "aten.index_select", "aten.index", "aten.repeat", "aten.flatten", "aten.unflatten", "aten.lift_fresh"}
NOT_ATTENDED = -1e30   # an additive mask at or below this (or -inf) hides the position
DEFAULT_KV_TILE = 32   # tokens per KV tile (graphs/layers/attention.cpp's tile_n)
DEFAULT_REGIONS = 4    # attention_regions by default (the C++ layer's), at most the requests


class Plan:
    """The attentions of one traced graph fused for schedule attention 'flash', why the other
    products of streamed values were not, and the cache buffers the fused ones read."""

    def __init__(self):
        self.fused, self.refused, self.buffers = [], {}, []


class _Packet:
    __name__ = "bmm"


class Fused:
    """The fx target of a fused attention. op_name() reads it as aten.bmm (it replaces the
    attention's last bmm, and ops.matmul lowers it through batched_matmul); called on example
    values it computes what the absorbed nodes did, so the lowering's example run goes on."""

    overloadpacket = _Packet
    __name__ = "flash_attention"

    def __init__(self, lw, saved, q, b1, b2, softmax, chain, keys, values, sides):
        self.lw, self.saved = lw, saved  # saved: [(node, target, args, kwargs)] in graph order
        self.q, self.b1, self.b2, self.softmax, self.chain = q, b1, b2, softmax, chain
        (k_path, self.k_leaves), (v_path, self.v_leaves) = keys, values  # the data movement, its inputs
        self.k_path, self.v_path, self.sides = set(k_path), set(v_path), sides
        self.args_of = {n: list(a) + list(kw.values()) for n, _, a, kw in saved}
        self.k_op, self.v_op = self.args_of[b1][1], self.args_of[b2][1]

    def __str__(self):
        return "aten.bmm.flash_attention"

    def saved_args(self, n):
        """n's operands as traced (positional, then keyword values)."""
        return self.args_of[n]

    def __call__(self, q, q_again, *sides):
        return self.replay({self.q: q})[self.b2]

    def replay(self, env, only=None, wide=False):
        """Runs the absorbed nodes (those in `only`) on env {node: value} and the example values of
        the nodes they read; wide: float64 throughout (casts keep it: element ids, exact masks)."""
        env = dict(env)
        look = lambda n: env[n] if n in env else self.lw.concrete[n]
        for node, target, args, kwargs in self.saved:
            if only is not None and node not in only:
                continue
            a, kw = fx.node.map_arg((args, kwargs), look)
            if wide and str(target).startswith("aten._to_copy"):
                kw = dict(kw, dtype=torch.float64)
            env[node] = target(*a, **kw)
        return env


def plan(lw):
    """The plan of the graph being lowered (made on the first call)."""
    traced = lw.traced
    if getattr(traced, "flash_plan", None) is not None:
        return traced.flash_plan
    p = traced.flash_plan = Plan()
    if lw.schedule.get("attention", "whole") != "flash":
        return p
    graph = traced.gm.graph
    nodes = list(graph.nodes)
    order = {n: k for k, n in enumerate(nodes)}
    now = order.get(lw.node, -1)
    for b1 in [n for n in nodes if n.op == "call_function" and op_name(n) == "aten.bmm"]:
        if b1._erased:  # the second product of an attention fused already
            continue
        found = _match(b1, order, now)
        if isinstance(found, str):
            p.refused[b1] = found
        else:
            _fuse(lw, p, graph, order, *found)
    if not p.fused and not lw.prefix and lw.ref is None:
        why = "; ".join("%s%s: %s" % (op_name(n), where(n), r) for n, r in p.refused.items())
        raise Unsupported("stepsim.torch: schedule: attention 'flash' streams an attention's keys and values in "
                          "tiles, but the module has no attention the lowering recognises (q @ k^T, a scale, a mask, "
                          "one softmax over the keys, @ v)%s" % (" (%s)" % why if why else ""))
    return p


def _match(b1, order, now):
    """The attention that starts at bmm b1 as (b1, chain, softmax, b2, k path, k leaves, v path,
    v leaves, sides), or why there is none."""
    chain, softmax, n = [], None, b1
    while True:
        users = list(n.users)
        if len(users) != 1:
            return ("its result is used %d times (an attention's scores feed one softmax)" if softmax is None else
                    "its attention weights are used %d times") % len(users)
        u = users[0]
        key = op_name(u) if u.op == "call_function" else u.op
        if key == "aten.bmm" and u.args[0] is n and softmax is not None:
            break
        if key in _SCORE_VIEWS and u.args[0] is n:
            pass
        elif key in _SCORE_OPS and softmax is None and sum(a is n for a in u.args) == 1:
            pass
        elif key in _SOFTMAX and softmax is None:
            softmax = u
        else:
            return "%s on its result%s" % (key, " after the softmax" if softmax is not None else
                                            " (not a scale, a mask, a cast or a softmax over the keys)")
        chain.append(u)
        n = u
    b2 = u
    if order[b1] < now or any(order[c] <= now for c in chain + [b2]):
        return "it is read before the lowering starts"
    sides = []
    for c in chain:
        for a in list(c.args) + list(c.kwargs.values()):
            if isinstance(a, fx.Node) and a is not n and a not in chain and a is not b1 and a not in sides:
                sides.append(a)
    k_path, k_leaves = _path(b1.args[1], b1, order, now)
    v_path, v_leaves = _path(b2.args[1], b2, order, now)
    return b1, chain, softmax, b2, k_path, k_leaves, v_path, v_leaves, sides


def _path(start, consumer, order, now):
    """The data movement (views, copies, slices, cat, gathers at constant indices) that makes a
    product's operand and that nothing else reads, and the nodes it starts from."""
    path, leaves = [], []

    def visit(n, user):
        if n.op == "call_function" and op_name(n) in _MOVES and list(n.users) == [user] and order[n] > now:
            path.append(n)
            for a in (n.args[0] if op_name(n) == "aten.cat" else [n.args[0]]):
                if isinstance(a, fx.Node):
                    visit(a, n)
        elif n not in leaves:
            leaves.append(n)

    visit(start, consumer)
    return path, leaves


def _fuse(lw, p, graph, order, b1, chain, softmax, b2, k_path, k_leaves, v_path, v_leaves, sides):
    absorbed = sorted(set([b1, b2] + chain + k_path + v_path), key=order.get)
    saved = [(n, n.target, n.args, dict(n.kwargs)) for n in absorbed]
    q = b1.args[0]
    target = Fused(lw, saved, q, b1, b2, softmax, chain, (k_path, k_leaves), (v_path, v_leaves), sides)
    with graph.inserting_before(b2):
        f = graph.call_function(target, args=(q, q) + tuple(sides))
    f.meta = dict(b2.meta)
    f.stack_trace = getattr(b2, "stack_trace", None)
    b2.replace_all_uses_with(f)
    for n in reversed(absorbed):
        graph.erase_node(n)
    p.buffers += [leaf for leaf in k_leaves + v_leaves if leaf.op in ("placeholder", "get_attr")]
    p.fused.append(target)


def absorbs_writes_to(lw, storage):
    """Whether a fused attention reads the cache buffer of `storage` (it stores the writes)."""
    p = plan(lw)
    return any(isinstance(lw.concrete.get(b), torch.Tensor) and lw.concrete[b].storage().data_ptr() == storage
               for b in p.buffers)


# ---- lowering a fused attention

def _refuse(lw, what, node=None):
    """A stepsim.Error naming the operation (the mask's, the softmax's, or the attention's last
    product) and the user's line."""
    node = node or lw.node
    lw.fail("%s (schedule attention 'flash'): %s" % (op_name(node), what), node=node)


class _Sources:
    """Where the rows of a key or value operand come from: each source (the storage of a constant
    tensor, or a stream: a write's value or a streamed leaf) numbers its elements from a base that
    is a multiple of the row width, so a row's id is its first element's id // width."""

    def __init__(self, width):
        self.width, self.next, self.list, self.by_key = width, 0, [], {}

    def add(self, kind, key, obj, numel, shape=None, data=None):
        if key in self.by_key:
            return self.by_key[key]
        src = dict(kind=kind, obj=obj, shape=shape, data=data, base=self.next, rows=-(-numel // self.width))
        self.next += src["rows"] * self.width
        self.list.append(src)
        self.by_key[key] = src
        return src

    def owner(self, row):
        """(source, its row) of global row id `row`."""
        for s in self.list:
            if s["base"] // self.width <= row < s["base"] // self.width + s["rows"]:
                return s, row - s["base"] // self.width
        raise KeyError(row)


def _ids_of(lw, leaf, sources):
    """Element ids of leaf's example value, laid out in memory exactly as it is (its strides and
    offset), so the absorbed views and reshapes of it move the ids as they moved the data. A
    stored value's ids are its storage offsets (a row is width consecutive elements of the
    storage), where this forward wrote the storage the written stream's; a streamed value's are
    its logical order (a row: width consecutive elements of its last dim)."""
    from . import kvcache

    c, v = lw.concrete.get(leaf), lw.values.get(leaf)
    if not isinstance(c, torch.Tensor) or c.is_complex() or not c.is_floating_point() or c.dim() == 0:
        _refuse(lw, "keys or values made from %s (%s), not a floating tensor" % (leaf.name, type(c).__name__))
    shape = tuple(c.shape)
    if isinstance(v, MVal):
        size = c.storage().size()
        flat = torch.empty(0, dtype=c.dtype).set_(c.storage()).detach().float()
        data = torch.zeros(-(-size // sources.width) * sources.width)
        data[:size] = flat
        src = sources.add("const", ("storage", kvcache._storage(c)), c, size, data=data.reshape(-1, sources.width))
        offs = kvcache._offsets(c)
        ids = (offs + src["base"]).double()
        for w in [w for w in lw.writes if w.storage == kvcache._storage(c)]:
            hit = torch.isin(offs, w.offsets)
            if not bool(hit.any()):
                continue
            width = w.offsets.shape[-1] if w.offsets.dim() else 1
            if width % sources.width:
                return None
            ws = sources.add("stream", id(w), w.value, w.offsets.numel(), shape=tuple(w.offsets.shape))
            ws["write"] = w
            sorted_offs, order = torch.sort(w.offsets.reshape(-1))
            j = order[torch.searchsorted(sorted_offs, offs[hit])]
            ids[hit] = (ws["base"] + j).double()
    else:
        if shape[-1] % sources.width:
            return None
        src = sources.add("stream", ("value", id(v)), v, c.numel(), shape=shape)
        ids = torch.arange(c.numel(), dtype=torch.float64).reshape(shape) + src["base"]
    store = torch.full((max(c.storage().size(), 1),), -1.0, dtype=torch.float64)
    out = torch.as_strided(store, shape, c.stride(), c.storage_offset())
    out.copy_(ids)
    return out


def _rows(ids, width):
    """Global row ids [.., positions] of an id tensor [.., positions, width], or None where its
    rows are not whole rows of one source."""
    first = ids[..., 0]
    whole = (first >= 0) & (torch.remainder(first, width) == 0) & \
        (ids == first[..., None] + torch.arange(width, dtype=torch.float64)).all(-1)
    return (first // width).long() if bool(whole.all()) else None


def flash(lw, node, f, q):
    """The fused attention `f` (node) with queries q: see the section's comment."""
    sched = lw.schedule
    tn = sched.get("kv_tile") or DEFAULT_KV_TILE
    parallel = sched.get("attention_parallel") or "none"
    q = lw.cols_exactly(lw.stream_of(q), len(q.shape) - 1)
    if len(q.shape) != 3 or q.layout.bcast:
        _refuse(lw, "an attention whose queries are laid out as %s" % q.layout)
    BH, T, hd = q.shape
    for s in f.sides:
        v = lw.values.get(s)
        if isinstance(v, (SVal, Lin, LinView)) or rope.is_rope(v):
            _refuse(lw, "its mask or bias (%s) is computed from the inputs, but which keys a query attends must be "
                    "known when lowering: a constant mask, or one built from lengths given as integers"
                    % (op_name(s) if s.op == "call_function" else s.name), node=_chain_user(f, s))
    # where every key and value row comes from
    example = f.replay({})
    hdv = example[f.v_op].shape[-1]
    ksrc, vsrc = _Sources(hd), _Sources(hdv)
    kleaf = {leaf: _ids_of(lw, leaf, ksrc) for leaf in f.k_leaves}
    vleaf = {leaf: _ids_of(lw, leaf, vsrc) for leaf in f.v_leaves}
    if any(x is None for x in list(kleaf.values()) + list(vleaf.values())):
        _refuse(lw, "an attention whose keys or values are not whole rows of the tensors they are read from")
    kids = f.replay(kleaf, f.k_path, wide=True)[f.k_op]
    vids = f.replay(vleaf, f.v_path, wide=True)[f.v_op]
    if tuple(kids.shape) != (BH, hd, kids.shape[-1]) or tuple(vids.shape[:2]) != (BH, kids.shape[-1]):
        _refuse(lw, "an attention of queries %s, keys %s, values %s"
                % (list(q.shape), list(kids.shape), list(vids.shape)))
    S = kids.shape[-1]
    krow, vrow = _rows(kids.transpose(1, 2), hd), _rows(vids, hdv)
    if krow is None or vrow is None:
        _refuse(lw, "an attention whose keys or values are not whole rows of the tensors they are read from")
    # which positions each query attends, and the scale
    attended, scale, bias, batch = _mask(lw, f, example, (BH, T, S))
    # items: the query heads reading the same keys and values stacked, row blocks of the queries
    keys = [krow[h].numpy().tobytes() + vrow[h].numpy().tobytes() for h in range(BH)]
    r = _stacked(keys, BH, BH // batch if batch else BH)
    q, tq, axes = _query_tiles(lw, q, r)
    G, nqb, R = BH // r, T // tq, r * tq
    n_items = G * nqb
    nreq = batch if batch and G % batch == 0 else G
    ipr = n_items // nreq
    # slots: one per distinct key and value rows; each holds the positions its queries attend
    slot_of, slots = [], {}
    for g in range(G):
        slot_of.append(slots.setdefault(keys[g * r], len(slots)))
    heads_of = [[] for _ in slots]
    for g in range(G):
        heads_of[slot_of[g]] += list(range(g * r, (g + 1) * r))
    packed = [torch.nonzero(attended[hs].any(1).any(0)).reshape(-1) for hs in heads_of]
    place = []
    for pos in packed:
        m = torch.full((S,), -1, dtype=torch.int64)
        m[pos] = torch.arange(len(pos))
        place.append(m)
    lengths, need_mask = [], False
    for g in range(G):
        hs = slice(g * r, (g + 1) * r)
        for qb in range(nqb):
            rows = attended[hs, qb * tq:(qb + 1) * tq].reshape(R, S)
            seen = rows.any(0)
            if not bool(seen.any()):
                _refuse(lw, "an attention in which a query attends no key (its softmax is 0 / 0)", node=_mask_node(f))
            n = int(place[slot_of[g]][seen].max()) + 1
            lengths.append(n)
            cols = packed[slot_of[g]][:n]
            b = bias[hs, qb * tq:(qb + 1) * tq].reshape(R, S)[:, cols]
            if not bool(rows[:, cols].all()) or bool((b.amax(1) != b.amin(1)).any()):
                need_mask = True  # a hole in an item's positions, or a bias: masked per tile
    max_tiles = max(-(-len(pos) // tn) for pos in packed)
    slot_rows = max_tiles * tn
    kname, k_acks = _kv_tensor(lw, "k", ksrc, krow, heads_of, packed, slot_rows, hd, tn)
    vname, v_acks = _kv_tensor(lw, "v", vsrc, vrow, heads_of, packed, slot_rows, hdv, tn)
    mname = _mask_tensor(lw, attended, bias, packed, slot_of, lengths, r, tq, nqb, max_tiles, tn) \
        if need_mask else None
    from . import kvcache
    for w in lw.writes:  # a write into a buffer read here, at positions no query attends: still written
        if not w.stored and absorbs_writes_to(lw, w.storage):
            kvcache.store(lw, w.value)
            w.stored = True
    # the queries, scaled: one tile [R x hd] per item, as [1, requests, items per request, 1]
    if scale != 1.0:
        c, _ = lw.load(torch.tensor(scale), q.layout, dtype="fp32")
        x = lw.map("cast_f32", q.stream) if q.dtype != "fp32" else q.stream
        q = SVal(q.layout, lw.map("mul", x, c))
    qs = q.stream
    if r > 1:
        qs = lw.g.Accum(qs, fn="retile_row", rank=len(axes["rep"]), name=lw.name("_stack"), **lw.bw())
    qs = _as_requests(lw, qs, len(axes["items"]), nreq, ipr)
    qs = lw.g.Promote(qs, rank=0, name=lw.name("_q"))
    text = lambda vals: " S1 ".join(" ".join(str(x) for x in vals[k * ipr:(k + 1) * ipr])
                                    for k in range(nreq)) + " S2 D"
    item_slots = [slot_of[i // nqb] for i in range(n_items)]
    idx = _gated(lw, text(item_slots), k_acks + v_acks, item_slots, nreq, ipr)
    kvl = _source(lw, "_kv_len", text(lengths), [])
    midx = _source(lw, "_mask_item", text(list(range(n_items))), []) if mname else None
    spec = dict(k=kname, v=vname, mask=mname, tn=tn, max_tiles=max_tiles, hd=hd, hdv=hdv, R=R)
    out = _parallel(lw, parallel, nreq, ipr, qs, idx, kvl, midx, spec)
    out = _from_requests(lw, out, n_items, [q.layout.sizes[a] for a in axes["items"]])
    if r > 1:  # the stacked heads apart again: [.., r] of [tq x hdv]
        out = lw.g.FlatMap(out, fn="retile_streamify_row", rank=1, name=lw.name("_heads"))
        if tq > 1:
            out = _split(lw, out, [r, tq])
            out = lw.g.Accum(out, fn="retile_row", rank=1, name=lw.name("_rows"), **lw.bw())
        out = _split(lw, out, [q.layout.sizes[a] for a in axes["rep"]])
    if lw.concrete[node].dtype in (torch.float32, torch.float64):
        out = lw.map("cast_f32", out)
    lw.deepest = max(lw.deepest, n_items + 1, max(-(-n // tn) for n in lengths) + 1)
    return lw.track(SVal(_output_layout(q.layout, axes, hdv), out))


def _mask_node(f):
    """The op that masks the scores (for errors naming the user's line), else the softmax."""
    return next((c for c in f.chain if op_name(c) in _SCORE_OPS and any(a in f.sides for a in f.saved_args(c))),
                f.softmax)


def _chain_user(f, side):
    return next((c for c in f.chain if side in f.saved_args(c)), f.softmax)


def _mask(lw, f, example, shape):
    """(attended [BH, T, S] bool, the scale, the additive mask [BH, T, S], the batch or None):
    the ops from the scores to the softmax, evaluated in float64 at scores 0, 1 and 2, must be
    a * s + m."""
    BH, T, S = shape
    sm = f.softmax
    dim = (f.saved_args(sm)[1] if len(f.saved_args(sm)) > 1 else -1)
    if dim not in (-1, len(example[sm].shape) - 1):
        _refuse(lw, "an attention whose softmax is over dim %s, not the keys" % dim, node=sm)
    pre = f.chain[:f.chain.index(sm)]
    for c in f.chain:
        if example[c].numel() != BH * T * S:
            _refuse(lw, "an attention whose scores are broadcast by %s" % op_name(c), node=c)
    into = f.saved_args(sm)[0]
    scores = example[f.b1]
    batch, at = None, []
    for val in (0.0, 1.0, 2.0):
        env = f.replay({f.b1: torch.full(tuple(scores.shape), val, dtype=torch.float64)}, set(pre), wide=True)
        at.append((env[into] if into in env else env[f.b1]).double().reshape(BH, T, S))
        for c in pre:
            v = env[c]
            if v.dim() == 4 and v.shape[0] * v.shape[1] == BH and tuple(v.shape[2:]) == (T, S):
                batch = int(v.shape[0])
    g0, g1, g2 = at
    attended = g0 > NOT_ATTENDED
    if not bool(attended.any()):
        _refuse(lw, "the mask hides every key from the queries", node=_mask_node(f))
    d1, d2 = (g1 - g0)[attended], (g2 - g0)[attended]
    a = float(d1[0])
    slack = 1e-9 * g0[attended].abs() + 1e-300  # float64 rounding of a * s + m
    close = lambda x, y: bool(((x - y).abs() <= 1e-6 * abs(y) + slack).all())
    if not (close(d1, a) and close(d2, 2 * a)):
        _refuse(lw, "an attention whose scores are not scaled by one number and masked: the ops between q @ k^T "
                "and the softmax (%s) are not a * scores + mask" % ", ".join(op_name(c) for c in pre),
                node=_mask_node(f))
    return attended, a, torch.where(attended, g0, torch.zeros_like(g0)), batch


def _stacked(keys, BH, H):
    """How many consecutive query heads read the same keys and values (stacked into one tile):
    the first run's length if every group of that many is alike and it divides the heads, else 1."""
    r = 1
    while r < BH and keys[r] == keys[0]:
        r += 1
    if H % r or BH % r or any(keys[g * r + j] != keys[g * r] for g in range(BH // r) for j in range(r)):
        return 1
    return r


def _query_tiles(lw, q, r):
    """q [BH, T, hd] with its heads cut into [BH / r, r], streamed as [items.., r] where an item is
    a group of r heads and a row block of the queries (the tile's rows): (q, rows per tile, the
    grid axes of the items and of the r heads)."""
    lay = q.layout
    d1 = lay.axes_of(1)
    if any(lay.dims[a] != 1 for a in lay.rows) or list(lay.rows) != d1[len(d1) - len(lay.rows):]:
        q = lw.rows_to_grid(q)
        lay = q.layout
    BH = q.shape[0]
    G = BH // r
    d0 = lay.axes_of(0)
    want = [x for x in (G, r) if x > 1]
    cuts, _ = L._common_cuts([lay.sizes[a] for a in d0], want)
    if cuts is None or any(a in lay.rows for a in d0):
        _refuse(lw, "an attention whose query heads are laid out as %s" % lay)
    q = lw.refine(q, {d0[k]: v for k, v in cuts.items()})
    lay = q.layout
    items, rep, acc = [], [], 1
    for a in lay.axes_of(0):
        if acc < G:
            items.append(a)
            acc *= lay.sizes[a]
        else:
            rep.append(a)
    items += [a for a in lay.stream_axes() if lay.dims[a] == 1]
    q = lw.reorder_grid(q, items + rep)
    tq = math.prod(q.layout.sizes[a] for a in q.layout.rows)
    return q, tq, {"items": items, "rep": rep}


def _gated(lw, text, acks, item_slots, nreq, ipr):
    """The items' slot indices [1, requests, items per request], each released once the new rows of
    its slot are stored: per item (Expand on the stores' acknowledgements) where each store writes
    one row per item in the items' order (a decode step), else once every store is done."""
    if all(len(rows) == len(item_slots) and rows == item_slots for _, rows in acks) and \
            len(set(item_slots)) == len(item_slots):
        idx = lw.g.Promote(_source(lw, "_kv_slot", text, []), rank=0, name=lw.name("_kv_slot_one"))
        for ack, _ in acks:
            ack = lw.g.Reshape(ack, chunk=ipr, rank=0, name=lw.name("_acks"))[0]
            ack = lw.g.Promote(ack, rank=0, name=lw.name("_acks_one"))
            idx = lw.g.Expand(idx, ref=ack, rank=1, name=lw.name("_after_store"))
        return lw.g.Flatten(idx, min=0, max=1, name=lw.name("_kv_slots"))
    return _source(lw, "_kv_slot", text, [ack for ack, _ in acks])


def _source(lw, suffix, text, after):
    name = lw.name(suffix)
    lw.g.literal_stream(name, text)
    return lw.g.Source(*after, stream=name, name=name)[0]


def _selectors(values, close):
    return " ".join("{%d}" % v for v in values) + close


def _split(lw, s, sizes):
    """The innermost dim of s split into `sizes` (outer first)."""
    for k in range(len(sizes) - 1):
        s = lw.g.Reshape(s, chunk=math.prod(sizes[k + 1:]), rank=0, name=lw.name("_split"))[0]
        if not s.shape[s.rank - 2].is_number:
            s.set_dim(s.rank - 2, sizes[k])
    return s


def _as_requests(lw, s, ndims, nreq, ipr):
    """A stream [1, items..] (ndims grid dims) as [1, requests, items per request]."""
    if ndims > 1:
        s = lw.g.Flatten(s, min=0, max=ndims - 1, name=lw.name("_items"))
    elif ndims == 0:
        s = lw.g.Promote(s, rank=0, name=lw.name("_items"))
    return lw.g.Reshape(s, chunk=ipr, rank=0, name=lw.name("_requests"))[0]


def _from_requests(lw, s, n_items, item_sizes):
    """[1, requests, items per request] back to [1, items..] (the items' grid sizes)."""
    s = lw.g.Flatten(s, min=0, max=1, name=lw.name("_items"))
    if not s.shape[1].is_number:
        s.set_dim(1, n_items)
    if not item_sizes:
        return lw.g.Flatten(s, min=0, max=1, name=lw.name("_one"))
    return _split(lw, s, item_sizes)


def _output_layout(q_lay, axes, hdv):
    """The output [BH, T, hdv] as the stream gives it: the items' axes, then the stacked heads, in the
    grid; the queries' rows in the tile's rows; hdv in the columns."""
    keep = [a for a in range(len(q_lay.sizes)) if q_lay.dims[a] != 2]
    sizes = [q_lay.sizes[a] for a in keep] + ([hdv] if hdv > 1 else [])
    dims = [q_lay.dims[a] for a in keep] + ([2] if hdv > 1 else [])
    shape = (q_lay.shape[0], q_lay.shape[1], hdv)
    return L.Layout(shape, sizes, dims, [keep.index(a) for a in axes["items"] + axes["rep"]],
                    [keep.index(a) for a in q_lay.rows], [len(keep)] if hdv > 1 else [])


def _rows_of(lw, v, shape, width):
    """A streamed source (shape; its last dim a multiple of width) as [1, rows] of [1 x width]
    tiles, and the source row ([-1, width] view) of each tile, in stream order."""
    n = len(shape)
    if isinstance(v, Lin) and shape[-1] % width == 0 and tuple(v.shape) == tuple(shape):
        sv = lw.build_linear(v, col_tile=width)
    elif rope.is_rope(v):
        sv = rope.materialize(lw, v)
    else:
        sv = lw.stream_of(v)
    if tuple(sv.shape) != tuple(shape):
        from .ops import _view_of
        sv = _view_of(lw, sv, tuple(shape))
    if sv.layout.bcast:
        _refuse(lw, "an attention whose new keys or values are an expanded value %s" % sv.layout)
    lay = sv.layout
    last = lay.axes_of(n - 1)
    ready = len(lay.cols) == 1 and lay.cols[0] == last[-1] and lay.sizes[last[-1]] == width and \
        all(a in lay.grid for a in last[:-1])
    if not ready:
        sv = lw.cols_exactly(sv, n - 1)
        if shape[-1] != width:
            sv = _split_cols(lw, sv, width)
    sv = lw.rows_to_grid(sv)
    lay = sv.layout
    ids = (torch.arange(math.prod(shape), dtype=torch.float64) // width).reshape(shape).numpy()
    order = lay.to_stream(ids)[:, 0].astype(np.int64)
    k = len(lay.grid_sizes())
    s = sv.stream
    if k > 1:
        s = lw.g.Flatten(s, min=0, max=k - 1, name=lw.name("_rows"))
    elif k == 0:
        s = lw.g.Promote(s, rank=0, name=lw.name("_rows"))
    return s, sv.dtype, order


def _split_cols(lw, v, width):
    """v with its last dim (whole in the tile's columns) cut into tiles of `width` columns, the
    cut innermost in the grid (FlatMap retile_streamify_col, Reshape, Accum retile_col)."""
    lay = v.layout
    n = len(lay.shape)
    axes = lay.axes_of(n - 1)
    cuts, _ = L._common_cuts([lay.sizes[a] for a in axes], [lay.shape[-1] // width, width])
    lay = lay.refined({axes[k]: c for k, c in (cuts or {}).items()})
    axes = lay.axes_of(n - 1)
    outer, acc = [], 1
    for a in axes:
        if acc < lay.shape[-1] // width:
            outer.append(a)
            acc *= lay.sizes[a]
    if cuts is None or len(outer) != 1:
        _refuse(lw, "an attention whose keys or values are columns of a wider value laid out as %s" % v.layout)
    s = lw.g.FlatMap(v.stream, fn="retile_streamify_col", rank=1, name=lw.name("_cols"))
    s = lw.g.Reshape(s, chunk=width, rank=0, name=lw.name("_colsplit"))[0]
    s = lw.g.Accum(s, fn="retile_col", rank=1, name=lw.name("_colblocks"), **lw.bw())
    out = L.Layout(lay.shape, lay.sizes, lay.dims, list(lay.grid) + outer, lay.rows,
                   [a for a in lay.cols if a not in outer], lay.bcast)
    return lw.track(SVal(out, s))


def _kv_tensor(lw, which, src, rows, heads_of, packed, slot_rows, width, tn):
    """The packed key or value tensor of the slots (old rows in its contents) and the stores of
    the new rows into it: (tensor name, the stores' acknowledgements)."""
    from .lowering import bf16_array
    from .values import tile_dtype

    streams = []
    for s in src.list:
        if s["kind"] == "stream":
            stream, dtype, order = _rows_of(lw, s["obj"], s["shape"], width)
            streams.append((s, stream, dtype, order))
    consts = [s for s in src.list if s["kind"] == "const"]
    dtype = streams[0][2] if streams else tile_dtype(consts[0]["obj"].dtype)
    n_slots = len(packed)
    init = np.zeros((n_slots * slot_rows, width), np.float32)
    addr = {id(s): np.full(s["rows"], -1, np.int64) for s, *_ in streams}
    for σ, pos in enumerate(packed):
        h = heads_of[σ][0]
        for p, position in enumerate(pos.tolist()):
            s, local = src.owner(int(rows[h, position]))
            at = σ * slot_rows + p
            if s["kind"] == "const":
                init[at] = s["data"][local].numpy()
            else:
                a = addr[id(s)]
                if a[local] not in (-1, at):
                    _refuse(lw, "an attention that reads one new key or value row at two cache positions")
                a[local] = at
    total = n_slots * slot_rows
    for s, *_ in streams:
        a = addr[id(s)]
        free = a < 0  # rows written but attended by no query: stored past the slots
        a[free] = total + np.arange(int(free.sum()))
        total += int(free.sum())
    total = -(-total // tn) * tn
    full = np.zeros((total, width), np.float32)
    full[:init.shape[0]] = init
    name = lw.fresh_tensor_name("%s_cache" % which)
    lw.g.tensor(name, (total, width), dtype=dtype, init=bf16_array(full) if dtype == "bf16" else full)
    acks = []
    for s, stream, sdtype, order in streams:
        if sdtype != dtype:
            stream = lw.map("cast_bf16" if dtype == "bf16" else "cast_f32", stream)
        if s.get("write") is not None:
            s["write"].stored = True  # the cache write's traffic: this store
        rows = addr[id(s)][order]
        waddr = _source(lw, "_%s_waddr" % which, " ".join(str(x) for x in rows) + " S1 D", [])
        ack = lw.g.RandomOffChipStore(waddr, stream, tensor=name, tile=[1, width], name=lw.name("_%s_store" % which))
        acks.append((ack, [int(x) // slot_rows if x < n_slots * slot_rows else -1 for x in rows]))
    return name, acks


def _mask_tensor(lw, attended, bias, packed, slot_of, lengths, r, tq, nqb, max_tiles, tn):
    """Per item and KV tile, the mask tile [R x tn] to add to its scores: the bias where the row
    attends the position, -inf where it does not or past the item's length."""
    from .lowering import bf16_array

    S = attended.shape[-1]
    R = r * tq
    n_items = len(lengths)
    data = np.full((n_items * max_tiles * R, tn), -np.inf, np.float32)
    for i, n in enumerate(lengths):
        g, qb = divmod(i, nqb)
        hs, ts = slice(g * r, (g + 1) * r), slice(qb * tq, (qb + 1) * tq)
        cols = packed[slot_of[g]][:n]
        a = attended[hs, ts].reshape(R, S)[:, cols]
        b = bias[hs, ts].reshape(R, S)[:, cols]
        m = np.full((R, max_tiles * tn), -np.inf, np.float32)
        m[:, :n] = torch.where(a, b, torch.full_like(b, -math.inf)).numpy()
        for j in range(max_tiles):
            data[(i * max_tiles + j) * R:(i * max_tiles + j + 1) * R] = m[:, j * tn:(j + 1) * tn]
    exact = bool(np.array_equal(bf16_array(np.nan_to_num(data, neginf=0)), np.nan_to_num(data, neginf=0)))
    dtype = "bf16" if exact else "fp32"
    name = lw.fresh_tensor_name("attention_mask")
    lw.g.tensor(name, data.shape, dtype=dtype, init=data)
    return name


def _regions(lw, parallel, nreq):
    given = lw.schedule.get("attention_regions")
    regions = given or min(DEFAULT_REGIONS, nreq)
    if regions > nreq:
        _refuse(lw, "attention_regions %d for an attention over %d request(s): at most one region per request"
                % (regions, nreq))
    return regions


def _parallel(lw, parallel, nreq, ipr, q, idx, kvl, midx, spec):
    """The items over the regions of attention_parallel; the outputs [1, requests, items per
    request] of [R x hdv], in request order (Reassemble by the region of each request)."""
    if parallel == "none":
        return _region(lw, q, idx, kvl, midx, spec, "")
    R = _regions(lw, parallel, nreq)
    if parallel == "dynamic":
        dispatch = lw.name("_dispatch")
        sel = lw.g.forward(dispatch, "out", "[1, %d] of selector" % nreq)
    else:
        per = -(-nreq // R)
        region = [i % R for i in range(nreq)] if parallel == "interleaved" else [i // per for i in range(nreq)]
        R = max(region) + 1
        sel = _source(lw, "_assign", _selectors(region, " S1 D"), [])
    qs = lw.g.Partition(q, sel, rank=2, outputs=R, name=lw.name("_q_route"))
    ids = lw.g.Partition(idx, sel, rank=1, outputs=R, name=lw.name("_slot_route"))
    lens = lw.g.Partition(kvl, sel, rank=1, outputs=R, name=lw.name("_len_route"))
    masks = lw.g.Partition(midx, sel, rank=1, outputs=R, name=lw.name("_mask_route")) if midx is not None else None
    outs = []
    for r in range(R):
        for s in [ids[r], lens[r]] + ([masks[r]] if masks else []):
            s.set_dim(0, qs[r].shape[0])  # routed by the same selectors: as many requests as the queries
        outs.append(_region(lw, qs[r], ids[r], lens[r], masks[r] if masks else None, spec, "_r%d" % r))
    if parallel == "dynamic":
        _close_dynamic(lw, outs, nreq, R, dispatch)
    out = lw.g.Reassemble(*outs, sel, rank=1, name=lw.name("_in_order"))
    out.set_dim(2, nreq)  # one region per request
    out = lw.g.Flatten(out, min=1, max=2, name=lw.name("_requests"))
    # the requests' dim is ragged to the shape checker (a Reassemble of one input per selector): an
    # Expand of rank 0 on a static stream of the same shape (a literal) types it static again
    shape = _source(lw, "_requests_shape", " S1 ".join(" ".join(["0"] * ipr) for _ in range(nreq)) + " S2 D", [])
    return lw.g.Expand(out, ref=shape, rank=0, name=lw.name("_requests_static"))


def _region(lw, q, idx, kvl, midx, spec, tag):
    """One region: the KV tiles of its items, S = Q K^T, the mask, the online softmax with V."""
    tn, mt = spec["tn"], spec["max_tiles"]
    addr, last, valid = lw.g.KvCacheAddrGen(idx, kvl, tile_rows=tn, max_tiles=mt, name=lw.name(tag + "_addr"))
    k = lw.g.RandomOffChipLoad(addr, tensor=spec["k"], tile=[tn, spec["hd"]], name=lw.name(tag + "_k"))
    v = lw.g.RandomOffChipLoad(addr, tensor=spec["v"], tile=[tn, spec["hdv"]], name=lw.name(tag + "_v"))
    qe = lw.g.Expand(q, ref=k, rank=1, name=lw.name(tag + "_qe"))
    s = lw.map("matmul_t_f32", qe, k, suffix=tag + "_qk")
    if midx is not None:
        maddr, mlast, mvalid = lw.g.KvCacheAddrGen(midx, kvl, tile_rows=tn, max_tiles=mt,
                                                   name=lw.name(tag + "_mask_addr"))
        maddr.set_dim(maddr.rank - 1, addr.shape[-1])  # the same lengths: as many tiles
        m = lw.g.RandomOffChipLoad(maddr, tensor=spec["mask"], tile=[spec["R"], tn], name=lw.name(tag + "_m"))
        s = lw.map("add", s, m, suffix=tag + "_masked")
    s = lw.map("mask_cols", s, valid, suffix=tag + "_len")
    return lw.g.Accum(s, v, fn="flash_attn_update", rank=1, name=lw.name(tag + "_attn"), **lw.bw())


def _close_dynamic(lw, outs, nreq, R, dispatch):
    """Dynamic: the first R requests round-robin, then each to the region that just finished one
    (the regions' completions, merged in arrival order, are the dispatch: a cyclic graph)."""
    _, who = lw.g.EagerMerge(*outs, rank=1, name=lw.name("_completed"))  # (the merged outputs: unused)
    who.set_dim(0, nreq)
    # the last R completions start nothing: routed nowhere (an empty selector)
    keep = _source(lw, "_keep_first", " ".join(["{0}"] * (nreq - R) + ["{}"] * R) + " D", [])
    kept = lw.g.Partition(who, keep, rank=0, outputs=1, name=lw.name("_next"))
    first = _source(lw, "_first", _selectors(range(R), " D"), [])
    order = _source(lw, "_order", _selectors([0] * R + [1] * (nreq - R), " S1 D"), [])
    sel = lw.g.Reassemble(first, kept[0], order, rank=0, name=lw.name("_dispatch_merge"))
    lw.g.Flatten(sel, min=0, max=1, name=dispatch)
