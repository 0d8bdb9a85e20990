"""One tiny module per construct of the LLM blocks, so that each can be lowered and tested alone.
CONSTRUCTS maps a name to a factory(batch=1, seed=0) -> (module in eval mode, inputs tuple); the
module's docstring names the construct. Sizes: d 64, 4 heads of 16 (2 KV heads), seq 16."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from ._factory import randn, seeded

D, H, HKV, HD, T = 64, 4, 2, 16, 16
CONSTRUCTS = {}


def construct(name, fixed_batch=None):
    """Registers `factory(batch, seed) -> (module, inputs)` under name (batch fixed if given)."""
    def register(factory):
        def make(batch=1, seed=0):
            b = fixed_batch or batch
            with seeded(seed):
                module, inputs = factory(b, seed)
            return module.eval(), inputs
        make.__name__ = name
        make.__doc__ = factory.__doc__
        CONSTRUCTS[name] = make
        return make
    return register


def describe(name):
    """The one-line docstring naming the construct (the factory's, else the module class's)."""
    doc = CONSTRUCTS[name].__doc__ or type(CONSTRUCTS[name]()[0]).__doc__
    return doc.strip().splitlines()[0]


def _attend(q, k, v):
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1) @ v


def _qkv(batch, seed, heads=H, kv_heads=H, seq=T):
    return (randn(batch, heads, seq, HD, seed=seed + 10), randn(batch, kv_heads, seq, HD, seed=seed + 11),
            randn(batch, kv_heads, seq, HD, seed=seed + 12))


def _causal_bool(seq):
    return torch.ones(seq, seq, dtype=torch.bool).tril()


# --- shapes --------------------------------------------------------------------------------------

class SizeUnpackAssert(nn.Module):
    """`B, T, C = x.size()` + assert, then a Linear on the flattened tokens."""

    def __init__(self):
        super().__init__()
        self.n_embd = D
        self.proj = nn.Linear(D, D)

    def forward(self, x):
        B, T, C = x.size()
        assert C == self.n_embd, "expected %d channels" % self.n_embd
        return self.proj(x.view(B * T, C)).view(B, T, C)


@construct("size_unpack_assert")
def _(batch, seed):
    return SizeUnpackAssert(), (randn(batch, T, D, seed=seed),)


class ShapeStar(nn.Module):
    """`x.view(*x.shape[:-1], heads, -1)` and back with `reshape(*x.shape[:-1], -1)`."""

    def __init__(self):
        super().__init__()
        self.n_head = H

    def forward(self, x):
        h = x.view(*x.shape[:-1], self.n_head, -1)
        h = torch.softmax(h, dim=-1)  # per head
        return h.reshape(*x.shape[:-1], -1)


@construct("shape_star")
def _(batch, seed):
    return ShapeStar(), (randn(batch, T, D, seed=seed),)


class Attention4d(nn.Module):
    """4-d attention core softmax(q k^T / sqrt(d)) v on [B, H, T, hd], no mask."""

    def forward(self, q, k, v):
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = F.softmax(att, dim=-1)
        return att @ v


@construct("attention_4d_b1", fixed_batch=1)
def _(batch, seed):
    return Attention4d(), _qkv(batch, seed)


@construct("attention_4d_b2", fixed_batch=2)
def _(batch, seed):
    return Attention4d(), _qkv(batch, seed)


# --- rotary embeddings ---------------------------------------------------------------------------

def _angles(seq, dim, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2).float() / dim))
    return torch.outer(torch.arange(seq).float(), freqs)  # [seq, dim/2]


class RopeComplex(nn.Module):
    """Complex RoPE: view_as_complex of pairs * freqs_cis (a complex buffer sliced [:T]), view_as_real, flatten(3)."""

    def __init__(self, max_seq=64):
        super().__init__()
        a = _angles(max_seq, HD)
        self.register_buffer("freqs_cis", torch.polar(torch.ones_like(a), a), persistent=False)

    def forward(self, x):  # [B, T, H, hd]
        T = x.shape[1]
        xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        out = torch.view_as_real(xc * self.freqs_cis[:T].view(1, T, 1, -1)).flatten(3)
        return out.type_as(x)


@construct("rope_complex")
def _(batch, seed):
    return RopeComplex(), (randn(batch, T, H, HD, seed=seed),)


class RopeInterleaved(nn.Module):
    """Interleaved RoPE: pairs by reshape(*shape[:-1], -1, 2), cos/sin table [seq, hd/2, 2],
    torch.stack(..., -1).flatten(3)."""

    def __init__(self, max_seq=64):
        super().__init__()
        a = _angles(max_seq, HD)
        self.register_buffer("rope_cache", torch.stack([a.cos(), a.sin()], dim=-1), persistent=False)

    def forward(self, x):  # [B, T, H, hd]
        xs = x.float().reshape(*x.shape[:-1], -1, 2)
        rc = self.rope_cache[: x.size(1)].view(1, xs.size(1), 1, xs.size(3), 2)
        out = torch.stack([xs[..., 0] * rc[..., 0] - xs[..., 1] * rc[..., 1],
                           xs[..., 1] * rc[..., 0] + xs[..., 0] * rc[..., 1]], -1)
        return out.flatten(3).type_as(x)


@construct("rope_interleaved")
def _(batch, seed):
    return RopeInterleaved(), (randn(batch, T, H, HD, seed=seed),)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class RopeRotateHalf(nn.Module):
    """Rotate-half RoPE: x * cos + rotate_half(x) * sin, cos/sin buffers [seq, hd] sliced [:T]."""

    def __init__(self, max_seq=64):
        super().__init__()
        emb = torch.cat([_angles(max_seq, HD)] * 2, dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, x):  # [B, H, T, hd]
        T = x.shape[-2]
        return x * self.cos_cached[:T] + rotate_half(x) * self.sin_cached[:T]


@construct("rope_rotate_half")
def _(batch, seed):
    return RopeRotateHalf(), (randn(batch, H, T, HD, seed=seed),)


# --- grouped-query attention ---------------------------------------------------------------------

class GqaRepeatInterleave(nn.Module):
    """GQA: k, v [B, H_kv, T, hd] widened by repeat_interleave(n_rep, dim=1)."""

    def forward(self, q, k, v):
        n_rep = q.size(1) // k.size(1)
        k = k.repeat_interleave(n_rep, dim=1)
        v = v.repeat_interleave(n_rep, dim=1)
        return _attend(q, k, v)


@construct("gqa_repeat_interleave")
def _(batch, seed):
    return GqaRepeatInterleave(), _qkv(batch, seed, kv_heads=HKV)


class GqaExpandReshape(nn.Module):
    """GQA: k, v [B, H_kv, T, hd] widened by [:, :, None].expand(...).reshape(...)."""

    def forward(self, q, k, v):
        B, n_kv, S, hd = k.shape
        n_rep = q.size(1) // n_kv
        k = k[:, :, None, :, :].expand(B, n_kv, n_rep, S, hd).reshape(B, n_kv * n_rep, S, hd)
        v = v[:, :, None, :, :].expand(B, n_kv, n_rep, S, hd).reshape(B, n_kv * n_rep, S, hd)
        return _attend(q, k, v)


@construct("gqa_expand_reshape")
def _(batch, seed):
    return GqaExpandReshape(), _qkv(batch, seed, kv_heads=HKV)


# --- masks ---------------------------------------------------------------------------------------

class MaskMaskedFillTril(nn.Module):
    """Causal mask: masked_fill(self.bias[:, :, :T, :T] == 0, -inf) with a registered tril buffer."""

    def __init__(self, block_size=64):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, q, k, v):
        T = q.size(-2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        return F.softmax(att, dim=-1) @ v


@construct("mask_masked_fill_tril")
def _(batch, seed):
    return MaskMaskedFillTril(), _qkv(batch, seed)


class MaskWhere(nn.Module):
    """Causal mask: torch.where(bool buffer [None, None, :T, :T], scores, -inf)."""

    def __init__(self, block_size=64):
        super().__init__()
        self.register_buffer("causal_mask", _causal_bool(block_size), persistent=False)

    def forward(self, q, k, v):
        T = q.size(-2)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        scores = torch.where(self.causal_mask[None, None, :T, :T], scores, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v


@construct("mask_where")
def _(batch, seed):
    return MaskWhere(), _qkv(batch, seed)


class MaskBoolArg(nn.Module):
    """Bool attn_mask argument (True = may attend) applied by masked_fill(~attn_mask, -inf)."""

    def forward(self, q, k, v, attn_mask):
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        scores = scores.masked_fill(~attn_mask, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v


@construct("mask_bool_attn_mask")
def _(batch, seed):
    return MaskBoolArg(), (*_qkv(batch, seed), _causal_bool(T)[None, None].expand(batch, 1, T, T))


class MaskAddInPlace(nn.Module):
    """Additive mask in place: `scores += mask[None, None]` with a float [T, T] buffer of 0 / -inf."""

    def __init__(self, seq=T):
        super().__init__()
        self.register_buffer("mask", torch.full((seq, seq), float("-inf")).triu(1), persistent=False)

    def forward(self, q, k, v):
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        scores += self.mask[None, None]
        return torch.softmax(scores.float(), dim=-1).type_as(q) @ v


@construct("mask_add_inplace")
def _(batch, seed):
    return MaskAddInPlace(), _qkv(batch, seed)


class MaskAdditiveFloat(nn.Module):
    """Additive float mask argument [B, 1, T, S] (finfo.min where masked): scores + mask."""

    def forward(self, q, k, v, attention_mask):
        scores = torch.matmul(q, k.transpose(2, 3)) * q.size(-1) ** -0.5
        scores = scores + attention_mask
        return torch.matmul(F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype), v)


@construct("mask_additive_float")
def _(batch, seed):
    mask = torch.full((T, T), torch.finfo(torch.float32).min).triu(1)
    return MaskAdditiveFloat(), (*_qkv(batch, seed), mask[None, None].expand(batch, 1, T, T))


# --- fused projections, cat, slicing -------------------------------------------------------------

class SplitFused(nn.Module):
    """Fused qkv Linear then .split(n_embd, dim=2)."""

    def __init__(self):
        super().__init__()
        self.n_embd = D
        self.c_attn = nn.Linear(D, 3 * D)

    def forward(self, x):
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        return q * k + v


@construct("split_fused")
def _(batch, seed):
    return SplitFused(), (randn(batch, T, D, seed=seed),)


class ChunkFused(nn.Module):
    """Fused gate/up Linear then .chunk(2, dim=-1) into a SwiGLU."""

    def __init__(self):
        super().__init__()
        self.gate_up = nn.Linear(D, 4 * D, bias=False)

    def forward(self, x):
        g, u = self.gate_up(x).chunk(2, dim=-1)
        return F.silu(g) * u


@construct("chunk_fused")
def _(batch, seed):
    return ChunkFused(), (randn(batch, T, D, seed=seed),)


class UnbindFused(nn.Module):
    """Fused qkv Linear viewed [B, T, 3, H, hd] then .unbind(2)."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D, 3 * D, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, H, C // H).unbind(2)
        return (q * k + v).reshape(B, T, C)


