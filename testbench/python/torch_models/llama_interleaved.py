"""Llama block in the gpt-fast manner: one fused `wqkv` Linear split by sizes, a KVCache module
with k_cache / v_cache buffers [B, H_kv, max_seq, head_dim] written at `input_pos` (an int64
tensor of positions), interleaved rotary embeddings from a real cos/sin table [seq, hd/2, 2]
(x reshaped to pairs, torch.stack of the rotated pair, flatten(3)), GQA by repeat_interleave, a
bool mask `causal_mask[None, None, input_pos]` and a hand-written attention with torch.where
(torch 1.13 has no scaled_dot_product_attention).

The root module is a Transformer of n_layer blocks without embedding or output head; it owns the
tables (freqs_cis, causal_mask) and the caches (setup_caches), as gpt-fast's does:
forward(x, input_pos, mask=None). Prefill: input_pos = arange(T); decode: input_pos = [L].

Ragged decode: input_pos is shared by the batch (one cache write position for all rows), so
rows of different lengths are left-padded and the bool mask is passed explicitly ([B, 1, T,
max_seq], row b's padding slots False); rotary embeddings are relative, so the padding's shift of
positions does not change the scores (decode_steps, ragged_reference)."""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch import Tensor
from torch.nn import functional as F

from ._factory import padded_causal, perturb_norms, randn, seeded


@dataclass
class ModelArgs:
    block_size: int = 64
    n_layer: int = 1
    n_head: int = 4
    dim: int = 64
    intermediate_size: int = 128
    n_local_heads: int = 2
    head_dim: int = 16
    rope_base: float = 10000
    norm_eps: float = 1e-5

    def __post_init__(self):
        if self.n_local_heads == -1:
            self.n_local_heads = self.n_head
        self.head_dim = self.dim // self.n_head


class KVCache(nn.Module):
    def __init__(self, max_batch_size, max_seq_length, n_heads, head_dim, dtype=torch.float32):
        super().__init__()
        cache_shape = (max_batch_size, n_heads, max_seq_length, head_dim)
        self.register_buffer("k_cache", torch.zeros(cache_shape, dtype=dtype))
        self.register_buffer("v_cache", torch.zeros(cache_shape, dtype=dtype))

    def update(self, input_pos, k_val, v_val):
        # k_val, v_val: [B, H, S, D], written at the S positions of input_pos
        assert input_pos.shape[0] == k_val.shape[2]

        k_out = self.k_cache
        v_out = self.v_cache
        k_out[:, :, input_pos] = k_val
        v_out[:, :, input_pos] = v_val

        return k_out, v_out


class Transformer(nn.Module):
    def __init__(self, config: ModelArgs) -> None:
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList(TransformerBlock(config) for _ in range(config.n_layer))
        self.max_batch_size = -1
        self.max_seq_length = -1

    def setup_caches(self, max_batch_size, max_seq_length):
        if self.max_seq_length >= max_seq_length and self.max_batch_size >= max_batch_size:
            return
        head_dim = self.config.dim // self.config.n_head
        self.max_seq_length = max_seq_length
        self.max_batch_size = max_batch_size
        dtype = self.layers[0].attention.wqkv.weight.dtype
        for b in self.layers:
            b.attention.kv_cache = KVCache(max_batch_size, max_seq_length,
                                           self.config.n_local_heads, head_dim, dtype)

        self.register_buffer("freqs_cis", precompute_freqs_cis(
            self.config.block_size, head_dim, self.config.rope_base, dtype), persistent=False)
        self.register_buffer("causal_mask", torch.tril(
            torch.ones(self.max_seq_length, self.max_seq_length, dtype=torch.bool)),
            persistent=False)

    def forward(self, x: Tensor, input_pos: Tensor, mask: Tensor = None) -> Tensor:
        assert self.max_seq_length > 0, "call setup_caches before forward"
        if mask is None:
            mask = self.causal_mask[None, None, input_pos]
        freqs_cis = self.freqs_cis[input_pos]

        for i, layer in enumerate(self.layers):
            x = layer(x, input_pos, freqs_cis, mask)
        return x


