"""Rotary position embeddings, in the three forms models write them, lowered to one rotation.

However a model writes RoPE, each output element is a linear combination of the head vector's
elements with position-dependent tables: y = A * x + B * R(x), where R is a fixed lane
permutation with a sign, a tile function of the hardware (rotate_pairs: (x0, x1) -> (-x1, x0)
per pair of lanes; rotate_half: [x_lo | x_hi] -> [-x_hi | x_lo]). The lowering keeps a RoPE in
progress symbolically and emits the rotation once it is whole:

  Lanes   a part of a streamed head vector x [.., hd]: c0 * x_0 + c1 * x_1, where x_0, x_1 are the
          even and odd lanes ("pairs": x.reshape(.., -1, 2)[..., j], or view_as_complex's real and
          imaginary parts) or the low and high halves ("halves": x[..., :hd/2], x[..., hd/2:]);
          c0, c1 are constant tables. A complex Lanes holds a real and an imaginary part.
  Full    the whole vector again (stack / cat of parts, view_as_real): A * x + B * R(x).

Element-wise ops by constants (cos, sin, complex freqs_cis) and sums of parts of the same x stay
symbolic; anything else makes the rotation (Map rotate_*, two Map mul with the tables read as
constants, Map add) and goes on with the stream.
"""
import torch

from .values import MVal, SVal


class Lanes:
    def __init__(self, src, kind, re, im=None):
        self.src, self.kind, self.re, self.im = src, kind, re, im  # re, im: (c0, c1) tables

    @property
    def shape(self):
        n = self.src.shape[-1] // 2
        return tuple(self.src.shape[:-1]) + (n,)

    def scaled(self, c):
        f = lambda p: None if p is None else (p[0] * c, p[1] * c)
        return Lanes(self.src, self.kind, f(self.re), f(self.im))


class Full:
    """A * x + B * R(x) (tables [.., hd]), viewed as `shape`, in the model's `dtype` there."""

    def __init__(self, src, kind, a, b, shape, dtype):
        self.src, self.kind, self.a, self.b = src, kind, a, b
        self.shape, self.dtype = tuple(shape), dtype


def _same_src(a, b):
    """The same streamed vector (each view of it is a new SVal over the same stream)."""
    return a is b or (a.stream.ref == b.stream.ref and a.layout == b.layout)


def is_rope(v):
    return isinstance(v, (Lanes, Full))


def _table(v):
    if isinstance(v, MVal):
        return v.data.detach()
    if isinstance(v, (int, float)):
        return torch.tensor(float(v))
    return None


# ---- entering: parts of a streamed head vector

def select(lw, node, x, dim, index):
    """x[..., j] of x viewed [.., n, 2]: the even or odd lanes of the vector it was viewed from."""
    if isinstance(x, MVal) and not x.from_input:
        return MVal(lw.concrete[node], x.from_input, x.what)
    x = lw.stream_of(x) if isinstance(x, MVal) else x
    if isinstance(x, SVal) and dim % len(x.shape) == len(x.shape) - 1 and x.shape[-1] == 2:
        src = _unpaired(lw, x)
        one, zero = torch.ones(()), torch.zeros(())
        return Lanes(src, "pairs", (one, zero) if index % 2 == 0 else (zero, one))
    if isinstance(x, Full) and x.shape[-1] == 2 and dim % len(x.shape) == len(x.shape) - 1:
        return select(lw, node, materialize(lw, x), dim, index)
    lw.fail("aten.select of a streamed value along dim %d (only a pair's lane: x.reshape(..., -1, 2)[..., j])" % dim)


def lane_slice(lw, node, x, dim, start, end, step):
    """x[..., :hd/2] or x[..., hd/2:]: the low or high half of the vector (rotate-half RoPE)."""
    if isinstance(x, Full):
        x = materialize(lw, x)
    x = lw.stream_of(x) if isinstance(x, MVal) else x
    if isinstance(x, SVal) and dim == len(x.shape) - 1 and step == 1 and x.shape[-1] % 2 == 0:
        h = x.shape[-1] // 2
        if (start, end) in ((0, h), (h, 2 * h)):
            src = lw.cols_exactly(x, dim)
            one, zero = torch.ones(()), torch.zeros(())
            return Lanes(src, "halves", (one, zero) if start == 0 else (zero, one))
    lw.fail("aten.slice of a streamed value along dim %d [%d:%d:%d] (supported: the halves of the last dim, "
            "as rotate-half RoPE takes them)" % (dim, start, end, step))


