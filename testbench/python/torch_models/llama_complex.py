"""Llama block as Meta's reference code writes it: RMSNorm computed in fp32 and cast back, rotary
embeddings as complex numbers (precompute_freqs_cis with torch.polar, view_as_complex /
view_as_real, flatten(3)), KV cache buffers [max_batch, max_seq, n_kv_heads, head_dim] written in
forward at start_pos, GQA by repeat_kv (expand + reshape), an additive -inf mask, softmax in fp32,
SwiGLU FeedForward w1/w2/w3.

Prefill: forward(x, 0, freqs_cis[0:T], mask) with mask = causal_mask(T, 0). Decode: seqlen 1 at
start_pos L with mask None. Ragged decode (rows with different prompt lengths) uses left
padding: row b's prompt fills the last lengths[b] of the L prefill slots, and an additive mask
[B, 1, T, L'] puts -inf on the padding slots. Meta's start_pos is one int for the whole batch, so
a mask is the only per-row freedom the style has; rotary embeddings are relative, so a row
shifted right by its padding scores the same as unpadded (decode_steps, ragged_reference)."""
import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from ._factory import padded_causal, perturb_norms, randn, seeded


@dataclass
class ModelArgs:
    dim: int = 64
    n_layers: int = 1
    n_heads: int = 4
    n_kv_heads: Optional[int] = 2
    multiple_of: int = 128  # the SwiGLU hidden size is rounded up to a multiple of this
    ffn_dim_multiplier: Optional[float] = None
    norm_eps: float = 1e-5
    rope_theta: float = 500000.0

    max_batch_size: int = 4
    max_seq_len: int = 64


class RMSNorm(torch.nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float()).type_as(x)
        return output * self.weight


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device, dtype=torch.float32)
    freqs = torch.outer(t, freqs)
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)  # complex64, e^(i t f)
    return freqs_cis


def reshape_for_broadcast(freqs_cis: torch.Tensor, x: torch.Tensor):
    ndim = x.ndim
    assert 0 <= 1 < ndim
    assert freqs_cis.shape == (x.shape[1], x.shape[-1])
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq: torch.Tensor, xk: torch.Tensor, freqs_cis: torch.Tensor):
    # consecutive pairs (x0, x1) are the real and imaginary parts of one complex number
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """Each KV head n_rep times in a row along dim 2 (the heads), without copying until reshape."""
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return (
        x[:, :, :, None, :]
        .expand(bs, slen, n_kv_heads, n_rep, head_dim)
        .reshape(bs, slen, n_kv_heads * n_rep, head_dim)
    )


class Attention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.n_kv_heads = args.n_heads if args.n_kv_heads is None else args.n_kv_heads
        self.n_local_heads = args.n_heads
        self.n_local_kv_heads = self.n_kv_heads
        self.n_rep = self.n_local_heads // self.n_local_kv_heads
        self.head_dim = args.dim // args.n_heads

        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)

        self.register_buffer("cache_k", torch.zeros(
            (args.max_batch_size, args.max_seq_len, self.n_local_kv_heads, self.head_dim)),
            persistent=False)
        self.register_buffer("cache_v", torch.zeros(
            (args.max_batch_size, args.max_seq_len, self.n_local_kv_heads, self.head_dim)),
            persistent=False)

    def forward(
        self,
        x: torch.Tensor,
        start_pos: int,
        freqs_cis: torch.Tensor,
        mask: Optional[torch.Tensor],
    ):
        bsz, seqlen, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)

        xq = xq.view(bsz, seqlen, self.n_local_heads, self.head_dim)
        xk = xk.view(bsz, seqlen, self.n_local_kv_heads, self.head_dim)
        xv = xv.view(bsz, seqlen, self.n_local_kv_heads, self.head_dim)

        xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)

        self.cache_k = self.cache_k.to(xq)
        self.cache_v = self.cache_v.to(xq)

        self.cache_k[:bsz, start_pos : start_pos + seqlen] = xk
        self.cache_v[:bsz, start_pos : start_pos + seqlen] = xv

        keys = self.cache_k[:bsz, : start_pos + seqlen]
        values = self.cache_v[:bsz, : start_pos + seqlen]

        # GQA: every group of n_rep query heads reads the same KV head
        keys = repeat_kv(keys, self.n_rep)
        values = repeat_kv(values, self.n_rep)

        xq = xq.transpose(1, 2)  # (bs, n_local_heads, seqlen, head_dim)
        keys = keys.transpose(1, 2)  # (bs, n_local_heads, cache_len + seqlen, head_dim)
        values = values.transpose(1, 2)  # (bs, n_local_heads, cache_len + seqlen, head_dim)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores + mask  # (bs, n_local_heads, seqlen, cache_len + seqlen)
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        output = torch.matmul(scores, values)  # (bs, n_local_heads, seqlen, head_dim)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(output)