@construct("unbind_fused")
def _(batch, seed):
    return UnbindFused(), (randn(batch, T, D, seed=seed),)


class Cat(nn.Module):
    """torch.cat of the input and a projection of it along the channels."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(D, D // 2, bias=False)

    def forward(self, x):
        return torch.cat([x, self.proj(x)], dim=-1)


@construct("cat")
def _(batch, seed):
    return Cat(), (randn(batch, T, D, seed=seed),)


class Slicing(nn.Module):
    """Basic slicing: x[:, 1:, :C // 2] - x[:, :-1, C // 2:] (shifted halves)."""

    def forward(self, x):
        C = x.size(-1)
        return x[:, 1:, : C // 2] - x[:, :-1, C // 2:]


@construct("slicing")
def _(batch, seed):
    return Slicing(), (randn(batch, T, D, seed=seed),)


# --- norms and element-wise ----------------------------------------------------------------------

def _perturbed(norm, seed):
    g = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        norm.weight.add_(0.1 * torch.randn(norm.weight.shape, generator=g))
        if getattr(norm, "bias", None) is not None:
            norm.bias.copy_(0.1 * torch.randn(norm.bias.shape, generator=g))
    return norm


@construct("layer_norm_bias")
def _(batch, seed):
    """nn.LayerNorm(d) with weight and bias."""
    return _perturbed(nn.LayerNorm(D), seed), (randn(batch, T, D, seed=seed),)


class FLayerNorm(nn.Module):
    """F.layer_norm(x, weight.shape, weight, bias, 1e-5) with own Parameters."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(D))
        self.bias = nn.Parameter(torch.zeros(D))

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


@construct("f_layer_norm")
def _(batch, seed):
    return _perturbed(FLayerNorm(), seed), (randn(batch, T, D, seed=seed),)


@construct("gelu_exact")
def _(batch, seed):
    """nn.GELU() (the exact erf form)."""
    return nn.GELU(), (randn(batch, T, D, seed=seed),)


@construct("gelu_tanh")
def _(batch, seed):
    """nn.GELU(approximate='tanh')."""
    return nn.GELU(approximate="tanh"), (randn(batch, T, D, seed=seed),)


class NewGELU(nn.Module):
    """Hand-written tanh GELU: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


@construct("gelu_tanh_hand")
def _(batch, seed):
    return NewGELU(), (randn(batch, T, D, seed=seed),)


class Var(nn.Module):
    """x.var(-1, keepdim=True, unbiased=False) in a hand-written LayerNorm (x - mean) * rsqrt(var + eps)."""

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True, unbiased=False)
        return (x - mean) * torch.rsqrt(var + 1e-5)


@construct("var")
def _(batch, seed):
    return Var(), (randn(batch, T, D, seed=seed),)


class Tanh(nn.Module):
    """torch.tanh."""

    def forward(self, x):
        return torch.tanh(x)


@construct("tanh")
def _(batch, seed):
    return Tanh(), (randn(batch, T, D, seed=seed),)


class Neg(nn.Module):
    """Unary minus -x."""

    def forward(self, x):
        return -x


@construct("neg")
def _(batch, seed):
    return Neg(), (randn(batch, T, D, seed=seed),)


class Sqrt(nn.Module):
    """torch.sqrt (of a positive input)."""

    def forward(self, x):
        return torch.sqrt(x)


@construct("sqrt")
def _(batch, seed):
    return Sqrt(), (randn(batch, T, D, seed=seed).abs() + 0.1,)


class Cube(nn.Module):
    """x ** 3."""

    def forward(self, x):
        return x ** 3


@construct("pow3")
def _(batch, seed):
    return Cube(), (randn(batch, T, D, seed=seed),)


class Square(nn.Module):
    """x ** 2."""

    def forward(self, x):
        return x ** 2


@construct("pow2")
def _(batch, seed):
    return Square(), (randn(batch, T, D, seed=seed),)


class DtypeRoundTrip(nn.Module):
    """`.to(torch.float32)`, work in fp32, `.to(input_dtype)` back (softmax in between)."""

    def forward(self, x):
        input_dtype = x.dtype
        h = x.to(torch.float32)
        h = torch.softmax(h, dim=-1)
        return h.to(input_dtype)


@construct("dtype_roundtrip")
def _(batch, seed):
    return DtypeRoundTrip(), (randn(batch, T, D, seed=seed),)


# --- integer, int64 and complex arguments; embedding; prime length -------------------------------

class EmbeddingLookup(nn.Module):
    """nn.Embedding lookup of int64 token ids [B, T]."""

    def __init__(self, vocab=100):
        super().__init__()
        self.wte = nn.Embedding(vocab, D)

    def forward(self, idx):
        return self.wte(idx)


@construct("embedding")
def _(batch, seed):
    idx = torch.randint(0, 100, (batch, T), generator=torch.Generator().manual_seed(seed), dtype=torch.int64)
    return EmbeddingLookup(), (idx,)


class IntStartPos(nn.Module):
    """An int `start_pos` argument slicing a buffer [start_pos : start_pos + T]."""

    def __init__(self, max_seq=64):
        super().__init__()
        self.register_buffer("table", torch.randn(max_seq, D), persistent=False)

    def forward(self, x, start_pos: int):
        seqlen = x.shape[1]
        return x + self.table[start_pos: start_pos + seqlen]


@construct("int_start_pos")
def _(batch, seed):
    return IntStartPos(), (randn(batch, T, D, seed=seed), 5)


class Int64Positions(nn.Module):
    """An int64 `positions` tensor argument [B, T] indexing a table buffer."""

    def __init__(self, max_seq=64):
        super().__init__()
        self.register_buffer("table", torch.randn(max_seq, D), persistent=False)

    def forward(self, x, positions):
        return x + self.table[positions]


@construct("int64_positions")
def _(batch, seed):
    positions = torch.arange(3, 3 + T, dtype=torch.int64)[None].expand(batch, T)
    return Int64Positions(), (randn(batch, T, D, seed=seed), positions)


class ComplexFreqsArg(nn.Module):
    """A complex64 `freqs_cis` argument [T, hd/2] multiplying view_as_complex pairs."""

    def forward(self, x, freqs_cis):
        xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        out = torch.view_as_real(xc * freqs_cis[None, :, None, :]).flatten(3)
        return out.type_as(x)


@construct("complex_freqs_cis_arg")
def _(batch, seed):
    a = _angles(T, HD)
    return ComplexFreqsArg(), (randn(batch, T, H, HD, seed=seed), torch.polar(torch.ones_like(a), a))


class PrimeSeq(nn.Module):
    """Causal attention at a prime sequence length (37), masked_fill with a tril buffer."""

    def __init__(self, seq=37):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq)), persistent=False)

    def forward(self, q, k, v):
        T = q.size(-2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        att = att.masked_fill(self.bias[:T, :T] == 0, float("-inf"))
        return F.softmax(att, dim=-1) @ v


@construct("prime_seq_37")
def _(batch, seed):
    return PrimeSeq(), _qkv(batch, seed, seq=37)
