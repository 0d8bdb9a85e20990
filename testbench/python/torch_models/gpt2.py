"""GPT-2 block as the nanoGPT family writes it: LayerNorm with bias, fused `c_attn` split in three,
heads by view + transpose, a registered lower-triangular `bias` buffer sliced by T for the causal
mask (masked_fill with -inf where it is 0), softmax, attention dropout, exact-erf GELU MLP,
pre-norm residuals. No KV cache (prefill only)."""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F

from ._factory import perturb_norms, randn, seeded


@dataclass
class GPTConfig:
    block_size: int = 64
    n_embd: int = 64
    n_head: int = 4
    n_inner: int = 128
    dropout: float = 0.1
    bias: bool = True


class CausalSelfAttention(nn.Module):

    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        # one Linear gives q, k and v of every head side by side
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        # lower-triangular ones: position t sees 0..t (named "bias" like the checkpoint key)
        self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                             .view(1, 1, config.block_size, config.block_size))

    def forward(self, x):
        B, T, C = x.size()  # batch, time, channels

        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)

        # scores of every query against every key, per head: (B, nh, T, T)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v  # weighted values: (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # merge the heads back into C

        y = self.resid_dropout(self.c_proj(y))
        return y


class MLP(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, config.n_inner, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(config.n_inner, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        x = self.c_fc(x)
        x = self.gelu(x)
        x = self.c_proj(x)
        x = self.dropout(x)
        return x


class Block(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


def make(batch=1, seq=16, d_model=64, n_heads=4, ffn=128, block_size=None, seed=0):
    """(Block in eval mode, (x [batch, seq, d_model],)). block_size defaults to max(64, seq)."""
    config = GPTConfig(block_size=block_size or max(64, seq), n_embd=d_model, n_head=n_heads,
                       n_inner=ffn)
    with seeded(seed):
        model = Block(config)
    perturb_norms(model, seed + 1)
    return model.eval(), (randn(batch, seq, d_model, seed=seed + 2),)
