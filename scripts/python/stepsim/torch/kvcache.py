"""KV caches: writes into a cache buffer, reads that mix old and new positions, concatenations.

A cache buffer is a stored tensor in HBM. A write of streamed keys or values into it (Meta's
`cache_k[:B, p:p+T] = xk` is aten.copy_ on a view; gpt-fast's `k_out[:, :, pos] = k` is
aten.index_put_; index_copy_ likewise) is a LinearOffChipStore of the stream (the write's
traffic), and the lowering remembers which elements it wrote with which stream. A later read of
the buffer gets those elements from the stream (no load of what was just stored; STeP has no
ordering of a load after a store), and the others from HBM: exactly the written region is the
stream itself; a region of old and new positions along one dim (a decode step: the cache of L
positions then the new one; gpt-fast's whole-cache read) is their concatenation along that dim.
torch.cat of a cache with new keys (Hugging Face's DynamicCache) is the same concatenation.

A concatenation along a dim is made whole along it: per element of the other dims, each piece is
one tile holding all its positions (a load of the old ones; the new ones' row blocks joined by
Accum retile_row) and the pieces are joined by Map cat_rows. Attention then multiplies by that
whole matrix as it does in prefill.
"""
import math

import torch

from . import layout as L
from .values import Lin, MVal, SVal


class Write:
    def __init__(self, storage, offsets, value, what):
        self.storage, self.offsets, self.value, self.what = storage, offsets, value, what
        self.stored = False  # its traffic made (here, or by the flash attention that reads the buffer)


def _storage(t):
    return t.storage().data_ptr()


def _offsets(t):
    """The storage offsets of every element of view t (a tensor of t's shape)."""
    base = torch.arange(t.storage().size(), dtype=torch.int64)
    return torch.as_strided(base, t.shape, t.stride(), t.storage_offset())


def record_write(lw, node, dst, src, offsets):
    """A streamed write of `src` (dst's shape) into the buffer under `dst`: stored, remembered."""
    src = lw.stream_of(src)
    if tuple(src.shape) != tuple(offsets.shape):
        if src.layout.bcast or math.prod(src.shape) != offsets.numel():
            lw.fail("a cache write of %s into a region of shape %s" % (list(src.shape), list(offsets.shape)))
        src = _as_shape(lw, src, tuple(offsets.shape))
    w = Write(_storage(dst.data), offsets.clone(), src, dst.what)
    lw.writes.append(w)
    from . import attention
    if not attention.absorbs_writes_to(lw, w.storage):  # else the attention stores it into its KV slots
        store(lw, src)
        w.stored = True
    return MVal(lw.concrete[node], what=dst.what)


def store(lw, src):
    """src written to HBM (the cache's new positions: the write's traffic)."""
    name = lw.fresh_tensor_name("cache_write")
    r, c = src.layout.tile()
    grid = src.layout.grid_sizes()
    lw.g.output_tensor(name, (max(1, math.prod(grid)) * r, c), dtype=src.dtype)
    stride, s = [], 1
    for n in reversed(grid):
        stride.insert(0, s)
        s *= n
    lw.g.LinearOffChipStore(src.stream, tensor=name, tile=[r, c], out_shape=grid or [1], stride=stride or [0],
                            name=lw.name("_store"))


def copy_(lw, node, dst, src, non_blocking=False):
    if not isinstance(dst, MVal):
        lw.fail("aten.copy_ into a streamed value")
    if isinstance(src, MVal) and not src.from_input:
        return MVal(lw.concrete[node], what=dst.what)  # a constant written: the example run did it
    if isinstance(src, (SVal, Lin, MVal)) and tuple(src.shape) != tuple(dst.shape):
        src = lw.stream_of(src)
        src = SVal(src.layout.expanded(tuple(dst.shape)), src.stream) \
            if len(src.shape) == len(dst.shape) else src
    return record_write(lw, node, dst, src, _offsets(dst.data))


def index_put_(lw, node, dst, indices, values, accumulate=False):
    if not isinstance(dst, MVal) or accumulate:
        lw.fail("aten.index_put_ into a streamed value or accumulating")
    if isinstance(values, MVal) and not values.from_input:
        return MVal(lw.concrete[node], what=dst.what)
    idx = [None if i is None else (i.data if isinstance(i, MVal) else None) for i in indices]
    if any(i is None and j is not None for i, j in zip(idx, indices)):
        lw.fail("aten.index_put_ at positions computed from the inputs (data-dependent cache positions)")
    offsets = _offsets(dst.data)[tuple(slice(None) if i is None else i for i in idx)]
    return record_write(lw, node, dst, values, offsets)


