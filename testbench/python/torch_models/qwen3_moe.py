"""Qwen3-MoE decoder layer in the Hugging Face manner: RMSNorm computed in fp32 (`.to(input_dtype)`
round trip), q/k/v/o projections with qk-norm (an RMSNorm over head_dim applied to q and k after
`view(*input_shape, -1, head_dim)` and before the transpose), rotate-half rotary embeddings
(cos/sin from position_ids, `unsqueeze_dim`), GQA by repeat_kv (expand + reshape), an additive
float mask (torch.finfo(dtype).min where masked), eager softmax in fp32, and a sparse MoE MLP
(`gate` router, softmax, top-k, `norm_topk_prob`, experts as a ModuleList of SwiGLU MLPs, a loop
over the experts that received tokens, index_add_). The MoE block is also a root (make_moe).

The root of make() is a one-layer decoder stack without embeddings: forward(hidden_states,
position_ids, attention_mask=None, past_key_values=None), the rotary table computed from
position_ids; past_key_values is a DynamicCache (torch.cat along the sequence).

Ragged decode: HF's per-row position_ids. Rows are left-padded to L; row b's tokens take
positions 0..lengths[b]-1 (padding position 1, as HF fills it), its decode token position
lengths[b]; the additive mask [B, 1, T, past + T] hides the padding keys (decode_steps)."""
from typing import Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from ._factory import left_pad_valid, padded_causal, perturb_norms, randn, seeded


class Qwen3MoeConfig:
    def __init__(self, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                 moe_intermediate_size=128, num_experts=4, num_experts_per_tok=2,
                 norm_topk_prob=True, rms_norm_eps=1e-6, rope_theta=1000000.0,
                 attention_bias=False, attention_dropout=0.0, num_hidden_layers=1,
                 hidden_act="silu"):
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.num_key_value_heads = num_key_value_heads
        self.head_dim = head_dim
        self.moe_intermediate_size = moe_intermediate_size
        self.num_experts = num_experts
        self.num_experts_per_tok = num_experts_per_tok
        self.norm_topk_prob = norm_topk_prob
        self.rms_norm_eps = rms_norm_eps
        self.rope_theta = rope_theta
        self.attention_bias = attention_bias
        self.attention_dropout = attention_dropout
        self.num_hidden_layers = num_hidden_layers
        self.hidden_act = hidden_act


class DynamicCache:
    """Keys and values of every layer, grown by concatenation along the sequence."""

    def __init__(self):
        self.key_cache = []
        self.value_cache = []

    def update(self, key_states, value_states, layer_idx):
        if len(self.key_cache) <= layer_idx:
            self.key_cache.append(key_states)
            self.value_cache.append(value_states)
        else:
            self.key_cache[layer_idx] = torch.cat([self.key_cache[layer_idx], key_states], dim=-2)
            self.value_cache[layer_idx] = torch.cat([self.value_cache[layer_idx], value_states], dim=-2)
        return self.key_cache[layer_idx], self.value_cache[layer_idx]

    def get_seq_length(self, layer_idx=0):
        return self.key_cache[layer_idx].shape[-2] if len(self.key_cache) > layer_idx else 0


