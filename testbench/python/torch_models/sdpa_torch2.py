"""A pre-norm block written for torch >= 2: fused qkv chunked in three, heads by view + transpose,
`F.scaled_dot_product_attention(q, k, v, is_causal=True)`, an nn.GELU(approximate="tanh") MLP.

torch 1.13 has no scaled_dot_product_attention: install_sdpa() puts a reference implementation
onto torch.nn.functional when it is missing, and sdpa_shim() is the same as a context manager
that takes it away again on exit (the tests use it; a torch that has the function is untouched).
The block looks the function up on F at call time, so the shim must be in place while it runs."""
import contextlib
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from ._factory import perturb_norms, randn, seeded


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout=0.0):
        super().__init__()
        assert d_model % n_heads == 0
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.proj = nn.Linear(d_model, d_model, bias=False)
        self.dropout = dropout

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(B, T, self.n_heads, -1).transpose(1, 2)
        k = k.view(B, T, self.n_heads, -1).transpose(1, 2)
        v = v.view(B, T, self.n_heads, -1).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0,
                                           is_causal=True)
        y = y.transpose(1, 2).reshape(B, T, C)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d_model=64, n_heads=4, ffn=128):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, ffn),
            nn.GELU(approximate="tanh"),
            nn.Linear(ffn, d_model),
        )

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        x = x + self.mlp(self.norm2(x))
        return x


def reference_sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """What torch 2's scaled_dot_product_attention computes (without its fused kernels):
    softmax(q k^T * scale + bias) v; bias -inf where a bool attn_mask is False or, with
    is_causal, above the diagonal (aligned at the top left); a float attn_mask is added."""
    L, S = query.size(-2), key.size(-2)
    if scale is None:
        scale = 1.0 / math.sqrt(query.size(-1))
    scores = torch.matmul(query, key.transpose(-2, -1)) * scale
    if is_causal:
        assert attn_mask is None, "is_causal and attn_mask are exclusive"
        keep = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    weights = torch.softmax(scores, dim=-1)
    if dropout_p > 0.0:
        weights = torch.dropout(weights, dropout_p, train=True)
    return torch.matmul(weights, value)


def install_sdpa():
    """Sets F.scaled_dot_product_attention to reference_sdpa if torch lacks it; True if it did."""
    if hasattr(F, "scaled_dot_product_attention"):
        return False
    F.scaled_dot_product_attention = reference_sdpa
    return True


def remove_sdpa():
    """Undoes install_sdpa (only ever removes reference_sdpa, never torch's own)."""
    if getattr(F, "scaled_dot_product_attention", None) is reference_sdpa:
        del F.scaled_dot_product_attention


@contextlib.contextmanager
def sdpa_shim():
    installed = install_sdpa()
    try:
        yield F.scaled_dot_product_attention
    finally:
        if installed:
            remove_sdpa()


def make(batch=1, seq=16, d_model=64, n_heads=4, ffn=128, seed=0):
    """(Block in eval mode, (x [batch, seq, d_model],)); run it inside sdpa_shim() on torch 1."""
    with seeded(seed):
        block = Block(d_model, n_heads, ffn)
    perturb_norms(block, seed + 1)
    return block.eval(), (randn(batch, seq, d_model, seed=seed + 2),)
