"""How a logical tensor is laid out as a stream of tiles.

A logical tensor of shape (d0, .., dn-1) is cut into *axes*: each dim of size > 1 is split into
one or more factors (outer first), listed in the tensor's row-major order. The stream visits
the `grid` axes (outer to inner) and carries tiles whose rows run over the `rows` axes and whose
columns run over the `cols` axes (each group outer to inner). So the stream, as a NumPy array of
shape [grid sizes.., R, C], is

    logical.reshape(axis sizes).transpose(grid + rows + cols).reshape(grid sizes + [R, C])

Size-1 dims have no axis. `bcast` axes (from expand) are in the logical tensor but not in the
stream: the stream holds one copy, which a consumer re-reads (stride 0). Reshapes only refine
or regroup axes (no data moves), permutes relabel them; what a consumer needs (the reduced dim
in the columns, a grid order) it asks for with `wants_*` and converts (lowering.relayout).
"""
import math

import numpy as np


class Layout:
    def __init__(self, shape, sizes, dims, grid, rows, cols, bcast=()):
        self.shape = tuple(int(s) for s in shape)
        self.sizes, self.dims = tuple(sizes), tuple(dims)
        self.grid, self.rows, self.cols = tuple(grid), tuple(rows), tuple(cols)
        self.bcast = frozenset(bcast)

    # ---- what the stream looks like

    def grid_sizes(self):
        """The stream's dims below its outermost one (every stream starts with a dim of 1)."""
        return [self.sizes[a] for a in self.grid if a not in self.bcast]

    def tile(self):
        return [math.prod(self.sizes[a] for a in self.rows), math.prod(self.sizes[a] for a in self.cols)]

    def stream_axes(self):
        return [a for a in self.grid if a not in self.bcast]

    def axes_of(self, dim):
        return [a for a, d in enumerate(self.dims) if d == dim]

    def inner(self, a):
        """The stride of axis a within its dim: the product of the sizes of the dim's axes after it."""
        return math.prod(self.sizes[b] for b in range(a + 1, len(self.sizes)) if self.dims[b] == self.dims[a])

    def describe_axes(self, axes, merge):
        """(dim, size, stride in the dim) per axis; with `merge`, an axis directly inside the one
        before it in the same dim is one axis with it (a tile's rows or columns)."""
        out = []
        for a in axes:
            d, n, st = self.dims[a], self.sizes[a], self.inner(a)
            if merge and out and out[-1][0] == d and out[-1][2] == st * n:
                out[-1] = (d, out[-1][1] * n, st)
            else:
                out.append((d, n, st))
        return tuple(out)

    def signature(self):
        """What the stream is, whatever the axes' bookkeeping: equal signatures, equal streams."""
        return (self.shape, self.describe_axes(self.stream_axes(), False), self.describe_axes(self.rows, True),
                self.describe_axes(self.cols, True), self.describe_axes(sorted(self.bcast), False))

    def key(self):
        return (self.shape, self.sizes, self.dims, self.grid, self.rows, self.cols, self.bcast)

    def __eq__(self, other):
        return isinstance(other, Layout) and self.key() == other.key()

    def __repr__(self):
        name = lambda a: "%s%d:%d" % ("*" if a in self.bcast else "", self.dims[a], self.sizes[a])
        return "grid [%s] tile [%s | %s] of %s" % (", ".join(map(name, self.grid)), ", ".join(map(name, self.rows)),
                                                   ", ".join(map(name, self.cols)), list(self.shape))

    def describe(self):
        return "%s as %s tiles [%d x %d]" % (list(self.shape), self.grid_sizes() or "single", *self.tile())

    # ---- NumPy views (stored tensors and outputs)

    def to_stream(self, logical):
        """The logical array as the stored 2-D matrix the stream reads: [grid.. x R, C] (bcast axes
        taken at index 0)."""
        a = np.asarray(logical).reshape(self.sizes) if self.sizes else np.asarray(logical).reshape(())
        index = tuple(slice(0, 1) if k in self.bcast else slice(None) for k in range(len(self.sizes)))
        a = a[index].transpose(list(self.grid) + list(self.rows) + list(self.cols)) if self.sizes else a
        r, c = self.tile()
        return np.ascontiguousarray(a).reshape(-1, c)

    def from_stream(self, matrix):
        """The inverse of to_stream (no bcast axes): the logical array."""
        order = list(self.grid) + list(self.rows) + list(self.cols)
        a = np.asarray(matrix).reshape([self.sizes[k] for k in order])
        return a.transpose(np.argsort(order)).reshape(self.shape)

    # ---- transformations that move no data

    def refined(self, cuts):
        """The same layout with axes split further: `cuts` {axis: [factor sizes outer first]}."""
        sizes, dims, new_index = [], [], {}
        for a, (s, d) in enumerate(zip(self.sizes, self.dims)):
            parts = cuts.get(a, [s])
            new_index[a] = list(range(len(sizes), len(sizes) + len(parts)))
            sizes += parts
            dims += [d] * len(parts)
        expand = lambda group: [n for a in group for n in new_index[a]]
        bcast = [n for a in self.bcast for n in new_index[a]]
        return Layout(self.shape, sizes, dims, expand(self.grid), expand(self.rows), expand(self.cols), bcast)

    def reshaped(self, shape):
        """(layout, cuts): the layout of the same tensor viewed as `shape` (row-major order kept)
        and the cuts of this layout's axes it needed (a grid axis cut is a stream dim split), or
        (None, None)."""
        shape = tuple(int(s) for s in shape)
        if math.prod(shape) != math.prod(self.shape):
            return None, None
        new_sizes = [s for s in shape if s > 1]
        cuts, _ = _common_cuts(list(self.sizes), new_sizes)
        if cuts is None:
            return None, None
        lay = self.refined(cuts)
        # assign each refined axis to a new dim: consecutive runs whose product is the dim's size
        dims, k, acc = [], 0, 1
        new_dim_index = [d for d, s in enumerate(shape) if s > 1]
        for s in lay.sizes:
            dims.append(new_dim_index[k])
            acc *= s
            if acc == new_sizes[k]:
                k, acc = k + 1, 1
        return Layout(shape, lay.sizes, dims, lay.grid, lay.rows, lay.cols, lay.bcast), cuts

    def permuted(self, perm):
        """The layout of the logical tensor transposed by `perm` (new dim i = old dim perm[i])."""
        perm = [p % len(self.shape) for p in perm]
        new_of_old = {old: new for new, old in enumerate(perm)}
        order = sorted(range(len(self.sizes)), key=lambda a: (new_of_old[self.dims[a]], a))
        index = {old: new for new, old in enumerate(order)}
        remap = lambda group: [index[a] for a in group]
        return Layout([self.shape[p] for p in perm], [self.sizes[a] for a in order],
                      [new_of_old[self.dims[a]] for a in order], remap(self.grid), remap(self.rows),
                      remap(self.cols), remap(self.bcast))

    def expanded(self, shape):
        """The layout of expand(shape): new size > 1 dims where this had 1 become bcast grid axes
        (innermost of the grid, in dim order). Leading new dims are allowed."""
        shape = tuple(int(s) for s in shape)
        lead = len(shape) - len(self.shape)
        lay = self if lead == 0 else self.reshaped((1,) * lead + self.shape)[0]
        sizes, dims = list(lay.sizes), list(lay.dims)
        grid, bcast = list(lay.grid), set(lay.bcast)
        new_axes = []
        for d, (old, new) in enumerate(zip(lay.shape, shape)):
            if old == 1 and new > 1:
                new_axes.append((d, new))
        if not new_axes:
            return Layout(shape, sizes, dims, grid, lay.rows, lay.cols, bcast)
        for d, n in new_axes:
            sizes.append(n)
            dims.append(d)
            grid.append(len(sizes) - 1)
            bcast.add(len(sizes) - 1)
        order = sorted(range(len(sizes)), key=lambda a: (dims[a], a))
        index = {old: new for new, old in enumerate(order)}
        remap = lambda group: [index[a] for a in group]
        return Layout(shape, [sizes[a] for a in order], [dims[a] for a in order], remap(grid), remap(lay.rows),
                      remap(lay.cols), remap(bcast))


