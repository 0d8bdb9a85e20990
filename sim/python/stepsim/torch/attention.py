"""The product of two streamed values, as attention writes it (q @ k^T, p @ v), per batch and head.

For every tile of the left operand (a row block of one batch element and head) the right operand's
whole matrix of that batch element is needed: it is kept in a memory unit (Bufferize, one buffer
per element of the leading batch dims both streams share) and replayed in the left operand's
order (Streamify: stride 0 over the left's row blocks and over broadcast heads, so GQA's repeated
KV heads are read again, never copied), its blocks joined into one tile (Accum retile_row /
retile_col), and multiplied tile by tile (Map matmul; matmul_t when the right operand's tiles hold
its transpose, as k.transpose(-2, -1) does).
"""
import math

from . import layout as L
from .values import MVal, SVal


def batched_matmul(lw, node, a, b):
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
    dtype = "fp32" if "fp32" in (a.dtype, b.dtype) else "bf16"
    return lw.track(SVal(out, y, dtype))


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
    return lw.track(SVal(out, y, "fp32" if "fp32" in (a.dtype, dtype) else "bf16"))


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
    return lw.refine(a, {ax_a[k]: v for k, v in cuts_a.items()}), SVal(lb, b.stream, b.dtype)


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