def view_as_complex(lw, node, x):
    if isinstance(x, MVal) and not x.from_input:
        return MVal(lw.concrete[node], x.from_input, x.what)
    x = lw.stream_of(x) if isinstance(x, MVal) else x
    if isinstance(x, Full):
        x = materialize(lw, x)
    if not isinstance(x, SVal) or x.shape[-1] != 2:
        lw.fail("aten.view_as_complex of %r" % (x,))
    one, zero = torch.ones(()), torch.zeros(())
    return Lanes(_unpaired(lw, x), "pairs", (one, zero), (zero, one))


def view_as_real(lw, node, z):
    if isinstance(z, MVal):
        return MVal(lw.concrete[node], z.from_input, z.what)
    if not isinstance(z, Lanes) or z.im is None:
        lw.fail("aten.view_as_real of a value that is not a complex rotation of a streamed vector")
    return _whole(z.src, "pairs", z.re, z.im, tuple(z.shape) + (2,), lw.concrete[node].dtype)


def _unpaired(lw, x):
    """The streamed vector [.., 2n] that x [.., n, 2] views, its lanes whole in the tile."""
    lay, cuts = x.layout.reshaped(tuple(x.shape[:-2]) + (x.shape[-2] * 2,))
    if lay is None:
        lw.fail("a view into lane pairs of %s" % x.layout)
    v = SVal(lay, lw.refine(x, cuts).stream)
    return lw.cols_exactly(v, len(lay.shape) - 1)


# ---- leaving: the whole vector

def _whole(src, kind, first, second, shape, dtype):
    """Full from the parts: `first` on x_0's lanes (even / low), `second` on x_1's (odd / high).
    At an even (low) lane y = u0 x0 + u1 x1 = A x + B R(x) with R(x) = -x1 there: A = u0, B = -u1;
    at an odd (high) lane y = w0 x0 + w1 x1 with R(x) = x0 there: A = w1, B = w0."""
    (u0, u1), (w0, w1) = first, second
    n = src.shape[-1] // 2
    a = _interleave(kind, u0, w1, n)
    b = _interleave(kind, -u1, w0, n)
    return Full(src, kind, a, b, shape, dtype)


def _interleave(kind, even, odd, n):
    """Per-lane tables [.., 2n] from the tables of the two parts ([.., n] or broadcastable)."""
    even, odd = torch.broadcast_tensors(torch.as_tensor(even).float(), torch.as_tensor(odd).float())
    if even.dim() == 0:
        even, odd = even.reshape(1), odd.reshape(1)
    if even.shape[-1] == 1:
        even, odd = even.expand(*even.shape[:-1], n), odd.expand(*odd.shape[:-1], n)
    if kind == "pairs":
        return torch.stack([even, odd], -1).flatten(-2)
    return torch.cat([even, odd], -1)


def stack(lw, node, parts, dim=0):
    if len(parts) == 2 and all(isinstance(p, Lanes) and p.kind == "pairs" and p.im is None for p in parts) \
            and _same_src(parts[0].src, parts[1].src) and dim % (len(parts[0].shape) + 1) == len(parts[0].shape):
        return _whole(parts[0].src, "pairs", parts[0].re, parts[1].re, tuple(parts[0].shape) + (2,),
                      lw.concrete[node].dtype)
    if all(isinstance(p, MVal) for p in parts):
        return MVal(lw.concrete[node])
    lw.fail("aten.stack of streamed values (supported: the two lanes of a pair, as interleaved RoPE writes it)")


def cat(lw, node, parts, dim=0):
    if len(parts) == 2 and all(isinstance(p, Lanes) and p.kind == "halves" and p.im is None for p in parts) \
            and _same_src(parts[0].src, parts[1].src) and dim % len(parts[0].shape) == len(parts[0].shape) - 1:
        return _whole(parts[0].src, "halves", parts[0].re, parts[1].re, parts[0].src.shape, lw.concrete[node].dtype)
    if all(isinstance(p, MVal) for p in parts):
        return MVal(lw.concrete[node])
    lw.fail("aten.cat of streamed values (supported: the halves of a vector, as rotate-half RoPE writes it)")


# ---- arithmetic on parts

def elementwise(lw, fn, operands):
    """An element-wise op with a RoPE operand: kept symbolic when it can be, else made."""
    a = operands[0]
    b = operands[1] if len(operands) > 1 else None
    if fn == "neg" and is_rope(a):
        return _scale(a, torch.tensor(-1.0))
    if fn in ("mul", "div") and b is not None:
        if is_rope(a) and _table(b) is not None:
            return _mul(lw, a, _table(b) if fn == "mul" else 1.0 / _table(b))
        if fn == "mul" and is_rope(b) and _table(a) is not None:
            return _mul(lw, b, _table(a))
    if fn in ("add", "sub") and is_rope(a) and is_rope(b) and type(a) is type(b) and _same_src(a.src, b.src) \
            and a.kind == b.kind:
        sign = 1.0 if fn == "add" else -1.0
        if isinstance(a, Lanes) and (a.im is None) == (b.im is None):
            comb = lambda p, q: None if p is None else (p[0] + sign * q[0], p[1] + sign * q[1])
            return Lanes(a.src, a.kind, comb(a.re, b.re), comb(a.im, b.im))
        if isinstance(a, Full):
            return Full(a.src, a.kind, a.a + sign * b.a, a.b + sign * b.b, a.shape, a.dtype)
    return None  # not symbolic: the caller makes the rotations and goes on