class Qwen3MoeRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class Qwen3MoeRotaryEmbedding(nn.Module):
    def __init__(self, config):
        super().__init__()
        dim = config.head_dim
        inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.attention_scaling = 1.0

    @torch.no_grad()
    def forward(self, x, position_ids):
        # [dim/2] x [B, T] -> [B, T, dim/2], in fp32 whatever x's dtype
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x):
    """(x1, x2) -> (-x2, x1) on the two halves of the last dimension."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
    """q, k [B, heads, T, D]; cos, sin [B, T, D] get a heads axis at unsqueeze_dim."""
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    """[B, kv_heads, S, D] -> [B, kv_heads * n_rep, S, D], each KV head n_rep times in a row."""
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)

    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask

    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


class Qwen3MoeAttention(nn.Module):
    def __init__(self, config, layer_idx: int):
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.head_dim = getattr(config, "head_dim", config.hidden_size // config.num_attention_heads)
        self.num_key_value_groups = config.num_attention_heads // config.num_key_value_heads
        self.scaling = self.head_dim**-0.5
        self.attention_dropout = config.attention_dropout

        self.q_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim,
                                bias=config.attention_bias)
        self.k_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim,
                                bias=config.attention_bias)
        self.v_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim,
                                bias=config.attention_bias)
        self.o_proj = nn.Linear(config.num_attention_heads * self.head_dim, config.hidden_size,
                                bias=config.attention_bias)
        self.q_norm = Qwen3MoeRMSNorm(self.head_dim, eps=config.rms_norm_eps)  # over head_dim only
        self.k_norm = Qwen3MoeRMSNorm(self.head_dim, eps=config.rms_norm_eps)

    def forward(
        self,
        hidden_states: torch.Tensor,
        position_embeddings: Tuple[torch.Tensor, torch.Tensor],
        attention_mask: Optional[torch.Tensor],
        past_key_value: Optional[DynamicCache] = None,
    ):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)

        query_states = self.q_norm(self.q_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
        key_states = self.k_norm(self.k_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)

        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)

        if past_key_value is not None:
            key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)

        attn_output, attn_weights = eager_attention_forward(
            self, query_states, key_states, value_states, attention_mask,
            dropout=0.0 if not self.training else self.attention_dropout, scaling=self.scaling)

        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        return attn_output, attn_weights


class Qwen3MoeMLP(nn.Module):
    def __init__(self, config, intermediate_size=None):
        super().__init__()
        self.hidden_size = config.hidden_size
        self.intermediate_size = intermediate_size if intermediate_size is not None else config.moe_intermediate_size
        self.gate_proj = nn.Linear(self.hidden_size, self.intermediate_size, bias=False)
        self.up_proj = nn.Linear(self.hidden_size, self.intermediate_size, bias=False)
        self.down_proj = nn.Linear(self.intermediate_size, self.hidden_size, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Qwen3MoeSparseMoeBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_experts = config.num_experts
        self.top_k = config.num_experts_per_tok
        self.norm_topk_prob = config.norm_topk_prob

        self.gate = nn.Linear(config.hidden_size, config.num_experts, bias=False)
        self.experts = nn.ModuleList(
            [Qwen3MoeMLP(config, intermediate_size=config.moe_intermediate_size) for _ in range(self.num_experts)]
        )

    def forward(self, hidden_states: torch.Tensor):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)  # (tokens, num_experts)

        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        if self.norm_topk_prob:
            routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)

        final_hidden_states = torch.zeros(
            (batch_size * sequence_length, hidden_dim), dtype=hidden_states.dtype, device=hidden_states.device
        )

        # [num_experts, top_k, tokens]; only the experts some token chose are visited
        expert_mask = torch.nn.functional.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit[:, 0].tolist():
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return final_hidden_states, router_logits


class Qwen3MoeDecoderLayer(nn.Module):
    def __init__(self, config, layer_idx: int):
        super().__init__()
        self.hidden_size = config.hidden_size
        self.self_attn = Qwen3MoeAttention(config, layer_idx)
        self.mlp = Qwen3MoeSparseMoeBlock(config)
        self.input_layernorm = Qwen3MoeRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = Qwen3MoeRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: Optional[torch.Tensor] = None,
        past_key_value: Optional[DynamicCache] = None,
        position_embeddings: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
    ) -> torch.Tensor:
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)

        hidden_states, _ = self.self_attn(
            hidden_states=hidden_states,
            position_embeddings=position_embeddings,
            attention_mask=attention_mask,
            past_key_value=past_key_value,
        )
        hidden_states = residual + hidden_states

        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        if isinstance(hidden_states, tuple):
            hidden_states, router_logits = hidden_states
        hidden_states = residual + hidden_states
        return hidden_states


class Qwen3MoeDecoder(nn.Module):
    """The decoder layers and the rotary table of a Qwen3-MoE model (no embedding, norm or head)."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList(
            [Qwen3MoeDecoderLayer(config, layer_idx) for layer_idx in range(config.num_hidden_layers)]
        )
        self.rotary_emb = Qwen3MoeRotaryEmbedding(config=config)

    def forward(self, hidden_states, position_ids, attention_mask=None, past_key_values=None):
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for decoder_layer in self.layers:
            hidden_states = decoder_layer(
                hidden_states,
                attention_mask=attention_mask,
                past_key_value=past_key_values,
                position_embeddings=position_embeddings,
            )
        return hidden_states