def from_spec(shape, spec):
    """A layout from [(dim, size, 'g' | 'r' | 'c')] (grid, tile rows, tile columns; in order),
    size-1 entries dropped."""
    sizes, dims, groups = [], [], {"g": [], "r": [], "c": []}
    for d, s, kind in spec:
        if s > 1:
            groups[kind].append(len(sizes))
            sizes.append(s)
            dims.append(d)
    return Layout(shape, sizes, dims, groups["g"], groups["r"], groups["c"])


def default_layout(shape, tile_rows):
    """Row blocks: every dim but the last two in the grid, the second-to-last cut into blocks of
    `tile_rows` rows (the blocks in the grid, the rows in the tile), the last dim in the tile's
    columns."""
    shape = tuple(int(s) for s in shape)
    n = len(shape)
    if n >= 3 and shape[-1] <= 4:  # a view into lane pairs [.., n, 2]: the vector whole in the columns
        return default_layout(shape[:-2] + (shape[-2] * shape[-1],), tile_rows).reshaped(shape)[0]
    spec = []
    for d, s in enumerate(shape):
        if d == n - 1:
            spec.append((d, s, "c"))
        elif d == n - 2:
            tr = math.gcd(s, tile_rows)
            spec += [(d, s // tr, "g"), (d, tr, "r")]
        else:
            spec.append((d, s, "g"))
    return from_spec(shape, spec)


def _common_cuts(old, new):
    """Cuts of the `old` factor list so that every `new` factor is a run of whole old factors:
    ({old axis: [parts]}, None), or (None, None) when a new factor straddles an old one in a way
    no cut can fix (never for exact divisors)."""
    cuts = {}
    i, j = 0, 0
    rem_old = old[0] if old else 1
    rem_new = new[0] if new else 1
    parts = []
    while i < len(old) and j < len(new):
        if rem_old == rem_new:
            parts.append(rem_old)
            if len(parts) > 1:
                cuts[i] = parts
            parts, i, j = [], i + 1, j + 1
            rem_old = old[i] if i < len(old) else 1
            rem_new = new[j] if j < len(new) else 1
        elif rem_old > rem_new:
            if rem_old % rem_new:
                return None, None
            parts.append(rem_new)
            rem_old //= rem_new
            j += 1
            rem_new = new[j] if j < len(new) else 1
        else:
            if rem_new % rem_old:
                return None, None
            parts.append(rem_old)
            if len(parts) > 1:
                cuts[i] = parts
            parts = []
            rem_new //= rem_old
            i += 1
            rem_old = old[i] if i < len(old) else 1
    return cuts, None