class TransformerBlock(nn.Module):
    def __init__(self, config: ModelArgs) -> None:
        super().__init__()
        self.attention = Attention(config)
        self.feed_forward = FeedForward(config)
        self.ffn_norm = RMSNorm(config.dim, config.norm_eps)
        self.attention_norm = RMSNorm(config.dim, config.norm_eps)

    def forward(self, x: Tensor, input_pos: Tensor, freqs_cis: Tensor, mask: Tensor) -> Tensor:
        h = x + self.attention(self.attention_norm(x), freqs_cis, mask, input_pos)
        out = h + self.feed_forward(self.ffn_norm(h))
        return out


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor) -> Tensor:
    """softmax(q k^T / sqrt(d), masked where `mask` is False) v; mask broadcasts to the scores."""
    scale = 1.0 / math.sqrt(q.size(-1))
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale
    scores = torch.where(mask, scores, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.matmul(probs, v)


class Attention(nn.Module):
    def __init__(self, config: ModelArgs):
        super().__init__()
        assert config.dim % config.n_head == 0

        total_head_dim = (config.n_head + 2 * config.n_local_heads) * config.head_dim
        # q of n_head heads, then k and v of n_local_heads heads, from one matmul
        self.wqkv = nn.Linear(config.dim, total_head_dim, bias=False)
        self.wo = nn.Linear(config.dim, config.dim, bias=False)
        self.kv_cache = None

        self.n_head = config.n_head
        self.head_dim = config.head_dim
        self.n_local_heads = config.n_local_heads
        self.dim = config.dim

    def forward(self, x: Tensor, freqs_cis: Tensor, mask: Tensor, input_pos: Tensor = None) -> Tensor:
        bsz, seqlen, _ = x.shape

        kv_size = self.n_local_heads * self.head_dim
        q, k, v = self.wqkv(x).split([self.dim, kv_size, kv_size], dim=-1)

        q = q.view(bsz, seqlen, self.n_head, self.head_dim)
        k = k.view(bsz, seqlen, self.n_local_heads, self.head_dim)
        v = v.view(bsz, seqlen, self.n_local_heads, self.head_dim)

        q = apply_rotary_emb(q, freqs_cis)
        k = apply_rotary_emb(k, freqs_cis)

        q, k, v = map(lambda x: x.transpose(1, 2), (q, k, v))

        if self.kv_cache is not None:
            k, v = self.kv_cache.update(input_pos, k, v)

        k = k.repeat_interleave(self.n_head // self.n_local_heads, dim=1)
        v = v.repeat_interleave(self.n_head // self.n_local_heads, dim=1)
        y = attention(q, k, v, mask)

        y = y.transpose(1, 2).contiguous().view(bsz, seqlen, self.dim)

        y = self.wo(y)
        return y


class FeedForward(nn.Module):
    def __init__(self, config: ModelArgs) -> None:
        super().__init__()
        self.w1 = nn.Linear(config.dim, config.intermediate_size, bias=False)
        self.w3 = nn.Linear(config.dim, config.intermediate_size, bias=False)
        self.w2 = nn.Linear(config.intermediate_size, config.dim, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)

    def forward(self, x: Tensor) -> Tensor:
        output = self._norm(x.float()).type_as(x)
        return output * self.weight


def precompute_freqs_cis(seq_len: int, n_elem: int, base: float = 10000,
                         dtype: torch.dtype = torch.float32) -> Tensor:
    """[seq_len, n_elem / 2, 2]: cos and sin of position * frequency, pair by pair."""
    freqs = 1.0 / (base ** (torch.arange(0, n_elem, 2)[: (n_elem // 2)].float() / n_elem))
    t = torch.arange(seq_len, device=freqs.device).float()
    angles = torch.outer(t, freqs)
    cache = torch.stack([torch.cos(angles), torch.sin(angles)], dim=-1)
    return cache.to(dtype=dtype)


def apply_rotary_emb(x: Tensor, freqs_cis: Tensor) -> Tensor:
    # x: [B, S, H, D]; pairs (x[2i], x[2i+1]) are rotated by the angle of frequency i
    xshaped = x.float().reshape(*x.shape[:-1], -1, 2)
    freqs_cis = freqs_cis.view(1, xshaped.size(1), 1, xshaped.size(3), 2)
    x_out2 = torch.stack(
        [
            xshaped[..., 0] * freqs_cis[..., 0] - xshaped[..., 1] * freqs_cis[..., 1],
            xshaped[..., 1] * freqs_cis[..., 0] + xshaped[..., 0] * freqs_cis[..., 1],
        ],
        -1,
    )

    x_out2 = x_out2.flatten(3)
    return x_out2.type_as(x)


def make(batch=1, seq=16, d_model=64, n_heads=4, n_kv_heads=2, ffn=128, n_layer=1,
         max_seq_length=None, seed=0):
    """(Transformer in eval mode with caches for `batch` rows, (x, input_pos = arange(seq)))."""
    config = ModelArgs(block_size=max(64, seq + 8), n_layer=n_layer, n_head=n_heads, dim=d_model,
                       intermediate_size=ffn, n_local_heads=n_kv_heads)
    with seeded(seed):
        model = Transformer(config)
    perturb_norms(model, seed + 1)
    model.setup_caches(batch, max_seq_length or max(32, seq + 8))
    x = randn(batch, seq, d_model, seed=seed + 2)
    return model.eval(), (x, torch.arange(seq, dtype=torch.int64))


def decode_steps(model, lengths, seed=3):
    """[prefill inputs, decode inputs] for rows with the given prompt lengths (ragged when they
    differ; the caches must hold len(lengths) rows): L = max(lengths) left-padded slots at
    positions 0..L-1, then one token at position L. Uniform lengths use the model's own mask."""
    B, L = len(lengths), max(lengths)
    assert model.max_batch_size == B and model.max_seq_length > L
    S = model.max_seq_length
    x = randn(B, L + 1, model.config.dim, seed=seed)
    prefill_pos, decode_pos = torch.arange(L), torch.tensor([L])
    if min(lengths) == L:
        return [(x[:, :L], prefill_pos), (x[:, L:], decode_pos)]
    allowed = padded_causal(lengths, L)  # [B, L, L]
    prefill_mask = torch.zeros(B, 1, L, S, dtype=torch.bool)
    prefill_mask[:, 0, :, :L] = allowed
    decode_mask = torch.zeros(B, 1, 1, S, dtype=torch.bool)
    decode_mask[:, 0, 0, :L] = allowed[:, -1]
    decode_mask[:, 0, 0, L] = True
    return [(x[:, :L], prefill_pos, prefill_mask), (x[:, L:], decode_pos, decode_mask)]


def ragged_reference(model, lengths, seed=3):
    """Row b's decode output computed alone (batch 1, no padding): [B, 1, d]."""
    import copy
    B, L = len(lengths), max(lengths)
    x = randn(B, L + 1, model.config.dim, seed=seed)
    outs = []
    with torch.no_grad():
        for b, n in enumerate(lengths):
            m = copy.deepcopy(model)
            m.max_batch_size = -1
            m.setup_caches(1, model.max_seq_length)
            m(x[b:b + 1, L - n:L], torch.arange(n))
            outs.append(m(x[b:b + 1, L:], torch.tensor([n])))
    return torch.cat(outs)