def causal_mask(batch, seq, dtype=torch.float32):
    """[batch, 1, seq, seq]: 0 where visible, torch.finfo(dtype).min above the diagonal."""
    min_dtype = torch.finfo(dtype).min
    mask = torch.full((seq, seq), fill_value=min_dtype, dtype=dtype)
    mask = torch.triu(mask, diagonal=1)
    return mask[None, None, :, :].expand(batch, 1, -1, -1)


def config_of(d_model=64, n_heads=4, n_kv_heads=2, head_dim=None, ffn=128, n_experts=4, top_k=2,
              norm_topk_prob=True, n_layers=1):
    return Qwen3MoeConfig(hidden_size=d_model, num_attention_heads=n_heads,
                          num_key_value_heads=n_kv_heads, head_dim=head_dim or d_model // n_heads,
                          moe_intermediate_size=ffn, num_experts=n_experts,
                          num_experts_per_tok=top_k, norm_topk_prob=norm_topk_prob,
                          num_hidden_layers=n_layers)


def make(batch=1, seq=16, seed=0, **dims):
    """(Qwen3MoeDecoder in eval mode, (hidden_states, position_ids [batch, seq], causal mask)).
    dims: d_model, n_heads, n_kv_heads, head_dim, ffn, n_experts, top_k, norm_topk_prob."""
    config = config_of(**dims)
    with seeded(seed):
        model = Qwen3MoeDecoder(config)
    perturb_norms(model, seed + 1)
    x = randn(batch, seq, config.hidden_size, seed=seed + 2)
    position_ids = torch.arange(seq, dtype=torch.int64)[None, :].expand(batch, -1)
    return model.eval(), (x, position_ids, causal_mask(batch, seq))


def make_moe(batch=1, seq=16, seed=0, **dims):
    """(Qwen3MoeSparseMoeBlock in eval mode as the root, (hidden_states,))."""
    config = config_of(**dims)
    with seeded(seed):
        moe = Qwen3MoeSparseMoeBlock(config)
    return moe.eval(), (randn(batch, seq, config.hidden_size, seed=seed + 2),)


def router_of(module):
    """The router Linear and k of the MoE block (the root, or the first layer's MLP)."""
    moe = module if isinstance(module, Qwen3MoeSparseMoeBlock) else module.layers[0].mlp
    return moe.gate, moe.top_k


def decode_steps(model, lengths, seed=3):
    """[prefill inputs, decode inputs] for rows with the given prompt lengths, sharing one fresh
    DynamicCache: L = max(lengths) left-padded prefill slots, then one token per row."""
    B, L = len(lengths), max(lengths)
    x = randn(B, L + 1, model.config.hidden_size, seed=seed)
    cache = DynamicCache()
    valid = left_pad_valid(lengths, L).long()  # HF's 2-d attention_mask
    position_ids = valid.cumsum(-1) - 1
    position_ids.masked_fill_(valid == 0, 1)
    min_dtype = torch.finfo(torch.float32).min
    allowed = padded_causal(lengths, L)  # [B, L, L]
    prefill_mask = torch.zeros(B, 1, L, L).masked_fill(~allowed[:, None], min_dtype)
    decode_mask = torch.zeros(B, 1, 1, L + 1)
    decode_mask[:, 0, 0, :L] = decode_mask[:, 0, 0, :L].masked_fill(valid == 0, min_dtype)
    decode_pos = torch.as_tensor(lengths, dtype=torch.int64)[:, None]
    return [(x[:, :L], position_ids, prefill_mask, cache), (x[:, L:], decode_pos, decode_mask, cache)]


def ragged_reference(model, lengths, seed=3):
    """Row b's decode output computed alone (batch 1, no padding): [B, 1, d]."""
    B, L = len(lengths), max(lengths)
    x = randn(B, L + 1, model.config.hidden_size, seed=seed)
    outs = []
    with torch.no_grad():
        for b, n in enumerate(lengths):
            cache = DynamicCache()
            model(x[b:b + 1, L - n:L], torch.arange(n)[None], causal_mask(1, n), cache)
            outs.append(model(x[b:b + 1, L:], torch.tensor([[n]]), None, cache))
    return torch.cat(outs)