class FeedForward(nn.Module):
    def __init__(
        self,
        dim: int,
        hidden_dim: int,
        multiple_of: int,
        ffn_dim_multiplier: Optional[float],
    ):
        super().__init__()
        hidden_dim = int(2 * hidden_dim / 3)
        # optional scaling of the 2/3 * 4 * dim default, then rounding up to multiple_of
        if ffn_dim_multiplier is not None:
            hidden_dim = int(ffn_dim_multiplier * hidden_dim)
        hidden_dim = multiple_of * ((hidden_dim + multiple_of - 1) // multiple_of)

        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, layer_id: int, args: ModelArgs):
        super().__init__()
        self.n_heads = args.n_heads
        self.dim = args.dim
        self.head_dim = args.dim // args.n_heads
        self.attention = Attention(args)
        self.feed_forward = FeedForward(
            dim=args.dim,
            hidden_dim=4 * args.dim,
            multiple_of=args.multiple_of,
            ffn_dim_multiplier=args.ffn_dim_multiplier,
        )
        self.layer_id = layer_id
        self.attention_norm = RMSNorm(args.dim, eps=args.norm_eps)
        self.ffn_norm = RMSNorm(args.dim, eps=args.norm_eps)

    def forward(
        self,
        x: torch.Tensor,
        start_pos: int,
        freqs_cis: torch.Tensor,
        mask: Optional[torch.Tensor],
    ):
        h = x + self.attention(self.attention_norm(x), start_pos, freqs_cis, mask)
        out = h + self.feed_forward(self.ffn_norm(h))
        return out


def causal_mask(seqlen, start_pos):
    """The mask Meta's Transformer.forward builds for seqlen > 1: -inf above the diagonal, and
    start_pos columns of zeros in front for the cached tokens ([seqlen, start_pos + seqlen])."""
    mask = None
    if seqlen > 1:
        mask = torch.full((seqlen, seqlen), float("-inf"))
        mask = torch.triu(mask, diagonal=1)
        # rows are the new tokens; the start_pos cached tokens before them are all visible
        mask = torch.hstack([torch.zeros((seqlen, start_pos)), mask])
    return mask


def make(batch=1, seq=16, d_model=64, n_heads=4, n_kv_heads=2, ffn=128, max_seq_len=None,
         max_batch_size=None, seed=0):
    """(TransformerBlock in eval mode, prefill inputs (x, 0, freqs_cis[:seq], causal mask)).
    The block's freqs_cis table (2 * max_seq_len rows, as Meta sizes it) is `block.freqs_cis`."""
    base = int(2 * 4 * d_model / 3)
    args = ModelArgs(dim=d_model, n_heads=n_heads, n_kv_heads=n_kv_heads, multiple_of=ffn,
                     ffn_dim_multiplier=ffn / base, max_batch_size=max_batch_size or max(4, batch),
                     max_seq_len=max_seq_len or max(64, seq + 8))
    with seeded(seed):
        block = TransformerBlock(0, args)
    assert block.feed_forward.w1.out_features == ffn
    perturb_norms(block, seed + 1)
    block.freqs_cis = precompute_freqs_cis(d_model // n_heads, args.max_seq_len * 2, args.rope_theta)
    x = randn(batch, seq, d_model, seed=seed + 2)
    return block.eval(), (x, 0, block.freqs_cis[0:seq], causal_mask(seq, 0))


def decode_steps(block, lengths, seed=3):
    """[prefill inputs, decode inputs] for rows whose prompts have the given lengths (ragged when
    they differ): prefill of L = max(lengths) left-padded slots at start_pos 0, then one token at
    start_pos L. Run them in order on one block (its cache carries the state)."""
    B, L = len(lengths), max(lengths)
    d = block.dim
    x = randn(B, L + 1, d, seed=seed)
    allowed = padded_causal(lengths, L)  # [B, L, L]
    if min(lengths) == L:
        prefill_mask = causal_mask(L, 0)
        decode_mask = None
    else:
        prefill_mask = torch.zeros(B, 1, L, L).masked_fill(~allowed[:, None], float("-inf"))
        decode_mask = torch.zeros(B, 1, 1, L + 1)
        decode_mask[:, :, :, :L] = decode_mask[:, :, :, :L].masked_fill(
            ~allowed[:, None, -1:, :], float("-inf"))  # the last prompt row: its keys
    fc = block.freqs_cis
    return [(x[:, :L], 0, fc[0:L], prefill_mask), (x[:, L:], L, fc[L:L + 1], decode_mask)]


def ragged_reference(block, lengths, seed=3):
    """Row b's decode output computed alone at batch 1 without padding: prefill of its lengths[b]
    tokens, then its decode token. Returns [B, 1, d]; equals decode_steps' output (fp32)."""
    import copy
    B, L = len(lengths), max(lengths)
    x = randn(B, L + 1, block.dim, seed=seed)
    fc = block.freqs_cis
    outs = []
    with torch.no_grad():
        for b, n in enumerate(lengths):
            m = copy.deepcopy(block)
            m(x[b:b + 1, L - n:L], 0, fc[0:n], causal_mask(n, 0))
            outs.append(m(x[b:b + 1, L:], n, fc[n:n + 1], None))
    return torch.cat(outs)