def _scale(v, c):
    if isinstance(v, Lanes):
        return v.scaled(c)
    return Full(v.src, v.kind, v.a * c, v.b * c, v.shape, v.dtype)


def _mul(lw, v, c):
    if isinstance(v, Full):
        c = c.float()
        if tuple(v.shape) != tuple(v.src.shape):  # the tables are per lane of the [.., hd] vector
            c = torch.broadcast_to(c, v.shape).reshape(v.src.shape)
        return Full(v.src, v.kind, v.a * c, v.b * c, v.shape, v.dtype)
    if c.is_complex():
        if v.im is None:
            lw.fail("a complex product of a real part of a vector")
        cr, ci = c.real.float(), c.imag.float()
        (a0, a1), (b0, b1) = v.re, v.im
        return Lanes(v.src, v.kind, (a0 * cr - b0 * ci, a1 * cr - b1 * ci), (a0 * ci + b0 * cr, a1 * ci + b1 * cr))
    return v.scaled(c.float() if c.dtype in (torch.bfloat16, torch.float16) else c)


def view(lw, node, v, shape):
    """A view of a Full between [.., n, 2] and [.., 2n] (the tables are kept per element)."""
    if isinstance(v, Full):
        import math

        if math.prod(shape) == math.prod(v.shape) and tuple(shape[:-1]) == tuple(v.src.shape[:-1]) \
                and shape[-1] == v.src.shape[-1]:
            return Full(v.src, v.kind, v.a, v.b, shape, v.dtype)
        if tuple(shape[-2:]) == (v.src.shape[-1] // 2, 2) and tuple(shape[:-2]) == tuple(v.src.shape[:-1]):
            return Full(v.src, v.kind, v.a, v.b, shape, v.dtype)
        return materialize(lw, v)
    lw.fail("a view of a part of a vector being rotated (RoPE) as %s" % (list(shape),))


def materialize(lw, v):
    """The rotation as operators: A * x + B * R(x), the zero terms left out (made once per value:
    two readers of one rotation read one stream)."""
    made = getattr(v, "made", None)
    if made is not None and made.stream.graph is lw.g:
        return made
    v.made = _materialize(lw, v)
    return v.made


def _materialize(lw, v):
    if isinstance(v, Lanes):
        lw.fail("a part of a vector (%s lanes) used outside a rotation: join the parts with stack or cat first"
                % v.kind)
    x = v.src
    full = tuple(x.shape)
    dtype = "fp32" if v.dtype in (torch.float32, torch.float64) else "bf16"
    terms = []
    for table, stream in ((v.a, x.stream), (v.b, None)):
        t = _broadcastable(table, full)
        if t is None or not torch.any(t != 0):
            continue
        if stream is None:
            stream = lw.map("rotate_pairs" if v.kind == "pairs" else "rotate_half", x.stream)
        if torch.all(t == 1):
            terms.append(stream)
            continue
        s, _ = lw.load(MVal(t.contiguous()), x.layout, dtype=dtype)
        terms.append(lw.map("mul", stream, s))
    if not terms:
        lw.fail("a rotation whose tables are all zero")
    y = terms[0]
    for t in terms[1:]:
        y = lw.map("add", y, t)
    if dtype == "bf16" and x.dtype == "fp32":
        y = lw.map("cast_bf16", y)
    out = lw.track(SVal(x.layout, y))
    if tuple(v.shape) != full:
        lay, cuts = out.layout.reshaped(v.shape)
        out = SVal(lay, lw.refine(out, cuts).stream)
    return out


def _broadcastable(table, full):
    """The table as a tensor broadcastable to `full` ([.., hd]): tables built on [.., n] parts
    come out [.., hd] from _interleave; leading dims are aligned."""
    t = torch.as_tensor(table).float()
    if t.dim() == 0:
        return t.reshape([1] * len(full))
    if t.dim() > len(full):
        t = t.reshape(t.shape[t.dim() - len(full):]) if all(s == 1 for s in t.shape[:t.dim() - len(full)]) else t
    return t.reshape([1] * (len(full) - t.dim()) + list(t.shape))
