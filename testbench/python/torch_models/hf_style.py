"""Two more blocks in the shape of Hugging Face's code, beyond the eight styles (written from its
description, not copied): a Llama decoder layer (RMSNorm casting to fp32, a rotary class that
computes cos/sin in forward from an inv_freq buffer and position_ids under a disabled autocast,
repeat_kv, a 4-d additive mask of finfo.min with left padding, softmax in fp32, SiLU MLP) and a
GPT-2 block (Conv1D: addmm with a [nx, nf] weight, scores divided by a 0-d tensor, a bool tril
buffer with torch.where and finfo.min, NewGELU with tanh and pow 3)."""
import math

import torch
import torch.nn as nn

from ._factory import randn, seeded


class RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__(); self.weight = nn.Parameter(torch.ones(hidden_size)); self.variance_epsilon = eps
    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)

class Rotary(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        with torch.autocast(device_type="cpu", enabled=False):
            freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos(), emb.sin()
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)

def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]; x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)

def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim); sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)

def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1: return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)

class LlamaLayer(nn.Module):
    def __init__(self, d=64, h=4, kv=2, f=128):
        super().__init__()
        self.h, self.kv, self.hd = h, kv, d // h
        self.q_proj = nn.Linear(d, h * self.hd, bias=False); self.k_proj = nn.Linear(d, kv * self.hd, bias=False)
        self.v_proj = nn.Linear(d, kv * self.hd, bias=False); self.o_proj = nn.Linear(h * self.hd, d, bias=False)
        self.gate_proj = nn.Linear(d, f, bias=False); self.up_proj = nn.Linear(d, f, bias=False); self.down_proj = nn.Linear(f, d, bias=False)
        self.act_fn = nn.SiLU(); self.input_layernorm = RMSNorm(d); self.post_attention_layernorm = RMSNorm(d); self.rotary = Rotary(self.hd)
        with torch.no_grad():
            self.input_layernorm.weight.uniform_(0.5, 1.5); self.post_attention_layernorm.weight.uniform_(0.5, 1.5)
    def forward(self, hidden_states, attention_mask, position_ids):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        bsz, q_len, _ = hidden_states.size()
        q = self.q_proj(hidden_states).view(bsz, q_len, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(hidden_states).view(bsz, q_len, self.kv, self.hd).transpose(1, 2)
        v = self.v_proj(hidden_states).view(bsz, q_len, self.kv, self.hd).transpose(1, 2)
        cos, sin = self.rotary(v, position_ids)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        k = repeat_kv(k, self.h // self.kv); v = repeat_kv(v, self.h // self.kv)
        attn_weights = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd)
        causal_mask = attention_mask[:, :, :, : k.shape[-2]]
        attn_weights = attn_weights + causal_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
        attn_weights = nn.functional.dropout(attn_weights, p=0.0, training=self.training)
        attn_output = torch.matmul(attn_weights, v).transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        hidden_states = residual + self.o_proj(attn_output)
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.down_proj(self.act_fn(self.gate_proj(hidden_states)) * self.up_proj(hidden_states))
        return residual + hidden_states


class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__(); self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf)); self.bias = nn.Parameter(torch.zeros(nf)); nn.init.normal_(self.weight, std=0.02 * 5)
    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)
class NewGELU(nn.Module):
    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))
class GPT2Block(nn.Module):
    def __init__(self, d=64, h=4, n_pos=64):
        super().__init__()
        self.h, self.hd, self.split_size = h, d // h, d
        self.register_buffer("bias", torch.tril(torch.ones((n_pos, n_pos), dtype=torch.bool)).view(1, 1, n_pos, n_pos), persistent=False)
        self.ln_1 = nn.LayerNorm(d); self.c_attn = Conv1D(3 * d, d); self.c_proj = Conv1D(d, d)
        self.ln_2 = nn.LayerNorm(d); self.c_fc = Conv1D(4 * d, d); self.c_proj2 = Conv1D(d, 4 * d); self.act = NewGELU()
    def _split_heads(self, tensor):
        new_shape = tensor.size()[:-1] + (self.h, self.hd)
        return tensor.view(new_shape).permute(0, 2, 1, 3)
    def _merge_heads(self, tensor):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        return tensor.view(tensor.size()[:-2] + (self.h * self.hd,))
    def _attn(self, query, key, value):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype, device=attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        return torch.matmul(attn_weights, value)
    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
        query, key, value = self._split_heads(query), self._split_heads(key), self._split_heads(value)
        a = self._merge_heads(self._attn(query, key, value))
        hidden_states = self.c_proj(a) + residual
        residual = hidden_states
        return residual + self.c_proj2(self.act(self.c_fc(self.ln_2(hidden_states))))


def make_llama_layer(batch=2, seq=16, seed=0):
    """(LlamaLayer, (x, mask4d, position_ids)); the last row left-padded by 4 when batch > 1."""
    with seeded(seed):
        m = LlamaLayer().eval()
    x = randn(batch, seq, 64, seed=seed + 1)
    pos = torch.arange(seq)[None].expand(batch, seq)
    mask2d = torch.ones(batch, seq, dtype=torch.long)
    if batch > 1:
        mask2d[-1, :4] = 0
    low = torch.finfo(torch.float32).min
    mask4d = torch.full((seq, seq), low).triu(1)[None, None].expand(batch, 1, seq, seq).clone()
    return m, (x, mask4d.masked_fill(mask2d[:, None, None, :] == 0, low), pos)


def make_gpt2_block(batch=2, seq=16, seed=0):
    with seeded(seed):
        m = GPT2Block().eval()
    return m, (randn(batch, seq, 64, seed=seed + 1),)