def index_copy_(lw, node, dst, dim, index, source):
    if not isinstance(index, MVal):
        lw.fail("aten.index_copy_ at positions computed from the inputs")
    sel = [slice(None)] * dst.data.dim()
    sel[dim] = index.data
    return record_write(lw, node, dst, source, _offsets(dst.data)[tuple(sel)])


def forwarded(lw, v):
    """v, an MVal that may alias a written cache region: the written stream where v is exactly
    the region, a Concat where v mixes old and written positions along one dim, else v. (Every
    operation's operands pass here first: the attention plan is made on the first call.)"""
    from . import attention
    attention.plan(lw)
    if not isinstance(v, MVal) or not lw.writes or v.data.is_complex() or v.data.dim() == 0:
        return v
    storage = _storage(v.data)
    writes = [w for w in lw.writes if w.storage == storage]
    if not writes:
        return v
    spread = [d for d in range(v.data.dim()) if v.data.stride(d) == 0 and v.data.shape[d] > 1]
    if spread:  # an expanded view (repeat_kv): forward the one copy, then expand it again
        one = v.data
        for d in spread:
            one = one.narrow(d, 0, 1)
        r = forwarded(lw, MVal(one, what=v.what))
        if isinstance(r, MVal):
            return v
        return SVal(r.layout.expanded(tuple(v.data.shape)), r.stream)
    offs = _offsets(v.data)
    for w in reversed(writes):
        if _same_elements(w.offsets, offs):  # exactly the written region (size-1 dims aside)
            return _as_shape(lw, w.value, tuple(offs.shape))
    written = torch.zeros(offs.shape, dtype=torch.bool)
    source = torch.full(offs.shape, -1, dtype=torch.int64)
    for k, w in enumerate(writes):
        hit = torch.isin(offs, w.offsets)
        written |= hit
        source[hit] = k
    if not written.any():
        return v
    return _pieces(lw, v, writes, written, source, offs)


def _same_elements(a, b):
    """The same storage elements in the same row-major order."""
    return a.numel() == b.numel() and torch.equal(a.reshape(-1), b.reshape(-1))


def _as_shape(lw, v, shape):
    from .ops import _view_of
    return v if tuple(v.shape) == tuple(shape) else _view_of(lw, lw.stream_of(v), shape)


def _pieces(lw, v, writes, written, source, offs):
    """v as old and written runs along the one dim where they alternate (uniform over the others)."""
    shape = tuple(offs.shape)
    for dim in range(len(shape)):
        other = [d for d in range(len(shape)) if d != dim]
        line = source.permute([dim] + other).reshape(shape[dim], -1)
        if not bool((line == line[:, :1]).all()):
            continue
        runs, start = [], 0
        kinds = line[:, 0].tolist()
        for p in range(1, len(kinds) + 1):
            if p == len(kinds) or kinds[p] != kinds[start]:
                runs.append((start, p, kinds[start]))
                start = p
        parts = []
        for a, b, k in runs:
            sel = [slice(None)] * len(shape)
            sel[dim] = slice(a, b)
            if k < 0:
                parts.append(MVal(v.data[tuple(sel)], what=v.what))
            else:
                w = writes[k]
                region = offs[tuple(sel)]
                if not _same_elements(region, w.offsets):
                    lw.fail("a read of %s that takes part of a region written in this forward" % v.what)
                parts.append(_as_shape(lw, w.value, tuple(region.shape)))
        return concat(lw, parts, dim)
    lw.fail("a read of %s mixing old and newly written positions other than along one dim" % v.what)


def concat(lw, parts, dim):
    """Pieces (MVal or SVal) joined along `dim` (not the last): whole along dim, Map cat_rows."""
    shapes = [tuple(p.shape) for p in parts]
    n = len(shapes[0])
    dim %= n
    streamed = [p for p in parts if not isinstance(p, MVal) or p.from_input]
    if not streamed:
        return MVal(torch.cat([p.data for p in parts], dim))
    if dim == n - 1:
        return _concat_columns(lw, parts, streamed)
    if any(isinstance(p, MVal) and not p.from_input for p in parts):
        for p in streamed:  # a cache grown by concatenation: its new positions are written to HBM
            store(lw, lw.stream_of(p))
    first = whole_along(lw, lw.stream_of(streamed[0]), dim)
    made = []
    for p in parts:
        like = _with_length(first.layout, dim, p.shape[dim])
        if isinstance(p, MVal):
            s, dtype = lw.load(p, like, dtype=first.dtype)
            made.append(SVal(like, s))
        else:
            made.append(lw.same_layout(whole_along(lw, lw.stream_of(p), dim), like))
    out = made[0]
    for p in made[1:]:
        total = out.shape[dim] + p.shape[dim]
        lay = _with_length(first.layout, dim, total)
        out = lw.track(SVal(lay, lw.map("cat_rows", out.stream, p.stream)))
    return out


def _concat_columns(lw, parts, streamed):
    """Pieces joined along the last dim: each with the dim whole in its tiles' columns, in the
    first streamed piece's order, joined tile by tile (Map cat_cols)."""
    n = len(parts[0].shape)
    first = lw.cols_exactly(lw.stream_of(streamed[0]), n - 1)
    made = []
    for p in parts:
        like = _with_cols(first.layout, p.shape[-1])
        if isinstance(p, MVal) and not p.from_input:
            s, dtype = lw.load(p, like, dtype=first.dtype)
            made.append(SVal(like, s))
        else:
            made.append(lw.same_layout(lw.cols_exactly(lw.stream_of(p), n - 1), like))
    out = made[0]
    for p in made[1:]:
        lay = _with_cols(first.layout, out.shape[-1] + p.shape[-1])
        out = lw.track(SVal(lay, lw.map("cat_cols", out.stream, p.stream)))
    return out


def _with_cols(lay, size):
    """lay with its last dim (one column axis) of `size`."""
    n = len(lay.shape)
    axes = lay.axes_of(n - 1)
    shape = list(lay.shape)
    shape[-1] = size
    if len(axes) != 1 or list(lay.cols) != axes:
        raise ValueError("the last dim is not one column axis in %s" % lay)
    sizes = list(lay.sizes)
    sizes[axes[0]] = size
    return L.Layout(shape, sizes, lay.dims, lay.grid, lay.rows, lay.cols, lay.bcast)


def _with_length(lay, dim, size):
    """lay with dim's (single, tile-row) axis of `size` positions."""
    shape = list(lay.shape)
    shape[dim] = size
    axes = lay.axes_of(dim)
    sizes = list(lay.sizes)
    if len(axes) != 1:
        raise ValueError("dim %d is not whole in the tile rows of %s" % (dim, lay))
    sizes[axes[0]] = size
    return L.Layout(shape, sizes, lay.dims, lay.grid, lay.rows, lay.cols, lay.bcast)


def _sorted_axes(lay):
    """lay with its axes listed in logical order again (after an axis was appended)."""
    order = sorted(range(len(lay.sizes)), key=lambda a: (lay.dims[a], a))
    index = {old: new for new, old in enumerate(order)}
    remap = lambda group: [index[a] for a in group]
    return L.Layout(lay.shape, [lay.sizes[a] for a in order], [lay.dims[a] for a in order], remap(lay.grid),
                    remap(lay.rows), remap(lay.cols), remap(lay.bcast))


def whole_along(lw, v, dim):
    """v with all of `dim` in its tiles' rows (one axis), the last dim in the columns: the dim's
    blocks made innermost in the grid and joined (Accum retile_row)."""
    n = len(v.shape)
    v = lw.cols_exactly(v, n - 1)
    if [a for a in v.layout.rows if v.layout.dims[a] != dim]:
        v = lw.rows_to_grid(v)
    lay = v.layout
    axes = lay.axes_of(dim)
    if not axes:  # a dim of size 1: an axis of 1 row in the tiles
        lay = L.Layout(lay.shape, list(lay.sizes) + [1], list(lay.dims) + [dim], lay.grid, [len(lay.sizes)],
                       lay.cols, lay.bcast)
        return SVal(_sorted_axes(lay), v.stream)
    if any(a in lay.bcast for a in axes):
        lw.fail("a concatenation of a value laid out as %s along dim %d" % (lay, dim))
    blocks = [a for a in lay.stream_axes() if a in axes]
    grid = lay.stream_axes()
    if blocks and grid[len(grid) - len(blocks):] != blocks:
        v = lw.reorder_grid(v, [a for a in grid if a not in blocks] + blocks)
        lay = v.layout
    s = v.stream
    if blocks:
        s = lw.g.Accum(s, fn="retile_row", rank=len(blocks), name=lw.name("_whole"), **lw.bw())
    # one axis for the whole dim
    keep = [a for a in range(len(lay.sizes)) if lay.dims[a] != dim]
    first_axis = min(axes)
    sizes, dims, index = [], [], {}
    for a in range(len(lay.sizes)):
        if a in keep:
            index[a] = len(sizes)
            sizes.append(lay.sizes[a])
            dims.append(lay.dims[a])
        elif a == first_axis:
            index[a] = len(sizes)
            sizes.append(lay.shape[dim])
            dims.append(dim)
    grid = [index[a] for a in lay.grid if a in keep]
    out = L.Layout(lay.shape, sizes, dims, grid, [index[first_axis]], [index[a] for a in lay.cols],
                   [index[a] for a in lay.bcast if a in keep])
    return lw.track(SVal(out, s))
